"""Issue 22 point 7 and "Chart controls" on the real app: round, evenly spaced y ticks on every
chart, no data drawn outside a chart's frame, incidents and changes behind the data, and the
btop-style keys `w` (window), `1`-`4` (series) and `y` (auto / log scale)."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import pytest
from rich.console import Console
from rich.text import Text
from test_ui_support import dash

from emulator.units import GBPS
from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.help import HelpScreen
from prfaas_tui.widgets.live_charts import LiveCharts
from prfaas_tui.widgets.plots import CeilingsChart, Chart, ThroughputChart, TTFTChart
from prfaas_tui.widgets.theme import rgb

pytestmark = pytest.mark.asyncio
CONSOLE = Console()
BRAILLE = re.compile(r"[\u2800-\u28ff▖▗▘▙▚▛▜▝▞▟▄▀▌▐]")
POWERS = {"1e-6", "1e-5", "1e-4", "1e-3", "0.01", "0.1", "1", "10", "100", "1000", "10000",
          "1e5", "1e6"}


def frame_of(rows: list[str]) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of the plot frame: rows of ┌ and └, columns of ┌ and ┐."""
    top = next(i for i, r in enumerate(rows) if "┌" in r)
    bottom = next(i for i, r in enumerate(rows) if "└" in r)
    return top, bottom, rows[top].index("┌"), rows[top].rindex("┐")


def y_labels(rows: list[str]) -> list[tuple[int, str]]:
    """(row, label) of the y ticks, top first."""
    top, bottom, left, _ = frame_of(rows)
    return [(i, rows[i][:left].strip()) for i in range(top + 1, bottom)
            if rows[i][left] in "┤├" and rows[i][:left].strip()]  # ├ alone: a level line


def styles(text: Text, row: int) -> list:
    line = text.split("\n", allow_blank=True)[row]
    return [line.get_style_at_offset(CONSOLE, c) for c in range(len(line))]


def data_colors(chart: Chart) -> set[tuple[int, int, int]]:
    """The colors of the data cells (braille, blocks) inside the chart's frame."""
    text = chart.render()
    rows = text.plain.split("\n")
    top, bottom, left, right = frame_of(rows)
    out = set()
    for r in range(top + 1, bottom):
        st = styles(text, r)
        for c in range(left + 1, right):
            if BRAILLE.match(rows[r][c]) and st[c].color is not None:
                out.add(tuple(st[c].color.get_truecolor()))
    return out


def color_of(chart: Chart, name: str) -> tuple[int, int, int]:
    return rgb(chart, name)


def shown_charts(app: PrfaasApp) -> list[Chart]:
    return [c for c in app.screen.query(Chart) if c.display and c.size.width > 10
            and c.size.height > 4 and c.data is not None]


def check_chart(chart: Chart) -> None:
    """No data cell outside the frame; y ticks on round numbers, evenly spaced in value and in
    rows; every tick row labelled."""
    rows = chart.render().plain.split("\n")
    top, bottom, left, right = frame_of(rows)
    for i, r in enumerate(rows):
        for j, ch in enumerate(r):
            if BRAILLE.match(ch):
                assert top < i < bottom and left < j < right, (chart.id, i, j, r)
    labels = y_labels(rows)
    assert len(labels) >= 2, (chart.id, rows)
    gaps = {b[0] - a[0] for a, b in zip(labels, labels[1:], strict=False)}
    assert len(gaps) == 1, (chart.id, labels)  # evenly spaced rows
    if all(lb in POWERS for _, lb in labels):
        return  # a log axis: decades
    values = [float(lb.rstrip("kM")) for _, lb in labels]
    steps = {round(a - b, 9) for a, b in zip(values, values[1:], strict=False)}
    assert len(steps) == 1, (chart.id, labels)  # evenly spaced values
    step = steps.pop()
    assert re.fullmatch(r"[125](0*|\.0*)?|0\.0*[125]", f"{step:g}"), (chart.id, step)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_every_chart_has_round_even_ticks_and_draws_inside_its_frame(size):
    async with PrfaasApp(drill="link-brownout", live=False, at=900.0).run_test(size=size) as pilot:
        await pilot.pause()
        app = pilot.app
        charts = shown_charts(app)
        assert {"throughput", "link", "ceilings", "ttft"} <= {c.id for c in charts}
        for chart in charts:
            check_chart(chart)
        await pilot.press("y")  # the log scale too
        await pilot.pause()
        for chart in app.screen.query_one(LiveCharts).query(Chart):
            check_chart(chart)
        await pilot.press("g")  # the pictures: CDFs
        await pilot.pause()
        pictures = [c for c in shown_charts(app) if "cdf" in type(c).__name__.lower()]
        assert pictures
        for chart in pictures:
            check_chart(chart)


async def test_the_topology_views_chart_has_round_even_ticks():
    from test_topology_view import GLOBAL_BROWNOUT

    app = PrfaasApp(None, live=False, at=40.0, drill=GLOBAL_BROWNOUT)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        (chart,) = [c for c in shown_charts(pilot.app) if c.id == "topology-chart"]
        check_chart(chart)


async def test_w_cycles_the_window_1m_5m_30m_all():
    async with PrfaasApp(drill="link-brownout", live=False, at=900.0).run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        charts = pilot.app.screen.query_one(LiveCharts)
        chart = pilot.app.screen.query_one(ThroughputChart)

        def seen() -> tuple[str, str, float]:
            rows = chart.render().plain.splitlines()
            return rows[0], rows[-1].split()[0], float(charts._series.t[0])

        title, left, t0 = seen()
        assert left == "-5m" and t0 >= -300
        await pilot.press("w")
        await pilot.pause()
        title, left, t0 = seen()
        assert "30m" in title and left == "-10m" and t0 == pytest.approx(-900, abs=5)  # the run
        await pilot.press("w")
        await pilot.pause()
        title, left, t0 = seen()
        assert "all" in title and t0 == pytest.approx(-900, abs=5)
        await pilot.press("w")
        await pilot.pause()
        title, left, t0 = seen()
        assert "1m" in title and left == "-1m" and -60 <= t0 < -50
        # the frame follows: the brownout began 5 minutes ago, before this window
        assert charts._series.frame.window.span == pytest.approx(60)


async def test_number_keys_hide_and_show_each_charts_nth_series():
    async with PrfaasApp(drill="link-brownout", live=False, at=900.0).run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app = pilot.app
        tp, ce = app.screen.query_one(ThroughputChart), app.screen.query_one(CeilingsChart)
        offered = color_of(tp, "foreground")
        assert offered in data_colors(tp) and "1 offered" in tp.render().plain
        await pilot.press("1")
        await pilot.pause()
        assert offered not in data_colors(tp)  # series 1 of the throughput chart is gone
        assert "1 offered" not in tp.render().plain  # and from its legend
        assert color_of(tp, "primary") in data_colors(tp)  # the others stay
        assert "off 1" in tp.render().plain.split("\n")[0] or "-1" in tp.render().plain.split("\n")[0]
        assert "1 PrfaaS" not in ce.render().plain  # every chart's series 1
        await pilot.press("4")
        await pilot.pause()
        assert not re.search(r"[▖▗▘▙▚▛▜▝▞▟▄▀▌▐]", "".join(ce.render().plain.split("\n")[3:-2]))
        await pilot.press("1", "4")
        await pilot.pause()
        assert offered in data_colors(tp) and "1 offered" in tp.render().plain
        assert "4 binding" in ce.render().plain


async def test_y_switches_between_auto_and_log_scale():
    async with PrfaasApp(drill="link-brownout", live=False, at=900.0).run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        ttft = pilot.app.screen.query_one(TTFTChart)
        linear = [lb for _, lb in y_labels(ttft.render().plain.split("\n"))]
        assert "0" in linear
        await pilot.press("y")
        await pilot.pause()
        rows = ttft.render().plain.split("\n")
        labels = [lb for _, lb in y_labels(rows)]
        assert set(labels) <= POWERS and "10" in labels and "0" not in labels, labels
        assert "log" in rows[0]
        # the data drawn in decades: TTFTs of seconds lie between the rows labelled 1 and 10
        at = {lb: r for r, lb in y_labels(rows)}
        between = "".join(rows[r] for r in range(at["10"] + 1, at["1"]))
        assert len(BRAILLE.findall(between)) > 10
        await pilot.press("y")
        await pilot.pause()
        assert [lb for _, lb in y_labels(ttft.render().plain.split("\n"))] == linear


async def test_the_pictures_draw_before_any_request_has_a_ttft():
    """At 5 s no request has finished: the TTFT CDF has no samples (it raised TypeError)."""
    async with PrfaasApp("paper-case-study", live=False, at=5.0).run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("g")
        await pilot.pause()
        (cdf,) = [c for c in shown_charts(pilot.app) if c.id == "ttft-cdf"]
        assert cdf.render().plain.startswith("TTFT")


async def test_help_and_the_palette_list_the_chart_keys():
    async with PrfaasApp("paper-case-study", live=False, at=30.0).run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        out = Console(width=200, record=True, file=io.StringIO())
        for static in pilot.app.screen.query("Static"):  # all of it, scrolled or not
            out.print(static.content)
        text = " ".join(out.export_text().split())
        assert "cycle the time window 1m / 5m / 30m / all" in text
        assert "auto (linear) and log" in text
        for n in range(1, 5):
            assert f"series {n}" in text
        titles = [c.title for c in pilot.app.get_system_commands(dash(pilot.app))]
        assert "Window [w]" in titles and "Scale [y]" in titles and "Series 3 [3]" in titles


async def test_incidents_and_changes_lie_behind_the_data_and_the_legend():
    """A bandwidth change by hand (│) during the link brownout (shaded): with them overlaid the
    data cells and the legend read exactly as without them."""
    async with PrfaasApp(drill="link-brownout", live=False, at=700.0).run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert dash(pilot.app).request(bandwidth=20 * GBPS)
        dash(pilot.app).step_seconds = 20.0
        dash(pilot.app).action_step()
        await pilot.pause()
        charts = pilot.app.screen.query_one(LiveCharts)
        chart = pilot.app.screen.query_one(ThroughputChart)
        series = charts._series
        assert series.frame.spans and any(m.kind == "knob" for m in series.frame.markers)
        with_marks = chart.render().plain.split("\n")
        chart.set_data(replace(series, frame=replace(series.frame, spans=(), markers=())))
        bare = chart.render().plain.split("\n")
        top, bottom, left, right = frame_of(bare)
        drawn = 0
        for r in range(top + 1, bottom):
            for c in range(left + 1, right):
                if bare[r][c] != " ":  # data and legend: untouched
                    assert with_marks[r][c] == bare[r][c], (r, c)
                    drawn += 1
                else:
                    assert with_marks[r][c] in " │"
        assert drawn > 50
        assert "1 offered" in with_marks[top + 1] and "│" in "".join(with_marks[top + 1:bottom])


async def test_the_topology_views_chart_takes_the_same_controls():
    from test_topology_view import TWO_BROWNOUT

    app = PrfaasApp(None, live=False, at=120.0, drill=TWO_BROWNOUT)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        (chart,) = [c for c in shown_charts(pilot.app) if c.id == "topology-chart"]

        def x_left() -> float:
            rows = chart.render().plain.splitlines()
            return float(rows[rows.index(next(r for r in rows if "└" in r)) + 1].split()[0])

        assert x_left() < -100  # the whole two minutes
        first = color_of(chart, "primary")
        assert first in data_colors(chart)
        await pilot.press("w", "w", "w")  # 5m -> 30m -> all -> 1m
        await pilot.pause()
        assert -61 <= x_left() < -50 and "1m" in chart.render().plain.split("\n")[0]
        await pilot.press("1")
        await pilot.pause()
        assert first not in data_colors(chart) and color_of(chart, "warning") in data_colors(chart)
        await pilot.press("y")
        await pilot.pause()
        rows = chart.render().plain.split("\n")
        assert {lb for _, lb in y_labels(rows)} <= POWERS and "log" in rows[0]
        check_chart(chart)
