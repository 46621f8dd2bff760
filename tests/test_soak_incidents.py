"""Soak under incidents, short (issue 11): 60 random incident timelines over the three presets
(every kind, overlapping, open-ended ones ended by hand, live knob changes, scheduler on and
off, admission control on and off) keep the accounting at every step, lose nothing, drain once
the traffic stops and leave no timer behind. benchmarks/soak.py runs 1,000 and the week."""

from __future__ import annotations

import pytest

from benchmarks import soak
from benchmarks import soak_api as api

SEEDS = range(60)


@pytest.fixture(scope="module")
def specs():
    return [soak.random_spec(s, max_duration=400.0) for s in SEEDS]


def test_the_timelines_cover_every_kind_preset_and_mode(specs):
    kinds = {a.args[0] for s in specs for a in s.actions if a.op == "inject"}
    assert kinds == set(api.KINDS)
    assert {s.preset for s in specs} == set(api.PRESETS)
    assert {s.scheduler for s in specs} == {True, False}
    assert {s.max_queue is None for s in specs} == {True, False}
    assert any(a.op == "knob" for s in specs for a in s.actions)
    assert any(a.op == "end" for s in specs for a in s.actions)
    overlapping = 0
    for s in specs:
        spans = sorted((a.at, a.at + (a.args[2] or s.duration)) for a in s.actions
                       if a.op == "inject")
        overlapping += any(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False))
    assert overlapping >= 10


@pytest.mark.parametrize("seed", SEEDS)
def test_random_incident_timeline_keeps_every_request(specs, seed):
    out = soak.run_spec(specs[seed])
    assert out.ok, out.problems
    assert out.arrived > 0 and out.lost == 0
    assert out.arrived == out.completed + out.rejected  # drained: nothing left in flight


def test_the_soak_catches_a_dropped_request(monkeypatch):
    """The checks can fail: an engine that silently drops PD-P requests is reported."""
    real = api.start

    def leaky(sc, **kw):
        emu = real(sc, **kw)
        emu.pdp.submit = lambda req: None
        return emu

    monkeypatch.setattr(api, "start", leaky)
    out = soak.run_spec(soak.random_spec(1, max_duration=200.0))
    assert not out.ok and any("accounting broken" in p for p in out.problems)
