"""The prefix cache wired into the emulation: multi-turn sessions hit, only the increment is
prefilled, abundant bandwidth moves caches over the link and scarce does not, the transfer cache
never loses a request, flushes, determinism."""

from __future__ import annotations

import pytest
from test_sim_cache_support import cache_preset

from emulator.sim.books.snapshot import CacheView
from emulator.sim.engine import Emulation


def observe_prefills(emu: Emulation) -> list[tuple[float, float, float, str]]:
    """(length, incremental, service, stage) of every request entering a prefill stage."""
    seen: list[tuple[float, float, float, str]] = []
    for stage in (emu.prfaas, emu.pdp):
        def submit(req, _stage=stage, _submit=stage.submit):
            _submit(req)
            seen.append((req.length, req.incr, req.service, _stage.name))
        stage.submit = submit
    return seen


def test_sessions_hit_and_only_the_increment_is_prefilled(tmp_path):
    sc = cache_preset(tmp_path)
    with Emulation(sc) as emu:
        seen = observe_prefills(emu)
        for t in range(60, 600, 60):  # accounting holds all along, not only at the end
            emu.run_until(t)
            assert emu.accounting.balanced
        result = emu.run()
        snap = emu.snapshot()
    acc = result.accounting
    assert acc.lost == 0 and acc.arrived == acc.completed + acc.in_flight + acc.rejected_total
    assert acc.arrived > 150
    cache = result.to_json()["cache"]
    assert cache["clusters"]["pd"]["token_hit_rate"] > 0.3
    assert 0 < cache["prefill_tokens"]["saved"] < 1
    # through the engine: increments never exceed the prompt, most later turns are shorter,
    # and the service time is T(increment), not T(length)
    assert all(0 < incr <= length for length, incr, _, _ in seen)
    shorter = sum(incr < length for length, incr, _, _ in seen)
    assert shorter > 0.5 * len(seen)
    t_prefill = {"prfaas": emu.prfaas.costs.t_prefill, "pd-p": emu.pdp.costs.t_prefill}
    assert all(s == pytest.approx(max(t_prefill[st](incr), 0.0)) for _, incr, s, st in seen)
    assert sum(incr for _, incr, _, _ in seen) == pytest.approx(cache["prefill_tokens"]["computed"])
    assert isinstance(snap.cache, CacheView) and set(snap.cache.clusters) == {"prfaas", "pd"}
    assert snap.cache.clusters["pd"].token_hit_rate == pytest.approx(
        cache["clusters"]["pd"]["token_hit_rate"])


def moves(tmp_path, name: str, **kw) -> tuple[dict, Emulation, list[tuple[float, float]]]:
    """The run's cache JSON, the emulation, and (size, production time) of every flow opened
    on the PrfaaS -> PD link."""
    sc = cache_preset(tmp_path, name, **kw)
    with Emulation(sc) as emu:
        opened: list[tuple[float, float]] = []
        link_open = emu.link.open

        def spy(size, prod_time, *rest):
            opened.append((size, prod_time))
            return link_open(size, prod_time, *rest)

        emu.link.open = spy
        result = emu.run()
    assert result.accounting.lost == 0
    return result.to_json()["cache"], emu, opened


def test_abundant_bandwidth_moves_caches_scarce_does_not(tmp_path):
    abundant, _, opened = moves(tmp_path, "abundant",
                                cache='capacity = "1 TiB"\nrouting = "abundant"')
    out = abundant["clusters"]["prfaas"]
    assert out["cache_transfers"] > 5 and out["bytes_moved"] > 0
    # the moves were real flows on the PrfaaS -> PD link (all bytes ready: production time 0),
    # next to the KV transfers (produced while prefill runs)
    moved = [size for size, prod_time in opened if prod_time == 0]
    assert len(moved) == out["cache_transfers"]
    assert sum(moved) == pytest.approx(out["bytes_moved"])
    assert len(opened) > len(moved)
    scarce, _, opened = moves(tmp_path, "scarce", cache='capacity = "1 TiB"\nrouting = "scarce"')
    assert all(c["cache_transfers"] == 0 for c in scarce["clusters"].values())
    assert all(prod_time > 0 for _, prod_time in opened)
    assert scarce["clusters"]["prfaas"]["token_hit_rate"] > 0  # PrfaaS reuses its own cache


def test_the_detector_turns_scarce_on_a_thin_link_and_moves_stop(tmp_path):
    wide, _, _ = moves(tmp_path, "wide")
    thin, emu, _ = moves(tmp_path, "thin", bandwidth="60 MB/s")
    assert wide["mode_changes"] == 0 and not wide["scarce"]
    assert thin["mode_changes"] >= 1 and thin["scarce"]
    assert any("cache routing -> scarce" in d for d in emu.decisions)
    n_wide = wide["clusters"]["prfaas"]["cache_transfers"]
    assert thin["clusters"]["prfaas"]["cache_transfers"] < n_wide / 3


def test_a_full_transfer_cache_holds_requests_and_loses_none(tmp_path):
    sc = cache_preset(tmp_path, bandwidth="100 MB/s", cache='capacity = "3 GB"')
    with Emulation(sc) as emu:
        for t in range(30, 601, 30):
            emu.run_until(t)
            acc = emu.accounting
            assert acc.balanced and acc.lost == 0
            pf = emu.cache.caches["prfaas"]
            pf.check()
            assert pf.pinned_blocks <= pf.capacity_blocks
        stats = emu.cache.caches["prfaas"].stats
        assert stats.transfers > 0 and stats.transfer_failures > 0  # both paths taken
        emu.run_until(20_000)  # the sessions are over: everything drains
        acc = emu.accounting
        assert acc.in_flight == 0 and acc.completed == acc.arrived
        assert emu.cache.caches["prfaas"].pinned_blocks == 0 and emu.cache.holding == 0


def test_the_pairs_cache_is_the_1x1_topologys(tmp_path):
    """One cache runtime: the pair's is a site "prfaas" and a region "pd" joined by its one link
    (the reverse direction the engine's reverse link), the moves its JSON counts per cluster
    are that link's, and only the pair detaches KV tails into the transfer cache."""
    with Emulation(cache_preset(tmp_path, bandwidth="200 MB/s")) as emu:
        cache = emu.cache
        assert cache.kind == {"prfaas": "site", "pd": "region"}
        assert cache.cluster_of == {emu.prfaas: "prfaas", emu.pdp: "pd"}
        (lc,) = cache.links.values()
        assert lc.forward is emu.link and lc.reverse is emu.reverse_link
        assert emu.link.mirror is emu.reverse_link and cache.link("prfaas", "pd") is lc
        assert cache.transfer_cache and cache.index is None
        out = emu.run().json["cache"]
    assert out["clusters"]["prfaas"]["cache_transfers"] == lc.moves["to_region"] > 0
    assert out["clusters"]["pd"]["cache_transfers"] == lc.moves["to_site"]
    assert out["mode_changes"] == lc.detector.changes


def test_flush_cache(tmp_path):
    with Emulation(cache_preset(tmp_path)) as emu:
        emu.run_until(400)
        pd = emu.cache.caches["pd"]
        assert pd.used_blocks > 0
        before = pd.stats.evicted_blocks
        assert emu.flush_cache("pd") == 1
        assert pd.used_blocks == pd.pinned_blocks and pd.stats.evicted_blocks > before
        assert emu.cache.caches["prfaas"].used_blocks > 0
        assert emu.flush_cache() == 2 and emu.cache_flushes == 2
        with pytest.raises(ValueError, match="cluster must be one of"):
            emu.flush_cache("pd-p")
        emu.run()
    with Emulation(cache_preset(tmp_path, "none", cache=None)) as emu:
        assert emu.cache is None and emu.flush_cache() == 0
        assert emu.snapshot().cache is None


def test_same_seed_same_run(tmp_path):
    def run(seed: int) -> dict:
        with Emulation(cache_preset(tmp_path), seed=seed) as emu:
            out = emu.run().to_json()
        out.pop("timing")
        return out

    first = run(3)
    assert first == run(3)
    assert first["cache"] != run(4)["cache"]


def test_cache_and_a_prefix_hook_are_exclusive(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        Emulation(cache_preset(tmp_path), cached_prefix=lambda req, cluster: 0)
