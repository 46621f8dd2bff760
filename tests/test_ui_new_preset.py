"""The dashboard's `n` form builds a preset like `prfaas-tui new`, refuses bad input in place,
and opens what it wrote; `--preset PATH` opens a written preset."""

from __future__ import annotations

import pytest
from test_ui_support import dash, screen_text

from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.new_preset import NewPresetScreen

pytestmark = pytest.mark.asyncio
SIZE = (160, 48)


async def test_n_form_writes_solves_and_opens_the_preset(tmp_path):
    out = tmp_path / "mine.toml"
    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NewPresetScreen)
        app.screen.query_one("#new-local_gpu").value = "h999"
        app.screen.query_one("#new-out").value = str(out)
        app.screen.submit()
        await pilot.pause()
        assert isinstance(app.screen, NewPresetScreen)  # refused in place, nothing written
        assert "h999: no GPU card" in screen_text(app) and not out.exists()
        app.screen.query_one("#new-local_gpu").value = "h20"
        app.screen.submit()
        await pilot.pause()
        assert not isinstance(app.screen, NewPresetScreen)
        sc = dash(app).settings.scenario
        assert sc.name == "prfaas-case-study-1t-h200-h20" and out.is_file()
        assert (sc.system.n_prfaas, sc.n_p, sc.n_d) == (4, 3, 5)


async def test_preset_path_opens_a_written_preset(tmp_path):
    from pathlib import Path

    from prfaas_tui.preset_builder import NewSpec, write_preset
    out = Path(tmp_path / "w.toml")
    write_preset(NewSpec(model="kimi-linear-48b-a3b"), out)
    app = PrfaasApp(str(out), live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert dash(app).settings.scenario.name == "kimi-linear-48b-a3b-h200-h20"
