"""The long timescale: converting local instances between prefill and decode under load loses
nothing, steps toward the model's optimum for the traffic it sees, and does not flap."""

from __future__ import annotations

import dataclasses

import pytest

from emulator.distributions import Reweighted
from emulator.model import Knobs, evaluate
from emulator.optimizer import search
from emulator.scenario.incidents import LengthShift
from emulator.scenario.presets import from_dict
from emulator.sim.engine import Emulation


def with_scheduler(sc, **kw):
    sim = dataclasses.replace(sc.sim, conversion_delay=30.0, scheduler=dataclasses.replace(
        sc.sim.scheduler, enabled=True, **kw))
    return dataclasses.replace(sc, sim=sim)


def run_checked(emu: Emulation, step: float = 30.0) -> list[tuple[int, int]]:
    """Run to the end checking the accounting at every step; the target split at each."""
    splits = []
    t = step
    while t <= emu.duration:
        emu.run_until(t)
        assert emu.accounting.balanced
        splits.append((emu.local.count("pd-p"), emu.local.count("pd-d")))
        t += step
    result = emu.run()
    assert result.accounting.lost == 0
    return splits


def long_decisions(emu: Emulation):
    return [d for d in emu.scheduler.log if d.timescale == "long"]


def test_conversions_under_load_lose_nothing_and_reach_the_optimum(paper):
    """Start decode-starved (N_p 6 / N_d 2: Lambda 1.56 req/s) at 2.7 req/s: every conversion
    drains a loaded prefill instance and reloads it for decode while requests keep coming."""
    sc = with_scheduler(paper.with_knobs(n_p=6, n_d=2), min_dwell=120)
    with Emulation(sc, seed=1, rate=2.7, duration=2400) as emu:
        splits = run_checked(emu)
        steps = long_decisions(emu)
        conversions = emu.scheduler.conversions
        final = splits[-1]
    best = search(paper.system, "exact").best
    reached = evaluate(paper.system, Knobs(emu.t, *final, 4, paper.system.bandwidth), "exact")
    assert 1 <= conversions <= 6 - best.knobs.n_p  # one step at a time, never back
    assert reached.lambda_max >= best.lambda_max / (1 + sc.sim.scheduler.gain_margin)
    seen = [splits[0]] + [b for a, b in zip(splits, splits[1:], strict=False) if a != b]
    assert all(abs(a[0] - b[0]) == 1 for a, b in zip(seen, seen[1:], strict=False))
    assert all(b.time - a.time >= 120 for a, b in zip(steps, steps[1:], strict=False))


def test_the_split_follows_a_traffic_shift_to_the_new_optimum(paper):
    """Traffic turns short (the odds of a request above 19.4K x 0.2): prefill needs less, decode
    the same, so the model's optimum moves from N_p 3 to N_p 2 (Lambda 3.9 -> 4.5 req/s)."""
    shifted = Reweighted.of(paper.system.lengths, 19400, 0.2)
    new = dataclasses.replace(paper.system, lengths=shifted)
    target = search(new, "exact").best
    assert (target.knobs.n_p, target.knobs.n_d) == (2, 6)
    with Emulation(with_scheduler(paper), seed=3, rate=3.5, duration=1800) as emu:
        emu.inject(LengthShift(at=60, duration=3600, lengths=shifted))
        splits = run_checked(emu)
    assert splits[-1] == (2, 6) and emu.scheduler.conversions == 1


def test_no_conversions_with_headroom(paper):
    """At the paper's split and 70% of its Lambda nothing is under stress: the long loop leaves
    the deployment alone, whatever small gain a noisy sample promises."""
    with Emulation(with_scheduler(paper), seed=5, load=0.7, duration=1800) as emu:
        splits = run_checked(emu, step=60)
    assert emu.scheduler.conversions == 0 and set(splits) == {(3, 5)}


@pytest.mark.parametrize("key", ["gain_margin", "min_dwell", "stress"])
def test_hysteresis_knobs_are_read(paper, key):
    from emulator.scenario.drills import merge
    from emulator.scenario.reader import PresetError

    with pytest.raises(PresetError, match=f"scheduler.{key}"):
        from_dict(merge(paper.source, {"scheduler": {key: -1}}), "x.toml")
