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
        # the decode is derived from the cards (BS_max 36 on H20: TPOT and memory meet), not the
        # paper's 20, so the local split leans to prefill
        assert (sc.system.n_prfaas, sc.n_p, sc.n_d) == (4, 5, 3)


async def test_preset_path_opens_a_written_preset(tmp_path):
    from pathlib import Path

    from prfaas_tui.preset_builder import NewSpec, write_preset
    out = Path(tmp_path / "w.toml")
    write_preset(NewSpec(model="kimi-linear-48b-a3b"), out)
    app = PrfaasApp(str(out), live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert dash(app).settings.scenario.name == "kimi-linear-48b-a3b-h200-h20"


async def test_n_form_refuses_a_model_that_does_not_fit_and_marks_an_uncalibrated_gpu(tmp_path):
    from pathlib import Path

    out = tmp_path / "ds.toml"
    ds = Path(__file__).parent / "configs" / "deepseek-v3.json"
    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.pause()
        app.screen.query_one("#new-model").value = str(ds)
        app.screen.query_one("#new-parallelism").value = "1"
        app.screen.query_one("#new-prfaas_gpus").value = "4"
        app.screen.query_one("#new-local_gpus").value = "4"
        app.screen.query_one("#new-out").value = str(out)
        app.screen.submit()
        await pilot.pause()
        assert isinstance(app.screen, NewPresetScreen)  # the memory check refuses it in place
        assert "does not fit 1 x h200" in screen_text(app) and not out.exists()
        app.screen.query_one("#new-model").value = "prfaas-case-study-1t"
        app.screen.query_one("#new-parallelism").value = "8"
        app.screen.query_one("#new-prfaas_gpus").value = "32"
        app.screen.query_one("#new-local_gpus").value = "64"
        app.screen.submit()
        await pilot.pause()
        assert not isinstance(app.screen, NewPresetScreen)
        notes = [n.message for n in app._notifications]
        assert any("local GPU h20 is uncalibrated" in m for m in notes), notes
