"""SVG snapshots (pytest-textual-snapshot): synchronous tests, fixed terminal sizes, fixed theme,
simulated time only (the emulator runs synchronously to a fixed time; no wall clock is shown).

Update after an intended change: pytest tests/test_ui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from prfaas_tui.app import PrfaasApp

AT = 120.0  # simulated seconds before the first render


@pytest.fixture(autouse=True)
def _no_user_presets(tmp_path, monkeypatch):
    """The preset picker lists TOML files of the working directory and ~/.config: keep them out."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))


def app() -> PrfaasApp:
    return PrfaasApp("paper-case-study", live=False, at=AT, theme="textual-dark")


def test_main_screen_80x24(snap_compare):
    assert snap_compare(app(), terminal_size=(80, 24))


def test_main_screen_160x48(snap_compare):
    assert snap_compare(app(), terminal_size=(160, 48))


def test_main_screen_light_theme_160x48(snap_compare):
    assert snap_compare(PrfaasApp("toy", live=False, at=AT, theme="textual-light"),
                        terminal_size=(160, 48))


def test_preset_picker(snap_compare):
    assert snap_compare(app(), press=["p"], terminal_size=(120, 36))


def test_help_screen(snap_compare):
    assert snap_compare(app(), press=["f1"], terminal_size=(120, 48))


def test_compare_view(snap_compare):
    assert snap_compare(app(), press=["c"], terminal_size=(160, 48))


def test_drill_scorecard(snap_compare):
    """The shipped link-brownout drill run to its end: the scorecard opens by itself."""
    assert snap_compare(PrfaasApp(drill="link-brownout", live=False, at=2400.0),
                        terminal_size=(120, 40))


def test_drill_timeline_during_the_incident(snap_compare):
    assert snap_compare(PrfaasApp(drill="link-brownout", live=False, at=900.0),
                        terminal_size=(160, 48))


def test_compare_scheduler_against_static(snap_compare):
    """During a drill, compare runs it with the scheduler and without (static), to the end."""
    assert snap_compare(PrfaasApp(drill="link-brownout", live=False, at=60.0), press=["c"],
                        terminal_size=(160, 48))
