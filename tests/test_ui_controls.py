"""Pilot tests for every control, in the deterministic mode (emulator not paced by the wall
clock): each change must reach the model panel, the emulator (its router) and the plots."""

from __future__ import annotations

import json
import math
import re

import pytest
from test_ui_support import dash, panel_text, screen_text, select_knob

from emulator.optimizer import search
from emulator.scenario import presets
from emulator.units import format_tokens
from prfaas_tui.app import PrfaasApp
from prfaas_tui.modelview import paradigm_point
from prfaas_tui.screens.compare import CompareScreen
from prfaas_tui.screens.drills import DrillPicker, InjectPicker, ScorecardScreen
from prfaas_tui.screens.help import HelpScreen
from prfaas_tui.screens.presets import PresetPicker
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.widgets.controls import KNOBS
from prfaas_tui.widgets.plots import CeilingsChart, CeilingsVsTChart, LambdaVsNpChart

pytestmark = pytest.mark.asyncio
SIZE = (160, 48)


def app_at(preset: str = "toy", at: float = 30.0) -> PrfaasApp:
    return PrfaasApp(preset, live=False, at=at)


def emulator_knobs(app: PrfaasApp) -> dict:
    return vars(dash(app).tick.snapshot.knobs)


async def test_change_t_moves_model_router_and_plots():
    app = app_at("paper-case-study")
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        before = {"p": d.view.point.p, "ceil": d.query_one(CeilingsChart).data.ceilings[:, -1].copy(),
                  "fig5b": str(d.query_one(CeilingsVsTChart).render()),
                  "fig5a": d.query_one(LambdaVsNpChart).data.a.lambda_max.copy()}
        await select_knob(pilot, "t")
        for _ in range(4):
            await pilot.press("right")  # +1K each
        await pilot.pause()
        t = 19400 + 4 * 1024
        assert d.settings.scenario.t == t
        assert emulator_knobs(app)["t"] == t  # the emulator's router got it
        text = screen_text(app)
        assert f"L > {format_tokens(t)} → PrfaaS" in text  # router panel, from the emulator
        assert re.search(rf"▸? t\s+{format_tokens(t)}\b", text)  # the knob, in whole tokens
        assert d.view.point.p < before["p"]
        assert f"p {d.view.point.p:.1%}" in text  # model panel
        assert not (d.query_one(CeilingsChart).data.ceilings[:, -1] == before["ceil"]).all()
        assert str(d.query_one(CeilingsVsTChart).render()) != before["fig5b"]
        assert not (d.query_one(LambdaVsNpChart).data.a.lambda_max == before["fig5a"]).all()
        await pilot.press("left")
        assert d.settings.scenario.t == t - 1024


async def test_type_exact_t_with_validation():
    async with app_at().run_test(size=SIZE) as pilot:
        app = pilot.app
        await pilot.press("t")
        assert isinstance(app.screen, ValuePrompt)
        await pilot.press("ctrl+a", "ctrl+k", *"lots", "enter")  # refused: the prompt stays with a reason
        assert isinstance(app.screen, ValuePrompt)
        assert "t is a token count like 19400 or 32K (got 'lots')" in screen_text(app)
        await pilot.press("ctrl+a", "ctrl+k", *"2M", "enter")
        assert "tokens, the longest request (got 2,097,152)" in screen_text(app)
        await pilot.press("ctrl+a", "ctrl+k", *"20000", "enter")
        assert not isinstance(app.screen, ValuePrompt)
        assert dash(app).settings.scenario.t == 20000
        assert emulator_knobs(app)["t"] == 20000
        await pilot.press("t", "ctrl+a", "ctrl+k", *"2.5", "enter")  # a cut, as on the CLI
        assert not isinstance(app.screen, ValuePrompt)
        assert dash(app).settings.scenario.t == 2.5 and emulator_knobs(app)["t"] == 2.5


@pytest.mark.parametrize(("key", "typed", "reason"), [
    ("speed", "2000x", "speed is 1x to 1000x, or max (got 2000x)"),
    ("speed", "fast", "speed is 1x to 1000x, or max (got 'fast')"),
    ("bandwidth", "1e9", "B_out is 1 Mbps to 8 Pbps (got 1000 Pbps)"),
    ("bandwidth", "0.5 Mbps", "B_out is 1 Mbps to 8 Pbps (got 0.5 Mbps)"),
    ("bandwidth", "lots", "B_out is a bandwidth like 100 Gbps or 1000 MB/s (got 'lots')"),
    ("n_p", "1.5", "N_p is a whole number of instances (got '1.5')"),
])
async def test_typed_values_outside_their_range_are_refused_in_words(key, typed, reason):
    async with app_at().run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        before = d.settings
        await select_knob(pilot, key)
        await pilot.press("enter")
        assert isinstance(app.screen, ValuePrompt)
        await pilot.press("ctrl+a", "ctrl+k", *typed, "enter")
        assert isinstance(app.screen, ValuePrompt)  # refused: the prompt stays with the reason
        text = screen_text(app)
        assert reason in text and "could not convert" not in text
        await pilot.press("escape")
        assert d.settings == before


async def test_typed_speed_max_and_the_t_prompt_offers_t_as_it_is():
    async with app_at().run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        await select_knob(pilot, "speed")
        await pilot.press("enter", "ctrl+a", "ctrl+k", *"max", "enter")
        assert not isinstance(app.screen, ValuePrompt) and math.isinf(d.settings.speed)
        await pilot.press("t")
        shown = app.screen.query_one("Input").value
        assert shown == f"{d.settings.scenario.t:.10g}"
        await pilot.press("enter")  # the value offered parses back unchanged
        assert not isinstance(app.screen, ValuePrompt)


async def test_local_pool_is_enforced_with_a_reason():
    async with app_at().run_test(size=SIZE) as pilot:  # toy: N_p 1 + N_d 2 = pool 3
        app, d = pilot.app, dash(pilot.app)
        await select_knob(pilot, "n_p")
        await pilot.press("right")
        assert (d.settings.scenario.n_p, d.settings.scenario.n_d) == (1, 2)
        assert (emulator_knobs(app)["n_p"], emulator_knobs(app)["n_d"]) == (1, 2)
        assert "✗ n_p + n_d = 4 exceeds the local pool of 3: lower N_d first" in panel_text(app)
        await select_knob(pilot, "n_d")
        await pilot.press("left", "left")  # 2 -> 1 accepted, then 0 refused
        assert d.settings.scenario.n_d == 1 and emulator_knobs(app)["n_d"] == 1
        assert "✗ N_d must be >= 1" in panel_text(app)
        await select_knob(pilot, "n_p")
        await pilot.press("right")  # now there is room: 2 + 1 = 3
        assert emulator_knobs(app)["n_p"] == 2
        assert "✗" not in panel_text(app)


@pytest.mark.parametrize("key", ["n_prfaas", "bandwidth", "rate", "paradigm", "speed"])
async def test_every_knob_reaches_the_emulator(key):
    async with app_at().run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        await select_knob(pilot, key)
        await pilot.press("right")
        s, snap, tick = d.settings, d.tick.snapshot, d.tick
        expect = {"n_prfaas": (snap.knobs.n_prfaas, 3), "bandwidth": (snap.knobs.bandwidth, 9e9 / 8),
                  "rate": (snap.target_rate, pytest.approx(s.rate)),
                  "paradigm": (snap.knobs.paradigm, "homogeneous"), "speed": (tick.speed, 50.0)}
        got, want = expect[key]
        assert got == want
        knob = next(k for k in KNOBS if k.key == key)
        assert knob.show(s) in screen_text(app)


@pytest.mark.parametrize(("key", "step"), [("t", "right"), ("n_prfaas", "right"),
                                           ("n_p", "left"), ("n_d", "left"),
                                           ("bandwidth", "right"), ("paradigm", "right")])
async def test_every_model_knob_moves_the_model_point(key, step):
    """A dashboard that kept the model point of the old knobs fails here, for every knob."""
    async with app_at().run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        before = d.view.point.to_dict()
        await select_knob(pilot, key)
        await pilot.press(step)
        assert "✗" not in panel_text(app)
        now = d.view.point.to_dict()
        assert now != before
        assert now == paradigm_point(d.settings).to_dict()  # the model at the new knobs
        assert d.view.settings is d.settings
        # the panel shows the model at the live state the emulation took, in the preset's
        # mode (solve's default), named beside Λmax
        live = d.session.effective
        if key == "paradigm":  # its own split, converting: the instances that serve count
            assert live.state.paradigm == "homogeneous"
        else:
            assert live.point.to_dict() == paradigm_point(d.settings).to_dict()
        assert live.driving == d.settings.scenario.mode
        assert f"Λmax {live.point.lambda_max:.2f} {live.driving}" in screen_text(app)


async def test_the_rate_moves_the_offered_load_not_the_model():
    async with app_at().run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        point, load = d.view.point.to_dict(), d.view.load
        await select_knob(pilot, "rate")
        await pilot.press("right")
        assert d.view.point.to_dict() == point and d.view.load > load
        lam = d.session.effective.point.lambda_max  # exact: what the emulator sustains
        assert f"offered {d.settings.rate / lam:.0%}" in screen_text(app)


async def test_apply_optimum_key():
    async with app_at("paper-case-study").run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        best = search(d.session.system, "exact").best.knobs  # healthy: the nominal optimum
        assert "[o] apply it" in screen_text(app)
        await pilot.press("o")
        sc = d.settings.scenario
        assert (sc.t, sc.n_p, sc.n_d) == (best.t, best.n_p, best.n_d)
        k = emulator_knobs(app)
        assert (k["t"], k["n_p"], k["n_d"]) == (best.t, best.n_p, best.n_d)
        assert "✓ applied" in screen_text(app)


async def test_apply_slo_optimum_key():
    async with app_at("paper-case-study").run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        lt = d.view.latency
        assert "TTFT P50" in screen_text(app) and f"SLO≤{lt.target:g}s" in screen_text(app)
        best = lt.slo_optimum
        await pilot.press("O")
        sc = d.settings.scenario
        assert (sc.t, sc.n_p, sc.n_d) == (best.t, best.n_p, best.n_d)
        k = emulator_knobs(app)
        assert (k["t"], k["n_p"], k["n_d"]) == (best.t, best.n_p, best.n_d)
        assert d.view.latency.slo_rate == pytest.approx(best.rate, rel=1e-2)  # 256 vs 64 nodes


async def test_load_a_preset_from_the_picker(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with app_at("paper-case-study").run_test(size=SIZE) as pilot:
        app = pilot.app
        await pilot.press("p")
        assert isinstance(app.screen, PresetPicker)
        await pilot.press("tab", *"/no/such.toml", "enter")  # a bad path keeps the picker open
        assert isinstance(app.screen, PresetPicker)
        assert "no such preset file" in screen_text(app)
        await pilot.press("shift+tab")
        ol = app.screen.query_one("OptionList")
        while not str(ol.highlighted_option.id).endswith("toy.toml"):
            await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
        d = dash(app)
        assert d.settings.scenario.name == "toy" and app.sub_title == "toy"
        assert d.tick.snapshot.knobs.n_prfaas == 2  # a fresh emulation of the new scenario
        assert "toy" in screen_text(app)


async def test_step_moves_simulated_time_exactly():
    async with app_at().run_test(size=SIZE) as pilot:
        d = dash(pilot.app)
        assert d.tick.snapshot.sim_time == pytest.approx(30.0)
        await pilot.press("full_stop", "full_stop", "full_stop")
        assert d.tick.snapshot.sim_time == pytest.approx(33.0, abs=1e-9)
        assert d.tick.paused
        assert "sim 0:00:33.0" in screen_text(pilot.app)


async def test_help_palette_and_narrow_view():
    async with app_at().run_test(size=(80, 24)) as pilot:
        app = pilot.app
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "keys" in text and "Apply the optimum" in text
        await pilot.press("escape")
        titles = {c.title for c in app.get_system_commands(app.screen)}
        for b in dash(app).keys_here():  # each with its key, so the palette teaches it
            assert f"{b.description} [{app.get_key_display(b)}]" in titles
        assert {f"Set {k.label}…" for k in KNOBS} <= titles
        assert "Load preset toy" in titles
        d = dash(app)
        assert d.has_class("-narrow")
        assert not d.query_one("#model").display or not d.query_one("#model").region.area
        await pilot.press("v")
        assert d.query_one("#model").region.area > 0 and not d.query_one("#live").region.area


async def test_compare_view_runs_paradigms_side_by_side():
    async with app_at("paper-case-study").run_test(size=SIZE) as pilot:
        app = pilot.app
        await pilot.press("c")
        assert isinstance(app.screen, CompareScreen)
        variants = app.screen.variants
        assert [v.label for v in variants] == ["PrfaaS-PD", "homogeneous", "naive"]
        assert all(v.tick is not None and v.tick.snapshot.lost == 0 for v in variants)
        assert len({v.tick.snapshot.arrived for v in variants}) == 1  # one seeded workload
        await pilot.press("escape")
        assert dash(app) is app.screen


async def test_save_preset_round_trips(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with app_at().run_test(size=SIZE) as pilot:
        d = dash(pilot.app)
        await pilot.press("o", "ctrl+s")
        assert isinstance(pilot.app.screen, ValuePrompt)
        await pilot.press("ctrl+a", "ctrl+k", *"mine.toml", "enter")
        back = presets.load(tmp_path / "mine.toml")
        assert back.knobs == d.settings.scenario.knobs
        assert back.sim.rate == pytest.approx(d.settings.rate, rel=1e-5)
        await pilot.press("x")  # SVG screenshot
        assert "sim 0:00:30.0" in (tmp_path / "prfaas-toy-30s.svg").read_text().replace("&#160;", " ")


async def test_export_metrics_csv_and_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    async with app_at().run_test(size=SIZE) as pilot:
        await pilot.press("e", "ctrl+a", "ctrl+k", *"runs", "enter")  # a folder, made
        [json_path] = (tmp_path / "runs").glob("prfaas-toy-*.json")
        doc = json.loads(json_path.read_text())
        rows = json_path.with_suffix(".csv").read_text().splitlines()
        assert len(rows) == len(doc["samples"]) + 1 > 10
        last = doc["samples"][-1]
        assert last["lost"] == 0 and last["sim_time"] == pytest.approx(30.0)
        assert math.isclose(last["lambda_max"], dash(pilot.app).view.point.lambda_max)
        assert last["bandwidth_gbps"] == pytest.approx(8.0)


async def test_inject_an_incident_by_hand():
    async with app_at("paper-case-study").run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        await pilot.press("i")
        assert isinstance(app.screen, InjectPicker)
        await pilot.press("enter", "enter")  # the first, as the catalog has it: 20% of B_out
        assert d.tick.snapshot.incidents == ("link brownout to 20%",)
        await pilot.press("full_stop")
        assert d.tick.snapshot.link.capacity == pytest.approx(0.2 * 100e9 / 8)
        assert "⚠ link brownout to 20%" in screen_text(app)
        assert "incidents" in screen_text(app)  # the timeline shows hand-made ones too
        await pilot.press("i", "end", "enter")  # end all
        assert d.tick.snapshot.incidents == ()
        assert d.tick.snapshot.link.capacity == pytest.approx(100e9 / 8)



async def test_start_a_drill_and_reach_its_scorecard():
    async with app_at().run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        await pilot.press("d")
        assert isinstance(app.screen, DrillPicker)
        ol = app.screen.query_one("OptionList")
        while ol.highlighted_option.id != "link-brownout":
            await pilot.press("down")
        await pilot.press("enter")
        drill = d.drill
        assert drill.name == "link-brownout" and d.tick.snapshot.sim_time == pytest.approx(30.0)
        assert "drill link-brownout" in screen_text(app) and "○ 10.0 min" in screen_text(app)
        d.step_seconds = 600.0
        await pilot.press("full_stop")  # 10.5 min: the brownout runs
        assert d.tick.snapshot.incidents == ("link brownout to 20%",)
        assert "⚠ 10.0 min" in screen_text(app)
        d.step_seconds = drill.duration - d.tick.snapshot.sim_time
        await pilot.press("full_stop")  # the end: the scorecard
        assert isinstance(app.screen, ScorecardScreen)
        card = app.screen.card
        assert card["lost"] == 0 and card["expectations"]["lost"]["ok"]
        text = screen_text(app)
        assert "scorecard · drill link-brownout" in text and "lost requests" in text
        assert "✓ pass" in text and "scheduler decisions" in text


async def test_prfaas_loss_drill_leaves_the_knob_and_shows_who_is_alive():
    """Half the PrfaaS instances die at 10 min: the N_prfaas knob (the operator's, and the
    emulator's LiveKnobs) stays at 4 all along; the status line says 2 of 4 are alive."""
    async with PrfaasApp(drill="prfaas-loss", live=False, at=900.0).run_test(size=SIZE) as pilot:
        d = dash(pilot.app)
        snap = d.tick.snapshot
        assert d.settings.scenario.system.n_prfaas == 4 and "N_prfaas 4" in panel_text(pilot.app)
        assert {s.knobs.n_prfaas for s in d.tick.history} == {4}  # never moved
        assert (snap.stages["prfaas"].instances, snap.stages["prfaas"].failed) == (2, 2)
        assert "2 of 4 PrfaaS alive" in screen_text(pilot.app)
        assert snap.incident_windows == ((600.0, 1200.0, "2 prfaas instances lost"),)
        assert "2 prfaas instances lost" in screen_text(pilot.app)  # the timeline shows it


async def test_a_move_inside_the_emulation_reaches_the_knobs_through_a_tick():
    """What a drill's scheduler does: t changes inside the emulation. The next tick carries it
    to the knob panel, the router panel and the model, and nothing is sent back."""
    async with app_at("paper-case-study").run_test(size=SIZE) as pilot:
        app, d = pilot.app, dash(pilot.app)
        d.driver.call(lambda emu: emu.change(t=8192.0))
        assert d.settings.scenario.t == 19400  # not before a tick says so
        await pilot.press("full_stop")
        assert d.settings.scenario.t == 8192.0 and d.driver.sent == 0
        assert d.view.point.to_dict() == paradigm_point(d.settings).to_dict()
        text = screen_text(app)
        assert re.search(r"t\s+8,192 ", text) and "L > 8,192 → PrfaaS" in text
        assert f"p {d.view.point.p:.1%}" in text
