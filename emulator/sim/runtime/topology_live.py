"""A running topology's live state and its per-element knobs.

`live_state(emu)` reads what the topology runs now (`emulator.topology.live.LiveState`): alive
instances per site, each link's bandwidth knob and the share of it its incidents leave, each
site's egress now, each region's threshold, alive split and long-request shares.

`set_region`, `set_site` and `set_link` turn one element's knob on the running emulation at the
current simulated time, checked first by `emulator.scenario.knobs.check_element` (a
`KnobError` and nothing changed when it cannot run); each change is noted in the decision log.
Role changes drain as the pair's do, nothing is lost.
"""

from __future__ import annotations

import math
from dataclasses import replace

from emulator.scenario.knobs import KnobError, best_cache_problem, check_element, retuned
from emulator.sim.routing.site_policy import ThresholdPolicy
from emulator.topology.live import LiveState
from emulator.topology.spec import Topology
from emulator.units import to_gbps


def _alive(pool, role: str) -> int:
    return pool.count(role) - pool.failed(role)


def live_state(emu) -> LiveState:
    """What the emulation's topology runs now."""
    rt = emu.topology
    topo: Topology = rt.topo
    sites = tuple((n, _alive(s.pool, "prfaas"),
                   s.egress.capacity if topo.site(n).egress is not None else None)
                  for n, s in rt.sites.items())
    links = tuple((n, lk.bandwidth, math.prod(lk.factors.values()))
                  for n, lk in rt.links.items())
    regions = []
    for n, r in rt.regions.items():
        t = getattr(r.policy, "t", topo.region(n).threshold)
        shares = region_shares(emu, n)
        regions.append((n, float(t), _alive(r.local, "pd-p"), _alive(r.local, "pd-d"), shares))
    return LiveState(sites, links, tuple(regions))


def running_spec(emu) -> Topology:
    """The topology's spec at its knobs now (thresholds, splits, instances and bandwidths as
    configured, alive or not): what the knob checks see."""
    rt = emu.topology
    topo: Topology = rt.topo
    regions = tuple(replace(r, threshold=float(getattr(rt.regions[r.name].policy, "t",
                                                        r.threshold)),
                            n_p=rt.regions[r.name].local.count("pd-p"),
                            n_d=rt.regions[r.name].local.count("pd-d"))
                    for r in topo.regions)
    sites = tuple(replace(s, instances=rt.sites[s.name].pool.count("prfaas"))
                  for s in topo.sites)
    links = tuple(replace(k, bandwidth=rt.links[k.name].bandwidth,
                          transport=rt.links[k.name].transport,
                          line=k.line if rt.links[k.name].transport is None
                          else rt.links[k.name].line) for k in topo.links)
    return replace(topo, sites=sites, regions=regions, links=links)


def region_shares(emu, region: str) -> tuple[float, ...]:
    """The part of the region's long requests each of its links takes (threshold policy)."""
    r = emu.topology.region(region)
    links = emu.topology.topo.links_of_region(region)
    own = getattr(r, "long_shares", None)
    return tuple(own[k.site] if own else k.long_share for k in links)


def region_routing(emu, region: str) -> str:
    r = emu.topology.region(region)
    return getattr(r.policy, "name", emu.topology.routing)


def set_region(emu, region: str, *, t: float | None = None, n_p: int | None = None,
               n_d: int | None = None, routing: str | None = None,
               shares: dict[str, float] | None = None) -> None:
    """A region's threshold, split, site policy and (threshold policy) the shares of its long
    requests per site (None: unchanged)."""
    rt = emu.topology
    r = rt.region(region)
    spec = running_spec(emu)
    check_element(spec, "region", region, t=t, n_p=n_p, n_d=n_d, routing=routing,
                  has_bound=emu.bound is not None,
                  cache_problem=best_cache_problem(emu.scenario.sim))
    now = spec.region(region)
    if routing is not None and routing != region_routing(emu, region):
        r.policy = rt._policy(replace(now, threshold=now.threshold if t is None else t),
                              routing, emu.bound)
        if routing == "threshold" and getattr(r, "long_shares", None):
            links = rt.topo.links_of_region(region)
            r.policy = ThresholdPolicy(r.policy.t, r.pdp, [rt.sites[k.site].stage for k in links],
                                       [r.long_shares[k.site] for k in links])
        emu.note(f"{region}: routing -> {routing}")
    if shares is not None:
        links = rt.topo.links_of_region(region)
        total = sum(max(shares.get(k.site, 0.0), 0.0) for k in links)
        if not links or not total > 0:
            raise KnobError("shares", f"{region}: the long-request shares must name its sites "
                                      "and sum to more than 0")
        r.long_shares = {k.site: max(shares.get(k.site, 0.0), 0.0) / total for k in links}
        if isinstance(r.policy, ThresholdPolicy):
            r.policy = ThresholdPolicy(r.policy.t, r.pdp, [rt.sites[k.site].stage for k in links],
                                       [r.long_shares[k.site] for k in links])
    if t is not None and t != now.threshold and hasattr(r.policy, "t"):
        r.policy.t = float(t)
        emu.note(f"{region}: threshold -> {t:.0f} tokens")
    split = (now.n_p if n_p is None else n_p, now.n_d if n_d is None else n_d)
    if split != (now.n_p, now.n_d):
        if sum(split) > r.local.size:
            r.local.resize(sum(split))
        r.local.set_counts({"pd-p": split[0], "pd-d": split[1]})
        emu.note(f"{region}: split -> N_p {split[0]} / N_d {split[1]}")


def set_site(emu, site: str, instances: int) -> None:
    """A site's prefill instances (more than it has: new machines join at once)."""
    rt = emu.topology
    s = rt.site(site)
    check_element(running_spec(emu), "site", site, instances=instances)
    if instances == s.pool.count("prfaas"):
        return
    s.pool.resize(max(s.pool.size, instances))
    s.pool.set_counts({"prfaas": instances})
    s.instances = instances
    emu.note(f"{site}: instances -> {instances}")


def set_link(emu, link: str, bandwidth: float | None = None, loss: float | None = None,
             connections: int | None = None) -> None:
    """A link's bandwidth knob, bytes/s, or its TCP's loss and connections (its goodput
    recomputed: `emulator.scenario.knobs.retuned`); its incidents' shares stay in force."""
    rt = emu.topology
    lk = rt.link(link)
    check_element(running_spec(emu), "link", link, bandwidth=bandwidth, loss=loss,
                  connections=connections)
    if loss is not None or connections is not None:
        k = retuned(running_spec(emu).link(*link.split("->", 1)), bandwidth, loss, connections)
        lk.set_transport(k.line if k.line is not None else k.bandwidth, k.transport)
        bandwidth = k.bandwidth
        emu.note(f"{link}: loss {k.transport.loss:g}, {k.transport.n} connections -> goodput "
                 f"{to_gbps(k.bandwidth):.3g} Gbps ({k.goodput.cap}-capped)")
    if bandwidth is None or bandwidth == lk.bandwidth:
        lk.egress.rebalance()
        return
    lk.bandwidth = float(bandwidth)
    lk.group.rebalance()  # its site's egress, or the link alone
    emu.note(f"{link}: bandwidth -> {to_gbps(bandwidth):.2f} Gbps")
