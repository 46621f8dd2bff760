"""SVG snapshots of the pictures view (`g`) mid-incident, at both supported sizes (synchronous
emulator, fixed theme, simulated time only).

Update after an intended change: pytest tests/test_ui_pictures_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest

from prfaas_tui.app import PrfaasApp

MID = 800.0  # the prfaas-loss drill's incident runs from 10 to 20 min


@pytest.fixture(autouse=True)
def _no_user_presets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_pictures_mid_prfaas_loss(snap_compare, size):
    app = PrfaasApp(drill="prfaas-loss", live=False, at=MID, theme="textual-dark")
    assert snap_compare(app, press=["g"], terminal_size=size)
