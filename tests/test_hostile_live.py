"""Issue 11: incidents typed into a running dashboard meet the checks a drill file's incidents
meet -- the ranges of emulator.scenario.incidents (by_hand) and the work caps of
emulator.budget (timers, surged requests) -- through the one path the injection dialog uses
(prfaas_tui.live.hand_incident), at the Session level, without Textual."""

from __future__ import annotations

import pytest

from emulator import budget
from emulator.scenario import presets
from emulator.scenario.reader import PresetError
from prfaas_tui.live import END_ALL, hand_incident
from prfaas_tui.session import Session


@pytest.fixture
def toy():
    s = Session(presets.load("toy"), live=False, post_tick=lambda tick: None,
                post_error=lambda text, gen: None)
    s.start(10.0)
    yield s
    s.stop()


@pytest.mark.parametrize("kind, values, says", [
    ("flap", {"down": 1e-9, "up": 1e-9}, "flap.down + up: periodic events"),  # a 1 ns flap
    ("diurnal", {"step": 1e-9}, "diurnal.step: periodic events"),
    ("surge", {"factor": 1e6}, "surge.factor x the rate"),  # a billion requests
    ("surge", {"long_factor": 1e9}, "surge.long_factor x the rate"),
    ("flap", {"down": 1e-6, "up": 1e-6, "duration": 1e9}, "flap.down + up"),  # lasts the run
])
def test_an_incident_over_a_cap_is_refused_and_nothing_starts(toy, kind, values, says):
    sent, tick = toy.driver.sent, toy.tick
    with pytest.raises(PresetError) as info:
        toy.inject(hand_incident(kind, values, toy.settings))
    line = str(info.value)
    assert "\n" not in line and line.startswith(f"{kind}: {says}"), line
    assert "over the cap of" in line
    assert toy.driver.sent == sent and toy.tick is tick
    assert toy.tick.snapshot.incidents == ()


@pytest.mark.parametrize("kind, values, key", [
    ("brownout", {"factor": 1.5}, "factor"),
    ("brownout", {"factor": float("nan")}, "factor"),
    ("flap", {"down": -1}, "down"),
    ("flap", {"down": float("inf")}, "down"),
    ("instance-loss", {"stage": "prfaas", "count": 100}, "count"),
    ("surge", {}, "long_factor"),  # one of factor or long_factor
    ("outage", {"duration": 0}, "duration"),
    ("outage", {"bogus": 1}, "bogus"),
])
def test_an_incident_out_of_range_is_refused_as_in_a_drill(toy, kind, values, key):
    with pytest.raises(PresetError) as info:
        hand_incident(kind, values, toy.settings)
    line = str(info.value)
    assert "\n" not in line and line.startswith(f"{kind}: {key}"), line


def test_the_caps_are_the_dashboards_and_the_same_check_as_a_drill(toy):
    """Just under and just over the cap, through the function drills use (check_incidents)."""
    caps = budget.caps_for("dashboard")
    run = toy.settings.scenario.sim.duration
    period = 2 * run / caps.events  # a flap of period down + up: 2 x run / period events
    ok = hand_incident("flap", {"down": period * 0.51, "up": period * 0.51}, toy.settings)
    assert budget.check_incidents([("x", "flap", run, budget.incident_params(ok))], run, caps)
    with pytest.raises(PresetError, match="over the cap"):
        hand_incident("flap", {"down": period * 0.49, "up": period * 0.49}, toy.settings)


def test_a_valid_typed_incident_runs_and_ends(toy):
    toy.inject(hand_incident("flap", {"down": 5, "up": 5, "duration": 60}, toy.settings))
    toy.inject(hand_incident("surge", {"factor": 2.0}, toy.settings))
    assert len(toy.tick.snapshot.incidents) == 2
    toy.inject(END_ALL)
    assert toy.tick.snapshot.incidents == ()
