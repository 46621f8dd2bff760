"""Live changes while a run goes on: role changes drain first, failures re-route, nothing is
lost (property test over random change sequences), controllers attach to the virtual loop."""

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.distributions import Discrete
from emulator.scenario.presets import load, presets_dir
from emulator.sim.engine import Emulation


def settle(emu, extra=3000.0):
    """Stop arrivals, put everything back in service and let the system empty."""
    for stage in ("prfaas", "pd-p", "pd-d"):
        pool = emu.pool_of(stage)
        for m in pool.machines:
            pool.restore(m.idx)
    emu.change(paradigm="prfaas-pd")
    emu.change(n_prfaas=2)
    emu.change(n_p=1, n_d=2)
    emu.change(bandwidth=1e9)
    emu.set_rate_multiplier("test", None)
    emu.set_link_factor("test", None)
    emu.change(rate=0.0)
    # A backlog built at 5 req/s on one decode instance (hundreds of requests) needs longer than
    # `extra` to drain at the toy's capacity: wait on simulated time until it has, within a bound.
    end = emu.now + 40 * extra
    emu.run_until(emu.now + extra)
    while emu.accounting.in_flight and emu.now < end:
        emu.run_until(emu.now + extra)


def test_role_change_drains_before_switching():
    with Emulation(load("toy"), load=0.9, duration=2000, seed=4) as emu:
        emu.run_until(200)
        assert emu.pdd.counts()[0] == 2
        emu.change(n_p=2, n_d=1)  # one decode instance becomes a prefill instance
        acc_d, drain_d = emu.pdd.counts()
        assert acc_d == 1 and drain_d == 1  # still finishing its batch
        assert emu.pdp.counts()[0] == 1  # not serving prefill yet
        assert emu.knobs.n_p == 2 and emu.knobs.n_d == 1  # the targets
        emu.run_until(200 + 100 * 0.025 + 1e-6)  # a batch lasts L_out x T_decode = 2.5 s
        assert emu.pdd.counts() == (1, 0)
        assert emu.pdp.counts()[0] == 2
        emu.run()


def test_conversion_delay_keeps_the_instance_out_meanwhile(tmp_path):
    text = (presets_dir() / "toy.toml").read_text().replace(
        "[emulator]", '[emulator]\nconversion_delay = "30 s"')
    path = tmp_path / "slow-convert.toml"
    path.write_text(text)
    with Emulation(load(str(path)), load=0.5, duration=500, seed=1) as emu:
        emu.run_until(100)
        emu.change(n_p=0, n_d=3)
        emu.run_until(110)
        assert emu.pdp.counts()[0] == 0 and emu.pdd.counts()[0] == 2
        emu.run_until(140)
        assert emu.pdd.counts()[0] == 3
        emu.run()


def test_prefill_failure_restarts_the_request_and_loses_nothing():
    with Emulation(load("toy"), rate=1.5, duration=1000, seed=2) as emu:
        emu.run_until(50.3)
        busy = [w for w in emu.prfaas.workers if w.job is not None]
        assert busy
        emu.fail_instance("prfaas", busy[0].idx)
        assert emu.prfaas.counts()[0] == 1
        emu.run_until(80)
        emu.restore_instance("prfaas", busy[0].idx)
        assert emu.prfaas.counts()[0] == 2
        settle(emu)
        acc = emu.accounting
        assert acc.in_flight == 0 and acc.completed == acc.arrived


def test_decode_failure_reroutes_its_batch():
    with Emulation(load("toy"), rate=1.5, duration=1000, seed=2) as emu:
        emu.run_until(100)
        first = emu.live_instances("pd-d")[0]
        held = emu.pdd.workers[first].n
        assert held > 0
        emu.fail_instance("pd-d", first)
        assert emu.rerouted == held
        settle(emu)
        acc = emu.accounting
        assert acc.in_flight == 0 and acc.completed == acc.arrived


def test_paradigm_switches_live():
    with Emulation(load("paper-case-study"), load=0.7, duration=3000, seed=1) as emu:
        emu.run_until(300)
        emu.change(paradigm="homogeneous")
        emu.run_until(900)
        k = emu.knobs
        assert (k.n_prfaas, k.n_p + k.n_d, k.paradigm) == (0, 12, "homogeneous")
        entered = emu.prfaas.entered
        emu.run_until(1200)
        assert emu.prfaas.entered == entered  # nothing goes remote any more
        emu.change(paradigm="naive-heterogeneous")
        emu.run_until(1500)
        assert emu.knobs.n_p == 0 and emu.pdp.counts() == (0, 0)
        emu.run()
        settle(emu)
        assert emu.accounting.in_flight == 0


def test_rate_and_length_changes_take_effect_at_once():
    with Emulation(load("toy"), rate=1.0, duration=5000, seed=3) as emu:
        emu.run_until(1000)
        a0 = emu.arrived
        emu.change(rate=4.0)
        emu.run_until(2000)
        assert (emu.arrived - a0) / 1000 == pytest.approx(4.0, rel=0.06)
        emu.set_length_distribution("test", Discrete.of([1024], [1.0]))  # everything short: local
        entered = emu.prfaas.entered
        emu.run_until(2100)
        assert emu.prfaas.entered == entered
        emu.set_rate_multiplier("test", 0.0)
        a1 = emu.arrived
        emu.run_until(2500)
        assert emu.arrived == a1
        emu.run()


def test_controllers_attach_as_callbacks_and_coroutines():
    with Emulation(load("toy"), load=0.5, duration=100, seed=1) as emu:
        ticks = []
        emu.every(10.0, lambda e: ticks.append(e.now))

        async def controller():
            await asyncio.sleep(25.0)
            emu.change(t=0)
            await asyncio.sleep(25.0)
            emu.change(t=32768)

        emu.spawn(controller())
        emu.run_until(30)
        assert emu.router.t == 0
        emu.run_until(60)
        assert emu.router.t == 32768
        assert ticks[:3] == [10.0, 20.0, 30.0]
        assert any("threshold" in d for d in emu.snapshot().decisions)
        emu.run()


def test_snapshot_is_immutable_and_complete():
    with Emulation(load("toy"), load=0.9, duration=300, seed=1) as emu:
        emu.run_until(120)
        snap = emu.snapshot()
        with pytest.raises(AttributeError):
            snap.sim_time = 0
        assert snap.sim_time == 120
        assert set(snap.stages) == {"prfaas", "pd-p", "pd-d"}
        assert snap.lost == 0 and snap.arrived == snap.completed + snap.in_flight + snap.rejected
        assert snap.offered_rate > 0 and snap.bottleneck in ("prfaas", "pd-p", "pd-d", "link")
        assert snap.knobs.n_prfaas == 2 and snap.link.capacity == 1e9
        emu.run_until(130)
        assert snap.sim_time == 120 and emu.snapshot().sim_time == 130


ACTIONS = st.one_of(
    st.tuples(st.just("t"), st.sampled_from([0, 1024, 8192, 32768])),
    st.tuples(st.just("split"), st.sampled_from([(0, 1), (0, 3), (1, 1), (1, 2), (2, 1)])),
    st.tuples(st.just("bandwidth"), st.floats(0.05e9, 2e9)),
    st.tuples(st.just("link"), st.sampled_from([0.0, 0.2, None])),
    st.tuples(st.just("n_prfaas"), st.integers(0, 3)),
    st.tuples(st.just("rate"), st.floats(0.0, 5.0)),
    st.tuples(st.just("fail"), st.tuples(st.sampled_from(["prfaas", "pd-p", "pd-d"]),
                                         st.integers(0, 2))),
    st.tuples(st.just("restore"), st.tuples(st.sampled_from(["prfaas", "pd-p", "pd-d"]),
                                            st.integers(0, 2))),
    st.tuples(st.just("paradigm"), st.sampled_from(["prfaas-pd", "homogeneous",
                                                    "naive-heterogeneous"])),
)


def apply(emu, kind, arg):
    before = emu.knobs
    try:
        if kind == "t":
            emu.change(t=arg)
        elif kind == "split":
            emu.change(n_p=arg[0], n_d=arg[1])
        elif kind == "bandwidth":
            emu.change(bandwidth=arg)
        elif kind == "link":
            emu.set_link_factor("test", arg)
        elif kind == "n_prfaas":
            emu.change(n_prfaas=arg)
        elif kind == "rate":
            emu.change(rate=arg)
        elif kind == "fail":
            emu.fail_instance(*arg)
        elif kind == "restore":
            emu.restore_instance(*arg)
        else:
            emu.change(paradigm=arg)
    except ValueError:  # an impossible change is refused with a reason and changes nothing
        assert emu.knobs == before


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.floats(0.0, 40.0), ACTIONS), max_size=12),
       seed=st.integers(0, 5))
def test_random_live_changes_never_break_the_accounting(changes, seed):
    with Emulation(load("toy"), load=1.0, duration=400, seed=seed) as emu:
        for dt, (kind, arg) in changes:
            emu.run_until(emu.now + dt)
            apply(emu, kind, arg)
        emu.run()  # raises AccountingError if broken
        settle(emu)
        acc = emu.accounting
        assert acc.in_flight == 0
        assert acc.completed + acc.rejected_total == acc.arrived


def test_pacer_slices_pause_and_step():
    from emulator.sim.runs.pacer import Pacer

    with Emulation(load("toy"), load=0.5, duration=1000, seed=1) as emu:
        pacer = Pacer(emu, speed=50.0)
        assert pacer.advance(0.1) == pytest.approx(5.0)
        pacer.pause()
        assert pacer.advance(1.0) == 0.0 and emu.now == pytest.approx(5.0)
        assert pacer.step(2.5) == pytest.approx(2.5)  # single step works while paused
        pacer.resume()
        pacer.speed = 1000.0
        pacer.advance(0.01)
        assert emu.now == pytest.approx(17.5)
        with pytest.raises(ValueError):
            pacer.speed = 0
