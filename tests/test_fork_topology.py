"""What-if forks on a topology, as the pair's (tests/test_fork.py): a region's, a site's and a
link's knobs and a hand-made link incident are logged changes at their simulated time; a fork
of `two-regions` replays them on the same scenario and seed, is checked identical to the
parent before its own change (every snapshot, the regions', sites' and links' objects too),
and differs after it, the parent untouched. Headless (live=False): no wall clock."""

from __future__ import annotations

import dataclasses

import pytest
from test_ui_support import type_value

from emulator.scenario import presets
from emulator.scenario.incidents import Brownout
from emulator.scenario.knobs import KnobError
from prfaas_tui.events import events_of
from prfaas_tui.fork import Fork
from prfaas_tui.live import LIVE_KEY, ElementChange
from prfaas_tui.modelview import Refused
from prfaas_tui.session import Session

FORK_AT = 600.0
GBPS = 1e9 / 8


def quiet(**kw) -> dict:
    return {"post_tick": lambda tick: None, "post_error": lambda text, gen: None, **kw}


def printed(snap) -> str:
    return f"{snap!r} {snap.topology!r}"


@pytest.fixture(scope="module")
def scenario():
    return presets.load("two-regions", topology=True)


@pytest.fixture
def parent(scenario):
    """two-regions to 10 minutes: the west link cut to 25 Gbps at 120 s, west to t 8K and 4/4
    at 200 s, the hub to 6 instances at 300 s, a brownout of hub->east by hand at 360 s."""
    s = Session(scenario, live=False, **quiet())
    s.start(120.0)
    s.set_link("hub->west", 25 * GBPS)
    s.step(80.0)
    s.set_region("west", t=8192.0, n_p=4, n_d=4)
    s.step(100.0)
    s.set_site("hub", 6)
    s.step(60.0)
    s.inject(Brownout(link="hub->east", factor=0.5))
    while s.tick.snapshot.sim_time < FORK_AT:
        s.step(60.0)
    assert s.tick.snapshot.sim_time == FORK_AT
    yield s
    s.stop()


def test_topology_changes_are_logged_changes_the_events_list(parent):
    assert parent.driver is not None
    _, log, _ = parent.driver.origin()
    kinds = [(e.change.kind, e.at) for e in log]
    assert kinds == [("element", 120.0), ("element", 200.0), ("element", 300.0),
                     ("incident", 360.0)]
    assert log[0].change.value == ElementChange("link", "hub->west", bandwidth=25 * GBPS)
    texts = [(e.kind, e.text) for e in parent.events()]
    assert ("knob", "hub->west: bandwidth -> 25.00 Gbps") in texts
    assert ("knob", "west: threshold -> 8192 tokens") in texts
    assert ("knob", "west: split -> N_p 4 / N_d 4") in texts
    assert ("knob", "hub: instances -> 6") in texts
    assert any(kind == "incident" and "hub->east" in text for kind, text in texts)
    assert events_of(parent.driver.decisions()) == parent.events()


def test_a_fork_of_two_regions_replays_the_parent_exactly_then_differs_after_its_change(parent):
    fork = Fork(parent, **quiet())
    fork.start()
    try:
        v = fork.verdict
        assert v.ok and v.at == FORK_AT and v.changes == 4, v.text()
        assert v.checked == len(parent.tick.history) > 100
        mine, theirs = fork.session.tick.history, parent.tick.history
        assert [printed(s) for s in mine] == [printed(s) for s in theirs]
        assert mine[-1].topology[LIVE_KEY] == theirs[-1].topology[LIVE_KEY]
        assert fork.session.running_spec() == parent.running_spec()

        fork.session.set_link("hub->west", 100 * GBPS)  # the what-if, on the fork alone
        assert parent.running_spec().link("hub", "west").bandwidth == 25 * GBPS
        assert fork.session.running_spec().link("hub", "west").bandwidth == 100 * GBPS
        for _ in range(4):  # both run on, on the parent's clock
            parent.step(60.0)
            fork.follow(parent.tick)
        mine, theirs = fork.session.tick.history, parent.tick.history
        after = [s.sim_time for s in theirs if s.sim_time > FORK_AT]
        assert [s.sim_time for s in mine if s.sim_time > FORK_AT] == after
        assert printed(mine[-1]) != printed(theirs[-1])
        assert any("hub->west: bandwidth -> 100.00 Gbps" in e.text
                   for e in fork.session.events())
        assert not any("100.00 Gbps" in e.text for e in parent.events())
    finally:
        fork.drop()


def test_a_replay_without_the_parents_changes_is_not_the_parents_run(parent):
    """The check can fail: the same fork with the element changes left out of the log."""
    fork = Fork(parent, **quiet())
    kept = tuple(e for e in fork.origin.log if e.change.kind != "element")
    fork.origin = dataclasses.replace(fork.origin, log=kept)
    fork.start()
    try:
        v = fork.verdict
        assert not v.ok and v.mismatched > 0 and v.first_mismatch == 120.0
        assert "not the parent's run" in v.text()
    finally:
        fork.drop()


def test_a_kept_topology_fork_carries_on_in_the_parents_session(parent):
    fork = Fork(parent, **quiet())
    fork.start()
    fork.session.set_region("east", routing="best-bandwidth")
    fork.keep()
    try:
        assert parent.region_policy("east") == "best-bandwidth"
        parent.step(30.0)
        assert parent.tick.snapshot.sim_time == FORK_AT + 30.0
        assert parent.model is not None
    finally:
        parent.stop()


def test_a_refused_element_change_is_one_line_and_not_logged(parent):
    with pytest.raises(KnobError) as err:
        parent.set_region("west", n_d=0)
    assert "\n" not in str(err.value)
    with pytest.raises(KnobError):
        parent.set_element("link", "hub->west", instances=3)
    with pytest.raises(Refused):
        parent.request(t=4096.0)  # a topology's knobs are its elements'
    _, log, _ = parent.driver.origin()
    assert len(log) == 4


# -- the keys in the real app (Pilot, headless, live=False) ----------------------------------------
async def _topology_app(pilot):
    from prfaas_tui.screens.dashboard import Dashboard

    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, Dashboard)
    return screen


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_f_E_and_c_work_in_the_topology_view(size, tmp_path, monkeypatch):
    from test_ui_support import screen_text

    from prfaas_tui.app import PrfaasApp
    from prfaas_tui.screens.compare import CompareScreen
    from prfaas_tui.screens.events import EventsScreen
    from prfaas_tui.screens.fork import ForkScreen

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    app = PrfaasApp("two-regions", live=False, at=120.0)
    async with app.run_test(size=size) as pilot:
        view = await _topology_app(pilot)
        while view.selected != ("link", "hub->west"):
            await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
        await type_value(pilot, "25")  # the run's own change, before the fork
        assert view.session.running_spec().link("hub", "west").bandwidth == 25 * GBPS
        await pilot.press("full_stop")
        await pilot.pause()

        await pilot.press("E")  # the events: the link's change is listed
        await pilot.pause()
        assert isinstance(app.screen, EventsScreen)
        assert "hub->west: bandwidth -> 25.00 Gbps" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()

        await pilot.press("f")  # a fork, replayed and checked
        await pilot.pause()
        fork = app.screen
        assert isinstance(fork, ForkScreen)
        assert fork.fork.verdict.ok and fork.fork.verdict.changes == 1
        text = screen_text(app)
        assert "identical" in text and "hub->west" in text
        while fork.selected != ("link", "hub->west"):
            await pilot.press("down")
        await pilot.press("e")
        await pilot.pause()
        await type_value(pilot, "80")  # the what-if: the fork alone
        assert fork.session.running_spec().link("hub", "west").bandwidth == 80 * GBPS
        assert view.session.running_spec().link("hub", "west").bandwidth == 25 * GBPS
        await pilot.press("escape")  # dropped: the run goes on as it was
        await pilot.pause()
        assert app.screen is view

        await pilot.press("c")  # the routing policies on the same seeded workload
        await pilot.pause()
        assert isinstance(app.screen, CompareScreen)
        await pilot.pause()
        text = screen_text(app)
        for routing in ("threshold", "lp", "best-bandwidth"):
            assert routing in text
        assert "model Λmax" not in text  # no pair model on a topology
