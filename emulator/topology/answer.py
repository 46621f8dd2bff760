"""What `solve` says about a topology: the routing bound, the best threshold policy beside it
with the gap and why, the preset's own policy, and per-region TTFT (the JSON object
`topology`)."""

from __future__ import annotations

import math

import numpy as np

from emulator.topology.bins import MAX_BINS
from emulator.topology.bound import Bound, routing_bound
from emulator.topology.policy import PolicyPoint, evaluate_policy, preset_settings, search_policy
from emulator.topology.spec import Link, Topology
from emulator.topology.ttft import region_latency
from emulator.units import to_gbps

SMALL_GAP = 1e-3
NOTABLE = 5e-4  # a part of a region's requests worth a reason (0.05%)


def gap_reasons(topo: Topology, bound: Bound, policy: PolicyPoint) -> list[str]:
    """Why the bound exceeds the best threshold policy, read off the two routings."""
    if bound.lambda_max <= 0:
        return ["nothing is served: Lambda is 0 for every routing"]
    gap = (bound.lambda_max - policy.lambda_max) / bound.lambda_max
    if gap < SMALL_GAP:  # the routings' differences then lie in regions with slack: noise
        return [f"the gap is {gap:.3%}: the threshold rule is as good as any routing here, up "
                "to where its threshold grid can cut (the bound may cut inside a length bin)"]
    out = []
    for r in topo.regions:
        rr, s = bound.routing[r.name], policy.settings[r.name]
        remote = 1.0 - rr.local
        mixed = float(np.dot(rr.bins.prob, np.minimum(remote, rr.local) > 1e-6))
        below = rr.bins.hi <= s.t + 1e-9
        short_remote = float(np.dot(rr.bins.prob[below], remote[below]))
        long_local = float(np.dot(rr.bins.prob[~below], rr.local[~below]))
        if short_remote > NOTABLE:
            out.append(f"{r.name}: the bound sends {short_remote:.1%} of its requests, shorter "
                       f"than the policy's threshold, to a site (they ship less KV per second "
                       "of saved compute)")
        if long_local > NOTABLE:
            out.append(f"{r.name}: the bound keeps {long_local:.1%} of its requests, longer than "
                       "the policy's threshold, local (a threshold sends all of them out)")
        if mixed > NOTABLE and short_remote <= NOTABLE and long_local <= NOTABLE:
            out.append(f"{r.name}: the bound splits one length bin ({mixed:.1%} of its requests) "
                       "between local and remote: a cut between the policy's grid thresholds")
        if (bound.n_p[r.name], bound.n_d[r.name]) != (s.n_p, s.n_d):
            out.append(f"{r.name}: the bound's split N_p/N_d = {bound.n_p[r.name]}/"
                       f"{bound.n_d[r.name]}, the policy's {s.n_p}/{s.n_d}")
    return out


def link_dict(k: Link, bound: Bound) -> dict:
    """A link as `solve --json` shows it: its line rate, what its TCP carries (the goodput the
    bound uses) and what caps it; where its connections cap it, what one more is worth (the
    link row's price x one connection's rate, req/s)."""
    g = k.goodput
    out = {"bandwidth_gbps": to_gbps(k.bandwidth if k.line is None else k.line), "rtt_s": k.rtt,
           "long_share": k.long_share, "goodput_gbps": to_gbps(g.bytes_per_s),
           "per_connection_gbps": to_gbps(g.per_connection) if math.isfinite(g.per_connection)
           else None, "cap": g.cap}
    if k.transport is not None:
        out |= {"loss": k.transport.loss, "connections": k.transport.n, "mss": k.transport.mss,
                "window": k.transport.window}
    if g.cap != "line":
        price = bound.shadow_prices.get(f"link:{k.name}", 0.0)
        out["connection_price"] = round(price * to_gbps(g.per_connection), 9)
    return out


def topology_answer(topo: Topology, *, rate: float | None = None, load: float = 0.9,
                    rdma_latency: float = 0.0, target: float | None = None, q: float = 0.9,
                    max_bins: int = MAX_BINS) -> dict:
    """The `topology` object of `solve --json`. `rate`: the total offered rate the TTFT is
    predicted at (default `load` x the best policy's Lambda)."""
    # one region: its step is the exhaustive search, no rounded start needed
    first = routing_bound(topo, max_bins=max_bins) if len(topo.regions) > 1 else None
    policy, rounds = search_policy(topo, first)
    edges = {name: [s.t] for name, s in policy.settings.items()}
    bound = routing_bound(topo, edges=edges, max_bins=max_bins)  # contains the policy
    declared = evaluate_policy(topo, preset_settings(topo), policy.stats)
    offered = rate if rate is not None else load * policy.lambda_max
    latency = region_latency(topo, policy, offered, rdma_latency=rdma_latency, target=target, q=q)
    pol = policy.to_dict(bound)
    pol["coordinate_rounds"] = rounds
    pol["ttft"] = {"offered_rate": offered, "target_s": target, "quantile": q if target else None,
                   "regions": {k: v.to_dict() for k, v in latency.items()}}
    pre = declared.to_dict(bound)
    return {
        "sites": {s.name: {"instances": s.instances, "gpus": s.gpus,
                           "egress_gbps": None if s.egress is None else to_gbps(s.egress)}
                  for s in topo.sites},
        "regions": {r.name: {"share": r.share, "pool": r.pool, "gpus": r.gpus,
                             "threshold": r.threshold, "n_p": r.n_p, "n_d": r.n_d}
                    for r in topo.regions},
        "links": {k.name: link_dict(k, bound) for k in topo.links},
        "gpus": topo.gpus,
        "routing_policy": topo.routing,
        "bound": bound.to_dict(),
        "threshold_policy": pol,
        "preset_policy": pre,
        "gap": pol["gap_to_bound"],
        "gap_reasons": gap_reasons(topo, bound, policy),
    }
