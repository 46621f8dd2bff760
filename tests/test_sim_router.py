"""Routing on the pair: the threshold policy on incremental length (the 1x1 case of a region's
site policy), the paradigms as modes, and the prefix-cache hook."""

import pytest

from emulator.scenario.presets import load
from emulator.sim.core.request import Request
from emulator.sim.engine import Emulation
from emulator.sim.routing.site_policy import RECENT, ThresholdPolicy

LOCAL, SITE = object(), object()  # the region's PD-P and the pair's one site (stand-ins)


def Router(t, paradigm="prfaas-pd", **kw) -> ThresholdPolicy:  # noqa: N802
    """The pair's policy: one site at share 1."""
    return ThresholdPolicy(t, LOCAL, [SITE], [1.0], paradigm, **kw)


def test_pick_is_the_site_when_remote_else_the_local_stage():
    r = Router(8192)
    assert [r.pick(req(x)) for x in (8192, 8193)] == [LOCAL, SITE]
    alone = ThresholdPolicy(8192, LOCAL, [], [])  # a region with no link keeps everything
    assert alone.pick(req(32768)) is LOCAL


def req(length):
    return Request(1, 0.0, length, 10)


def test_threshold_rule_and_paradigm_modes():
    r = Router(8192)
    assert [r.remote(req(x)) for x in (1024, 8192, 8193, 32768)] == [False, False, True, True]
    r.paradigm = "homogeneous"
    assert not r.remote(req(1e6))
    r.paradigm = "naive-heterogeneous"
    assert r.remote(req(1))
    with pytest.raises(ValueError, match="paradigm must be one of"):
        Router(0, "everything-local")


def test_cached_prefix_hook_routes_on_the_incremental_length():
    cached = {"pd": 28_000, "prfaas": 0}
    r = Router(8192, cached_prefix=lambda rq, cluster: cached[cluster])
    q = req(32768)
    assert not r.remote(q) and q.incr == 32768 - 28_000  # local: only 4.7K left to prefill
    cached.update(pd=0, prfaas=20_000)
    q = req(32768)
    assert r.remote(q) and q.incr == 32768 - 20_000 and q.route.target == "prfaas"
    r.paradigm = "homogeneous"
    q = req(32768)
    assert not r.remote(q) and q.incr == 32768  # PD holds nothing; no cache moves


def test_emulation_prefills_only_the_uncached_part():
    sc = load("toy")
    with Emulation(sc, load=0.5, duration=600, seed=1,
                   cached_prefix=lambda rq, cluster: rq.length - 512 if cluster == "pd" else 0
                   ) as emu:
        j = emu.run().json
    assert j["stages"]["prfaas"]["entered"] == 0  # every increment is 512 tokens: all local
    assert j["stages"]["pd-p"]["entered"] == j["accounting"]["arrived"]


def test_without_a_hook_the_increment_is_the_length_and_is_recorded():
    r = Router(8192)
    lengths = [1024, 9000, 32768]
    for x in lengths:
        q = req(x)
        r.remote(q)
        assert q.incr == x
    assert list(r.recent) == lengths


def test_the_recent_window_is_bounded():
    r = Router(8192)
    for x in range(RECENT + 10):
        r.remote(req(x + 1))
    assert len(r.recent) == RECENT and r.recent[-1] == RECENT + 10


def test_scarce_bandwidth_is_the_default_and_abundant_moves_the_cache():
    """32K prompt, PrfaaS holds 28K of it, PD nothing, t = 8K. Scarce (the default) routes on the
    local increment (32K > t: PrfaaS, prefilling the 4.7K PrfaaS lacks); abundant routes on the
    best prefix anywhere (4.7K <= t: local) and moves the 28K over."""
    cached = {"pd": 0, "prfaas": 28_000}
    hook = lambda rq, cluster: cached[cluster]  # noqa: E731
    q = req(32768)
    assert Router(8192, cached_prefix=hook).remote(q)
    assert q.incr == 32768 - 28_000 and not q.route.transfer_cache
    assert q.route.egress_tokens == 32768
    q = req(32768)
    assert not Router(8192, cached_prefix=hook, bandwidth_scarce=False).remote(q)
    assert q.incr == 32768 - 28_000 and q.route.transfer_cache and q.route.transfer_tokens == 28_000


def test_the_hook_is_asked_about_this_request_and_the_increment_is_recorded():
    asked = []

    def hook(rq, cluster):
        asked.append((rq.rid, str(cluster)))
        return rq.length * 3 // 4 if cluster == "pd" else 0

    r = Router(8192, cached_prefix=hook)
    q = Request(7, 0.0, 20_000, 10)
    assert not r.remote(q)  # 5K left to prefill locally <= t
    assert sorted(asked) == [(7, "pd"), (7, "prfaas")]
    assert q.incr == 5_000 and list(r.recent) == [5_000]


def test_naive_with_a_hook_goes_remote_reusing_prfaas_prefix_only():
    cached = {"pd": 30_000, "prfaas": 2_000}
    r = Router(8192, "naive-heterogeneous", cached_prefix=lambda rq, cluster: cached[cluster])
    q = req(32768)
    assert r.remote(q) and q.incr == 32768 - 2_000
    q = req(100)  # a prefix longer than the prompt is capped at the prompt
    cached.update(prfaas=5_000)
    assert r.remote(q) and q.incr == 0


def test_the_pair_is_the_1x1_case_of_a_regions_wiring_and_policy():
    with Emulation(load("toy"), duration=10, seed=1) as emu:
        region = emu.region
        assert region.policy is emu.router and isinstance(emu.router, ThresholdPolicy)
        assert emu.router.local is emu.pdp and emu.router.sites.targets == [emu.prfaas]
        assert (region.pdp, region.pdd, region.rdma, region.local) == \
            (emu.pdp, emu.pdd, emu.rdma, emu.local)
        assert list(emu.regions) == ["pd"] and list(emu.links) == ["prfaas->pd"]
        assert list(emu.site_pools) == ["prfaas"] and emu.site_pools["prfaas"] is emu.remote
        emu.run_until(10)
        assert emu.arrived > 0 and len(emu.router.recent) == emu.arrived
