"""The dashboard's session without Textual: one path for a knob change (validated once, the
emulation taken there), the emulation's own moves coming back through ticks, and stale ticks
never undoing a change."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from emulator.model import Knobs, evaluate
from emulator.scenario import presets
from emulator.scenario.knobs import Controls, KnobError
from prfaas_tui.live import END_ALL, incident_catalog
from prfaas_tui.modelview import Refused, paradigm_point
from prfaas_tui.session import Session


def session(preset: str = "toy", at: float = 10.0) -> Session:
    s = Session(presets.load(preset), live=False, post_tick=lambda tick: None,
                post_error=lambda text, gen: None)
    s.start(at)
    return s


@pytest.fixture
def toy():
    s = session()
    yield s
    s.stop()


def test_the_session_imports_no_textual():
    code = ("import sys, prfaas_tui.session; "
            "sys.exit(any(m.split('.')[0] == 'textual' for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_a_change_reaches_settings_model_and_emulation_at_once(toy):
    before = toy.view.point.to_dict()
    toy.request(t=4096.0)
    assert toy.settings.scenario.t == 4096.0
    assert toy.view.settings is toy.settings
    assert toy.view.point.to_dict() == paradigm_point(toy.settings).to_dict() != before
    assert toy.tick.snapshot.knobs.t == 4096.0  # the emulation runs it
    assert toy.tick.applied == toy.driver.sent == 1


def test_a_refused_change_changes_nothing(toy):
    settings, view, tick = toy.settings, toy.view, toy.tick
    with pytest.raises(Refused, match="exceeds the local pool of 3"):
        toy.request(n_p=2)  # toy: 1 + 2 = 3 of 3
    assert toy.settings is settings and toy.view is view and toy.tick is tick
    assert toy.driver.sent == 0 and toy.driver.current().snapshot.knobs == tick.snapshot.knobs


def test_the_emulations_own_move_comes_back_through_the_tick(toy):
    """A scheduler moves t and the split inside the emulation: the next tick carries them to
    the settings and the model, and nothing is sent back to the emulation."""
    toy.driver.call(lambda emu: emu.change(t=2048.0, n_p=0, n_d=3))
    toy.step(1.0)
    sc = toy.settings.scenario
    assert (sc.t, sc.n_p, sc.n_d) == (2048.0, 0, 3)
    assert toy.view.point.to_dict() == paradigm_point(toy.settings).to_dict()
    assert toy.driver.sent == 0  # followed, not re-applied


def test_a_tick_older_than_a_change_does_not_undo_it(toy):
    old = toy.tick
    toy.request(t=4096.0)
    assert toy.take(old)  # this emulation's, but from before the change
    assert toy.settings.scenario.t == 4096.0


def test_a_tick_of_an_earlier_emulation_is_dropped(toy):
    old = toy.tick
    toy.load(presets.load("paper-case-study"))
    toy.start(5.0)
    assert not toy.take(old)
    assert toy.tick.generation == 1 and toy.settings.scenario.name == "paper-case-study"


def test_the_live_line_is_the_model_at_the_snapshots_live_state(toy):
    """The Λmax line at each snapshot: its own knobs and what was alive, in the panel's mode
    (the toy's own, paper; its linear profiles give exact the same figures)."""
    snap = toy.tick.snapshot
    st = snap.stages
    n_d = st["pd-d"].instances - 1  # one decode instance not taking work
    assert n_d >= 1
    moved = dataclasses.replace(snap, knobs=dataclasses.replace(snap.knobs, t=2048.0),
                                stages={**st, "pd-d": dataclasses.replace(st["pd-d"],
                                                                          instances=n_d)})
    want = evaluate(toy.system, Knobs(t=2048.0, n_p=st["pd-p"].instances, n_d=n_d,
                                      n_prfaas=st["prfaas"].instances,
                                      bandwidth=snap.link.capacity), toy.mode)
    assert toy.mode == toy.settings.scenario.mode == "paper"
    assert toy.point_at(moved).to_dict() == want.to_dict()
    assert toy.point_at(snap).to_dict() == toy.effective.point.to_dict()


def test_hand_made_incidents_end_together(toy):
    ready = {label: inc for label, _, inc in incident_catalog()}
    toy.inject(ready["link brownout to 20%"])
    toy.inject(ready["link outage"])
    assert set(toy.tick.snapshot.incidents) == {"link brownout to 20%", "link outage"}
    toy.inject(END_ALL)
    assert toy.tick.snapshot.incidents == ()


def test_a_change_is_checked_by_the_scenario_layers_rule(toy, monkeypatch):
    """The dashboard has no knob rules of its own: Controls.validate decides."""
    def refuse(self, system):
        raise KnobError("bandwidth", "must be refused here")
    monkeypatch.setattr(Controls, "validate", refuse)
    with pytest.raises(Refused, match="^B_out must be refused here$"):
        toy.request(rate=2.0)
    assert toy.driver.sent == 0
