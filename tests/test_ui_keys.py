"""Issue 12, item 8: keys and input. `?` opens help, `/` filters the pickers, quitting during a
drill asks first, incidents injected by hand take parameters checked as a drill file's, and at
80x24 the status line and the footer read cleanly. Headless (live=False): no wall clock."""

from __future__ import annotations

import pytest
from test_ui_support import burst, dash, screen_text, wait_for

from emulator.scenario import presets
from emulator.scenario.drills import drill_from_dict, drills_for
from emulator.scenario.presets import list_presets, presets_dir
from emulator.scenario.reader import PresetError
from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.drills import DrillPicker, IncidentForm, InjectPicker
from prfaas_tui.screens.help import HelpScreen
from prfaas_tui.screens.presets import PresetPicker
from prfaas_tui.screens.prompt import ConfirmScreen
from prfaas_tui.widgets.filter_list import FilterList

pytestmark = pytest.mark.asyncio

SIZE = (160, 48)
MID = 800.0  # the drills' incidents run from 10 to 20 min


def listed(screen) -> list[str]:
    """The ids of the options a picker shows now (headings have none)."""
    ol = screen.query_one(FilterList).option_list
    return [o.id for o in (ol.get_option_at_index(i) for i in range(ol.option_count)) if o.id]


async def test_question_mark_opens_and_closes_help():
    async with PrfaasApp("toy", live=False, at=10).run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(pilot.app.screen, HelpScreen)
        assert "/" in screen_text(pilot.app) and "narrow" in screen_text(pilot.app)
        await pilot.press("question_mark")
        assert not isinstance(pilot.app.screen, HelpScreen)


async def test_slash_filters_the_drill_picker_and_enter_starts_the_first_match():
    async with PrfaasApp("toy", live=False, at=10).run_test(size=SIZE) as pilot:
        await pilot.press("d")
        picker = pilot.app.screen
        assert isinstance(picker, DrillPicker) and len(listed(picker)) == 8
        await pilot.press("slash", *"loss")
        # names and descriptions: the WAN drills' say packet loss
        assert listed(picker) == ["decode-loss", "loss-spike", "prfaas-loss", "rtt-change"]
        await pilot.press("backspace", "backspace", "backspace", "backspace", *"LINK")
        assert listed(picker)[:3] == ["diurnal-link", "link-brownout", "link-outage"]
        await pilot.press("enter")
        assert dash(pilot.app).drill.name == "diurnal-link"


async def test_typing_on_a_picker_list_filters_it_without_slash():
    """Keys that land on the list before `/` has moved the focus are not lost."""
    async with PrfaasApp("toy", live=False, at=10).run_test(size=SIZE) as pilot:
        await pilot.press("i", *"outage")
        assert listed(pilot.app.screen) == ["link outage"]


async def test_keys_typed_ahead_of_the_picker_filter_it():
    """A terminal delivers `i/prf` at once, before the picker has mounted or taken the focus:
    the keys still filter it (they are not lost on the dashboard)."""
    from textual import events

    async with PrfaasApp("toy", live=False, at=10).run_test(size=SIZE) as pilot:
        for ch in "i/prf":
            pilot.app._driver.send_message(events.Key("slash" if ch == "/" else ch, ch))
        await pilot.pause()
        await pilot.pause()
        assert listed(pilot.app.screen) == ["1 prfaas instance lost"]


async def test_slash_filters_the_preset_picker_and_keeps_its_heading():
    async with PrfaasApp("toy", live=False, at=10).run_test(size=SIZE) as pilot:
        await pilot.press("p")
        picker = pilot.app.screen
        assert isinstance(picker, PresetPicker)
        everything = listed(picker)
        await pilot.press("slash", *"paper-case")
        shown = listed(picker)
        assert 0 < len(shown) < len(everything) and all("paper-case" in p for p in shown)
        ol = picker.query_one(FilterList).option_list
        assert ol.get_option_at_index(0).disabled  # the "shipped" heading stays above them
        await pilot.press(*"zzz")
        assert listed(picker) == []
        await pilot.press("enter")  # nothing to pick: the picker stays
        assert pilot.app.screen is picker


@pytest.mark.parametrize("key,names", [
    ("p", lambda: [name for name, _, _ in list_presets()]),
    ("d", lambda: [name for name, _ in drills_for(presets.load("toy"))]),
])
async def test_picker_descriptions_wrap_under_themselves_at_80_columns(key, names):
    """A description too long for 80 columns goes on under the description column: a wrapped
    line starting under the names read as a row of its own."""
    names = names()
    width = max(map(len, names))
    async with PrfaasApp("toy", live=False, at=10).run_test(size=(80, 24)) as pilot:
        await pilot.press(key)
        lines = screen_text(pilot.app).splitlines()
        top = next(i for i, ln in enumerate(lines) if "▊▔" in ln)  # the list's box
        bottom = next(i for i, ln in enumerate(lines) if "▊▁" in ln)
        rows = [ln.split("▊ ", 1)[1].rsplit("▎", 1)[0] for ln in lines[top + 1:bottom]]
        starts = [r for r in rows if r.split() and r.split()[0] in names]
        wrapped = [r for r in rows if r not in starts and r.strip() not in ("", "shipped", "yours")]
        assert len(starts) == len(names) and wrapped  # some do wrap at this width
        for r in starts:  # the descriptions line up: one column for all names
            assert r[width:width + 2] == "  " and r[width + 2] != " "
        for r in wrapped:
            assert r[:width + 2].strip() == "", r


async def test_quit_during_a_drill_asks_first(monkeypatch):
    app = PrfaasApp(drill="link-brownout", live=False, at=MID)
    exits = []
    monkeypatch.setattr(app, "exit", lambda *a, **k: exits.append(a))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmScreen)
        assert "Quit during drill link-brownout?" in screen_text(app)
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmScreen) and exits == []
        assert dash(app).drill.name == "link-brownout"  # still running
        await pilot.press("q", "y")
        assert len(exits) == 1


async def test_quit_without_a_drill_does_not_ask(monkeypatch):
    app = PrfaasApp("toy", live=False, at=10)
    exits = []
    monkeypatch.setattr(app, "exit", lambda *a, **k: exits.append(a))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        assert not isinstance(app.screen, ConfirmScreen) and len(exits) == 1


async def _open_form(pilot, label: str) -> IncidentForm:
    await pilot.press("i")
    assert isinstance(pilot.app.screen, InjectPicker)
    await pilot.press("slash", *label, "enter")
    form = pilot.app.screen
    assert isinstance(form, IncidentForm)
    return form


async def _type(pilot, form: IncidentForm, key: str, text: str) -> None:
    form.query_one(f"#inc-{key}").focus()
    await pilot.press("ctrl+a", "ctrl+k", *text)


async def test_inject_a_brownout_with_depth_and_duration():
    async with PrfaasApp("paper-case-study", live=False, at=30).run_test(size=SIZE) as pilot:
        d = dash(pilot.app)
        form = await _open_form(pilot, "brownout")
        assert form.keys == ["duration", "factor"]
        await _type(pilot, form, "factor", "0.5")
        await _type(pilot, form, "duration", "2 min")
        await pilot.press("enter")
        assert not isinstance(pilot.app.screen, IncidentForm)
        snap = d.tick.snapshot
        assert snap.incidents == ("link brownout to 50%",)
        start, end, label = snap.incident_windows[-1]
        assert (start, end) == (pytest.approx(30.0), pytest.approx(150.0))
        await pilot.press("full_stop")
        assert d.tick.snapshot.link.capacity == pytest.approx(0.5 * 100e9 / 8)
        d.step_seconds = 130.0
        await pilot.press("full_stop")  # past its two minutes: over by itself
        assert d.tick.snapshot.incidents == ()


async def test_inject_an_instance_loss_with_a_count():
    async with PrfaasApp("paper-case-study", live=False, at=30).run_test(size=SIZE) as pilot:
        d = dash(pilot.app)
        form = await _open_form(pilot, "prfaas instance")
        assert form.keys == ["duration", "stage", "count"]
        await _type(pilot, form, "count", "3")
        await pilot.press("enter")
        await pilot.press("full_stop")
        assert d.tick.snapshot.stages["prfaas"].failed == 3
        assert "3 prfaas instances lost" in d.tick.snapshot.incidents


async def test_keys_right_after_tab_land_in_the_next_field_in_order():
    """`Tab BSpace 3` at once: the focus moves before the next key is routed, backspace clears
    the newly selected field before the 3 is typed (it went to the old field, or was deleted)."""
    async with PrfaasApp("paper-case-study", live=False, at=30).run_test(size=SIZE) as pilot:
        form = await _open_form(pilot, "brownout")
        assert pilot.app.focused is form.query_one("#inc-duration")
        burst(pilot.app, "tab", "backspace", "0", ".", "3")
        await pilot.pause()
        await pilot.pause()
        assert pilot.app.focused is form.query_one("#inc-factor")
        assert (form.query_one("#inc-duration").value, form.query_one("#inc-factor").value) \
            == ("", "0.3")
        # back to duration; "2 min" typed, its 2 made a 5 (bound keys and typed ones in order)
        burst(pilot.app, "shift+tab", "2", "space", "m", "i", "n", "home", "delete", "5")
        await pilot.pause()
        await pilot.pause()
        assert form.values() == {"duration": "5 min", "factor": 0.3}


def drill_message(incident: dict) -> str:
    """What a drill file with this incident is refused with (its key path stripped)."""
    data = {"preset": "paper-case-study", "incidents": [{"at": "1 min", "duration": "1 min",
                                                         **incident}]}
    with pytest.raises(PresetError) as err:
        drill_from_dict(data, presets_dir() / "drills" / "typed.toml")
    return err.value.message


@pytest.mark.parametrize("label,key,typed,drill", [
    ("brownout", "factor", "1.5", {"kind": "brownout", "factor": 1.5}),
    ("brownout", "duration", "-3", {"kind": "brownout", "factor": 0.2, "duration": -3}),
    ("brownout", "factor", "deep", {"kind": "brownout", "factor": "deep"}),
    ("prfaas instance", "count", "9", {"kind": "instance-loss", "stage": "prfaas", "count": 9}),
    ("prfaas instance", "count", "2.5", {"kind": "instance-loss", "stage": "prfaas",
                                         "count": 2.5}),
    ("prfaas instance", "stage", "gpu", {"kind": "instance-loss", "stage": "gpu"}),
])
async def test_a_bad_parameter_is_the_drill_files_one_line(label, key, typed, drill):
    async with PrfaasApp("paper-case-study", live=False, at=30).run_test(size=SIZE) as pilot:
        d = dash(pilot.app)
        form = await _open_form(pilot, label)
        await _type(pilot, form, key, typed)
        await pilot.press("enter")
        assert pilot.app.screen is form  # stays open
        error = str(form.query_one("#error").render()).strip()
        kind = drill["kind"]
        assert error == f"✗ {kind}: {key}: {drill_message(drill)}"
        assert "\n" not in error and "Traceback" not in error
        assert d.tick.snapshot.incidents == ()


async def test_narrow_status_line_and_footer_read_cleanly():
    app = PrfaasApp(drill="link-brownout", live=False, at=MID)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        *_, status, footer = screen_text(app).splitlines()
        assert status.lstrip().startswith("⚠ link brownout to 20% · ⚠ P90 14.0s > SLO 10s · ▶ sim")
        assert "lost 0" in status
        for key in ("? Help", "space Pause", "v Model", "d Drills", "q Quit"):
            assert key in footer
        assert "palette" not in footer and "Compare" not in footer and "▏" not in footer
        assert len(footer.rstrip()) <= 80


async def test_the_measured_busiest_stage_is_not_called_what_the_model_binds():
    """Mid prfaas-loss the emulator measures one stage busiest while the model at the live
    state has another bind: the status line says which notion it shows, help defines both."""
    from prfaas_tui.screens.help import GLOSSARY
    from prfaas_tui.widgets.model_panel import STAGE_LABELS

    app = PrfaasApp(drill="prfaas-loss", live=False, at=MID)
    async with app.run_test(size=SIZE) as pilot:
        # the status line is drawn after the first tick: wait for it, on the app (a loaded
        # machine can take the screenshot before it is painted)
        await wait_for(pilot, lambda: "(measured)" in screen_text(app).splitlines()[-2])
        d = dash(app)
        *_, status, _footer = screen_text(app).splitlines()
        measured, binding = d.tick.snapshot.bottleneck, d.session.effective.point.binding
        assert f"busiest {STAGE_LABELS[measured]} (measured)" in status
        assert f"{STAGE_LABELS[binding]} binds" in screen_text(app)
        assert "bottleneck" not in screen_text(app)
        words = dict(GLOSSARY)
        assert "Λmax" in words["binds"] and "measured" in words["busiest"]


async def test_wide_footer_keeps_compare_and_the_palette_but_not_v():
    app = PrfaasApp(drill="link-brownout", live=False, at=MID)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        *_, status, footer = screen_text(app).splitlines()
        assert "c Compare" in footer and "^p palette" in footer and "v Model" not in footer
        assert status.lstrip().startswith("⚠ link brownout to 20% · ⚠ P90 14.0s > SLO 10s · "
                                          "busiest link (measured)")
