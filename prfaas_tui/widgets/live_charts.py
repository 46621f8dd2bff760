"""The live charts as one widget: four plotext charts and the queue Sparklines, fed from ticks.

Rebuilding a chart costs tens of milliseconds, so when live it rebuilds one chart per timer tick
(each at PLOT_HZ), none shortly after a keypress (answering the key comes first), and builds the
series once per tick for all of them. A tick at a new live state (a knob, an instance lost, the
link's capacity: what the strip and the model panel show at once) redraws all four at the next
timer tick instead, so no chart title keeps the old state's numbers beside the strip's new ones;
the next three timer ticks then rest, so the charts never cost more than one rebuild per tick
(at 200x the scheduler can move t every few ticks).
Not live, everything redraws at once (snapshots).
The chart controls (`w` window, `1`-`4` series, `y` scale) redraw every chart at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from textual.app import ComposeResult
from textual.containers import Grid, Vertical

from emulator.effective import LiveState
from emulator.model import OperatingPoint
from prfaas_tui.chart_controls import ChartControls
from prfaas_tui.live import Tick
from prfaas_tui.timeaxis import YAxis
from prfaas_tui.widgets.plots import (
    CeilingsChart,
    LinkChart,
    LiveSeries,
    QueueStrip,
    ThroughputChart,
    TTFTChart,
    live_scales,
)

PLOT_HZ = 3.0
INPUT_QUIET_S = 0.15  # no chart rebuilds this long after a keypress
CHARTS = (ThroughputChart, LinkChart, CeilingsChart, TTFTChart)


class LiveCharts(Vertical):
    DEFAULT_CSS = """
    LiveCharts > Grid { grid-size: 2 2; grid-gutter: 0 1; height: 1fr; }
    LiveCharts > QueueStrip { margin: 0 1; }
    """

    def __init__(self, model: Callable[[Any], OperatingPoint], *, live: bool,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model  # snapshot -> the model at the knobs it ran with
        self.live = live
        self.ttft_slo: float | None = None
        self.last_input = 0.0  # perf_counter of the last keypress (set by the app)
        self._tick: Tick | None = None
        self.note: str | None = None  # the throughput chart's caption (served above Λmax)
        self._seq = 0  # ticks received
        self._series: LiveSeries | None = None
        self._series_seq = -1
        self._next = -1
        self._scales: dict[str, YAxis] = {}  # each chart's y range, kept across ticks
        self._generation = -1  # the emulation the scales belong to
        self.controls = ChartControls()  # window, scale, hidden series: the operator's
        self._controlled = 0  # control changes so far (each redraws every chart)
        self._state: LiveState | None = None  # the live state of the latest tick
        self._all_owed = False  # a new live state came: every chart at the next timer tick
        self._rest = 0  # timer ticks left to skip after redrawing every chart

    def compose(self) -> ComposeResult:
        with Grid():
            for cls in CHARTS:
                yield cls(id=cls.__name__.removesuffix("Chart").lower())
        yield QueueStrip()

    def on_mount(self) -> None:
        if self.live:
            self.set_interval(1 / (PLOT_HZ * len(CHARTS)), self._next_chart)

    def show(self, tick: Tick) -> None:
        self._tick = tick
        self._seq += 1
        state = LiveState.of(tick.snapshot)
        if state != self._state:
            self._state, self._all_owed = state, True
        if not self.live:
            self.redraw(CHARTS)

    def redraw(self, charts: tuple[type, ...]) -> None:
        """Give charts the latest series (built once per tick; a chart that has it skips)."""
        if self._tick is None:
            return
        if self._series_seq != self._seq:
            tick = self._tick
            # points per series: the terminal's width (each chart spans at most half of it, so
            # about two points a column); not the charts' own widths, which are 0 before the
            # first layout (a snapshot's first tick would be decimated differently)
            series = LiveSeries.of(tick.history, self.model, self.app.size.width or 160,
                                   self.ttft_slo, span=self.controls.window)
            if tick.generation != self._generation:  # a new run: its own scales
                self._scales, self._generation = {}, tick.generation
            self._scales = live_scales(self._scales, series, tick.snapshot.decisions)
            self._series = replace(series, note=self.note, controls=self.controls,
                                   tops={k: ax.top for k, ax in self._scales.items()})
            self._series_seq = self._seq
            self.query_one(QueueStrip).show(self._series)
        for cls in charts:
            self.query_one(cls).set_data(self._series, key=(self._seq, self._controlled))

    def control(self, controls: ChartControls) -> None:
        """New chart controls: every chart redrawn now, its y range found afresh (a scale
        kept from another window or series would not fit)."""
        self.controls = controls
        self._controlled += 1
        self._scales = {}
        self._series_seq = -1
        self.redraw(CHARTS)

    def _next_chart(self) -> None:
        if time.perf_counter() - self.last_input < INPUT_QUIET_S:
            return
        if self._rest > 0:
            self._rest -= 1
            return
        if self._all_owed:
            self._all_owed = False
            self._rest = len(CHARTS) - 1
            self.redraw(CHARTS)
            return
        self._next = (self._next + 1) % len(CHARTS)
        self.redraw((CHARTS[self._next],))
