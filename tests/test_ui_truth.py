"""One truth on screen: what the panels show is the model at the state the emulator runs now,
whatever burst of keys, ticks and prompts came before (the live app, under its throttle)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from test_ui_support import burst, dash, screen_text, select_knob, wait_for

from emulator.effective import LiveState, effective_point
from emulator.units import GBPS
from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.widgets.model_panel import ModelPanel
from prfaas_tui.widgets.topology import TopologyStrip

pytestmark = pytest.mark.asyncio
SIZE = (160, 48)


def settled(app: PrfaasApp) -> bool:
    """Every change sent has come back in a tick, that tick is on screen, and no redraw is
    still owed."""
    d = dash(app)
    return (d.tick is not None and d.driver is not None and d.tick.applied == d.driver.sent
            and d.session.tick is d.tick and not d._redraw.pending and app.screen is d)


def state(app: PrfaasApp) -> str:
    d = dash(app)
    return (f"applied {d.tick.applied}/{d.driver.sent} synced {d.session.tick is d.tick} "
            f"redraw pending {d._redraw.pending} top {app.screen} "
            f"link {d.tick.snapshot.knobs.bandwidth} of {d.settings.scenario.system.bandwidth}"
            f" Λmax panel {panel_lambda(app)} strip {strip_lambda(app)} "
            f"model {model_lambda(app)}")


async def wait_settled(pilot) -> None:
    """Until the final change has come back, then pause (no newer tick) and give the panel
    its chance to draw the last tick (turns counted: paused, simulated time stands still)."""
    app = pilot.app
    d = dash(app)
    await wait_for(pilot, lambda: d.tick.applied == d.driver.sent
                   and d.tick.snapshot.knobs.bandwidth == d.settings.scenario.system.bandwidth)
    await pilot.press("space")
    for _ in range(500):
        if d.tick.paused and settled(app) and panel_lambda(app) == model_lambda(app):
            return
        await pilot.pause(0.02)
    raise AssertionError(f"the panel never caught up: {state(app)}")


def plain(widget) -> str:
    """A Static's content as plain text (what it shows, before clipping)."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def panel_lambda(app: PrfaasApp) -> str:
    text = plain(dash(app).query_one(ModelPanel))
    return re.search(r"Λmax (\d+\.\d\d)", text).group(1)


def strip_lambda(app: PrfaasApp) -> str:
    text = plain(dash(app).query_one(TopologyStrip))
    return re.search(r"Λmax (\d+\.\d\d)", text).group(1)


def model_lambda(app: PrfaasApp) -> str:
    """The model at the latest tick's live state, computed here, not read from the session."""
    d = dash(app)
    point = effective_point(d.session.system, LiveState.of(d.tick.snapshot), d.session.mode)
    return f"{point.lambda_max:.2f}"


async def test_a_burst_of_knob_changes_ends_with_the_panel_at_the_final_state():
    app = PrfaasApp("toy")
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await wait_for(pilot, lambda: d.tick is not None)
        await select_knob(pilot, "bandwidth")
        # typed, then stepped down and up, all at once, while ticks keep arriving
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ValuePrompt))
        burst(app, "ctrl+a", "ctrl+k", "1", "0", "enter")
        await wait_for(pilot, lambda: app.screen is d)
        burst(app, "left", "left", "right", "left", "left")
        await wait_settled(pilot)
        assert d.settings.scenario.system.bandwidth == pytest.approx(7 * GBPS)
        await pilot.pause()
        assert panel_lambda(app) == strip_lambda(app) == model_lambda(app)


async def test_a_redraw_asked_under_a_prompt_that_closes_at_once_is_not_lost():
    """A redraw asked while a prompt is on top must not be handed to the prompt: Textual drops
    what a screen removed before its next repaint was handed, and the panel then stayed stale
    for every later change."""
    app = PrfaasApp("toy")
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await wait_for(pilot, lambda: d.tick is not None)
        await select_knob(pilot, "bandwidth")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ValuePrompt))
        prompt = app.screen
        # on a loaded machine the prompt can close and be removed before it repaints, and a
        # redraw handed to it is lost with it: here the prompt loses every one it is handed
        keep = prompt._invoke_later
        prompt._invoke_later = lambda fn, pump: (
            None if getattr(fn, "func", None) == d._show_model else keep(fn, pump))
        await wait_for(pilot, lambda: not d._model_asked)
        d._model_later()  # a tick's redraw, asked while the prompt is up
        await pilot.pause()
        prompt.dismiss(None)
        await pilot.pause()
        await pilot.press("left", "left")  # later changes must show
        await wait_settled(pilot)
        assert d.settings.scenario.system.bandwidth == pytest.approx(6 * GBPS)
        assert panel_lambda(app) == strip_lambda(app) == model_lambda(app)


async def test_mode_toggle_keeps_later_changes_on_the_panel():
    app = PrfaasApp("toy")
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await wait_for(pilot, lambda: d.tick is not None)
        await pilot.press("M", "M")  # exact, then the preset's paper again
        await select_knob(pilot, "bandwidth")
        await pilot.press("left", "left", "left")
        await wait_settled(pilot)
        assert panel_lambda(app) == strip_lambda(app) == model_lambda(app)
        assert "paper drives" in screen_text(app)


async def test_naive_shows_the_naive_deployment_and_solves_naive_figure():
    """`m` twice (PrfaaS-PD, homogeneous, naive): the emulator runs 4 PrfaaS / 0 PD-P / 8 PD-D
    with PrfaaS binding, and strip and panel show `solve`'s naive Λmax in the preset's mode."""
    from emulator.optimizer import naive

    app = PrfaasApp("paper-case-study", live=False, at=30)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await pilot.press("m", "m")
        d.session.step(60)  # the switch drains the old roles first
        d.sync()
        await pilot.pause()
        k = d.tick.snapshot.knobs
        assert (k.paradigm, k.n_prfaas, k.n_p, k.n_d) == ("naive-heterogeneous", 4, 0, 8)
        strip = plain(d.query_one(TopologyStrip))
        assert "prfaas 4/4" in strip and "PD-P 0/0" in strip and "PD-D 8/8" in strip
        assert "PrfaaS binds" in strip
        want = f"{naive(d.session.system, d.settings.scenario.mode).lambda_max:.2f}"
        assert panel_lambda(app) == strip_lambda(app) == want
        assert "naive · live" in plain(d.query_one(ModelPanel))


def _binding_words(app: PrfaasApp) -> tuple[str, str, str]:
    """What binds, as the strip, the ceilings chart and the model panel say it."""
    text = screen_text(app)
    strip = re.search(r"· (\S+) binds ·", text).group(1)
    chart = re.search(r"binding: (\S+)", text).group(1)
    panel = plain(dash(app).query_one(ModelPanel))
    row = next(line for line in panel.splitlines() if "◀" in line)
    word = "link" if "◀ link" in row else row.split()[0]
    return strip, chart, word


async def test_strip_panel_and_charts_agree_across_a_drill():
    """link-brownout, sampled through the drill: one binding word and one Λmax on screen."""
    app = PrfaasApp(drill="link-brownout", live=False, at=1)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        seen = set()
        for _ in range(12):
            d.session.step(d.drill.duration / 12 - 1)
            d.sync()
            await pilot.pause()
            strip, chart, panel = _binding_words(app)
            assert strip == chart == panel, (d.tick.snapshot.sim_time, strip, chart, panel)
            lam = re.search(r"Λ (\d+\.\d\d)", screen_text(app)).group(1)
            assert panel_lambda(app) == strip_lambda(app) == model_lambda(app) == lam
            seen.add(strip)
        assert "link" in seen and len(seen) > 1  # the brownout moves what binds


async def test_past_lambda_max_ttft_reads_unstable_with_why_never_a_dash():
    app = PrfaasApp("paper-case-study", live=False, at=30)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        panel = d.query_one(ModelPanel)
        assert re.search(r"TTFT P50 \d+\.\d\d · P90 \d+\.\d\d s", plain(panel))  # stable
        d.request(bandwidth=10 * GBPS)  # offered 106% of the new Λmax
        d.session.step(5)
        d.sync()
        await pilot.pause()
        text = plain(panel)
        assert "TTFT ∞ unstable: 106% Λmax" in text and "P90 -" not in text
        assert "P50" not in text  # the stable path's tail is not a latency to show


async def test_an_unstable_path_below_lambda_max_is_named():
    from prfaas_tui.modelview import LatencyView
    from prfaas_tui.widgets.model_panel import unstable_why

    lt = LatencyView(1.0, float("inf"), 6.0, 0.5, None, ("prfaas",))
    assert unstable_why(lt, rate=1.0, lambda_max=2.0) == "PrfaaS queue grows"
    assert unstable_why(lt, rate=2.2, lambda_max=2.0) == "110% Λmax"


async def test_palette_shows_keys_and_finds_the_heat_map():
    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Pause [space]" in titles and "Optimum [o]" in titles
        assert any("heat map" in t and t.endswith("[g]") for t in titles)


async def test_plan_without_a_plan_says_how_to_make_one():
    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("P")
        await pilot.pause()
        assert "prfaas-tui plan --preset NAME --out" in screen_text(app)


async def test_an_optimum_that_leaves_instances_idle_says_so(monkeypatch):
    import prfaas_tui.widgets.model_panel as mp

    monkeypatch.setattr(mp, "targets_for", lambda best, state: (state.t, 3, 3))
    app = PrfaasApp("paper-case-study", live=False, at=5.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "N_p/N_d 3/3 (2 idle)" in plain(dash(app).query_one(ModelPanel))


async def test_scorecard_says_when_the_incident_p90_broke_the_slo():
    from prfaas_tui.screens.drills import scorecard_rows

    card = {"ttft_p90_during": 9.7, "recovery_seconds": 0.0, "expectations": {}}
    rows = {r[0]: r for r in scorecard_rows(card, slo=6.0)}
    assert rows["TTFT p90 during incidents"][2:] == ("SLO ≤ 6.00 s", False)
    assert rows["recovery (served = offered)"][1] == "0 ms"


async def test_stacked_incidents_end_one_by_one():
    """A brownout during a surge: `i` lists each one on to end it alone."""
    from prfaas_tui.screens.drills import InjectPicker

    app = PrfaasApp("paper-case-study", live=False, at=10.0)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        d.session.inject("link brownout to 20%")
        d.session.inject("1.5x traffic surge")
        d.sync()
        assert set(d.tick.snapshot.incidents) == {"link brownout to 20%", "1.5x traffic surge"}
        await pilot.press("i")
        assert isinstance(app.screen, InjectPicker)
        assert "end link brownout to 20% (#1)" in screen_text(app)
        await pilot.press(*"brownout", "enter")  # its end entry is listed first
        await pilot.pause()
        assert d.tick.snapshot.incidents == ("1.5x traffic surge",)


@pytest.mark.parametrize("at", [900.0, 1500.0])
async def test_status_line_at_80x24_keeps_the_clock_lost_and_the_slo_breach(at):
    """link-brownout deep in its incident: the instability banner, the breach and the clock
    all fit 80 columns (a long banner is shortened, never the clock or lost)."""
    from prfaas_tui.modelview import slo_target
    from prfaas_tui.widgets.status import StatusLine

    app = PrfaasApp(drill="link-brownout", live=False, at=at)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        d = dash(app)
        line = plain(d.query_one(StatusLine))
        assert "sim 0:" in line and "lost 0" in line, line
        p90, slo = d.tick.snapshot.ttft_p90, slo_target(d.settings.scenario)
        assert (f"> SLO {slo:g}s" in line) == (p90 > slo), (p90, slo, line)


async def test_scorecard_close_hint_shows_at_80x24():
    from prfaas_tui.screens.drills import ScorecardScreen

    app = PrfaasApp(drill="link-brownout", live=False, at=2400.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ScorecardScreen)
        text = screen_text(app)
        assert "enter/esc: close" in text
        # every metric on one line: a label or a figure split over two rows reads as two
        q = app.screen.card["peak_queue"]
        assert re.search(r"peak queues prfaas / pd-p / pd-d +" + " / ".join(map(str, q.values())),
                         text)
        assert "recovery (served = offered)" in text


async def test_the_schedulers_link_note_names_the_capacity_the_strip_shows():
    """link-brownout at 10 s steps (the scheduler's period): every decision that names the
    link says the capacity the strip shows at that tick, its lagging estimate labelled as such."""
    app = PrfaasApp(drill="link-brownout", live=False, at=1)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        d.session.step(589)
        seen = 0
        for _ in range(20):
            before = len(d.tick.snapshot.decisions)
            d.session.step(10)
            d.sync()
            await pilot.pause()
            snap = d.tick.snapshot
            strip = re.search(r"link (\d+(?:\.\d+)?)/", plain(d.query_one(TopologyStrip)))
            for note in snap.decisions[before:]:
                if m := re.search(r"link (\d+\.\d) Gbps now \(estimate", note):
                    seen += 1
                    assert float(m.group(1)) == pytest.approx(snap.link.capacity / GBPS, abs=0.05)
                    assert float(m.group(1)) == pytest.approx(float(strip.group(1)), abs=0.5)
        assert seen >= 1  # the brownout moved the estimate past capacity_change


async def test_a_redraw_owed_as_the_dashboard_is_taken_down_draws_nothing():
    """Textual removes a screen's widgets before the screen's own unmount cancels the throttled
    redraw: a tick arriving then (a live run at app exit) must not look for them."""
    from prfaas_tui.widgets.status import StatusLine

    app = PrfaasApp("paper-case-study", live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        d = dash(app)
        await pilot.pause()
        await d.query_one(StatusLine).remove()
        d._pruning = True  # as App._prune marks every node it takes down
        d.session.step(30.0)  # a tick: the throttled redraw runs, owed to a screen going away
        await pilot.pause()
        d.sync()
        assert d.tick is not d.session.tick  # nothing mirrored, nothing raised


async def test_live_charts_redraw_together_when_the_live_state_changes():
    """Live, the charts rebuild one at a time; a tick at a new live state (the brownout starts:
    the strip reads the new capacity at once) brings every chart to it at the next timer tick,
    so no chart title keeps the old capacity beside the strip's new one."""
    from emulator.units import to_gbps
    from prfaas_tui.widgets.live_charts import CHARTS, LiveCharts

    app = PrfaasApp(drill="link-brownout", live=False, at=590)
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        await pilot.pause()
        charts = d.query_one(LiveCharts)
        charts.live = True  # as a live dashboard draws (its timer driven by hand here)
        for _ in CHARTS:  # the first state drawn, and the rest after it
            charts._next_chart()
        d.session.step(20.0)  # the brownout starts at 600 s
        d.sync()
        keys = lambda: [charts.query_one(cls)._data_key for cls in CHARTS]  # noqa: E731
        before = keys()
        charts._next_chart()
        assert all(k != b for k, b in zip(keys(), before, strict=True))
        capacity = d.tick.snapshot.link.capacity
        assert charts.query_one(CHARTS[1]).data.capacity_gbps[-1] == to_gbps(capacity)
        d.session.step(5.0)  # the same live state: one chart at a time again, after a rest
        d.sync()              # that keeps the cost at one rebuild per timer tick
        before = keys()
        for _ in CHARTS:
            charts._next_chart()
        assert sum(k != b for k, b in zip(keys(), before, strict=True)) == 1
