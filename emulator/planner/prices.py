"""What a candidate costs per hour.

A single pair's cost is its instances at the preset's instance-hour prices (None when the
preset has none: the plan then ranks by goodput alone). A topology's (`Prices`) is its sites'
and regions' instances at their instance-hour prices plus each link's leased bandwidth at its
`price_per_tb` (the bandwidth priced as if it carried its full rate for the hour: a committed
lease, so a link's cost is what is provisioned, not what happens to flow). A lossy link's lease
is its line rate, whatever goodput its TCP gets out of it: more connections cost nothing more
and are no cheaper.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.model import System
from emulator.planner.space import Candidate, leased
from emulator.topology.spec import Topology

TB = 1e12


class PlanInputError(ValueError):
    """A plan that cannot run: one line naming the flag or the preset key."""


def pair_cost(system: System, c: Candidate) -> float | None:
    """A pair candidate's instances at the preset's prices (None: not priced)."""
    if system.price_local is None:
        return None
    local = (c.n_p + c.n_d) * system.price_local
    if c.n_prfaas == 0:
        return local
    return None if system.price_prfaas is None else local + c.n_prfaas * system.price_prfaas


@dataclass(frozen=True)
class Prices:
    """Per instance-hour for sites and regions, per TB for links (None: not priced)."""

    site: dict[str, float]
    region: dict[str, float]
    link_per_tb: dict[str, float]

    @classmethod
    def of(cls, topo: Topology, overrides: dict[str, float] | None = None,
           per_tb: dict[str, float] | None = None) -> Prices:
        """The preset's prices (site.price, region.price, link.price_per_tb), overridden by
        name; PlanInputError naming the first element without one (a cost needs them all; a link
        without a price is free)."""
        over, tb = dict(overrides or {}), dict(per_tb or {})
        names = {s.name for s in topo.sites} | {r.name for r in topo.regions}
        for n in over:
            if n not in names:
                raise PlanInputError(f"--price: no site or region named {n!r} (known: "
                                f"{', '.join(sorted(names))})")
        for n in tb:
            if n not in {k.name for k in topo.links}:
                raise PlanInputError(f"--price-per-tb: no link named {n!r} (known: "
                                f"{', '.join(k.name for k in topo.links)})")
        site, region = {}, {}
        for i, s in enumerate(topo.sites):
            p = over.get(s.name, s.price)
            if p is None:
                raise PlanInputError(f"site[{i}].price: site {s.name} has no instance-hour "
                                f"price (give it in the preset or --price {s.name}=X)")
            site[s.name] = float(p)
        for i, r in enumerate(topo.regions):
            p = over.get(r.name, r.price)
            if p is None:
                raise PlanInputError(f"region[{i}].price: region {r.name} has no "
                                f"instance-hour price (give it in the preset or --price "
                                f"{r.name}=X)")
            region[r.name] = float(p)
        links = {k.name: float(tb.get(k.name, k.price_per_tb or 0.0)) for k in topo.links}
        return cls(site, region, links)

    def cost_per_hour(self, topo: Topology) -> float:
        return (sum(s.instances * self.site[s.name] for s in topo.sites)
                + sum(r.pool * self.region[r.name] for r in topo.regions)
                + sum(leased(k) * 3600 / TB * self.link_per_tb[k.name] for k in topo.links))

    def describe(self) -> dict:
        return {"site": self.site, "region": self.region, "link_per_tb": self.link_per_tb}
