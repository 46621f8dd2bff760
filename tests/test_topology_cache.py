"""Prefix caches on a topology: a cache per site and region, best-cache routing on the global
index, cache moves through the links only with headroom, nothing lost."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.scenario.knobs import KnobError
from emulator.scenario.presets import load
from emulator.sim.core.request import Request
from emulator.sim.engine import Emulation
from emulator.sim.routing.cache_runtime import Move

PRESETS = Path(__file__).resolve().parents[1] / "presets"
SESSIONS = ('sessions = { rate = 0.5, turns = 4, think_time = "20 s", system_prompt = "1K", '
            'user_tokens = { kind = "lognormal", mu = 6.5, sigma = 0.8, lo = 16, hi = "8K" } }')


def chat_preset(tmp_path: Path, *, cache: str = 'capacity = "200 GB"', sessions: bool = True,
                extra: str = "") -> Path:
    """toy-two-regions with chat sessions and a prefix cache (8K threshold, 1K blocks of 512)."""
    text = (PRESETS / "toy-two-regions.toml").read_text()
    text = text.replace('name = "toy-two-regions"', 'name = "toy-chat"')
    if sessions:
        text = text.replace('rate = 3.0', f'rate = 3.0\n{SESSIONS}')
    if cache:
        text = text.replace("[emulator]", f"[cache]\n{cache}\n\n[emulator]")
    path = tmp_path / "toy-chat.toml"
    path.write_text(text + extra)
    return path


def run(path: Path, routing: str, duration: float = 300.0) -> dict:
    sc = load(str(path), topology=True)
    with Emulation(sc, routing=routing, duration=duration) as emu:
        out = emu.run().to_json()
    out.pop("timing")
    return out


@pytest.fixture(scope="module")
def chat(tmp_path_factory) -> Path:
    return chat_preset(tmp_path_factory.mktemp("chat"))


@pytest.fixture(scope="module")
def runs(chat) -> dict[str, dict]:
    return {r: run(chat, r) for r in ("threshold", "best-bandwidth", "best-cache")}


@pytest.mark.parametrize("routing", ["threshold", "best-bandwidth", "best-cache"])
def test_every_routing_keeps_the_books_per_region_with_caches(runs, routing):
    out = runs[routing]
    assert out["lost"] == 0
    for name, r in out["regions"].items():
        assert r["lost"] == 0, name
        assert r["arrived"] == r["completed"] + r["in_flight"] + r["rejected"] > 100
    cache = out["cache"]
    assert set(cache["sites"]) == {"hub"} and set(cache["regions"]) == {"east", "west"}
    assert cache["prefill_tokens"]["saved"] > 0.3  # sessions reuse their context everywhere


def test_only_best_cache_moves_caches_and_it_prefills_the_fewest_tokens(runs):
    saved = {r: out["cache"]["prefill_tokens"]["saved"] for r, out in runs.items()}
    assert saved["best-cache"] > saved["best-bandwidth"] + 0.05
    assert saved["best-cache"] > saved["threshold"] + 0.05
    for r, out in runs.items():
        moved = sum(v["moves"]["to_region"] + v["moves"]["to_site"]
                    for v in out["cache"]["links"].values())
        assert (moved > 0) == (r == "best-cache"), r


def test_cache_moves_travel_the_link_and_are_counted_in_its_bytes(runs):
    """A move towards a region is a flow on that link: the link's bytes sent cover it."""
    out = runs["best-cache"]
    seconds = out["simulated_seconds"]
    for name, lk in out["cache"]["links"].items():
        sent = out["links"][name]["gbps"] * seconds / 8e-9
        assert lk["bytes_moved"]["to_region"] > 0
        assert sent >= lk["bytes_moved"]["to_region"]


def test_a_topology_run_with_caches_is_deterministic(chat, runs):
    assert run(chat, "best-cache") == runs["best-cache"]


def test_pinned_scarce_bandwidth_never_moves_a_cache(tmp_path):
    out = run(chat_preset(tmp_path, cache='capacity = "200 GB"\nrouting = "scarce"'),
              "best-cache", duration=200.0)
    assert out["lost"] == 0
    assert all(v["moves"] == {"to_region": 0, "to_site": 0} and not v["headroom"]
               for v in out["cache"]["links"].values())


@pytest.mark.parametrize(("cache", "sessions", "missing"), [
    ("", True, "a [cache] section"), ('capacity = "200 GB"', False, "[workload] sessions"),
    ("", False, "a [cache] section and [workload] sessions")])
def test_best_cache_names_what_the_preset_lacks(tmp_path, cache, sessions, missing):
    sc = load(str(chat_preset(tmp_path, cache=cache, sessions=sessions)), topology=True)
    with pytest.raises(KnobError, match=rf"needs {re.escape(missing)} \(prompts"):
        Emulation(sc, routing="best-cache", duration=10.0)


def test_a_cache_flush_names_a_site_or_region(tmp_path):
    flush = '\n[[incidents]]\nkind = "cache-flush"\ncluster = "{}"\nat = "60 s"\n'
    sc = load(str(chat_preset(tmp_path, extra=flush.format("east"))), topology=True)
    with Emulation(sc, routing="best-cache", duration=120.0) as emu:
        out = emu.run().to_json()
    assert out["cache"]["regions"]["east"]["evicted_blocks"] > 0
    assert out["cache"]["regions"]["west"]["evicted_blocks"] == 0
    assert out["lost"] == 0
    with pytest.raises(ValueError, match=r"incidents\[0\]\.cluster.*no site or region named "
                                         r"'mars'"):
        load(str(chat_preset(tmp_path, extra=flush.format("mars"))), topology=True)


# -- the decision itself, on caches filled by hand ------------------------------------------------
@pytest.fixture
def emu(chat):
    with Emulation(load(str(chat), topology=True), routing="best-cache", duration=10.0) as e:
        yield e


def _req(emu, region: str, blocks: int, length: int) -> Request:
    r = Request(1, 0.0, float(length), 10, list(range(blocks)))
    r.dest = emu.regions[region]
    return r


BT = 512


def test_a_short_increment_prefills_locally_with_the_site_cache_moved_over(emu):
    tc = emu.topology.cache
    tc.caches["hub"].insert(list(range(40)), 40 * BT)  # the hub holds 20K tokens of context
    req = _req(emu, "east", 41, 40 * BT + 100)
    stage = emu.regions["east"].policy.pick(req)
    assert stage is emu.regions["east"].pdp
    assert req.route == Move("hub", "east", 40 * BT, 0, emu.links["hub->east"])


def test_without_headroom_the_site_cache_stays_and_the_request_goes_to_it(emu):
    tc = emu.topology.cache
    tc.caches["hub"].insert(list(range(40)), 40 * BT)
    tc.link("hub", "east").detector.scarce = True
    req = _req(emu, "east", 41, 40 * BT + 100)
    assert emu.regions["east"].policy.pick(req) is emu.sites["hub"].stage
    assert req.route is None  # the hub computes with its own prefix: nothing moves


def test_a_long_increment_goes_to_the_site_with_the_region_cache_moved_up(emu):
    tc = emu.topology.cache
    tc.caches["west"].insert(list(range(8)), 8 * BT)  # 4K at the region, 16K new on top
    req = _req(emu, "west", 40, 40 * BT)
    assert emu.regions["west"].policy.pick(req) is emu.sites["hub"].stage
    lc = tc.link("hub", "west")
    assert req.route == Move("west", "hub", 8 * BT, 0, lc.reverse)


def test_no_prefix_anywhere_is_the_best_bandwidth_rule(emu):
    region = emu.regions["east"]
    req = _req(emu, "east", 40, 40 * BT)
    assert region.policy.pick(req) is region.policy.fallback.pick(_req(emu, "east", 40, 40 * BT))
    assert req.route is None


def test_a_region_switches_to_best_cache_live_only_where_caches_run(chat, tmp_path):
    from emulator.sim.routing.site_policy import BestCachePolicy
    from emulator.sim.runtime.topology_live import set_region

    with Emulation(load(str(chat), topology=True), duration=60.0) as emu:
        emu.run_until(30.0)
        set_region(emu, "east", routing="best-cache")
        assert isinstance(emu.regions["east"].policy, BestCachePolicy)
        emu.run()
        cache = emu.topology.cache
        assert cache.to_json()["links"]["hub->east"]["moves"]["to_region"] > 0
        # the pair's runtime at a topology's shape: no transfer cache, the global index
        assert not cache.transfer_cache and cache.index is not None and cache.detached == 0
        assert cache.link("hub", "east").reverse is emu.links["hub->east"].mirror
    bare = chat_preset(tmp_path, cache="", sessions=False)
    with Emulation(load(str(bare), topology=True), duration=60.0) as emu, \
            pytest.raises(KnobError, match="needs a \\[cache\\] section and"):
        set_region(emu, "east", routing="best-cache")


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), routing=st.sampled_from(["threshold", "best-bandwidth",
                                                              "best-cache"]),
       capacity=st.sampled_from(["2 GB", "20 GB", "200 GB"]),
       pin=st.sampled_from(["auto", "abundant"]), loss=st.booleans())
def test_nothing_is_lost_with_small_caches_moves_and_a_site_loss(tmp_path_factory, seed, routing,
                                                                capacity, pin, loss):
    """Evictions (a 2 GB pool holds a handful of prompts), forced moves and the hub losing an
    instance mid-prefill: every region's books still balance."""
    extra = ('\n[[incidents]]\nkind = "site-loss"\nsite = "hub"\ncount = 1\nat = "20 s"\n'
             'duration = "20 s"\n') if loss else ""
    path = chat_preset(tmp_path_factory.mktemp("h"), extra=extra,
                       cache=f'capacity = "{capacity}"\nrouting = "{pin}"')
    with Emulation(load(str(path), topology=True), seed=seed, routing=routing,
                   duration=60.0) as emu:
        out = emu.run().to_json()
        for cache in emu.topology.cache.caches.values():
            cache.check()
    assert out["lost"] == 0
    assert all(r["lost"] == 0 for r in out["regions"].values())
