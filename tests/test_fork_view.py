"""The fork view through the real app (Pilot, headless, live=False: no wall clock): `f` forks the
live run, a knob changed there goes to the fork alone, `esc` drops the fork and the run goes on
untouched, `enter` keeps it and the dashboard carries on with it; readable at 80x24 and
160x48."""

from __future__ import annotations

import pytest
from test_ui_support import dash, screen_text

from emulator.units import format_tokens
from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.dashboard import Dashboard
from prfaas_tui.screens.fork import ForkControls, ForkScreen

pytestmark = pytest.mark.asyncio

AT = 1800.0  # 30 simulated minutes into link-brownout: the brownout is over


def app() -> PrfaasApp:
    return PrfaasApp(drill="link-brownout", live=False, at=AT)


async def open_fork(pilot) -> ForkScreen:
    await pilot.press("f")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, ForkScreen)
    return screen


async def test_f_opens_the_fork_view_on_a_checked_replay_of_the_run():
    async with app().run_test(size=(160, 48)) as pilot:
        run = dash(pilot.app).session
        view = await open_fork(pilot)
        assert view.fork.verdict.ok and view.fork.verdict.at == AT
        assert view.session.tick.snapshot.sim_time == AT
        assert view.query_one(ForkControls).has_focus
        text = screen_text(pilot.app)
        assert "fork of drill link-brownout at 30.0 min" in text
        assert "checks identical" in text
        for label in ("served req/s (Λ)", "TTFT P90 s", "queued requests"):
            assert label in text
        assert "Keep fork" in text and "Drop fork" in text
        assert run.tick.snapshot.sim_time == AT  # forking moved nothing


async def test_a_knob_changed_in_the_fork_view_goes_to_the_fork_alone():
    async with app().run_test(size=(160, 48)) as pilot:
        run = dash(pilot.app).session
        t_run, scenario_run = run.settings.scenario.t, run.settings.scenario
        dash(pilot.app).step_seconds = 60.0  # what `.` steps, in the fork view too
        view = await open_fork(pilot)
        await pilot.press("right", "right")  # t, the first knob: two steps up
        t_fork = view.session.settings.scenario.t
        assert t_fork == t_run + 2 * 1024
        assert run.settings.scenario is scenario_run  # the parent's scenario unchanged
        await pilot.press("full_stop", "full_stop")  # the shared clock: both move
        assert run.tick.snapshot.sim_time == view.session.tick.snapshot.sim_time == AT + 120
        assert view.session.tick.snapshot.knobs.t == t_fork
        assert run.tick.snapshot.knobs.t == t_run
        assert [e.change.kind for e in run.driver.log if e.at >= AT] == []
        # the table shows both, the run's t and the fork's
        side = [r[:40].split() for r in screen_text(pilot.app).splitlines()]  # the left column
        row = next(r for r in side if r[:1] == ["t"])
        assert row[1:] == [format_tokens(t_run), format_tokens(t_fork)]


async def test_esc_drops_the_fork_and_the_run_goes_on_untouched():
    async with app().run_test(size=(160, 48)) as pilot:
        d = dash(pilot.app)
        run = d.session
        before = (run.settings, run.generation, run.driver)
        view = await open_fork(pilot)
        await pilot.press("left", "left", "left")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(pilot.app.screen, Dashboard)
        assert (run.settings, run.generation, run.driver) == before
        assert not view.fork.session.driver._thread.is_alive()
        await pilot.press("full_stop")
        assert run.tick.snapshot.knobs.t == before[0].scenario.t
        assert run.tick.snapshot.sim_time > AT


async def test_enter_keeps_the_fork_and_the_dashboard_carries_on_with_it():
    async with app().run_test(size=(160, 48)) as pilot:
        d = dash(pilot.app)
        run = d.session
        old_driver, t_run = run.driver, run.settings.scenario.t
        d.step_seconds = 30.0
        view = await open_fork(pilot)
        await pilot.press("right")
        t_fork = view.session.settings.scenario.t
        await pilot.press("full_stop")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, Dashboard)
        assert d.session is run  # the same object: the panels' reference holds
        assert run.driver is view.fork.session.driver and not old_driver._thread.is_alive()
        assert run.settings.scenario.t == t_fork != t_run
        assert d.tick is run.tick and d.tick.snapshot.knobs.t == t_fork
        await pilot.press("full_stop")  # the dashboard's clock now drives the kept fork
        assert d.tick.snapshot.sim_time == AT + 60.0
        times = [s.sim_time for s in d.tick.history]
        assert times[0] < AT < times[-1]  # its history runs on across the fork instant
        moved = [e for e in run.driver.log if e.change.kind == "settings"]
        assert moved[-1].at == AT and moved[-1].change.value.scenario.t == t_fork


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_the_fork_view_is_readable_at_both_sizes(size):
    async with app().run_test(size=size) as pilot:
        await open_fork(pilot)
        await pilot.press("right")
        await pilot.pause()
        rows = screen_text(pilot.app).splitlines()
        assert len(rows) == size[1]
        assert all(len(r) <= size[0] for r in rows)
        title = rows[0]
        assert "fork" in title and "checks identical" in title  # one row, not cut
        text = "\n".join(rows)
        for label in ("run", "fork", "served req/s", "TTFT P90", "queued PD-D", "B_out",
                      "Keep fork", "Drop fork"):
            assert label in text, label
        assert "⏎ type" not in text  # enter keeps; it does not type a value here
        assert ("SLO attainment" in text) == (size[1] >= 40)  # more rows where there is room


async def test_live_the_fork_follows_the_runs_clock_and_a_kept_fork_runs_on_its_own():
    """Live: the fork replays on its own thread, then moves only with the run's ticks; kept,
    it runs on the dashboard's clock. Waits are on simulated time (test_ui_support.wait_for)."""
    from test_ui_support import wait_for

    async with PrfaasApp("paper-case-study", speed=100.0).run_test(size=(160, 48)) as pilot:
        d = dash(pilot.app)
        await wait_for(pilot, lambda: d.tick is not None and d.tick.snapshot.sim_time > 20)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ForkScreen)
                       and pilot.app.screen.session.tick is not None,
                       within_sim=7200)  # the run goes on while the fork replays
        view = pilot.app.screen
        assert view.fork.verdict.ok, view.fork.verdict.text()
        at = view.fork.origin.at
        await wait_for(pilot, lambda: view.session.tick.snapshot.sim_time > at + 10)
        # on one time axis: every fork snapshot after the instant is at one of the run's times
        run_times = {s.sim_time for s in d.session.driver.origin()[2]}
        assert {s.sim_time for s in view.session.tick.history if s.sim_time > at} <= run_times
        t_run = d.session.settings.scenario.t
        await pilot.press("left")
        t_fork = view.session.settings.scenario.t
        assert t_fork != t_run
        await wait_for(pilot, lambda: view.session.tick.snapshot.knobs.t == t_fork
                       and view.session.tick.snapshot.sim_time > at + 20)
        assert d.session.tick.snapshot.knobs.t == t_run
        gen = view.session.generation
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, Dashboard)
                       and d.tick is not None and d.tick.generation == gen)
        kept_at = d.tick.snapshot.sim_time
        await wait_for(pilot, lambda: d.tick.snapshot.sim_time > kept_at + 10)  # its own clock
        assert d.tick.snapshot.knobs.t == t_fork


async def test_f_on_a_stopped_emulator_says_so_and_opens_nothing():
    async with app().run_test(size=(80, 24)) as pilot:
        d = dash(pilot.app)
        d.session.driver.stop()
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(pilot.app.screen, Dashboard)
        assert any("cannot fork" in str(n.message) for n in pilot.app._notifications)


async def test_a_fork_kept_from_before_a_drills_end_gets_its_own_scorecard():
    """The run reached the drill's end (and showed its scorecard) while the fork, changed
    before the end, ran beside it: kept, the fork's own scorecard shows."""
    from prfaas_tui.screens.drills import ScorecardScreen

    async with PrfaasApp(drill="link-brownout", live=False, at=2370).run_test(
            size=(160, 48)) as pilot:
        d = dash(pilot.app)
        d.step_seconds = 60.0
        view = await open_fork(pilot)
        await pilot.press("L")  # t up a lot, the fork alone
        await pilot.press("full_stop")  # both reach the drill's end (2400 s) and stop there
        assert view.session.tick.snapshot.sim_time == d.drill.duration
        d.scored = True  # as a live dashboard has when the run's end went by
        run_card = d.session.scorecard()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ScorecardScreen)
        assert pilot.app.screen.card == d.session.scorecard() != run_card


async def test_o_in_the_fork_view_applies_the_optimum_to_the_fork_alone():
    async with app().run_test(size=(160, 48)) as pilot:
        run = dash(pilot.app).session
        before = run.settings
        view = await open_fork(pilot)
        await pilot.press("L", "L")  # far from the optimum first
        await pilot.press("o")
        t, n_p, n_d = view.session.optimum_targets()
        sc = view.session.settings.scenario
        assert (sc.t, sc.n_p, sc.n_d) == (t, n_p, n_d)
        assert view.session.tick.snapshot.knobs.t == t
        assert run.settings is before
