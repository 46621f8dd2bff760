"""Cache- and bandwidth-aware routing on cases read off the paper's text (seed, "Short-term:
bandwidth- and cache-aware routing"):

- scarce: "the two clusters are evaluated independently ... if l_total - l_pd <= t, stay local;
  otherwise go remote. No cross-cluster cache transfer is triggered."
- abundant: "l_prefix = max(l_prfaas, l_pd) ... If l_total - l_prefix <= t, the request goes to
  PD-P; otherwise to PrfaaS. If the cache cluster differs from the chosen compute cluster, a
  cross-cluster cache transfer is performed."
"""

from __future__ import annotations

import pytest

from emulator.sim.routing.cache_routing import (
    RouteDecision,
    ScarcityDetector,
    bandwidth_scarce,
    route,
)

T = 10_000
SCARCE, ABUNDANT = True, False

# (l_total, l_prfaas, l_pd, scarce) ->
#   (target, incremental, prefix_used, prefix_cluster, transfer_cache, transfer_tokens, egress)
CASES = [
    # no cache anywhere: the plain length rule, in both modes
    ((30_000, 0, 0, SCARCE), ("prfaas", 30_000, 0, None, False, 0, 30_000)),
    ((8_000, 0, 0, SCARCE), ("pd-p", 8_000, 0, None, False, 0, 0)),
    ((30_000, 0, 0, ABUNDANT), ("prfaas", 30_000, 0, None, False, 0, 30_000)),
    ((10_000, 0, 0, ABUNDANT), ("pd-p", 10_000, 0, None, False, 0, 0)),  # <= t stays local
    # scarce: the decision looks at the local increment only, and never moves cache
    ((30_000, 0, 25_000, SCARCE), ("pd-p", 5_000, 25_000, "pd", False, 0, 0)),
    ((20_000, 0, 10_000, SCARCE), ("pd-p", 10_000, 10_000, "pd", False, 0, 0)),
    # a big PrfaaS cache does not pull the request local: it goes remote and reuses it there
    ((30_000, 25_000, 0, SCARCE), ("prfaas", 5_000, 25_000, "prfaas", False, 0, 30_000)),
    # remote with a smaller remote cache: PrfaaS prefills past its own prefix, sends past l_pd
    ((30_000, 10_000, 15_000, SCARCE), ("prfaas", 20_000, 10_000, "prfaas", False, 0, 15_000)),
    # abundant: the best cache anywhere decides, and moves when it sits on the other side
    ((30_000, 25_000, 0, ABUNDANT), ("pd-p", 5_000, 25_000, "prfaas", True, 25_000, 0)),
    ((30_000, 25_000, 20_000, ABUNDANT), ("pd-p", 5_000, 25_000, "prfaas", True, 5_000, 0)),
    ((20_000, 10_000, 0, ABUNDANT), ("pd-p", 10_000, 10_000, "prfaas", True, 10_000, 0)),
    ((30_000, 0, 25_000, ABUNDANT), ("pd-p", 5_000, 25_000, "pd", False, 0, 0)),
    ((60_000, 0, 40_000, ABUNDANT), ("prfaas", 20_000, 40_000, "pd", True, 40_000, 20_000)),
    ((60_000, 40_000, 0, ABUNDANT), ("prfaas", 20_000, 40_000, "prfaas", False, 0, 60_000)),
    # a tie means the cache is on both sides: nothing moves
    ((30_000, 20_000, 20_000, ABUNDANT), ("pd-p", 10_000, 20_000, "pd", False, 0, 0)),
    ((60_000, 30_000, 30_000, ABUNDANT), ("prfaas", 30_000, 30_000, "prfaas", False, 0, 30_000)),
]


@pytest.mark.parametrize(("args", "want"), CASES)
def test_routing_rule(args, want):
    l_total, l_prfaas, l_pd, scarce = args
    d = route(l_total, l_prfaas, l_pd, T, scarce)
    assert d == RouteDecision(*want)
    assert d.incremental == l_total - d.prefix_used  # only the uncached increment is prefilled
    assert d.transfer_cache == (d.transfer_tokens > 0)
    assert not (scarce and d.transfer_cache)


def test_scarce_protects_the_link_abundant_spends_it():
    """The same request: a cache in PrfaaS only. Scarce sends it remote (its whole KV crosses the
    link after the prefill); abundant pulls the cache local and prefills 5K at PD-P."""
    scarce = route(30_000, 25_000, 0, T, True)
    abundant = route(30_000, 25_000, 0, T, False)
    assert (scarce.target, abundant.target) == ("prfaas", "pd-p")
    assert scarce.incremental == abundant.incremental == 5_000


def test_cached_prefixes_must_fit_the_request():
    with pytest.raises(ValueError):
        route(1_000, 2_000, 0, T, False)
    with pytest.raises(ValueError):
        route(1_000, 0, -1, T, True)


def test_hysteresis_between_two_thresholds():
    det = ScarcityDetector(high=0.85, low=0.65)
    seq = [0.5, 0.84, 0.85, 0.8, 0.66, 0.65, 0.7, 0.9, 0.2]
    assert [det.update(u) for u in seq] == [False, False, True, True, True, False, False, True,
                                            False]
    assert bandwidth_scarce(0.7, was_scarce=True) and not bandwidth_scarce(0.7, was_scarce=False)
    with pytest.raises(ValueError):
        ScarcityDetector(high=0.5, low=0.6)


def test_look_reads_the_utilization_since_the_last_look():
    """A link's cumulative totals in, the window's utilization out; an outage is scarce."""
    det = ScarcityDetector(high=0.85, low=0.65)
    assert det.look(90.0, 100.0) == (True, 0.9)  # 90 of 100 since the start
    assert det.look(150.0, 200.0) == (True, 0.6)  # 60 of the next 100: abundant again
    assert det.look(150.0, 200.0) == (True, 1.0)  # no capacity in between: an outage
    assert det.look(160.0, 300.0) == (True, 0.1)
    assert det.look(200.0, 400.0) == (False, 0.4)
    assert det.changes == 4 and det.last == (200.0, 400.0)
