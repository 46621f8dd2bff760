"""The live drill path applies only the changes asked for. A speed key sends the pace, never
the knobs the UI last saw: those may lag the emulation (a scheduler move after the last tick
the UI took), and sending them whole undid that move as a `knob threshold -> ...` nobody made.
Pilot tests press keys in bursts, as a terminal delivers them, with no pauses in between."""

from __future__ import annotations

import math

import pytest
from test_ui_support import dash, wait_for
from textual import events

from emulator.sim.runs.drills import run_drill
from prfaas_tui.app import PrfaasApp
from prfaas_tui.events import events_of
from prfaas_tui.screens.drills import ScorecardScreen

pytestmark = pytest.mark.asyncio
SIZE = (160, 48)


def burst(app: PrfaasApp, *keys: str) -> None:
    for key in keys:
        app._driver.send_message(events.Key(key, None))


async def test_a_speed_key_leaves_a_knob_the_ui_has_not_seen_yet():
    app = PrfaasApp("paper-case-study")
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await wait_for(pilot, lambda: d.tick is not None)
        await pilot.press("space")
        await wait_for(pilot, lambda: d.tick.paused)
        driver = d.session.driver
        send = driver.change

        def raced(change):
            """The race made certain: the emulation moves t (as its scheduler does) after the
            last tick the UI took and before this change reaches it."""
            driver.call(lambda emu: emu.change(t=25000.0))
            return send(change)

        driver.change = raced
        burst(app, *["greater_than_sign"] * 3)
        await wait_for(pilot, lambda: driver.sent == 3 and d.tick.applied == driver.sent)
        assert driver.call(lambda emu: emu.router.t) == 25000.0
        assert not any(e.text.startswith("threshold -> 19400") for e in events_of(
            driver.decisions()))
        assert d.settings.scenario.t == 25000.0  # and the UI follows the emulation


async def test_a_live_drill_with_key_bursts_scores_as_the_headless_drill():
    app = PrfaasApp(drill="link-brownout", speed=math.inf)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await wait_for(pilot, lambda: d.tick is not None and d.tick.snapshot.sim_time > 700,
                       within_sim=d.drill.duration)  # past the scheduler's first moves of t
        burst(app, "y", *["greater_than_sign"] * 6)
        await wait_for(pilot, lambda: d.tick.paused
                       and d.tick.snapshot.sim_time >= d.drill.duration,
                       within_sim=d.drill.duration)
        assert isinstance(app.screen, ScorecardScreen)
        headless = run_drill(d.drill)["scorecard"]
        assert app.screen.card == headless  # P90, decisions and all
        knobs = [e.text for e in events_of(d.session.driver.decisions()) if e.kind == "knob"]
        assert knobs == []  # nobody turned a knob
