"""Bandwidth- and cache-aware routing, as the paper states it (seed, "Short-term: bandwidth- and
cache-aware routing").

With cached prefixes l_prfaas and l_pd of a request of l_total tokens:
- scarce bandwidth (egress near capacity): the clusters are evaluated independently and the
  link is protected. Route on the LOCAL increment: l_total - l_pd <= t stays local (PD-P),
  otherwise PrfaaS. No cache crosses the link. A request sent to PrfaaS still reuses whatever
  PrfaaS holds itself (that costs no link), so it prefills l_total - l_prfaas there: the paper's
  "prefilled at whichever cluster has the most cache" read as "each cluster uses its own cache".
- abundant bandwidth: l_prefix = max(l_prfaas, l_pd), the best cache anywhere; route on
  l_total - l_prefix (<= t: PD-P, else PrfaaS). When the best cache sits in the other cluster
  than the one chosen to compute, it is moved over the link first (opportunistically): only the
  blocks the destination lacks, l_prefix - (the destination's own prefix), plus the state.
Only the uncached increment is prefilled. Ties (l_prfaas == l_pd) never move cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

Target = Literal["prfaas", "pd-p"]
Cluster = Literal["prfaas", "pd"]


class RouteDecision(NamedTuple):
    target: Target  # where the prefill runs
    incremental: int  # tokens prefilled (l_total - prefix_used)
    prefix_used: int  # cached tokens the prefill reuses (after any move)
    prefix_cluster: Cluster | None  # where that cache sat before the decision (None: no reuse)
    transfer_cache: bool  # move prefix KV from prefix_cluster to the compute cluster first
    transfer_tokens: int  # full-attention tokens moved (the state always goes with them)
    egress_tokens: int  # after a PrfaaS prefill: tokens of KV that PD-D lacks (l_total - l_pd)


def route(l_total: int, l_prfaas: int, l_pd: int, t: float, bandwidth_scarce: bool) -> RouteDecision:
    """The routing rule; pure. `egress_tokens` is the KV the PrfaaS -> PD transfer must carry:
    the increment, plus any prefix PrfaaS reused that the PD cluster does not hold (the decode
    side needs the KV of every token; transfer-cache blocks are discarded after the transfer, so
    PD keeps no copy of remote prefills). The engine sizes that flow as
    layout.kv_bytes(egress_tokens)."""
    if not (0 <= l_prfaas <= l_total and 0 <= l_pd <= l_total):
        raise ValueError(f"cached prefixes must lie in [0, l_total]: {l_prfaas}, {l_pd}, {l_total}")
    if bandwidth_scarce:
        if l_total - l_pd <= t:
            return RouteDecision("pd-p", l_total - l_pd, l_pd, "pd" if l_pd else None, False, 0, 0)
        return RouteDecision("prfaas", l_total - l_prfaas, l_prfaas, "prfaas" if l_prfaas else None,
                             False, 0, l_total - l_pd)
    prefix = max(l_prfaas, l_pd)
    local = l_total - prefix <= t
    own, other = (l_pd, l_prfaas) if local else (l_prfaas, l_pd)
    home: Cluster = ("pd" if local else "prfaas") if own >= other else ("prfaas" if local else "pd")
    move = other > own  # the best cache sits across the link: bring it over
    return RouteDecision("pd-p" if local else "prfaas", l_total - prefix, prefix,
                         home if prefix else None, move, other - own if move else 0,
                         0 if local else l_total - l_pd)


@dataclass
class ScarcityDetector:
    """Scarce vs abundant from observed PrfaaS egress utilization (0..1), with hysteresis so the
    routing mode does not flap: scarce from `high` up, abundant again only at `low` or below.
    The paper gives no numbers; 0.85 / 0.65 are this project's defaults."""

    high: float = 0.85
    low: float = 0.65
    scarce: bool = False
    changes: int = 0  # mode flips so far
    last: tuple[float, float] = (0.0, 0.0)  # a link's (bytes sent, capacity x s) at the last look

    def __post_init__(self) -> None:
        if not 0 <= self.low < self.high:
            raise ValueError(f"need 0 <= low < high, got low={self.low}, high={self.high}")

    def update(self, utilization: float) -> bool:
        self.scarce = bandwidth_scarce(utilization, self.scarce, self.high, self.low)
        return self.scarce

    def look(self, sent: float, cap: float) -> tuple[bool, float]:
        """Feed a link's cumulative (bytes sent, capacity x seconds): the utilization since the
        last look decides the mode (an outage, no capacity, counts as scarce). Returns (whether
        the mode flipped, that utilization)."""
        d_sent, d_cap = sent - self.last[0], cap - self.last[1]
        self.last = (sent, cap)
        util = d_sent / d_cap if d_cap > 0 else 1.0
        was = self.scarce
        flipped = self.update(util) != was
        self.changes += flipped
        return flipped, util


def bandwidth_scarce(utilization: float, was_scarce: bool, high: float = 0.85,
                     low: float = 0.65) -> bool:
    """The hysteresis step, pure: enter scarce at >= high, leave it at <= low."""
    if was_scarce:
        return utilization > low
    return utilization >= high
