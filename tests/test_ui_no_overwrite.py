"""Nothing is overwritten or discarded without asking: the `n` form, ctrl+s and x never write
over an existing file, and p or d ask before replacing a run that has gone on a while."""

from __future__ import annotations

import pytest
from test_ui_support import dash, screen_text

from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.discard import DISCARD_AFTER_S
from prfaas_tui.screens.new_preset import NewPresetScreen
from prfaas_tui.screens.presets import PresetPicker
from prfaas_tui.screens.prompt import ConfirmScreen, ValuePrompt

pytestmark = pytest.mark.asyncio
SIZE = (160, 48)


async def test_n_form_never_overwrites_and_remembers_what_was_typed(tmp_path):
    out = tmp_path / "mine.toml"
    out.write_text("# mine\n")
    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, NewPresetScreen)
        assert "GPU cards: a100" in screen_text(app) and "h200" in screen_text(app)
        form.query_one("#new-out").value = str(out)
        form.query_one("#new-local_gpus").value = "32"
        form.submit()
        await pilot.pause()
        assert app.screen is form and "exists" in screen_text(app)
        assert out.read_text() == "# mine\n"  # untouched
        await pilot.press("escape")
        await pilot.press("n")
        await pilot.pause()
        again = app.screen
        assert again.query_one("#new-out").value == str(out)
        assert again.query_one("#new-local_gpus").value == "32"


async def test_ctrl_s_refuses_an_existing_file_and_a_name_outside_the_folder(tmp_path,
                                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    taken = tmp_path / "taken.toml"
    taken.write_text("# keep\n")
    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+s")
        await pilot.pause()
        prompt = app.screen
        assert isinstance(prompt, ValuePrompt)
        await pilot.press("ctrl+a", "ctrl+k", *"taken.toml", "enter")
        await pilot.pause()
        assert app.screen is prompt and "exists" in screen_text(app)
        assert taken.read_text() == "# keep\n"
        await pilot.press("ctrl+a", "ctrl+k", *"../out.toml", "enter")
        await pilot.pause()
        assert app.screen is prompt and "climb out" in screen_text(app)
        assert not (tmp_path.parent / "out.toml").exists()


async def test_x_writes_a_new_svg_each_time(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.press("x")
        await pilot.pause()
        assert len(list(tmp_path.glob("prfaas-toy-*.svg"))) == 2


async def test_p_asks_before_discarding_a_long_run():
    app = PrfaasApp("toy", live=False, at=DISCARD_AFTER_S + 1)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        gen = d.session.generation
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PresetPicker)
        app.screen.dismiss(d.settings.scenario)  # pick a preset (the same one will do)
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert d.session.generation == gen  # the run goes on
        await pilot.press("p")
        await pilot.pause()
        app.screen.dismiss(d.settings.scenario)
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert d.session.generation == gen + 1  # replaced, as asked
