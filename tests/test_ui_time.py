"""Issue 12 items 5, 6, 9 on the dashboard: one relative time axis with incidents shaded and
y-axes that follow a scale-changing knob; the events view; the whole run's export."""

from __future__ import annotations

import csv
import json
import re

import pytest
from test_ui_support import dash, screen_text
from textual.widgets import DataTable, Input

from emulator.units import GBPS
from prfaas_tui.app import PrfaasApp
from prfaas_tui.events import select
from prfaas_tui.live import HISTORY
from prfaas_tui.screens.events import EventsScreen
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.widgets.live_charts import LiveCharts
from prfaas_tui.widgets.plots import LinkChart, ThroughputChart

pytestmark = pytest.mark.asyncio
SIZE = (160, 48)


def chart_rows(app: PrfaasApp, cls: type) -> list[str]:
    return app.screen.query_one(cls).render().plain.splitlines()


def plot_area(rows: list[str]) -> list[str]:
    """The rows between the plot's top and bottom frame, inside the y axis."""
    top = next(i for i, r in enumerate(rows) if "┌" in r)
    bottom = next(i for i, r in enumerate(rows) if "└" in r)
    left = rows[top].index("┌") + 1
    right = rows[top].index("┐")
    return [r[left:right] for r in rows[top + 1:bottom]]


async def test_every_live_chart_is_labelled_relative_to_now_with_its_title_shown():
    async with PrfaasApp(drill="link-brownout", live=False, at=900.0).run_test(size=SIZE) as pilot:
        await pilot.pause()
        charts = pilot.app.screen.query_one(LiveCharts)
        for chart in charts.query("Chart"):
            rows = chart.render().plain.splitlines()
            labels = rows[-1].split()
            assert labels[0] == "-5m" and labels[-1] == "now", (chart.id, rows[-1])
            assert "900" not in rows[-1]  # no raw simulated seconds
            assert rows[0].strip(), chart.id  # the title row, whatever the y labels' width
        link = chart_rows(pilot.app, LinkChart)[0]
        assert link.startswith("link") and "of 6" in link


def tinted_columns(chart) -> set[int]:
    """Plot-area columns (from the frame's left) tinted on every row: the shading (a background
    other than the plot's own)."""
    from rich.console import Console

    from prfaas_tui.widgets.theme import rgb

    text = chart.render()
    lines = text.split("\n", allow_blank=True)
    rows = [ln.plain for ln in lines]
    top = next(i for i, r in enumerate(rows) if "┌" in r)
    bottom = next(i for i, r in enumerate(rows) if "└" in r)
    left, right = rows[top].index("┌") + 1, rows[top].index("┐")
    console, plain = Console(), rgb(chart, "surface")

    def tint(r: int, c: int) -> bool:
        bg = lines[r].get_style_at_offset(console, c).bgcolor
        return bg is not None and tuple(bg.get_truecolor()) != plain

    legend = set(range(top + 1, top + 4))  # its three legend rows are left untinted
    return {c - left for c in range(left, right)
            if all(tint(r, c) for r in range(top + 1, bottom) if r not in legend)}


async def test_an_incident_window_is_shaded_where_it_happened():
    """link-brownout: 600 s to 1200 s. At 700 s the window is 400-700 s: the last third, tinted
    behind the data and drawn ━ on the bottom frame (readable without colour)."""
    async with PrfaasApp(drill="link-brownout", live=False, at=700.0).run_test(size=SIZE) as pilot:
        await pilot.pause()
        chart = pilot.app.screen.query_one(ThroughputChart)
        rows = chart_rows(pilot.app, ThroughputChart)
        width = len(plot_area(rows)[0])
        tinted = tinted_columns(chart)
        assert not {c for c in tinted if c < width // 2}
        assert set(range(int(width * 0.7), width)) <= tinted  # a filled span, not a stray cell
        bottom = next(r for r in rows if "└" in r)
        band = bottom[bottom.index("└") + 1:bottom.index("┘")]
        assert "━" not in band[: width // 2] and band[int(width * 0.7):].strip("━┬") == ""
        assert "░" not in "".join(plot_area(rows))  # no glyphs over the data
        assert "(-1m40s) link brownout" in screen_text(pilot.app)  # the timeline: where it began
    async with PrfaasApp(drill="link-brownout", live=False, at=500.0).run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not tinted_columns(pilot.app.screen.query_one(ThroughputChart))
        assert "━" not in "".join(chart_rows(pilot.app, ThroughputChart))


async def test_the_link_axis_follows_a_bandwidth_cut_at_once():
    async with PrfaasApp("paper-case-study", live=False, at=60.0).run_test(size=SIZE) as pilot:
        await pilot.pause()
        charts = pilot.app.screen.query_one(LiveCharts)
        assert charts._series.tops["link"] == pytest.approx(110.0)
        assert dash(pilot.app).request(bandwidth=10 * GBPS)
        await pilot.pause()
        # the 100 Gbps samples are still in the window, yet the axis is 0-11 Gbps now
        assert charts._series.tops["link"] == pytest.approx(11.0)
        ys = [float(m) for r in chart_rows(pilot.app, LinkChart)
              for m in re.findall(r"^\s*([0-9.]+)┤", r)]
        assert 10 <= max(ys) <= 15  # round ticks past 11 Gbps, no longer to 110
        assert 11.0 <= pilot.app.screen.query_one(LinkChart)._ax.hi < 20
        dash(pilot.app).step_seconds = 6.0
        dash(pilot.app).action_step()
        await pilot.pause()
        assert charts._series.tops["link"] == pytest.approx(11.0)
        assert any("│" in r for r in plot_area(chart_rows(pilot.app, LinkChart)))  # the change


async def test_events_view_lists_filters_and_exports_a_drills_events(tmp_path):
    app = PrfaasApp(drill="link-brownout", live=False, at=700.0, export_dir=tmp_path / "out")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")  # a knob change by hand (t and the split, pinned)
        await pilot.press("E")
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        kinds = {e.kind for e in screen.shown}
        assert kinds == {"knob", "incident", "scheduler"}
        text = screen_text(app)
        assert "incident: link brownout to 20%" in text and "threshold ->" in text
        assert any(e.kind == "scheduler" and "->" in e.text for e in screen.shown)  # reasons
        await pilot.press("k", "s")  # hide knobs and scheduler decisions
        assert {e.kind for e in screen.shown} == {"incident"}
        assert "threshold ->" not in screen_text(app)
        await pilot.press("k", "i")  # knobs only
        assert {e.kind for e in screen.shown} == {"knob"}
        await pilot.press("s", "i", "slash", *"pinned", "enter")
        assert screen.shown and all("pinned" in e.text for e in screen.shown)
        await pilot.press("x")
        assert isinstance(app.screen, ValuePrompt)
        await pilot.press("enter")  # the default: a timestamped .jsonl in the export folder
        [path] = (tmp_path / "out").glob("prfaas-*-events-*.jsonl")
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert [r["text"] for r in rows] == [e.text for e in screen.shown]
        assert str(path) in " ".join(n.message for n in app._notifications)
        screen.query_one(Input).value = ""
        await pilot.pause()
        before = len(screen.shown)
        dash(app).session.step(600.0)  # past the brownout's end at 1200 s: new events
        screen.reload()
        await pilot.pause()
        table = screen.query_one(DataTable)
        assert len(screen.shown) > before and screen.shown == select(screen.events)
        assert table.row_count == len(screen.shown)
        assert screen.shown[-1].text in screen_text(app)  # the cursor follows the newest


async def test_export_writes_the_whole_run_to_new_timestamped_files(tmp_path):
    """More snapshots than the driver's rolling history: the export still starts at 0 s."""
    app = PrfaasApp("toy", live=False, at=30.0, export_dir=tmp_path / "exp")
    async with app.run_test(size=SIZE) as pilot:
        d = dash(app)
        for _ in range(20):  # 30 snapshots a step
            d.action_step()
        await pilot.pause()
        assert len(d.tick.history) == HISTORY and d.tick.history[0].sim_time > 1.0
        await pilot.press("e")
        assert isinstance(app.screen, ValuePrompt)
        await pilot.press("enter")  # the default folder (--export-dir)
        await pilot.press("e", "enter")  # again: a second set, nothing overwritten
        csvs = sorted((tmp_path / "exp").glob("prfaas-toy-*.csv"))
        assert len(csvs) == 2
        assert all(re.fullmatch(r"prfaas-toy-\d{8}-\d{6}(-\d+)?\.csv", p.name) for p in csvs)
        with csvs[0].open() as f:
            rows = list(csv.DictReader(f))
        assert len(rows) > HISTORY
        assert float(rows[0]["sim_time"]) < 0.5 and float(rows[-1]["sim_time"]) == pytest.approx(50.0)
        doc = json.loads(csvs[0].with_suffix(".json").read_text())
        assert len(doc["samples"]) == len(rows) and doc["stride"] == 1
        toasts = " ".join(n.message for n in app._notifications)
        assert all(str(p) in toasts for p in csvs) and f"{len(rows)} rows" in toasts
