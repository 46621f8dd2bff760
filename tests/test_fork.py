"""What-if forks without Textual: every change the operator makes is logged as data at its
simulated time; a fork replays the log on the same scenario and seed to the parent's now, is
checked against the parent's own snapshots, and then runs on beside it on the parent's clock,
a change made to it going to it alone. Headless (live=False) except where a led driver's own
thread is the point: waits are on ticks (events), never on the wall clock."""

from __future__ import annotations

import dataclasses
import queue

import pytest

from emulator.scenario import presets
from prfaas_tui.fork import Fork
from prfaas_tui.live import END_ALL, Change, Driver, incident_catalog, load_drill
from prfaas_tui.metrics_export import metric_row
from prfaas_tui.modelview import Refused, Settings
from prfaas_tui.session import Session

FORK_AT = 1800.0  # 30 simulated minutes: the brownout (10 to 20 min) is over
MOVED_AT = 400.0  # the parent's own change, before the brownout


def diverged(a, b) -> float | None:
    """The first simulated time at which two histories sampled at the same times differ."""
    theirs = {s.sim_time: repr(s) for s in b}
    return next((s.sim_time for s in a
                 if s.sim_time in theirs and theirs[s.sim_time] != repr(s)), None)


def quiet(**kw) -> dict:
    return {"post_tick": lambda tick: None, "post_error": lambda text, gen: None, **kw}


def brownout_parent() -> Session:
    """The link-brownout drill to 30 minutes with t moved by hand at 400 s."""
    drill = load_drill("link-brownout")
    s = Session(drill.scenario, live=False, drill=drill, **quiet())
    s.start(MOVED_AT)
    s.request(t=s.settings.scenario.t + 4096.0)
    while s.tick.snapshot.sim_time < FORK_AT:
        s.step(100.0)
    assert s.tick.snapshot.sim_time == FORK_AT
    return s


@pytest.fixture
def parent():
    s = brownout_parent()
    yield s
    s.stop()


def fork_of(parent: Session) -> Fork:
    fork = Fork(parent, **quiet())
    fork.start()
    return fork


def test_a_fork_at_30_minutes_replays_the_parent_exactly_then_differs_after_its_change(parent):
    fork = fork_of(parent)
    try:
        v = fork.verdict
        assert v.ok and v.checked > 700 and v.at == FORK_AT and v.changes == 2  # t and its pin
        assert "identical" in v.text()
        # before the change: the parent's trajectory, snapshot by snapshot, every field
        mine, theirs = fork.session.tick.history, parent.tick.history
        assert mine[-1].sim_time == FORK_AT and len(mine) == len(theirs)
        assert [repr(s) for s in mine] == [repr(s) for s in theirs]
        assert fork.session.record.dicts() == parent.record.dicts()

        t_parent = parent.settings.scenario.t
        fork.session.request(t=4096.0)  # the what-if, on the fork alone
        assert parent.settings.scenario.t == t_parent
        for _ in range(6):  # both run on, on the parent's clock
            parent.step(100.0)
            fork.follow(parent.tick)
        mine, theirs = fork.session.tick.history, parent.tick.history
        after = [s.sim_time for s in theirs if s.sim_time > FORK_AT]
        assert after and [s.sim_time for s in mine if s.sim_time > FORK_AT] == after
        # the change instant itself shows the fork's new knobs; everything before it is shared
        assert diverged(mine, theirs) == FORK_AT
        assert [repr(s) for s in mine if s.sim_time < FORK_AT] == \
               [repr(s) for s in theirs if s.sim_time < FORK_AT]
        both = list(zip([s for s in mine if s.sim_time > FORK_AT],
                        [s for s in theirs if s.sim_time > FORK_AT], strict=True))
        assert all(a.knobs.t == 4096.0 != b.knobs.t for a, b in both)
        assert any(a.served_rate != b.served_rate for a, b in both)
        assert any(a.stages["prfaas"].queue != b.stages["prfaas"].queue
                   or a.ttft_p90 != b.ttft_p90 for a, b in both)
        assert parent.tick.snapshot.knobs.t == t_parent
    finally:
        fork.drop()


def test_the_check_catches_a_replay_that_is_not_the_parents_run(parent):
    """Without the parent's change at 400 s the replay runs another trajectory from there:
    the verdict says so, and where."""
    fork = Fork(parent, **quiet())
    fork.origin = dataclasses.replace(fork.origin, log=())
    fork.start()
    try:
        v = fork.verdict
        assert not v.ok and v.mismatched > 0 and v.first_mismatch >= MOVED_AT
        assert "differ" in v.text()
    finally:
        fork.drop()


def test_every_kind_of_change_is_logged_as_data_at_its_simulated_time():
    drill = load_drill("link-brownout")  # it has a scheduler to pin and switch
    s = Session(drill.scenario, live=False, drill=drill, **quiet())
    s.start(50.0)
    try:
        ready = {label: inc for label, _, inc in incident_catalog()}
        s.request(t=8192.0)  # settings, then the pin of t
        s.step(10.0)
        s.inject(ready["1 pd-d instance lost"])
        s.inject("link outage")  # a catalog label
        s.step(10.0)
        s.end_incident(1)
        s.set_scheduler(False)
        s.release_pins()
        s.inject(END_ALL)
        with pytest.raises(Refused):
            s.request(n_p=9)  # refused before it reaches the emulation: nothing logged
        log = s.driver.log
        assert [(e.at, e.change.kind) for e in log] == [
            (50.0, "settings"), (50.0, "pin"), (60.0, "incident"), (60.0, "incident"),
            (70.0, "end"), (70.0, "scheduler"), (70.0, "release"), (70.0, "incident")]
        assert isinstance(log[0].change.value, Settings)
        assert log[1].change == Change("pin", ("t", True))
        assert log[5].change == Change("scheduler", False)
        assert all(not callable(e.change.value) for e in log)
    finally:
        s.stop()


def test_incidents_pins_and_the_scheduler_switch_replay_exactly():
    drill = load_drill("link-brownout")
    s = Session(drill.scenario, live=False, drill=drill, **quiet())
    s.start(100.0)
    try:
        s.inject("1 pd-d instance lost")
        s.inject("link outage")
        s.step(50.0)
        s.end_incident(1)  # the outage ends, the instance stays lost
        s.request(t=12000.0)
        s.step(50.0)
        s.set_scheduler(False)
        s.step(50.0)
        s.release_pins()
        s.set_scheduler(True)
        s.inject(END_ALL)
        s.step(100.0)
        fork = fork_of(s)
        try:
            assert fork.verdict.ok, fork.verdict.text()
            assert [repr(x) for x in fork.session.tick.history] == \
                   [repr(x) for x in s.tick.history]
            assert fork.session.hand_incidents() == s.hand_incidents()
        finally:
            fork.drop()
    finally:
        s.stop()


def test_dropping_a_fork_leaves_the_parent_as_it_was(parent):
    before = (parent.settings, parent.generation, parent.driver)
    fork = fork_of(parent)
    fork.session.request(bandwidth=parent.settings.scenario.system.bandwidth / 2)
    fork.drop()
    assert (parent.settings, parent.generation, parent.driver) == before
    assert not fork.session.driver._thread.is_alive()
    parent.step(10.0)
    assert parent.tick.snapshot.link.capacity > 0 and parent.tick.generation == before[1]


def test_keeping_a_fork_makes_the_parent_carry_on_as_the_fork(parent):
    old_driver = parent.driver
    fork = fork_of(parent)
    fork.session.request(t=4096.0)
    parent.step(20.0)
    fork.follow(parent.tick)
    fork.keep()
    assert parent.driver is fork.session.driver and not parent.driver.led
    assert not old_driver._thread.is_alive()
    assert parent.settings.scenario.t == 4096.0 and parent.tick.snapshot.knobs.t == 4096.0
    assert parent.generation == parent.tick.generation
    parent.step(10.0)  # its own clock now
    assert parent.tick.snapshot.sim_time == FORK_AT + 30.0
    times = [s.sim_time for s in parent.tick.history]
    assert times[0] < FORK_AT < times[-1]  # the history runs on across the fork
    assert parent.record.dicts()[-1]["sim_time"] == FORK_AT + 30.0
    # a fork of the kept fork replays both logs: the parent's and the fork's own
    again = fork_of(parent)
    try:
        assert again.verdict.ok and again.verdict.changes == 4
    finally:
        again.drop()


def test_a_led_driver_moves_only_when_its_leader_says_even_live():
    ticks: queue.SimpleQueue = queue.SimpleQueue()
    settings = Settings.initial(presets.load("toy"))
    d = Driver(settings, live=True, led=True, on_tick=ticks.put,
               on_error=lambda text, fatal: ticks.put(text))
    d.start()
    try:
        assert ticks.get(timeout=30).snapshot.sim_time == 0.0  # built, not moving
        d.follow([5.0, 10.0])
        assert ticks.get(timeout=30).snapshot.sim_time == 10.0
        assert d.current().snapshot.sim_time == 10.0  # it did not run on by itself
        d.lead(paused=False)  # its own clock now: paced
        while ticks.get(timeout=30).snapshot.sim_time <= 10.0:
            pass
    finally:
        d.stop()


def test_several_changes_at_one_instant_replay_whatever_state_the_parent_recorded(monkeypatch):
    """Keys pressed while the clock stands still land at one simulated time, and a live
    parent may record any state between them (its record a middle one, its history the last:
    a tick came between two of them). Each is the run, so each checks."""
    s = Session(presets.load("paper-case-study"), live=False, **quiet())
    s.start(120.0)
    try:
        s.request(t=s.settings.scenario.t + 1024.0)
        middle = s.tick.snapshot  # after the first change, before the others
        s.request(t=s.settings.scenario.t + 1024.0)
        s.request(n_p=s.settings.scenario.n_p - 1)
        s.step(60.0)
        assert {e.at for e in s.driver.log} == {120.0} and len(s.driver.log) > 3
        rows = s.record.rows
        i = next(i for i, r in enumerate(rows) if r[0] == 120.0)
        rows[i] = tuple(metric_row(middle, s.point_at(middle)).values())  # as a live one may
        monkeypatch.setattr("prfaas_tui.fork.VERIFY_ROWS", len(rows))  # check that row too
        fork = fork_of(s)
        try:
            assert fork.verdict.ok, fork.verdict.text()
        finally:
            fork.drop()
    finally:
        s.stop()
