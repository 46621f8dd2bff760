"""The short timescale: re-solving t by Eq. 7 on observed incremental lengths and the capacity
the link delivers now. First the direction by the model, then the loop on the emulator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from emulator.distributions import Empirical
from emulator.model import Knobs, evaluate
from emulator.scenario.drills import merge
from emulator.scenario.incidents import Brownout
from emulator.scenario.presets import from_dict
from emulator.scenario.reader import PresetError
from emulator.sim.control.scheduler import Conditions, best_threshold
from emulator.sim.engine import Emulation
from emulator.units import GBPS


def conditions(sc, gbps: float, n_prfaas: int = 4, n: int = 4000) -> Conditions:
    xs = sc.system.lengths.sample(np.random.default_rng(0), n)
    return Conditions(Empirical.of(xs), n_prfaas, gbps * GBPS, sc.n_p, sc.n_d)


def test_a_brownout_raises_t_and_the_resolve_recovers_throughput(paper):
    """Eq. 3: Theta_prfaas / p = min(N / (p T(l_long)), B / (p S(l_long))). p S(l_long) =
    E[S_kv(L); L > t] is the KV per request of ALL traffic that crosses the link; it falls as t
    rises (fewer requests cross, each a bit larger), so when B shrinks and the bandwidth term
    binds, the producers' balance (Eq. 7) moves to a higher t. Numbers (paper case study at its
    3/5 split, exact mode): at 30 Gbps t ~19.7K and Lambda ~3.1 req/s; at 6 Gbps the static
    19.4K gives ~1.6 req/s, the re-solved t ~28K gives ~2.0."""
    s = paper.system
    t_full, prod_full, _, lam_full = best_threshold(s, conditions(paper, 30), "exact")
    cond = conditions(paper, 6)
    t_low, prod_low, prod_static, lam_low = best_threshold(s, cond, "exact", t_now=19400)
    assert 17_000 < t_full < 22_000 and lam_full == pytest.approx(3.16, rel=0.05)
    assert t_low > 1.3 * t_full  # the brownout raises t
    assert prod_low > 1.15 * prod_static  # ... and that is worth it
    static = evaluate(dataclasses.replace(s, lengths=cond.lengths),
                      Knobs(19400, 3, 5, 4, 6 * GBPS), "exact")
    assert static.prfaas_term == "bandwidth" and static.lambda_max == pytest.approx(1.6, rel=0.06)
    resolved = evaluate(dataclasses.replace(s, lengths=cond.lengths),
                        Knobs(t_low, 3, 5, 4, 6 * GBPS), "exact")
    assert resolved.lambda_max == pytest.approx(lam_low) and lam_low > 1.2 * static.lambda_max
    kv_per_request = [op.p * op.s_long for op in (static, resolved)]
    assert kv_per_request[1] < kv_per_request[0]  # less KV per request crosses the link


def test_ties_keep_the_current_t(paper):
    """With the link out and no local prefill, nothing the threshold does helps: keep t."""
    cond = dataclasses.replace(conditions(paper, 0.0), n_p=0, n_d=8)
    t, prod, cur, _ = best_threshold(paper.system, cond, "exact", t_now=19400)
    assert t == 19400 and prod == cur == 0


def brownout_emulation(sc, scheduler: bool) -> Emulation:
    sim = dataclasses.replace(sc.sim, scheduler=dataclasses.replace(
        sc.sim.scheduler, enabled=scheduler, long_period=0))
    sc = dataclasses.replace(sc.with_knobs(bandwidth=30 * GBPS), sim=sim)
    emu = Emulation(sc, seed=2, load=0.6, duration=1500)
    emu.inject(Brownout(at=400, duration=600, factor=0.2))
    return emu


def test_the_loop_follows_a_brownout_and_comes_back(paper):
    with brownout_emulation(paper, True) as emu:
        emu.run_until(390)
        t_before = emu.t
        emu.run_until(1000)
        t_during = emu.t
        snap = emu.snapshot()
        result = emu.run()
        log = emu.scheduler.log
        final = emu.snapshot()
    assert t_during > 1.3 * t_before and emu.t < 0.8 * t_during
    applied = [d for d in log if d.change.startswith("t ")]  # not the "kept t" ones
    assert 0 < snap.scheduler_changes < final.scheduler_changes == len(applied)
    assert any("egress" in d.reason or "link" in d.reason for d in log)
    assert any("link 30.0 Gbps now (estimate 6.0" in d.reason  # recovery re-solves
               for d in log if d.time >= 1000)
    assert any("scheduler (short)" in line for line in snap.decisions)
    out = result.to_json()
    assert out["scheduler"]["decisions"][0].keys() == {"time", "timescale", "reason", "change"}
    assert out["scheduler"]["decision_count"] == len(log)
    assert out["accounting"]["lost"] == 0


def test_the_static_run_makes_no_decisions(paper):
    with brownout_emulation(paper, False) as emu:
        result = emu.run()
    assert emu.scheduler is None and result.to_json()["scheduler"] is None
    assert emu.snapshot().scheduler_changes == 0
    assert result.to_json()["incidents"][0]["label"] == "link brownout to 20%"


def test_prefix_reuse_shortens_observed_lengths_and_moves_t_down(paper):
    """Engine level, with the prefix cache wired in ([cache] and a session workload): the
    router's ring buffer holds post-match lengths, much shorter than the prompts, and the
    scheduler re-solved on them moves t down, as the model-level test in test_cache_sessions
    reasons (Eq. 7 keeps the routed share: a shorter distribution means a lower t). Without
    the cache the same sessions leave t near the paper's 19.4K."""
    over = {"workload": {"sessions": {
                "rate": 0.6, "turns": 3, "think_time": "60 s",
                "user_tokens": {"kind": "lognormal", "mu": 7.5, "sigma": 1.0, "lo": 16,
                                "hi": "16K"}}},
            "emulator": {"duration": "15 min"},
            "scheduler": {"enabled": True, "long_period": 0}}
    runs = {}
    for cache in (True, False):
        sc = from_dict(merge(paper.source, over | {"cache": {"capacity": "4 TiB",
                                                             "enabled": cache}}), paper.path)
        with Emulation(sc, seed=1) as emu:
            result = emu.run()
            runs[cache] = (emu.t, np.array(emu.router.recent), result.accounting)
    (t_cache, incr, acc), (t_raw, raw, _) = runs[True], runs[False]
    assert len(incr) == len(raw) and acc.lost == 0
    assert incr.mean() < 0.6 * raw.mean()  # the same prompts, minus their cached prefixes
    assert t_cache < 0.5 * t_raw and t_cache < 10_000
    assert 0.8 * 19400 < t_raw < 1.5 * 19400


def test_bad_scheduler_section_names_file_and_key(paper):
    with pytest.raises(PresetError, match=r"x.toml: scheduler.period: must be > 0"):
        from_dict(merge(paper.source, {"scheduler": {"period": 0}}), "x.toml")
    with pytest.raises(PresetError, match=r"scheduler.perod: unknown key \(did you mean 'period'"):
        from_dict(merge(paper.source, {"scheduler": {"perod": 5}}), "x.toml")
