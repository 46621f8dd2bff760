"""The topology view: the numbers it draws equal `snapshot --format json` at the same
simulated instant, a link's shadow price predicts what raising its bandwidth does to the bound,
element knobs are checked like the pair's, `o`/`O` apply the live optima; snapshot tests at
80x24 and 160x48. Synchronous (live=False): simulated time only."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ui_support import dash as _screen
from test_ui_support import select_element as _select
from test_ui_support import type_value

from prfaas_tui.app import PrfaasApp
from prfaas_tui.commands.snapshot import topology_snapshot
from prfaas_tui.screens.dashboard import Dashboard
from prfaas_tui.topology_text import Figures, draw_map, draw_matrix, elements, gbps

DATA = Path(__file__).parent / "data"
GLOBAL_BROWNOUT = str(DATA / "global-brownout.toml")
TWO_BROWNOUT = str(DATA / "two-regions-brownout.toml")


@pytest.fixture(autouse=True)
def _no_user_presets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.parametrize("drill, link, at, incident", [
    (GLOBAL_BROWNOUT, "us-hub->sa-east", 40.0, "us-hub->sa-east brownout to 30%"),
    ("region-link-brownout", "hub->west", 720.0, "hub->west brownout to 15%"),
])
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@pytest.mark.asyncio
async def test_selected_link_and_binding_equal_the_json_at_the_same_instant(size, drill, link,
                                                                            at, incident):
    from emulator.scenario.drills import load_drill

    want = topology_snapshot(load_drill(drill).scenario, at, None)
    app = PrfaasApp(None, live=False, at=at, drill=drill)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = _screen(app)
        await _select(pilot, screen, ("link", link))
        fig = screen.figures()
        assert screen.tick.snapshot.sim_time == want["sim_time"] == at
        got = fig.link(link)
        for key in ("capacity_gbps", "utilization", "flows", "gbps"):
            assert got[key] == want["links"][link][key], key
        assert want["incidents"] == [incident]
        assert fig.binding == want["model"]["policy"]["binding_element"] == link
        assert fig.model.to_dict() == want["model"]
        for name in want["regions"]:
            assert fig.region(name)["ttft"] == want["regions"][name]["ttft"]
        # what is drawn is those numbers
        text = screen.query_one("#topology-map").render().plain
        assert fig.link_capacity(link) in text
        detail = screen.query_one("#topology-detail").render().plain
        assert f"capacity now {gbps(want['links'][link]['capacity_gbps'])}" in detail
        assert f"binds the running policy (link:{link})" in detail


@pytest.mark.asyncio
async def test_raising_hub_west_by_10_gbps_moves_the_bound_by_its_shadow_price():
    app = PrfaasApp(None, live=False, at=120.0, drill=TWO_BROWNOUT)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        await _select(pilot, screen, ("link", "hub->west"))
        before = screen.session.model
        per_gbps = before.prices["link:hub->west"]
        assert per_gbps > 0.02  # the browned-out link binds the bound
        detail = screen.query_one("#topology-detail").render().plain
        assert f"+1 Gbps here: {per_gbps:+.3g} req/s" in detail
        await pilot.press("enter")
        await pilot.pause()
        for _ in range(4):
            await pilot.press("backspace")
        for ch in "50":
            await pilot.press(ch)
        await pilot.press("enter")
        await pilot.pause()
        after = screen.session.model
        assert screen.session.running_spec().link("hub", "west").bandwidth * 8e-9 == \
            pytest.approx(50.0)
        moved = after.bound_lambda - before.bound_lambda
        assert moved == pytest.approx(10 * per_gbps, rel=0.05)
        # the re-solved step shown beside the price is what the change did, exactly
        assert f"re-solved, +10 Gbps: {moved:+.3g} req/s" in detail


@pytest.mark.asyncio
async def test_a_refused_knob_stays_in_the_dialog_and_changes_nothing():
    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        await _select(pilot, screen, ("region", "east"))
        await pilot.press("enter")
        await pilot.pause()
        prompt = app.screen
        await type_value(pilot, "9/5")
        assert app.screen is prompt  # refused: the reason shows, the dialog stays
        assert "exceeds the local pool of 8" in str(prompt.query_one("#error").render())
        await pilot.press("escape")
        await pilot.pause()
        spec = screen.session.running_spec()
        assert (spec.region("east").n_p, spec.region("east").n_d) == (3, 5)


@pytest.mark.asyncio
async def test_region_knobs_turn_threshold_split_and_routing():
    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        assert screen.change("region", "west", t=32768.0, n_p=4, n_d=4,
                             routing="best-bandwidth")
        spec = screen.session.running_spec()
        w = spec.region("west")
        assert (w.threshold, w.n_p, w.n_d) == (32768.0, 4, 4)
        assert screen.session.region_policy("west") == "best-bandwidth"
        assert screen.session.region_policy("east") == "threshold"
        assert screen.change("site", "hub", instances=10)
        assert screen.session.running_spec().site("hub").instances == 10
        assert not screen.change("site", "hub", instances=-1)


@pytest.mark.asyncio
async def test_o_and_O_apply_the_live_optima():
    app = PrfaasApp(None, live=False, at=120.0, drill=TWO_BROWNOUT)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        await pilot.press("O")
        await pilot.pause()
        split = screen.session.model.bound_split
        spec = screen.session.running_spec()
        for name, (n_p, n_d) in split.items():
            assert (spec.region(name).n_p, spec.region(name).n_d) == (n_p, n_d)
            assert screen.session.region_policy(name) == "lp"
        await pilot.press("o")
        await pilot.pause()
        from emulator.topology.live import live_spec
        from emulator.topology.policy import search_policy

        best, _ = search_policy(live_spec(screen.session.topology, screen.session.state))
        spec = screen.session.running_spec()
        for name, s in best.settings.items():
            assert spec.region(name).threshold == s.t


def test_both_layouts_draw_every_element_and_reverse_the_binding_one():
    from emulator.scenario import presets
    from emulator.topology.live import LiveState, live_model

    topo = presets.load("global", topology=True).declared_topology
    state = LiveState.of_spec(topo)
    model = live_model(topo, state)
    zero = {"capacity_gbps": 40.0, "utilization": 0.5, "flows": 3, "gbps": 20.0,
            "bandwidth_gbps": 40.0, "saturated_fraction": 0.0, "rtt": 0.0}
    site = {"instances": 4, "failed": 0, "utilization": 0.5, "queue": 1,
            "egress_utilization": 0.1}
    region = {"offered_rate": 1.0, "served_rate": 1.0, "queue": 2, "n_p": 1, "n_d": 2,
              "ttft": {"p50": 1.0, "p90": 2.0}, "routing": "threshold"}
    bind = model.binding_element
    objects = {"links": {k.name: {**zero, "capacity_gbps": 4.0} if k.name == bind else zero
                         for k in topo.links},
               "sites": {s.name: site for s in topo.sites},
               "regions": {r.name: region for r in topo.regions}}
    fig = Figures(topo, objects, model)
    for draw, width in ((draw_map, 156), (draw_matrix, 78)):
        text = draw(fig, width, ("site", "us-hub"), bind="red")
        plain = text.plain
        assert max(len(x) for x in plain.splitlines()) <= width
        for kind, name in elements(topo):
            if kind != "link":
                assert name[:8] in plain
        reversed_spans = [plain[s.start:s.end] for s in text.spans if "reverse" in str(s.style)]
        assert any("4.0G 50%" in x for x in reversed_spans)  # the binding link, reversed
        assert not any("40G" in x for x in reversed_spans)  # and no other
    plain = draw_map(fig, 156, None).plain
    assert all(f" {k.name} " in plain for k in topo.links)  # a link's label names both ends


def test_snapshot_txt_of_a_topology_is_deterministic(tmp_path, capsys):
    from prfaas_tui.cli import main

    outs = []
    for i in range(2):
        out = tmp_path / f"t{i}.txt"
        assert main(["snapshot", "--preset", "two-regions", "--at", "20", "--size", "80x24",
                     "--format", "txt", "--out", str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    assert "links" in outs[0] and "hub" in outs[0] and "west" in outs[0]


def test_topology_view_80x24(snap_compare):
    assert snap_compare(PrfaasApp(None, live=False, at=40.0, drill=GLOBAL_BROWNOUT,
                                  theme="textual-dark"), terminal_size=(80, 24))


def test_topology_view_160x48(snap_compare):
    assert snap_compare(PrfaasApp(None, live=False, at=40.0, drill=GLOBAL_BROWNOUT,
                                  theme="textual-dark"), terminal_size=(160, 48))


@pytest.mark.asyncio
async def test_resizing_to_80x24_switches_to_the_matrix_and_keeps_the_detail_on_screen():
    app = PrfaasApp("two-regions", live=False, at=20.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        assert "┌ east" in screen.query_one("#topology-map").render().plain
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert screen.query_one("#topology-map").render().plain.startswith("links")
        detail = screen.query_one("#topology-detail")
        assert detail.region.y + detail.region.height <= 22  # above the status and the keys


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    import json

    from emulator.planner.goodput import SLO, Settings
    from emulator.planner.prices import Prices
    from emulator.planner.space import TopologySpace
    from emulator.planner.sweep import Plan, run_plan
    from emulator.scenario import presets

    sc = presets.load("two-regions", topology=True)
    prices = Prices.of(sc.declared_topology, {"hub": 2.0, "east": 1.0, "west": 1.0})
    out = run_plan(Plan(sc, TopologySpace({"hub": (8, 9)}, {}, ("threshold",)),
                        Settings(SLO(10.0), seeds=(1,), duration=600, steps=3), prices=prices))
    path = tmp_path_factory.mktemp("plan") / "plan-two-regions.json"
    path.write_text(json.dumps(out))
    return path, out


@pytest.mark.asyncio
async def test_the_plan_screen_shows_the_front_and_opens_a_candidate_in_the_view(plan_file):
    from prfaas_tui.screens.plan import PlanScreen

    path, summary = plan_file
    app = PrfaasApp(None, live=False, at=10.0, plan=str(path))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, PlanScreen)
        table = app.screen.query_one("DataTable")
        assert table.row_count == 1 + len(summary["ranked"])
        marks = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert marks[0] == "shipped"
        assert sum(m.startswith("★") for m in marks) == len(summary["pareto"]) >= 1
        await pilot.press("down")
        want = summary["ranked"][0]
        await pilot.press("enter")
        await pilot.pause()
        screen = _screen(app)
        assert app.screen is screen
        spec = screen.session.running_spec()
        assert spec.site("hub").instances == want["candidate"]["sites"]["hub"]
        assert screen.tick.snapshot.sim_time == 10.0


def test_a_broken_topology_plan_is_one_line(tmp_path, capsys):
    from prfaas_tui.cli import main

    bad = tmp_path / "p.json"
    bad.write_text('{"kind": "topology-plan", "shipped": {}}')
    assert main(["--plan", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "ranked: missing" in err and len(err.strip().splitlines()) == 1


@pytest.mark.asyncio
async def test_a_topology_drill_ends_with_a_scorecard_per_region():
    from prfaas_tui.screens.drills import TopologyScorecard

    app = PrfaasApp(None, live=False, at=2400.0, drill="region-link-brownout")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, TopologyScorecard)
        card = app.screen.card
        assert set(card["regions"]) == {"east", "west"}
        assert card["lost"] == 0 and all(r["lost"] == 0 for r in card["regions"].values())
        from prfaas_tui.commands.snapshot import normalize, screen_text

        text = screen_text(normalize(app.export_screenshot()))
        assert "P90 during" in text and "recovered in" in text
        rows = [line for line in text.splitlines() if line.strip().split(" ")[0:1] in
                (["east"], ["west"]) or " east " in line or " west " in line]
        assert len(rows) >= 2


def test_the_selection_chart_reads_the_selected_elements_history():
    from types import SimpleNamespace

    from prfaas_tui.widgets.topology_map import selection_series

    snaps = tuple(SimpleNamespace(sim_time=t, topology={
        "links": {"hub->west": {"gbps": g, "capacity_gbps": 40.0}},
        "regions": {"west": {"ttft": {"p50": 1.0, "p90": p}}},
        "sites": {}}) for t, g, p in ((1.0, 2.0, 3.0), (2.0, 4.0, None)))
    xs, series = selection_series(snaps, ("link", "hub->west"))
    assert xs == [-1.0, 0.0] and series == {"carried": [2.0, 4.0], "capacity now": [40.0, 40.0]}
    xs, series = selection_series(snaps, ("region", "west"))
    assert series["TTFT P90"][0] == 3.0 and series["TTFT P90"][1] != series["TTFT P90"][1]


@pytest.mark.asyncio
async def test_help_lists_the_topology_keys_and_quit_during_a_drill_asks_first():
    from prfaas_tui.screens.help import HelpScreen
    from prfaas_tui.screens.prompt import ConfirmScreen

    app = PrfaasApp(None, live=False, at=60.0, drill="region-link-brownout")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        from prfaas_tui.commands.snapshot import normalize, screen_text

        text = screen_text(normalize(app.export_screenshot()))
        from textual.containers import VerticalScroll

        app.screen.query_one(VerticalScroll).scroll_end(animate=False)  # the terms, below the keys
        await pilot.pause()
        text += screen_text(normalize(app.export_screenshot()))
        assert "Select the next site, region or link" in text and "re-solved" in text
        assert "with a [cache] and" in text  # help is shown as written, never read as markup
        assert "Chart: cycle the time window" in text
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)  # the drill's run would be lost
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, Dashboard)


@pytest.mark.asyncio
async def test_d_runs_a_drill_on_the_running_scenario_never_on_the_drills_base():
    """The pair's `d` lists the drills its deployment has targets for and runs them on it; a
    topology drill whose link the pair lacks is refused with a notice and the pair runs on;
    the view's `d` runs a topology drill on the running topology."""
    from prfaas_tui.screens.dashboard import Dashboard
    from prfaas_tui.screens.drills import DrillPicker

    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        dash = app.screen
        dash.start_drill("region-link-brownout")  # toy has no hub->west
        await pilot.pause()
        assert app.screen is dash and dash.drill is None
        assert dash.settings.scenario.name == "toy"
        dash.start_drill("link-outage")
        await pilot.pause()
        assert isinstance(app.screen, Dashboard) and app.screen.drill.name == "link-outage"
        assert app.screen.settings.scenario.name == "toy"  # not paper-case-study, its base
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DrillPicker) and "toy" in str(app.screen.title_text)
        names = [n for n, _ in app.screen.items]
        assert "link-brownout" in names and "region-link-brownout" not in names

    app = PrfaasApp("toy-two-regions", live=False, at=5.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        screen.start_drill("region-link-brownout")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, Dashboard) and screen.drill.name == "region-link-brownout"
        assert screen.session.scenario.name == "toy-two-regions"  # not two-regions, its base
        assert screen.tick.snapshot.sim_time == 5.0
        screen.start_drill("link-brownout")  # a single pair's link: two links here, refused
        await pilot.pause()
        assert screen.drill.name == "region-link-brownout"


@pytest.mark.asyncio
@pytest.mark.parametrize("element, text, says", [
    (("region", "west"), "3/x", "must be a whole number"),
    (("region", "west"), "fastest", "routing must be one of"),
    (("region", "west"), "999K", "outside the length distribution's support"),
    (("region", "west"), "0/8", ""),
    (("site", "hub"), "-2", "instances must be >= 0"),
    (("link", "hub->west"), "0", "link hub->west: bandwidth must be >= 1 Mbps"),
    (("link", "hub->west"), "fast", ""),
])
async def test_bad_knob_text_is_one_line_and_changes_nothing(element, text, says):
    app = PrfaasApp("two-regions", live=False, at=5.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        before = screen.session.running_spec()
        screen.selected = element
        kind, name = element
        try:
            reason = None
            screen.session.check_element(kind, name, **screen.parse_knobs(text))
        except ValueError as exc:  # KnobError is a ValueError
            reason = str(exc)
        if text == "0/8":  # N_d = 8 with N_p = 0 fits the pool of 8: accepted
            assert reason is None
            return
        assert reason and "\n" not in reason and says in reason
        assert screen.session.running_spec() == before


def test_a_topology_plan_opens_as_one_plan_file(plan_file):
    """The one plan reader: a topology plan's summary is a PlanFile whose first row is the
    shipped deployment and whose candidates load as topologies at their sites."""
    from prfaas_tui.screens.plan import open_plan

    path, summary = plan_file
    plan = open_plan(path)
    assert plan.topology and plan.records[0]["key"] == "shipped"
    assert plan.candidates == sorted(summary["ranked"], key=lambda r: (-r["goodput"], r["key"]))
    want = plan.candidates[-1]
    choice = plan.choice(want)
    topo = choice.scenario.declared_topology
    assert topo.site("hub").instances == want["candidate"]["sites"]["hub"]
    assert choice.scenario.name == f"{summary['scenario']}:{want['label']}"
    shipped = plan.choice(plan.records[0]).scenario  # the preset as written
    assert shipped.name == summary["scenario"] and shipped.declared_topology.site("hub").instances == 8


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@pytest.mark.asyncio
async def test_a_drill_on_a_topology_shows_the_pairs_incident_timeline_where_it_fits(size):
    """Under the detail, whole, where the selected element's chart keeps its room (at 80x24
    the chart comes first; the status line names the incidents in force)."""
    from prfaas_tui.commands.snapshot import normalize, screen_text
    from prfaas_tui.widgets.timeline import DrillTimeline

    app = PrfaasApp("two-regions", live=False, at=720.0, drill="region-link-brownout")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = _screen(app)
        timeline = screen.query_one(DrillTimeline)
        text = screen_text(normalize(app.export_screenshot()))
        assert screen.query_one("#topology-chart").display  # the chart keeps its room
        assert "? Help" in text and "hub->west brownout to 15% · sim" in text  # nothing cut
        assert timeline.display == (size == (160, 48))
        if timeline.display:
            shown = str(timeline.content)
            assert shown.startswith("drill region-link-brownout\nat 12.0 min of 40.0 min")
            assert "⚠ 10.0 min-20.0 min" in shown and "hub->west brownout to 15%" in shown
            assert "drill region-link-brownout" in text
    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert not _screen(app).query_one(DrillTimeline).display  # nothing to show


@pytest.mark.asyncio
async def test_t_edits_the_selected_region_or_the_region_of_the_selected_link():
    from prfaas_tui.screens.prompt import ValuePrompt

    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        await _select(pilot, screen, ("site", "hub"))
        await pilot.press("t")
        await pilot.pause()
        assert app.screen is screen  # a site has no t: a notice
        await _select(pilot, screen, ("link", "hub->west"))
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, ValuePrompt) and screen.selected == ("region", "west")
        await type_value(pilot, "32K")
        assert app.screen is screen
        assert screen.session.running_spec().region("west").threshold == 32768.0
        assert screen.session.running_spec().region("east").threshold != 32768.0


@pytest.mark.asyncio
async def test_the_palette_lists_the_topology_keys_and_one_command_per_element():
    from prfaas_tui.screens.prompt import ValuePrompt

    app = PrfaasApp("two-regions", live=False, at=10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert {"Fork [f]", "Events [E]", "Compare [c]", "Drills [d]", "Optimum [o]",
                "Bound [O]", "Plan results [P]", "Knobs [⏎]", "Set t [t]"} <= set(commands)
        assert {f"Set {kind} {name}…" for kind, name in elements(screen.session.topology)} \
            <= set(commands)
        assert {"Load preset toy", "Load preset global"} <= set(commands)  # any, pair or not
        commands["Set link hub->west…"].callback()
        await pilot.pause()
        assert screen.selected == ("link", "hub->west") and isinstance(app.screen, ValuePrompt)


@pytest.mark.asyncio
async def test_p_loads_a_pair_on_its_dashboard_or_a_topology_here_asking_first_on_a_long_run():
    from emulator.scenario import presets
    from prfaas_tui.screens.dashboard import Dashboard
    from prfaas_tui.screens.discard import DISCARD_AFTER_S
    from prfaas_tui.screens.presets import PresetPicker
    from prfaas_tui.screens.prompt import ConfirmScreen

    app = PrfaasApp("two-regions", live=False, at=DISCARD_AFTER_S + 1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = _screen(app)
        gen = screen.session.generation
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PresetPicker)
        app.screen.dismiss(presets.load("two-regions", topology=True))
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)  # 601 s of run to lose: it asks
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is screen and screen.session.generation == gen
        await pilot.press("p")
        await pilot.pause()
        app.screen.dismiss(presets.load("two-regions", topology=True))
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is screen and screen.session.generation == gen + 1  # here, anew
        await pilot.press("p")
        await pilot.pause()
        app.screen.dismiss(presets.load("toy"))  # a single pair: its dashboard
        await pilot.pause()
        await pilot.press("y")  # the reloaded run started at 601 s too
        await pilot.pause()
        assert isinstance(app.screen, Dashboard)
        assert app.screen.settings.scenario.name == "toy"
        assert screen not in app.screen_stack
