"""Routing: the selective-offloading rule on incremental length, and the two baselines as modes
of the same rule.

A request goes to PrfaaS iff its incremental (uncached) length exceeds the threshold t. The
prefix-cache hook is `cached_prefix(request, cluster) -> tokens` for cluster "prfaas" or "pd"
(default: none, so the incremental length is the length). With a hook, the paper's
bandwidth-aware rule decides (`emulator.sim.cache_routing.route`: scarce bandwidth routes on the
local increment and moves no cache, abundant routes on the best prefix anywhere); its decision
is kept on the request (`req.route`) for whoever sizes transfers from it.

The paradigm decides the rule (`emulator.paradigm`): PrfaaS-PD applies the threshold,
homogeneous sends everything local, naive heterogeneous everything remote (each reusing its own
cluster's prefix).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from emulator.model import Cluster
from emulator.paradigm import Paradigm
from emulator.sim.cache_routing import route
from emulator.sim.request import Request

PrefixLookup = Callable[[Request, str], float]
RECENT = 2048  # incremental lengths kept for the scheduler (the [scheduler] section resizes it)


class Router:
    __slots__ = ("t", "_paradigm", "_rule", "cached_prefix", "bandwidth_scarce", "recent")

    def __init__(self, t: float, paradigm: Paradigm | str = Paradigm.PRFAAS_PD,
                 cached_prefix: PrefixLookup | None = None, bandwidth_scarce: bool = True):
        self.t = float(t)
        self.paradigm = paradigm
        self.cached_prefix = cached_prefix
        self.bandwidth_scarce = bandwidth_scarce
        # the last incremental lengths routed (a ring buffer): what the scheduler re-solves on
        self.recent: deque[float] = deque(maxlen=RECENT)

    @property
    def paradigm(self) -> Paradigm:
        return self._paradigm

    @paradigm.setter
    def paradigm(self, paradigm: Paradigm | str) -> None:
        """ValueError for a name that is no paradigm."""
        self._paradigm = Paradigm(paradigm)
        self._rule = self._paradigm.behaviour.rule  # looked up once: remote() is hot

    def remote(self, req: Request) -> bool:
        """Whether the request prefills on PrfaaS; sets `req.incr` (tokens to prefill there)."""
        lookup = self.cached_prefix
        if lookup is None:
            req.incr = req.length
            self.recent.append(req.length)
            return self._rule(req.length, self.t)
        length = int(req.length)
        pd = min(int(lookup(req, Cluster.PD)), length)
        pf = min(int(lookup(req, Cluster.PRFAAS)), length)
        if self._paradigm.threshold_routing:
            req.route = decision = route(length, pf, pd, self.t, self.bandwidth_scarce)
            req.incr = decision.incremental
            self.recent.append(req.incr)
            return decision.target == Cluster.PRFAAS
        to_remote = self._rule(length, self.t)
        req.incr = length - (pf if to_remote else pd)
        return to_remote
