"""The pair's run keys on the topology view: `ctrl+s` saves the topology at its element knobs
now (it loads back at them), `x` writes an SVG, `S`/`U` answer as on the pair. Synchronous
(live=False): simulated time only."""

from __future__ import annotations

import pytest
from test_ui_support import dash as _screen
from test_ui_support import select_element as _select
from test_ui_support import type_value

from emulator.scenario import presets
from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.prompt import ValuePrompt


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.asyncio
async def test_ctrl_s_saves_the_topology_at_its_knobs_now_and_it_loads_back(tmp_path):
    app = PrfaasApp("two-regions", live=False, at=30.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        s = _screen(app).session
        s.set_link("hub->west", 25e9 / 8)  # 25 Gbps
        s.set_region("east", n_p=2, n_d=6)
        for r in ("east", "west"):
            s.set_region(r, routing="lp")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ValuePrompt)
        await type_value(pilot, "mine.toml")
        running = s.running_spec()
        total = _screen(app).total_rate()
    again = PrfaasApp(str(tmp_path / "mine.toml"), live=False, at=30.0)
    async with again.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert _screen(again).total_rate() == pytest.approx(total, rel=1e-9)
    back = presets.load(tmp_path / "mine.toml", topology=True).declared_topology
    assert back is not None and back.routing == "lp"
    assert back.link("hub", "west").bandwidth == running.link("hub", "west").bandwidth == 25e9 / 8
    assert back.link("hub", "east").bandwidth == running.link("hub", "east").bandwidth
    east = back.region("east")
    assert (east.n_p, east.n_d) == (2, 6)
    for r in ("east", "west"):
        was, now = back.region(r), running.region(r)
        assert (was.n_p, was.n_d, was.threshold) == (now.n_p, now.n_d, now.threshold)
    assert back.site("hub").instances == running.site("hub").instances


@pytest.mark.asyncio
async def test_ctrl_s_never_writes_outside_its_folder_nor_over_a_file(tmp_path):
    (tmp_path / "taken.toml").write_text("x")
    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        await type_value(pilot, "../escaped.toml")
        await type_value(pilot, "taken.toml")
        assert isinstance(app.screen, ValuePrompt)  # both refused in the dialog
        await pilot.press("escape")
    assert not (tmp_path.parent / "escaped.toml").exists()
    assert (tmp_path / "taken.toml").read_text() == "x"


@pytest.mark.asyncio
async def test_x_writes_an_svg_named_for_the_scenario_and_the_time(tmp_path):
    app = PrfaasApp("two-regions", live=False, at=30.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
    svg = (tmp_path / "prfaas-two-regions-30s.svg").read_text().replace("&#160;", " ")
    assert "hub" in svg and "sim 0:00:30" in svg


@pytest.mark.asyncio
async def test_S_and_U_answer_as_on_the_pair(monkeypatch):
    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        s = _screen(app).session
        calls: list[object] = []
        monkeypatch.setattr(s, "set_scheduler", lambda on: calls.append(("scheduler", on)))
        monkeypatch.setattr(s, "release_pins", lambda: calls.append("release"))
        enabled = s.tick.snapshot.scheduler_enabled
        await pilot.press("S", "U")
        await pilot.pause()
        expected = [] if enabled is None else [("scheduler", not enabled)]
        assert calls == [*expected, "release"]
        notes = " ".join(str(n.message) for n in app._notifications)
        assert "pins released" in notes
        assert enabled is not None or "runs without a scheduler" in notes


@pytest.mark.asyncio
async def test_help_on_the_topology_lists_the_new_keys():
    from prfaas_tui.commands.snapshot import normalize, screen_text
    from prfaas_tui.screens.help import HelpScreen

    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(normalize(app.export_screenshot()))
    for words in ("scheduler on or off", "Release the knobs", "at its knobs now",
                  "SVG screenshot"):
        assert words in text, words


@pytest.mark.asyncio
async def test_i_strikes_the_selected_link_and_a_missing_one_stays_in_the_form():
    from prfaas_tui.screens.drills import IncidentForm, InjectPicker

    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        await _select(pilot, screen, ("link", "hub->west"))
        await pilot.press("i")
        await pilot.pause()
        assert isinstance(app.screen, InjectPicker)
        await pilot.press("enter")  # the first, as the catalog has it: a brownout to 20%
        await pilot.pause()
        form = app.screen
        assert isinstance(form, IncidentForm) and "link" in form.keys
        await pilot.press("enter")
        await pilot.pause()
        assert screen.tick.snapshot.incidents == ("hub->west brownout to 20%",)
        await pilot.press("full_stop")
        await pilot.pause()
        links = screen.session.objects["links"]
        assert links["hub->west"]["capacity_gbps"] == pytest.approx(0.2 * 40, rel=1e-6)
        assert links["hub->east"]["capacity_gbps"] == pytest.approx(100, rel=1e-6)
        await pilot.press("i", *"link brownout")  # past the "end ..." entries on top
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, IncidentForm)
        from textual.widgets import Input

        app.screen.query_one("#inc-link", Input).value = "nowhere"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, IncidentForm)  # refused in the form
        assert "no link named 'nowhere'" in str(app.screen.query_one("#error").render())
        await pilot.press("escape")
        await pilot.pause()
        assert screen.tick.snapshot.incidents == ("hub->west brownout to 20%",)
