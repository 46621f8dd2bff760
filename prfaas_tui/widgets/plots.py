"""Charts: the live series (throughput, link, ceilings, TTFT, queues) and the paper's Figure 5.

textual-plotext rebuilds a whole chart on every render (tens of ms at dashboard sizes), and
Textual renders on any repaint, so `Chart` caches the built text and rebuilds only when its data,
size or theme changed; series are decimated to about twice the width. A chart's title is its own
first row (plotext drops a title wider than the plot area, which wide y labels narrow).

The live charts share one time axis (`prfaas_tui.timeaxis`): the same window, labelled relative to
now, incidents shaded ░, knob changes │ and scheduler decisions ┊ marked, y-axes kept by
`timeaxis.rescale_y` (`live_scales`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.color import Color
from rich.style import Style
from rich.text import Text
from textual.color import Color as TColor
from textual.widgets import Sparkline, Static
from textual_plotext import PlotextPlot

from emulator.figure5 import Figure5a, Figure5b
from emulator.model import STAGES, OperatingPoint
from emulator.units import format_bytes, format_duration, format_tokens, to_gbps
from prfaas_tui.chart_controls import ChartControls
from prfaas_tui.pictures import binding_stage
from prfaas_tui.ticks import YTicks, linear_ticks, log_ticks
from prfaas_tui.timeaxis import (
    DEFAULT_SPAN,
    SCALE_KNOBS,
    Frame,
    YAxis,
    frame,
    last_change,
    relative_ticks,
    rescale_y,
    shared_window,
)
from prfaas_tui.widgets.model_panel import STAGE_LABELS
from prfaas_tui.widgets.theme import rgb

SPAN_TINT = 0.16  # an incident span's background: this share of the warning color


class Chart(PlotextPlot):
    """A plotext chart drawn from immutable data by `draw`; rebuilt only when needed.

    `y_axis` gives plotext round ticks on whole rows (`prfaas_tui.ticks`) and `line`/`hline`
    hold the data inside that axis; `time_axis` notes the shared frame, whose incidents and
    changes are laid over the built text behind the data (`_overlay`)."""

    DEFAULT_CSS = "Chart { height: 1fr; width: 1fr; min-height: 5; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.data: Any = None
        self._version = 0
        self._data_key: Any = None
        self._key: tuple | None = None
        self._text = Text()
        self._title = ""
        self._ax: YTicks | None = None  # the y axis of the chart being built
        self._frame: Frame | None = None  # its time axis, when it has one
        self._legend: list[str] = []  # the labels plotext draws in the legend

    def set_data(self, data: Any, key: Any = None) -> None:
        """New data; with a `key` equal to the last one the chart is not rebuilt."""
        self.data = data
        if key is None or key != self._data_key:
            self._data_key = key
            self._version += 1
            self.refresh()

    def render(self) -> Text:
        key = (self._version, self.size, self.app.theme)
        if key != self._key:
            plt = self.plt
            plt.clear_figure()
            self._title, self._ax, self._frame, self._legend = "", None, None, []
            height = self.size.height - 1  # the first row: the title
            try:
                if self.data is not None and self.size.width > 10 and height > 3:
                    self.draw(plt, self.data)
                body = self._build(height)
                if self._frame is not None:
                    body = self._overlay(body, self._frame)
            except (IndexError, ValueError, ZeroDivisionError):  # plotext on odd data: no chart
                plt.clear_figure()
                body = self._build(height)
            head = Text(self._title, style="bold", no_wrap=True, overflow="ellipsis")
            head.truncate(self.size.width, overflow="ellipsis")
            self._text = Text("\n").join([head, body])
            self._key = key
        return self._text

    def _build(self, height: int) -> Text:
        """The plot at the widget's width and `height` rows (PlotextPlot.render, less a row)."""
        plt = self.plt
        plt.plotsize(self.size.width, max(height, 1))
        plt._set_size(self.size.width, max(height, 1))
        plt.theme(self._get_plotext_theme_name(self.app.theme))
        return Text.from_ansi(plt.build())

    def draw(self, plt: Any, data: Any) -> None:
        raise NotImplementedError

    def c(self, name: str) -> tuple[int, int, int]:
        return rgb(self, name)

    @property
    def roomy(self) -> bool:
        """Room for a legend beside the data."""
        return self.size.height >= 12 and self.size.width >= 30

    def title(self, plt: Any, full: str, short: str, state: tuple[str, str] | None = None,
              changed: bool = False) -> None:
        """The chart's first row: `full` where it fits, else `short` (cut with an ellipsis).
        `state` (long, compact): the chart controls' state, appended where it fits; once the
        operator `changed` it, it goes before the full wording."""
        if state:
            tries = [f"{full} · {state[0]}", f"{full} · {state[1]}"]
            rest = [f"{short} · {state[0]}", f"{short} · {state[1]}"]
            tries += rest + [full] if changed else [full] + rest
        else:
            tries = [full]
        self._title = next((t for t in tries if len(t) <= self.size.width), short)

    def plot_rows(self) -> int:
        """The rows plotext draws data on: the widget less the title, the frame's two rows,
        the x tick labels and an x label if set (call after plt.xlabel)."""
        xlabel = getattr(self.plt, "monitor", None)
        below = 1 if xlabel is not None and xlabel.xlabel[0] is not None else 0
        return max(self.size.height - 4 - below, 2)

    def y_axis(self, plt: Any, top: float, *, lo: float = 0.0, log: bool = False,
               values: Any = ()) -> YTicks:
        """Round ticks evenly on the plot's rows from `lo` past `top` (log: decades covering
        the positive `values` and `top`); later `line`s and `hline`s are held inside it."""
        rows = self.plot_rows()
        ax = log_ticks(values, rows, need=top) if log else linear_ticks(lo, top, rows)
        plt.ylim(ax.lo, ax.hi)
        plt.yticks(list(ax.ticks), list(ax.labels))
        self._ax = ax
        return ax

    def time_axis(self, plt: Any, f: Frame, top: float | None = None) -> None:
        """The shared time axis: ticks labelled -5m ... now, and `f`'s incident spans and
        changes laid over the built chart (`_overlay`); with `top`, the y axis to it."""
        self._frame = f
        lo = f.window.lo - f.window.hi
        ticks = relative_ticks(f.window, max_ticks=max(2, min(6, (self.size.width - 4) // 5)))
        plt.xlim(min(lo, -1e-9), 0)
        plt.xticks([x for x, _ in ticks], [label for _, label in ticks])
        if top is not None and self._ax is None:
            self.y_axis(plt, top)

    def line(self, plt: Any, x: Any, y: Any, color: str, label: str, marker: str = "braille") -> None:
        """A series without its undefined points (plotext fails on an all-NaN series), held
        inside the y axis; legends only where there is room for them beside the data."""
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if self._ax is not None:
            y = self._ax.map(y)
        ok = np.isfinite(x) & np.isfinite(y)
        if not ok.any():
            return
        big = self.roomy
        if big:
            self._legend.append(label)
        plt.plot(x[ok], y[ok], color=self.c(color), label=label if big else None, marker=marker)

    def hline(self, plt: Any, y: float, color: str) -> None:
        """A level line, only where it lies on the axis (plotext draws one outside over the
        frame and the labels)."""
        ax = self._ax
        if ax is not None:
            if ax.log and not y > 0:
                return
            y = math.log10(y) if ax.log else y
            if not ax.lo <= y <= ax.hi:
                return
        plt.hline(y, color=self.c(color))

    def _overlay(self, body: Text, f: Frame) -> Text:
        """Incidents and changes drawn behind the data: an incident span as a tint on the
        plot's cells and a heavy ━ on the bottom frame; a knob change as │ on the empty cells
        of its column; a scheduler decision as ▾ on the top frame. The legend is left alone.
        In place, at offsets into the whole text (splitting it into lines costs more)."""
        plain = body.plain.split("\n")
        top = next((i for i, r in enumerate(plain) if "┌" in r), None)
        bottom = next((i for i, r in enumerate(plain) if "└" in r), None)
        if top is None or bottom is None or bottom - top < 2:
            return body
        at = [0]
        for row in plain:
            at.append(at[-1] + len(row) + 1)
        left, right = plain[top].index("┌") + 1, plain[top].rindex("┐")
        width = right - left
        lo, span = f.window.lo - f.window.hi, f.window.span or 1.0

        def col(x: float) -> int:
            return left + min(max(math.floor(0.5 + (width - 1) * (x - lo) / span), 0), width - 1)

        legend_w = 3 + max((len(lb) + 2 for lb in self._legend), default=0) if self._legend else 0
        fits = legend_w <= width and len(self._legend) <= bottom - top - 1  # as plotext decides
        legend_rows = range(top + 1, top + 1 + len(self._legend)) if fits else range(0)

        def free(r: int, c: int) -> bool:
            return not (r in legend_rows and c < left + legend_w)

        # a sixth of the warning color over the plot's own background: data stay readable
        shade = TColor(*self.c("surface")).blend(TColor(*self.c("warning")), SPAN_TINT)
        tint = Style(bgcolor=Color.from_rgb(*shade.rgb))
        band = Style(color=Color.from_rgb(*self.c("warning")))
        puts: dict[int, tuple[str, Style]] = {}  # offset -> (char, style)
        for sp in f.spans:
            a, b = col(sp.x0), col(sp.x1)
            for r in range(top + 1, bottom):
                start = max(a, left + legend_w) if r in legend_rows else a
                if start <= b:
                    body.stylize(tint, at[r] + start, at[r] + b + 1)
            for c in range(a, b + 1):
                if plain[bottom][c] == "─":
                    puts[at[bottom] + c] = ("━", band)
        knob = Style(color=Color.from_rgb(*self.c("accent")))
        sched = Style(color=Color.from_rgb(*self.c("secondary")))
        for m in sorted(f.markers, key=lambda m: m.kind == "knob"):  # knob changes win a column
            c = col(m.x)
            if m.kind == "knob":
                for r in range(top + 1, bottom):
                    if plain[r][c] == " " and free(r, c):
                        puts[at[r] + c] = ("│", knob)
            if plain[top][c] == "─":
                puts[at[top] + c] = ("┬", knob) if m.kind == "knob" else ("▾", sched)
        if puts:  # the same length keeps every span (a tint behind a cell stays)
            chars = list(body.plain)
            for i, (char, _) in puts.items():
                chars[i] = char
            body.plain = "".join(chars)
            for i, (_, style) in puts.items():
                body.stylize(style, i, i + 1)
        return body

    def width_points(self) -> int:
        return max(2 * self.size.width, 16)


def decimate(n: int, width: int) -> slice:
    """A stride that keeps at most about `width` of `n` points."""
    return slice(None, None, max(1, math.ceil(n / max(width, 1))))


def finite(a: np.ndarray, cap: float) -> np.ndarray:
    """Unbounded ceilings drawn at the top of the chart instead of breaking its scale."""
    return np.where(np.isfinite(a), np.minimum(a, cap), cap)


@dataclass(frozen=True)
class LiveSeries:
    """The live charts' series, extracted once per refresh from the snapshot history: the
    samples inside the shared window, `t` relative to now (the window's end)."""

    t: np.ndarray
    offered: np.ndarray
    served: np.ndarray
    lam: np.ndarray
    egress_gbps: np.ndarray
    capacity_gbps: np.ndarray
    ceilings: np.ndarray  # (3, n): prfaas, pd-p, pd-d
    binding: tuple[str, ...]
    ttft_p50: np.ndarray
    ttft_p90: np.ndarray
    ttft_slo: float | None
    queues: dict[str, np.ndarray]
    link_queue: np.ndarray
    frame: Frame
    note: str | None = None  # why served exceeds Λmax (emulator.stability.served_note)
    tops: dict[str, float] = field(default_factory=dict)  # y-axis tops by chart (live_scales)
    controls: ChartControls = ChartControls()  # window, scale, hidden series (chart_controls)

    @classmethod
    def of(cls, history: Sequence[Any], model: Callable[[Any], OperatingPoint],
           width: int = 400, ttft_slo: float | None = None, span: float = DEFAULT_SPAN
           ) -> LiveSeries:
        """`width`: points kept per series."""
        last = history[-1]
        window = shared_window(last.sim_time, span, start=history[0].sim_time)
        inside = [s for s in history if s.sim_time >= window.lo]
        h = inside[decimate(len(inside), width)]
        if not h or h[-1] is not last:
            h.append(last)
        ops = [model(s) for s in h]
        arr = lambda f: np.array([f(s) for s in h], dtype=float)  # noqa: E731
        cap = arr(lambda s: to_gbps(s.link.capacity))
        return cls(
            t=arr(lambda s: s.sim_time) - window.hi, offered=arr(lambda s: s.offered_rate),
            served=arr(lambda s: s.served_rate), lam=np.array([o.lambda_max for o in ops]),
            egress_gbps=arr(lambda s: s.link.utilization) * cap, capacity_gbps=cap,
            ceilings=np.array([[o.ceilings[st] for o in ops] for st in STAGES]).reshape(3, len(h)),
            binding=tuple(binding_stage(o) for o in ops),
            ttft_p50=arr(lambda s: _nan(s.ttft_p50)), ttft_p90=arr(lambda s: _nan(s.ttft_p90)),
            ttft_slo=ttft_slo,
            queues={st: arr(lambda s, st=st: s.stages[st].queue) for st in STAGES},
            link_queue=arr(lambda s: s.link.queued_bytes),
            frame=frame(window, last.incident_windows, last.decisions),
        )

    def top(self, chart: str, default: float) -> float:
        return self.tops.get(chart, default)


def live_scales(prev: dict[str, YAxis], d: LiveSeries, decisions: Sequence[str]
                ) -> dict[str, YAxis]:
    """Each live chart's y range (`timeaxis.rescale_y`): it follows at once a knob that moves
    its scale (B_out for the link, anything changing Λmax for throughput and ceilings), grows
    with the data, and shrinks only when what it must show falls below half of it."""
    t = d.t + d.frame.window.hi  # absolute, as the changes are noted

    def scale(name: str, ys: Sequence[np.ndarray], hint: float) -> YAxis:
        yy = np.concatenate([np.where(np.isfinite(y), y, np.nan) for y in ys])
        tt = np.tile(t, len(ys))
        changed = last_change(decisions, SCALE_KNOBS[name]) if name in SCALE_KNOBS else None
        return rescale_y(prev.get(name), tt, yy, hint=hint if math.isfinite(hint) else 0.0,
                         changed_at=changed)

    return {
        "throughput": scale("throughput", [d.offered, d.served, d.lam], d.lam[-1]),
        "link": scale("link", [d.capacity_gbps, d.egress_gbps], d.capacity_gbps[-1]),
        "ceilings": scale("ceilings", list(d.ceilings), float(d.ceilings[:, -1].min())),
        "ttft": scale("ttft", [d.ttft_p50, d.ttft_p90], d.ttft_slo or 0.0),
    }


def _nan(x: float | None) -> float:
    return math.nan if x is None else x


class LiveChart(Chart):
    """A chart on the shared time axis drawn from `LiveSeries`, its series numbered 1-4 for the
    `1`-`4` toggles (`ChartControls`) and the controls' state in its title."""

    SERIES: tuple[str, ...] = ()

    def title(self, plt: Any, full: str, short: str, d: LiveSeries | None = None) -> None:
        """Chart.title with the controls' state of `d` (before the full wording once the
        operator changed them from the defaults)."""
        if d is None:
            super().title(plt, full, short)
            return
        c = d.controls
        super().title(plt, full, short, (c.describe(self.SERIES), c.describe(self.SERIES, True)),
                      changed=c != ChartControls())

    def axes(self, plt: Any, d: LiveSeries, top: float, *ys: np.ndarray) -> None:
        """The time axis and the y axis to `top` (log: decades over `ys`)."""
        self.time_axis(plt, d.frame)
        self.y_axis(plt, top, log=d.controls.log,
                    values=np.concatenate([np.ravel(y) for y in ys]) if ys else ())

    def series(self, plt: Any, d: LiveSeries, n: int, y: Any, color: str,
               marker: str = "braille") -> None:
        """Series `n` (1-based, named SERIES[n - 1]) unless the operator hid it."""
        if d.controls.shows(n):
            self.line(plt, d.t, y, color, f"{n} {self.SERIES[n - 1]}", marker=marker)


class ThroughputChart(LiveChart):
    SERIES = ("offered", "served", "Λmax")

    def draw(self, plt: Any, d: LiveSeries) -> None:
        if d.note:  # served above Λmax: say why, or it reads as capacity
            head = d.note.split(":")[0]
            self.title(plt, d.note, head + (": unsustainable" if "grows" in d.note else
                                            ": backlog drains" if "drains" in d.note else ""),
                       d)
        else:
            self.title(plt, f"throughput req/s · served {d.served[-1]:.2f} of offered "
                            f"{d.offered[-1]:.2f} · Λmax {d.lam[-1]:.2f}",
                       f"req/s served {d.served[-1]:.2f} Λ {d.lam[-1]:.2f}", d)
        top = d.top("throughput", max(1e-3, float(np.nanmax([d.offered.max(), d.served.max(),
                                                                d.lam.max()]))) * 1.15)
        self.axes(plt, d, top, d.offered, d.served, d.lam)
        self.series(plt, d, 1, d.offered, "foreground")
        self.series(plt, d, 2, d.served, "primary")
        self.series(plt, d, 3, d.lam, "error")


class LinkChart(LiveChart):
    SERIES = ("capacity", "egress")

    def draw(self, plt: Any, d: LiveSeries) -> None:
        u = d.egress_gbps[-1] / d.capacity_gbps[-1] if d.capacity_gbps[-1] > 0 else 0
        self.title(plt, f"link Gbps · egress {d.egress_gbps[-1]:.1f} of {d.capacity_gbps[-1]:.4g}"
                        f" ({u:.0%})", f"link {d.egress_gbps[-1]:.1f}/{d.capacity_gbps[-1]:.4g} Gbps",
                   d)
        top = d.top("link", max(1e-3, float(d.capacity_gbps.max())) * 1.1)
        self.axes(plt, d, top, d.capacity_gbps, d.egress_gbps)
        self.series(plt, d, 1, d.capacity_gbps, "error")
        self.series(plt, d, 2, d.egress_gbps, "primary")


class CeilingsChart(LiveChart):
    """The three ceilings over time; the binding one (the minimum) drawn over them in the
    highlight color. An unbounded ceiling rides along the top of the axis."""

    SERIES = (*(STAGE_LABELS[st] for st in STAGES), "binding")

    def draw(self, plt: Any, d: LiveSeries) -> None:
        top = float(np.nanmax(np.where(np.isfinite(d.ceilings), d.ceilings, np.nan), initial=1.0))
        top = d.top("ceilings", max(top, 1e-3) * 1.15)
        self.title(plt, f"ceilings req/s · binding: {STAGE_LABELS[d.binding[-1]]}",
                   f"binds: {STAGE_LABELS[d.binding[-1]]}", d)
        self.axes(plt, d, top, *(np.where(np.isfinite(r), r, np.nan) for r in d.ceilings))
        for n, (row, col) in enumerate(zip(d.ceilings, ("warning", "success", "foreground"),
                                           strict=True), start=1):
            if np.isfinite(row).any():
                self.series(plt, d, n, row, col)  # ∞ held at the top
        self.series(plt, d, 4, d.ceilings.min(axis=0), "error", marker="hd")


class TTFTChart(LiveChart):
    SERIES = ("p50", "p90", "SLO")

    def draw(self, plt: Any, d: LiveSeries) -> None:
        p50, p90 = d.ttft_p50[-1], d.ttft_p90[-1]
        txt = "-" if math.isnan(p90) else f"{format_duration(p50)} / {format_duration(p90)}"
        slo = f" · SLO {format_duration(d.ttft_slo)}" if d.ttft_slo else ""
        self.title(plt, f"TTFT s · p50/p90 {txt}{slo}", f"TTFT {txt}", d)
        vals = np.concatenate([d.ttft_p50, d.ttft_p90])
        top = float(np.nanmax(vals)) if np.isfinite(vals).any() else 1.0
        top = d.top("ttft", max(top, d.ttft_slo or 0.0) * 1.15)
        self.axes(plt, d, top, d.ttft_p50, d.ttft_p90, np.array([d.ttft_slo or np.nan]))
        self.series(plt, d, 1, d.ttft_p50, "primary")
        self.series(plt, d, 2, d.ttft_p90, "warning")
        if d.ttft_slo and d.controls.shows(3):
            self.hline(plt, d.ttft_slo, "error")


def queue_label(stage: str, value: str, width: int) -> str:
    """'PD-P queue 3', or 'PD-P 3' where the cell is too narrow: the number is what an operator
    reads, so the word goes first (at 80 columns a cell is 12 wide and the number wrapped away)."""
    full = f"{stage} queue {value}"
    return full if width <= 0 or len(full) <= width else f"{stage} {value}"


class QueueLabel(Static):
    """A stage's queue label, worded for the width it is drawn at (known only at render)."""

    def __init__(self, stage: str, **kw: Any) -> None:
        super().__init__(stage, **kw)
        self.stage, self.value = stage, ""

    def set_value(self, value: str) -> None:
        self.value = value
        self.refresh(layout=False)

    def render(self) -> str:
        return queue_label(self.stage, self.value, self.size.width) if self.value else self.stage


class QueueStrip(Static):
    """Queue depth per stage and bytes queued on the link, as Sparklines."""

    DEFAULT_CSS = """
    QueueStrip { layout: grid; grid-size: 4; grid-gutter: 0 1; height: 3; }
    QueueStrip > .q { height: 3; }
    QueueStrip Sparkline { height: 2; }
    QueueStrip QueueLabel { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def compose(self):
        from textual.containers import Vertical

        for key in (*STAGES, "link"):
            with Vertical(classes="q"):
                yield QueueLabel(STAGE_LABELS[key], id=f"ql-{key}")
                yield Sparkline([0], id=f"qs-{key}")

    def show(self, d: LiveSeries) -> None:
        values = {key: f"{d.queues[key][-1]:.0f}" for key in STAGES}
        values["link"] = format_bytes(d.link_queue[-1])
        for key, value in values.items():
            self.query_one(f"#ql-{key}", QueueLabel).set_value(value)
        for key in STAGES:
            self.query_one(f"#qs-{key}", Sparkline).data = list(d.queues[key][-60:])
        self.query_one("#qs-link", Sparkline).data = list(d.link_queue[-60:])


@dataclass(frozen=True)
class Figure5Data:
    """Figure 5 at the live state (emulator.figure5.effective_figure5): both panels, the
    current t and split, and the t of the live optimum."""

    a: Figure5a
    b: Figure5b
    t_now: float
    n_p_now: int
    t_star: float | None


class LambdaVsNpChart(Chart):
    """Figure 5a: Lambda_max against N_p (N_d = the alive pool - N_p) at the current t, with
    N_p* at the maximum of this curve."""

    def draw(self, plt: Any, d: Figure5Data) -> None:
        f = d.a
        self.title(plt, f"Fig. 5a: Λmax vs N_p at t={format_tokens(d.t_now)}", "Λmax vs N_p")
        self.y_axis(plt, max(1e-3, float(np.nanmax(f.lambda_max))) * 1.2)
        self.line(plt, f.n_p, f.lambda_max, "primary", "Λmax")
        big = self.roomy
        plt.scatter([f.n_p_star], [f.best], color=self.c("success"), marker="●",
                    label="N_p*" if big else None)
        if f.now is not None:
            plt.scatter([f.now], [f.lambda_max[f.now]], color=self.c("error"), marker="◆",
                        label="now" if big else None)
        plt.xticks(list(f.n_p))


class CeilingsVsTChart(Chart):
    """Figure 5b: the PrfaaS and PD-P ceilings against t at the current split, drawn as steps
    where the length distribution has no mass between its support points."""

    def draw(self, plt: Any, d: Figure5Data) -> None:
        f = d.b
        sel = decimate(len(f.t), self.width_points())
        t = f.t[sel] / 1000
        lam = f.lambda_max[sel]
        top = max(1e-3, float(np.nanmax(np.where(np.isfinite(lam), lam, np.nan), initial=1.0))) * 2.0
        self.title(plt, f"Fig. 5b: producer ceilings vs t (k) at N_p={d.n_p_now}",
                   "ceilings vs t (k)")
        self.y_axis(plt, top)
        self.line(plt, t, finite(f.prfaas[sel], top), "warning", "PrfaaS")
        self.line(plt, t, finite(f.pdp[sel], top), "success", "PD-P")
        plt.vline(d.t_now / 1000, color=self.c("error"))
        if d.t_star is not None:
            plt.vline(d.t_star / 1000, color=self.c("primary"))
