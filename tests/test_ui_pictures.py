"""Issue 12 item 7 on screen (Pilot, deterministic mode: the emulator runs synchronously to `at`,
no wall clock): the topology strip, and behind `g` the gauges, the heat map of Λmax over
(t, N_p), the length and TTFT CDFs; the plan screen's Pareto front."""

from __future__ import annotations

import json
import re

import pytest
from test_ui_support import dash, screen_text, select_knob

from emulator.effective import LiveState, effective_optimum
from emulator.planner.store import read_results
from emulator.planner.sweep import pareto
from prfaas_tui.app import PrfaasApp
from prfaas_tui.pictures import LABELS, binding_of
from prfaas_tui.widgets.cdf import LengthCDFChart, TTFTCDFChart
from prfaas_tui.widgets.gauges import Gauges
from prfaas_tui.widgets.heatmap import NOW, HeatMapView
from prfaas_tui.widgets.pareto import ParetoChart
from prfaas_tui.widgets.pictures_view import PicturesView
from prfaas_tui.widgets.topology import TopologyStrip

pytestmark = pytest.mark.asyncio

BEFORE, MID = 300.0, 800.0  # the drills' incidents run from 10 to 20 min
BIG, SMALL = (160, 48), (80, 24)


def strip(app) -> tuple[str, list[str]]:
    """The topology strip's text and the pieces drawn reversed (the binding stage)."""
    text = dash(app).query_one(TopologyStrip).content
    plain = text.plain
    return plain, [plain[s.start:s.end] for s in text.spans if "reverse" in str(s.style)]


async def strip_at(drill: str, at: float, size=SMALL) -> tuple[str, list[str], str]:
    app = PrfaasApp(drill=drill, live=False, at=at)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text, marked = strip(app)
        assert text.splitlines()[0] in screen_text(app)  # on screen, one line
        return text, marked, binding_of(dash(app).session.effective)


async def test_topology_strip_shows_alive_counts_and_the_binding_stage_through_drills():
    before, _, _ = await strip_at("prfaas-loss", BEFORE)
    lost, marked, binding = await strip_at("prfaas-loss", MID)
    assert "prfaas 4/4" in before and "prfaas 2/4" in lost
    assert binding == "prfaas" and marked == [" 2/4", "PrfaaS binds"]
    out, marked, binding = await strip_at("link-brownout", MID)
    assert "link 6/30 Gbps" in out and "link 30/30 Gbps" in (await strip_at("link-brownout",
                                                                            BEFORE))[0]
    assert marked[-1] == f"{LABELS[binding]} binds" and marked[0].startswith(LABELS[binding])
    assert len(out) <= 78  # fits 80 columns with its padding


async def show_pictures(pilot) -> PicturesView:
    await pilot.press("g")
    await pilot.pause()
    view = dash(pilot.app).query_one(PicturesView)
    assert view.display
    return view


def heat_rows(app) -> list[str]:
    return dash(app).query_one(HeatMapView).content.plain.splitlines()


async def test_heat_map_optimum_is_the_effective_optimum_and_the_point_follows_n_p():
    app = PrfaasApp(drill="prfaas-loss", live=False, at=MID)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        d = dash(app)
        assert d.query_one(PicturesView)._heat is None  # nothing computed while hidden
        await show_pictures(pilot)
        hm = d.query_one(PicturesView)._heat
        system, state = d.session.system, LiveState.of(d.tick.snapshot)
        want = effective_optimum(system, state, d.session.mode)
        assert (hm.t_at(hm.best[0]), hm.best[1]) == (want.knobs.t, want.knobs.n_p)
        assert hm.best_value == pytest.approx(want.lambda_max)
        assert f"best {hm.best_value:.2f}".split()[-1] in "\n".join(heat_rows(app))

        def marker_n_p() -> int:  # the N_p label of the row drawn with the current point
            rows = heat_rows(app)
            i = next(i for i, r in enumerate(rows[1:], 1) if NOW in r[4:])
            label = next(r for r in reversed(rows[1:i + 1]) if r[:4].strip())
            return int(label[:4].strip(" +"))
        first = marker_n_p()
        assert first == state.alive.pd_p == hm.now[1]
        await select_knob(pilot, "n_p")
        await pilot.press("left")  # one PD-P instance fewer: it stops taking work at once
        await pilot.pause()
        assert d.tick.snapshot.knobs.n_p == state.n_p - 1
        hm2 = d.query_one(PicturesView)._heat
        assert hm2.now[1] == hm.now[1] - 1 == d.tick.snapshot.stages["pd-p"].instances
        assert marker_n_p() == first - 1


async def test_length_cdf_marks_t_and_the_models_p_and_gauges_match_the_engine():
    app = PrfaasApp(drill="link-brownout", live=False, at=MID)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        await show_pictures(pilot)
        d = dash(app)
        live = d.session.effective
        cdf = d.query_one(LengthCDFChart).data
        assert cdf.t == live.state.t
        assert cdf.p == pytest.approx(live.point.p)
        snap = d.tick.snapshot
        text = d.query_one(Gauges).content.plain
        want = {"PrfaaS": snap.stages["prfaas"].utilization, "link": snap.link.utilization,
                "PD-P": snap.stages["pd-p"].utilization, "PD-D": snap.stages["pd-d"].utilization}
        for label, util in want.items():
            m = re.search(rf"{re.escape(label)}\s+\S+\s+(\d+)%", text)
            assert m and int(m.group(1)) == round(util * 100), (label, text)
        ttft = d.query_one(TTFTCDFChart).data
        assert len(ttft.q) == 21 and list(ttft.seconds) == sorted(ttft.seconds)
        assert ttft.slo == d.view.latency.target
        overloaded = d.settings.rate >= live.point.lambda_max  # the brownout: no steady state
        assert overloaded and ttft.model_p90 == float("inf")
        screen = screen_text(app)
        assert f"t {cdf.t / 1024:.1f}K" in screen or "lengths CDF" in screen
        await pilot.press("g")  # back to the charts and the model
        await pilot.pause()
        assert not d.query_one(PicturesView).display


async def test_pictures_fit_80x24():
    app = PrfaasApp(drill="prfaas-loss", live=False, at=MID)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await show_pictures(pilot)
        screen = screen_text(app)
        assert "prfaas 2/4" in screen and "PrfaaS binds" in screen
        assert "queue" in screen and "TTFT" in screen and "CDF" in screen
        assert NOW in screen and "★" in screen
        ttft = dash(app).query_one(TTFTCDFChart).data  # Λmax 2.12 > 1.88 offered: a steady state
        assert 0 < ttft.model_p50 < ttft.model_p90 < float("inf")
        assert f"TTFT P90 {ttft.p90:.2f} s" in screen
        await pilot.press("g")
        await pilot.pause()
        await select_knob(pilot, "n_p")  # the knobs have the focus back
        await pilot.press("left")
        await pilot.pause()
        assert dash(app).tick.snapshot.knobs.n_p == 3


@pytest.fixture
def priced_plan(tmp_path, monkeypatch) -> str:
    """A small results file with prices: a toy plan's records, given costs per hour so that
    four of six are on the front."""
    from emulator.planner.goodput import SLO, Settings
    from emulator.planner.space import Space
    from emulator.planner.sweep import Plan, run_plan
    from emulator.scenario import presets

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    toy = presets.load("toy")
    raw = tmp_path / "raw.jsonl"
    run_plan(Plan(toy, Space.around(toy), Settings(SLO(5.0), seeds=(1,), duration=120.0,
                                                   steps=3), analytic=False), out=raw)
    lines = raw.read_text().splitlines()
    out = [lines[0]]
    for line, cost in zip(lines[1:], (9.0, 11.0, 6.0, 8.0, 10.0, 7.5), strict=True):
        rec = json.loads(line)
        out.append(json.dumps({**rec, "cost_per_hour": cost,
                               "goodput_per_cost": rec["goodput"] / cost}))
    path = tmp_path / "priced.jsonl"
    path.write_text("\n".join(out) + "\n")
    return str(path)


async def test_plan_screen_draws_the_planners_pareto_front(priced_plan):
    want = pareto(read_results(priced_plan)[1])
    assert 1 < len(want) < 6
    app = PrfaasApp("paper-case-study", live=False, at=30.0, plan=priced_plan)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        chart = app.screen.query_one(ParetoChart)
        assert [r["key"] for r in chart.data.front] == [r["key"] for r in want]
        assert len(chart.data.priced) == 6
        ranked = app.screen.plan.records
        assert chart.data.selected["key"] == ranked[0]["key"]  # the cursor's candidate
        await pilot.press("down")
        await pilot.pause()
        assert chart.data.selected["key"] == ranked[1]["key"]
        assert f"Pareto front: {len(want)} of 6" in screen_text(app)


async def test_another_paradigm_has_no_heat_map_and_says_why():
    app = PrfaasApp("paper-case-study", live=False, at=60.0)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        await show_pictures(pilot)
        await pilot.press("m")  # homogeneous: one local pool, no t
        await pilot.pause()
        d = dash(app)
        assert d.session.effective.state.paradigm == "homogeneous"
        assert d.query_one(PicturesView)._heat is None
        assert "has no t" in str(d.query_one(HeatMapView).content)
        assert "PrfaaS" not in d.query_one(TopologyStrip).content.plain  # PD-P | PD-D only


async def test_length_cdf_follows_a_surge_of_long_requests():
    """The long-surge drill triples the long requests: the CDF drawn is the live mix, its p
    the share the router sends at t now, not the preset's."""
    app = PrfaasApp(drill="long-surge", live=False, at=MID)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        await show_pictures(pilot)
        d = dash(app)
        cdf, snap = d.query_one(LengthCDFChart).data, d.tick.snapshot
        preset = d.session.system.lengths
        assert snap.lengths is not preset  # the surge's mix
        assert cdf.p == pytest.approx(float(snap.lengths.p_above(cdf.t)))
        assert cdf.p == pytest.approx(d.session.effective.point.p)
        assert cdf.p > float(preset.p_above(cdf.t)) + 0.1


async def test_the_pair_map_marks_the_element_the_knob_cursor_turns():
    """The pair is its 1x1 topology on the map: walking the knobs walks its elements (t, N_p,
    N_d: region pd; N_prfaas: site prfaas; B_out: the link; the run's knobs: none)."""
    app = PrfaasApp("paper-case-study", live=False, at=BEFORE)
    async with app.run_test(size=BIG) as pilot:
        await pilot.pause()
        d = dash(app)

        def underlined() -> str:
            text = d.query_one(TopologyStrip).content
            return "".join(text.plain[s.start:s.end] for s in text.spans
                           if "underline" in str(s.style))

        seen = []
        for _ in range(6):
            seen.append((d.selected, underlined()))
            await pilot.press("down")
            await pilot.pause()
        assert [el for el, _ in seen] == [("region", "pd"), ("site", "prfaas"),
                                          ("region", "pd"), ("region", "pd"),
                                          ("link", "prfaas->pd"), None]
        assert seen[0][1].startswith("region pd PD-P") and "PD-D" in seen[0][1]
        assert seen[1][1] == "site prfaas 4/4" and seen[4][1].startswith("link ")
        assert seen[5][1] == "" and "▸" not in d.query_one(TopologyStrip).content.plain
