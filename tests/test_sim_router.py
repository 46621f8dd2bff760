"""Routing: threshold on incremental length, the paradigms as modes, and the prefix-cache hook."""

import pytest

from emulator.scenario.presets import load
from emulator.sim.engine import Emulation
from emulator.sim.request import Request
from emulator.sim.router import Router


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
