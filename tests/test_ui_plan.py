"""The dashboard's plan hook (Pilot, deterministic mode): open a plan's results, see them ranked,
load any candidate as the running scenario; a broken file says why in one line."""

from __future__ import annotations

import pytest
from test_ui_support import burst, dash, screen_text
from textual.widgets import DataTable

from emulator.paradigm import Paradigm
from emulator.planner.goodput import SLO, Settings
from emulator.planner.space import Space
from emulator.planner.sweep import Plan, run_plan
from prfaas_tui import cli
from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.help import HelpScreen
from prfaas_tui.screens.plan import PlanError, PlanScreen
from prfaas_tui.widgets.pareto import ParetoChart, ParetoData

SIZE = (160, 48)


@pytest.fixture(scope="module")
def plan_text(tmp_path_factory) -> str:
    """A tiny plan on the toy preset (every paradigm, 6 candidates); its file's text."""
    from emulator.scenario import presets

    toy = presets.load("toy")
    plan = Plan(toy, Space.around(toy), Settings(SLO(5.0), seeds=(1,), duration=120.0, steps=3),
                analytic=False)  # every candidate emulated: the screen lists all six
    path = tmp_path_factory.mktemp("plan") / "plan.jsonl"
    run_plan(plan, out=path)
    return path.read_text()


@pytest.fixture
def plan_file(plan_text, tmp_path, monkeypatch):
    """The plan written as plan.jsonl in a fresh working directory; (path, ranked records)."""
    from emulator.planner.sweep import summarize

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = tmp_path / "plan.jsonl"
    path.write_text(plan_text)
    from emulator.planner.store import read_results

    ranked = summarize([], read_results(path)[1], 0)["ranked"]
    return path, ranked


def running_knobs(app: PrfaasApp) -> dict:
    """What runs: the dashboard's settings and the emulator's own knobs, side by side."""
    d = dash(app)
    sc, k = d.settings.scenario, d.tick.snapshot.knobs
    return {"settings": (sc.system.n_prfaas, sc.n_p, sc.n_d, sc.t, d.settings.paradigm),
            "emulator": (k.n_prfaas, k.n_p, k.n_d, k.t, k.paradigm)}


def expected(rec: dict) -> tuple:
    c = rec["candidate"]
    return (c["n_prfaas"], c["n_p"], c["n_d"], c["t"], c["paradigm"])


@pytest.mark.asyncio
async def test_open_a_plan_and_load_the_second_best_candidate(plan_file):
    path, ranked = plan_file
    assert len(ranked) == 6
    app = PrfaasApp("paper-case-study", live=False, at=30.0, plan=str(path))
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.screen, PlanScreen)  # --plan: shown over the dashboard
        text = screen_text(app)
        assert "base toy" in text and "6 candidates" in text
        lines = [ln for ln in text.splitlines() if any(r["label"] in ln for r in ranked)]
        for rec, line in zip(ranked, lines, strict=True):  # ranked by goodput, best first
            assert rec["label"] in line and f"{rec['goodput']:.3f}" in line
            assert f"{rec['lambda_max']:.2f}" in line and f"{rec['utilization']:.0%}" in line
        second = ranked[1]
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.screen is dash(app)
        knobs = running_knobs(app)
        assert knobs["settings"] == knobs["emulator"] == expected(second)
        d = dash(app)
        assert d.settings.scenario.name == f"toy:{second['label']}" == app.sub_title
        assert d.tick.generation == 1  # a fresh emulation, as a preset load
        assert d.plan == str(path)

        # P reopens the same plan with the running candidate marked; load a homogeneous one
        # that is not its paradigm's best split: the emulator runs the candidate's split
        await pilot.press("P")
        assert isinstance(app.screen, PlanScreen)
        marked = [ln for ln in screen_text(app).splitlines() if "▶" in ln and " sim " not in ln]
        assert len(marked) == 1 and "▶2" in marked[0] and second["label"] in marked[0]
        i, homo = next((i, r) for i, r in enumerate(ranked) if i > 0
                       and r["candidate"]["paradigm"] == "homogeneous")
        assert app.screen.query_one("DataTable").cursor_row == 1  # on the running one
        await pilot.press(*["down"] * (i - 1), "enter")
        await pilot.pause()
        knobs = running_knobs(app)
        assert knobs["settings"] == knobs["emulator"] == expected(homo)
        assert Paradigm.HOMOGENEOUS.label in screen_text(app)


@pytest.mark.asyncio
async def test_slash_filters_the_plan_and_the_front_marks_the_row_under_the_cursor(plan_file):
    path, ranked = plan_file
    app = PrfaasApp("toy", live=False, at=10.0, plan=str(path))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table, chart = screen.query_one(DataTable), screen.query_one(ParetoChart)

        def shown() -> list[str]:
            return [screen.plan.records[int(k.value)]["label"] for k in table.rows]

        homo = [r for r in ranked if r["candidate"]["paradigm"] == "homogeneous"]
        assert 2 <= len(homo) < len(ranked)
        burst(app, "slash", *"HOMOGENEOUS")  # at once, as from a terminal: none is lost
        await pilot.pause()
        await pilot.pause()  # the pickers' matcher: any case
        assert shown() == [r["label"] for r in homo]  # still ranked, best first
        assert f"{len(homo)} of {len(ranked)} match 'HOMOGENEOUS'" in screen_text(app)
        assert chart.data.selected["label"] == homo[0]["label"]
        assert len(chart.data.front) == len(ParetoData.of(screen.plan.records).front)
        await pilot.press("down", "down")  # into the table, onto the second match
        assert chart.data.selected["label"] == homo[1]["label"]
        await pilot.press("slash", "ctrl+a", "ctrl+k", *"zzz")
        assert shown() == [] and chart.data.selected is None
        await pilot.press("escape")  # clears the filter, keeps the screen
        assert app.screen is screen and shown() == [r["label"] for r in ranked]
        await pilot.press("slash", *"t=1,024", "enter")
        assert shown() == [r["label"] for r in ranked if "t=1,024" in r["label"]] != []
        await pilot.press("down", "enter")  # enter in the filter went to the table: load
        await pilot.pause()
        pick = [r for r in ranked if "t=1,024" in r["label"]][1]
        assert running_knobs(app)["emulator"] == expected(pick)


@pytest.mark.asyncio
async def test_plan_from_the_key_with_a_typed_path_and_a_bad_file(plan_file, tmp_path):
    path, ranked = plan_file
    (tmp_path / "bad.jsonl").write_text("hello\n")
    async with PrfaasApp("toy", live=False, at=10.0).run_test(size=SIZE) as pilot:
        app = pilot.app
        await pilot.press("P")
        screen = app.screen
        assert isinstance(screen, PlanScreen) and screen.plan is None
        assert "no plan open" in screen_text(app)
        # the newest results file of the working directory is offered in the path box
        assert screen.query_one("#path").value == "plan.jsonl"
        await pilot.press("ctrl+a", "ctrl+k", *"bad.jsonl", "enter")
        assert isinstance(app.screen, PlanScreen) and screen.plan is None
        assert "✗ bad.jsonl:1: not a prfaas-tui plan results file" in screen_text(app)
        await pilot.press("ctrl+a", "ctrl+k", *"plan.jsonl", "enter")
        assert screen.plan is not None and "✗" not in screen_text(app)
        assert ranked[0]["label"] in screen_text(app)
        await pilot.press("enter")  # the best
        await pilot.pause()
        assert running_knobs(app)["emulator"] == expected(ranked[0])
        await pilot.press("f1")  # help and the palette list the key (both read the bindings)
        assert isinstance(app.screen, HelpScreen)
        assert "Open a plan's results" in screen_text(app)
        await pilot.press("escape")
        assert "Plan results [P]" in {c.title for c in app.get_system_commands(app.screen)}


@pytest.mark.asyncio
async def test_a_candidate_whose_base_does_not_load_says_why(plan_file, tmp_path):
    path, _ = plan_file
    foreign = tmp_path / "foreign.jsonl"
    lines = path.read_text().splitlines()
    foreign.write_text("\n".join([lines[0].replace('"scenario": "toy"', '"scenario": "mine"'),
                                  *lines[1:]]) + "\n")
    async with PrfaasApp("toy", live=False, at=10.0, plan=str(foreign)).run_test(size=SIZE) as pilot:
        app = pilot.app
        before = running_knobs(app)
        await pilot.press("enter")
        assert isinstance(app.screen, PlanScreen)  # stays open, says why, changes nothing
        assert "base preset 'mine' does not load here" in screen_text(app)
        assert running_knobs(app) == before


def test_cli_refuses_a_broken_plan_or_drill_in_one_line(tmp_path, capsys):
    (tmp_path / "bad.jsonl").write_text('{"header": {"scenario": "toy"}}\n{"key": "k"}\n\n')
    for args, want in ((["--plan", str(tmp_path / "none.jsonl")], "no such file"),
                       (["--plan", str(tmp_path)], "not a file"),
                       (["--plan", str(tmp_path / "bad.jsonl")], "not a plan record"),
                       (["--drill", "no-such-drill"], "no drill of that name")):
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert want in err and err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(PlanError):
        PrfaasApp(plan=str(tmp_path / "bad.jsonl"))


def test_plan_without_a_preset_starts_on_its_base(plan_file):
    path, _ = plan_file
    assert PrfaasApp(plan=str(path), live=False).scenario.name == "toy"
    assert PrfaasApp(live=False).scenario.name == "paper-case-study"


def test_plan_screen_snapshot(plan_file, snap_compare):
    """`prfaas-tui --plan plan.jsonl` at 160x48 (relative path: the snapshot shows it)."""
    assert snap_compare(PrfaasApp(plan="plan.jsonl", live=False, at=120.0, theme="textual-dark"),
                        terminal_size=(160, 48))
