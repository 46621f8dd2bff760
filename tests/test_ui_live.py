"""Pilot tests of the live mode: the emulator on its own thread, paced by the wall clock."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
from test_ui_support import dash, screen_text, select_knob, sim_time, wait_for
from textual import events

from emulator.sim.runs.drills import run_drill
from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.drills import ScorecardScreen
from prfaas_tui.screens.prompt import ValuePrompt

pytestmark = pytest.mark.asyncio
SIZE = (160, 48)
BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_ui_latency.py"


async def test_opens_with_the_emulator_running_paced():
    app = PrfaasApp("toy")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: (sim_time(app) or 0) > 2.0)
        tick = dash(app).tick
        assert not tick.paused and tick.speed == 20 and tick.rtf is not None and tick.rtf > 0
        assert "rtf" in screen_text(app) and "▶ sim" in screen_text(app)


async def test_pause_step_and_resume_move_simulated_time_exactly():
    app = PrfaasApp("toy")
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await wait_for(pilot, lambda: (sim_time(app) or 0) > 0.5)
        await pilot.press("space")
        await wait_for(pilot, lambda: d.tick.paused)
        t0 = sim_time(app)
        await pilot.press("greater_than_sign")  # a change while paused: a tick answers it
        await wait_for(pilot, lambda: d.tick.speed == 50)
        assert d.tick.paused and sim_time(app) == t0  # a later tick: the clock stood still
        await pilot.press("full_stop")
        await wait_for(pilot, lambda: sim_time(app) != t0)
        assert sim_time(app) == pytest.approx(t0 + 1.0, abs=1e-9)
        d.action_step_by()  # the palette's "Step by…"
        await pilot.pause()
        assert isinstance(app.screen, ValuePrompt)
        await pilot.press("ctrl+a", "ctrl+k", *"2.5", "enter")
        await wait_for(pilot, lambda: sim_time(app) > t0 + 1.5)
        assert sim_time(app) == pytest.approx(t0 + 3.5, abs=1e-9)
        assert "⏸ sim" in screen_text(app)
        await pilot.press("space")
        await wait_for(pilot, lambda: sim_time(app) > t0 + 4.0)
        assert not d.tick.paused
        assert "50x" in screen_text(app)


async def test_a_knob_reaches_the_running_emulator():
    app = PrfaasApp("paper-case-study")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: dash(app).tick is not None)
        await select_knob(pilot, "t")
        await pilot.press("right")
        await wait_for(pilot, lambda: dash(app).tick.snapshot.knobs.t == 19400 + 1024)


async def test_a_burst_of_keys_steps_from_the_last_one():
    app = PrfaasApp("paper-case-study")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: dash(app).tick is not None)
        await select_knob(pilot, "t")
        for _ in range(4):  # as fast as a terminal delivers a held key, no waiting between
            app._driver.send_message(events.Key("right", None))
        await wait_for(pilot, lambda: dash(app).tick.snapshot.knobs.t == 19400 + 4 * 1024)
        assert dash(app).settings.scenario.t == 19400 + 4 * 1024


@pytest.mark.slow
async def test_keys_stay_responsive_with_the_emulator_flat_out():
    """A smoke version of benchmarks/bench_ui_latency.py (which reports the real numbers)."""
    spec = importlib.util.spec_from_file_location("bench_ui_latency", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # a key must reach the screen, however loaded the machine: the 5 s bound is the benchmark's
    r = await bench.measure("paper-case-study", SIZE, math.inf, keys=12, warmup_sim=30.0,
                            key_timeout=60.0)
    # every key reached the screen while the emulator kept moving; how fast is the benchmark's
    # job (no timing asserts: the machines are shared and noisy)
    assert r["keys"] == 12 and r["sim_seconds_per_wall_second"] > 0, r


async def test_a_live_drill_stops_at_its_end_with_the_clis_scorecard():
    app = PrfaasApp(drill="link-outage", speed=math.inf)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await wait_for(pilot, lambda: d.tick is not None and d.tick.paused
                       and d.tick.snapshot.sim_time >= d.drill.duration,
                       within_sim=d.drill.duration)  # run past the end: the wait fails
        assert d.tick.snapshot.sim_time == d.drill.duration
        assert isinstance(app.screen, ScorecardScreen)
        cli = run_drill(d.drill)["scorecard"]  # what `prfaas-tui drill link-outage --json` reports
        assert app.screen.card == cli
