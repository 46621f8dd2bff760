"""Incidents on a running emulation: each kind does what it says and undoes it, they compose,
they can be scripted or injected live, and no timeline ever breaks the request accounting."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.distributions import Discrete, Reweighted
from emulator.scenario.incidents import (
    Brownout,
    CacheFlush,
    Diurnal,
    Flap,
    InstanceLoss,
    LengthShift,
    Outage,
    Surge,
    catalog,
)
from emulator.scenario.presets import from_dict
from emulator.scenario.reader import PresetError
from emulator.sim.engine import Emulation


def emu_of(sc, **kw) -> Emulation:
    return Emulation(sc, seed=1, duration=kw.pop("duration", 600), **kw)


def test_link_incidents_compose_and_restore(toy):
    with emu_of(toy) as emu:
        b = emu.bandwidth
        emu.inject(Brownout(at=10, duration=100, factor=0.5))
        emu.inject(Outage(at=50, duration=20))
        emu.run_until(20)
        assert emu.link.capacity == pytest.approx(0.5 * b)
        assert emu.snapshot().incidents == ("link brownout to 50%",)
        emu.run_until(60)
        assert emu.link.capacity == 0
        assert set(emu.snapshot().incidents) == {"link brownout to 50%", "link outage"}
        emu.change(bandwidth=2 * b)  # a knob change during a brownout keeps the brownout
        emu.run_until(80)
        assert emu.link.capacity == pytest.approx(0.5 * 2 * b)
        emu.run_until(120)
        assert emu.link.capacity == pytest.approx(2 * b) and emu.timeline.since == {}
        assert emu.accounting.balanced


def test_flap_and_diurnal_move_the_capacity_on_their_own_clock(toy):
    with emu_of(toy) as emu:
        b = emu.bandwidth
        emu.inject(Flap(at=0, duration=60, down=10, up=20))
        caps = []
        for t in (5, 15, 35, 45):
            emu.run_until(t)
            caps.append(emu.link.capacity)
        assert caps == [0, b, 0, b]
        d = Diurnal(at=100, duration=200, low=0.2, period=200, step=10)
        emu.inject(d)
        emu.run_until(200)  # the trough, half a period in
        assert emu.link.capacity == pytest.approx(0.2 * b)
        assert d.factor_at(0) == 1 and d.factor_at(100) == pytest.approx(0.2)
        emu.run_until(301)
        assert emu.link.capacity == b


def test_prfaas_loss_restarts_prefills_on_survivors_and_recovers(toy):
    with emu_of(toy, load=1.0) as emu:
        emu.run_until(100)
        entered = emu.prfaas.entered
        act = emu.inject(InstanceLoss(stage="prfaas", count=1, duration=60))
        snap = emu.snapshot()
        assert (snap.stages["prfaas"].instances, snap.stages["prfaas"].failed) == (1, 1)
        assert emu.knobs.n_prfaas == snap.knobs.n_prfaas == 2  # the knob is configured, not alive
        assert snap.incident_windows == ((100, 160, "1 prfaas instance lost"),)
        assert [m.alive for m in emu.remote.machines] == [True, False]  # the highest-numbered
        emu.run_until(150)
        assert emu.prfaas.entered > entered  # the survivor keeps serving
        emu.run_until(161)
        snap = emu.snapshot()
        assert (snap.stages["prfaas"].instances, snap.stages["prfaas"].failed) == (2, 0)
        assert act.over and snap.knobs.n_prfaas == 2
        result = emu.run()
    assert result.accounting.lost == 0


def test_decode_loss_re_prefills_its_batch_and_loses_nothing(toy):
    with emu_of(toy, load=0.8) as emu:
        emu.run_until(120)
        held = sum(w.n for w in emu.pdd.workers if w.machine.idx == 2)
        emu.inject(InstanceLoss(stage="pd-d", count=1, duration=30))
        assert emu.rerouted == held > 0  # its batch went back through the router
        assert emu.knobs.n_d == 2 and emu.snapshot().stages["pd-d"].failed == 1
        emu.run_until(200)
        assert emu.snapshot().stages["pd-d"].instances == 2
        result = emu.run()
    assert result.accounting.lost == 0 and result.accounting.balanced


def test_an_instance_loss_restores_the_same_instances_across_a_role_change(toy):
    with emu_of(toy, load=0.5) as emu:
        emu.run_until(60)
        act = emu.inject(InstanceLoss(stage="pd-d", count=1))
        assert act.machines == [2] and emu.live_instances("pd-d") == [1]
        emu.change(n_p=0, n_d=3)  # the prefill instance turns decode while 2 is down
        emu.run_until(120)
        act.end()
        assert all(m.alive for m in emu.local.machines)
        assert emu.live_instances("pd-d") == [0, 1, 2]
        emu.run()


def test_surges_multiply_and_a_long_surge_keeps_the_short_rate(toy):
    with emu_of(toy) as emu:
        emu.inject(Surge(duration=50, factor=2.0))
        emu.inject(Surge(duration=100, factor=1.5))
        assert emu.workload.multiplier == pytest.approx(3.0)
        emu.run_until(60)
        assert emu.workload.multiplier == pytest.approx(1.5)
        emu.run_until(101)
        assert emu.workload.multiplier == 1.0
        emu.inject(Surge(duration=50, long_factor=3.0))  # toy: half the requests above 8K
        assert emu.workload.multiplier == pytest.approx(0.5 + 3 * 0.5)
        emu.run_until(160)
        assert emu.workload.multiplier == 1.0


def test_reweighted_mix_is_exact_and_samples_match(paper):
    base = paper.system.lengths
    d = Reweighted.of(base, 19400, 3.0)
    p = base.p_above(19400)
    assert d.p_above(19400) == pytest.approx(3 * p / (1 - p + 3 * p))
    assert d.mean_below(19400) == pytest.approx(base.mean_below(19400))  # shapes kept
    assert d.mean_above(19400) == pytest.approx(base.mean_above(19400))
    x = d.sample(np.random.default_rng(0), 20000)
    assert np.mean(x > 19400) == pytest.approx(d.p_above(19400), abs=0.01)
    assert np.mean(x) == pytest.approx(d.mean, rel=0.03)


def test_length_shift_changes_new_requests_then_reverts(toy):
    with emu_of(toy) as emu:
        emu.inject(LengthShift(duration=200, lengths=Discrete.of([1024], [1.0])))
        emu.run_until(150)
        assert set(emu.router.recent) == {1024.0}
        emu.run_until(400)
        assert max(list(emu.router.recent)[-50:]) == 32768


def test_cache_flush_is_counted_without_a_cache(toy):
    with emu_of(toy) as emu:
        emu.inject(CacheFlush(at=10))
        emu.run_until(20)
        assert emu.cache_flushes == 1 and emu.timeline.since == {}
        assert emu.timeline.windows()[0][:2] == (10, 10)


def test_hand_incidents_are_open_until_ended(toy):
    with emu_of(toy) as emu:
        labels = [label for label, _, _ in catalog()]
        assert len(set(labels)) == len(labels)
        act = emu.inject(catalog()[0][2])  # a 20% brownout with no duration
        again = emu.inject(Brownout(factor=0.2))  # the same twice: a second label
        emu.run_until(500)
        assert set(emu.timeline.since) == {act.label, f"{act.label} #2"}
        act.end()
        emu.timeline.end(again.label)
        assert emu.timeline.since == {} and emu.link.capacity == emu.bandwidth
        assert any("incident over" in d for d in emu.snapshot().decisions)
        with pytest.raises(KeyError):
            emu.timeline.end("nothing")
        emu.inject(Outage(at=600, duration=100))  # scripted: not ended by hand
        emu.inject(Outage())
        emu.inject(Brownout(factor=0.5))
        emu.run_until(650)
        assert emu.end_manual_incidents() == 2
        assert list(emu.timeline.since) == ["link outage #2"] and emu.link.capacity == 0


def test_scripted_incidents_in_an_ordinary_preset_play_in_run(toy):
    data = dict(toy.source, incidents=[{"kind": "outage", "at": "1 min", "duration": "30 s"}])
    sc = from_dict(data, toy.path)
    with Emulation(sc, seed=1, duration=120) as emu:
        result = emu.run()
    assert result.to_json()["incidents"] == [{"start": 60, "end": 90, "label": "link outage"}]


@pytest.mark.parametrize(("incident", "key", "msg"), [
    ({"kind": "brownout", "at": 1, "duration": 1, "factor": 1.0}, "incidents[0].factor", "[0, 1)"),
    ({"kind": "outage", "at": 1}, "incidents[0].duration", "missing"),
    ({"kind": "brownout", "at": 1, "duration": 1}, "incidents[0].factor", "missing"),
    ({"kind": "cache-flush", "at": 1, "duration": 1}, "incidents[0].duration", "unknown key"),
    ({"kind": "surge", "at": 1, "duration": 1}, "incidents[0].long_factor", "exactly one"),
    ({"kind": "instance-loss", "at": 1, "duration": 1, "stage": "gpu"}, "incidents[0].stage",
     "one of"),
    ({"kind": "flap", "at": 1, "duration": 1, "dwn": 3}, "incidents[0].dwn", "unknown key"),
])
def test_bad_incidents_name_file_and_key(toy, incident, key, msg):
    with pytest.raises(PresetError) as err:
        from_dict(dict(toy.source, incidents=[incident]), "x.toml")
    assert err.value.key == key and msg in str(err.value) and str(err.value).startswith("x.toml")


# -- no timeline breaks the accounting -------------------------------------------------------------
def incident_strategy():
    at = st.integers(0, 250)
    dur = st.integers(1, 200)
    return st.one_of(
        st.builds(Brownout, at=at, duration=dur, factor=st.floats(0, 0.95)),
        st.builds(Outage, at=at, duration=dur),
        st.builds(Flap, at=at, duration=dur, down=st.integers(1, 20), up=st.integers(1, 20)),
        st.builds(Diurnal, at=at, duration=dur, low=st.floats(0, 0.9), period=st.integers(20, 200),
                  step=st.integers(5, 30)),
        st.builds(InstanceLoss, at=at, duration=dur, stage=st.sampled_from(["prfaas", "pd-p", "pd-d"]),
                  count=st.integers(1, 3)),
        st.builds(Surge, at=at, duration=dur, factor=st.floats(0.2, 3)),
        st.builds(Surge, at=at, duration=dur, long_factor=st.floats(0.2, 4)),
        st.builds(LengthShift, at=at, duration=dur, long_factor=st.floats(0.2, 4)),
        st.builds(CacheFlush, at=at),
    )


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timeline=st.lists(incident_strategy(), max_size=6), scheduler=st.booleans(),
       seed=st.integers(0, 3))
def test_random_timelines_never_break_the_accounting(toy, timeline, scheduler, seed):
    sim = dataclasses.replace(toy.sim, incidents=tuple(timeline), scheduler=dataclasses.replace(
        toy.sim.scheduler, enabled=scheduler, period=5, long_period=30, min_dwell=30,
        min_samples=32))
    sc = dataclasses.replace(toy, sim=dataclasses.replace(sim, conversion_delay=5.0))
    with Emulation(sc, seed=seed, duration=300, load=0.9) as emu:
        for t in range(25, 300, 25):
            emu.run_until(t)
            assert emu.accounting.balanced
        emu.timeline.inject(Outage(duration=5))  # and one injected live
        result = emu.run()  # raises AccountingError when broken
        emu.change(rate=0)
        emu.run_until(3000)  # then everything drains: nothing was parked forever
        acc = emu.accounting
    assert result.accounting.lost == 0
    assert acc.in_flight == 0 and acc.completed == acc.arrived
