"""Routing: the selective-offloading rule on incremental length, and the two baselines as modes
of the same rule.

A request goes to PrfaaS iff its incremental (uncached) length exceeds the threshold t. The
prefix-cache hook is `cached_prefix(request, cluster) -> tokens` for cluster "prfaas" or "pd"
(default: none, so the incremental length is the length). With a hook, the paper's
bandwidth-aware rule decides (`emulator.sim.cache_routing.route`: scarce bandwidth routes on the
local increment and moves no cache, abundant routes on the best prefix anywhere); its decision
is kept on the request (`req.route`) for whoever sizes transfers from it.

Paradigms: "prfaas-pd" applies the rule; "homogeneous" sends everything local,
"naive-heterogeneous" everything remote (each reusing its own cluster's prefix).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from emulator.sim.cache_routing import route
from emulator.sim.request import Request

PARADIGMS = ("prfaas-pd", "homogeneous", "naive-heterogeneous")
PrefixLookup = Callable[[Request, str], float]
RECENT = 2048  # incremental lengths kept for the scheduler (the [scheduler] section resizes it)


def check_paradigm(paradigm: str) -> None:
    if paradigm not in PARADIGMS:
        raise ValueError(f"paradigm must be one of {', '.join(PARADIGMS)}, got {paradigm!r}")


class Router:
    __slots__ = ("t", "paradigm", "cached_prefix", "bandwidth_scarce", "recent")

    def __init__(self, t: float, paradigm: str = "prfaas-pd",
                 cached_prefix: PrefixLookup | None = None, bandwidth_scarce: bool = True):
        check_paradigm(paradigm)
        self.t = float(t)
        self.paradigm = paradigm
        self.cached_prefix = cached_prefix
        self.bandwidth_scarce = bandwidth_scarce
        # the last incremental lengths routed (a ring buffer): what the scheduler re-solves on
        self.recent: deque[float] = deque(maxlen=RECENT)

    def remote(self, req: Request) -> bool:
        """Whether the request prefills on PrfaaS; sets `req.incr` (tokens to prefill there)."""
        lookup = self.cached_prefix
        if lookup is None:
            req.incr = req.length
            self.recent.append(req.length)
            if self.paradigm == "prfaas-pd":
                return req.length > self.t
            return self.paradigm == "naive-heterogeneous"
        length = int(req.length)
        pd = min(int(lookup(req, "pd")), length)
        pf = min(int(lookup(req, "prfaas")), length)
        if self.paradigm == "prfaas-pd":
            req.route = decision = route(length, pf, pd, self.t, self.bandwidth_scarce)
            req.incr = decision.incremental
            self.recent.append(req.incr)
            return decision.target == "prfaas"
        to_remote = self.paradigm == "naive-heterogeneous"
        req.incr = length - (pf if to_remote else pd)
        return to_remote
