"""The checks of a topology's per-element knobs (a region's t, N_p/N_d and routing policy, a
site's instances, a link's bandwidth): the single-pair `Controls.validate` on the pair view of
the element (`Topology.pair_system`), so a topology knob has the same range and the same
one-line `KnobError` as the pair's."""

from __future__ import annotations

from dataclasses import replace

from emulator.scenario.knobs import Controls, KnobError
from emulator.topology.spec import ROUTINGS, Topology


def best_cache_problem(sim) -> str | None:
    """Why best-cache routing cannot run on a preset with this [emulator]/[workload] config
    (None: it can): it routes by what the prefix caches hold, so it needs caches and prompts
    that share prefixes."""
    missing = [w for w, gone in (("a [cache] section", sim.cache is None),
                                 ("[workload] sessions", sim.sessions is None)) if gone]
    if not missing:
        return None
    return (f"best-cache routes by what the prefix caches hold: the preset needs "
            f"{' and '.join(missing)} (prompts that share prefixes); or use best-bandwidth, lp "
            f"or threshold")


def _pair(topo: Topology, region: str, site: str | None = None) -> Controls:
    """The pair view's controls at the preset's settings (checked fields are replaced)."""
    r = topo.region(region)
    links = topo.links_of_region(region)
    link = next((k for k in links if k.site == site), links[0] if links else None)
    n_prfaas = topo.site(link.site).instances if link is not None else 0
    bw = link.bandwidth if link is not None else 1.0
    return Controls(t=r.threshold, n_p=r.n_p, n_d=r.n_d, n_prfaas=n_prfaas, bandwidth=bw)


def check_region(topo: Topology, region: str, *, t: float | None = None, n_p: int | None = None,
                 n_d: int | None = None, routing: str | None = None,
                 has_bound: bool = True, shares: dict[str, float] | None = None,
                 cache_problem: str | None = None) -> None:
    """KnobError unless the region can run at these settings (None: unchanged)."""
    r = topo.region(region)
    c = _pair(topo, region)
    c = replace(c, t=r.threshold if t is None else t, n_p=r.n_p if n_p is None else n_p,
                n_d=r.n_d if n_d is None else n_d)
    c.validate(topo.pair_system(region))
    if routing is not None:
        if routing not in ROUTINGS:
            raise KnobError("routing", f"routing must be one of {', '.join(ROUTINGS)} "
                                       f"(got {routing!r})")
        if routing == "lp" and not has_bound:
            raise KnobError("routing", "lp needs the routing bound")
        if routing == "best-cache" and cache_problem is not None:
            raise KnobError("routing", cache_problem)


def check_site(topo: Topology, site: str, instances: int) -> None:
    """KnobError unless the site can run `instances` prefill instances."""
    links = topo.links_of_site(site)
    if not links:
        raise KnobError("instances", f"site {site} has no link: nothing reaches it")
    k = links[0]
    c = replace(_pair(topo, k.region, site), n_prfaas=instances)
    try:
        c.validate(topo.pair_system(k.region, site))
    except KnobError as exc:
        raise KnobError("instances", exc.reason.replace("n_prfaas", "instances")) from None


def check_link(topo: Topology, link: str, bandwidth: float) -> None:
    """KnobError unless the link can run at `bandwidth` bytes/s."""
    site, region = link.split("->", 1)
    c = replace(_pair(topo, region, site), bandwidth=bandwidth)
    c.validate(topo.pair_system(region, site))
