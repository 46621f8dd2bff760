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
from rich.text import Text
from textual.widgets import Sparkline, Static
from textual_plotext import PlotextPlot

from emulator.figure5 import Figure5a, Figure5b
from emulator.model import STAGES, OperatingPoint
from emulator.units import format_bytes, format_duration, format_tokens, to_gbps
from prfaas_tui.pictures import binding_stage
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


class Chart(PlotextPlot):
    """A plotext chart drawn from immutable data by `draw`; rebuilt only when needed."""

    DEFAULT_CSS = "Chart { height: 1fr; width: 1fr; min-height: 5; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.data: Any = None
        self._version = 0
        self._data_key: Any = None
        self._key: tuple | None = None
        self._text = Text()
        self._title = ""

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
            self._title = ""
            height = self.size.height - 1  # the first row: the title
            try:
                if self.data is not None and self.size.width > 10 and height > 3:
                    self.draw(plt, self.data)
                body = self._build(height)
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

    def title(self, plt: Any, full: str, short: str) -> None:
        """The chart's first row: `full` where it fits, else `short` (cut with an ellipsis)."""
        self._title = full if len(full) <= self.size.width else short

    def time_axis(self, plt: Any, f: Frame, top: float) -> None:
        """The shared time axis under the data: incident spans shaded ░ up to `top`, knob
        changes │ and scheduler decisions ┊ as vertical lines, ticks labelled -5m ... now.
        Call before drawing the data, which then lies over them."""
        lo = f.window.lo - f.window.hi
        cols = max(self.size.width, 2)
        for sp in f.spans:
            n = max(2, int((sp.x1 - sp.x0) / (f.window.span or 1.0) * cols * 2) + 2)
            plt.plot(np.linspace(sp.x0, sp.x1, n), np.full(n, top), fillx=True, marker="░",
                     color=self.c("warning-muted"))
        for m in f.markers:
            plt.plot([m.x, m.x], [0, top], marker="│" if m.kind == "knob" else "┊",
                     color=self.c("accent" if m.kind == "knob" else "secondary"))
        ticks = relative_ticks(f.window, max_ticks=max(2, min(6, (self.size.width - 4) // 5)))
        plt.xlim(min(lo, -1e-9), 0)
        plt.xticks([x for x, _ in ticks], [label for _, label in ticks])

    def line(self, plt: Any, x: Any, y: Any, color: str, label: str, marker: str = "braille") -> None:
        """A series without its undefined points (plotext fails on an all-NaN series); legends
        only where there is room for them beside the data."""
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        if not ok.any():
            return
        big = self.roomy
        plt.plot(x[ok], y[ok], color=self.c(color), label=label if big else None, marker=marker)

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


class ThroughputChart(Chart):
    def draw(self, plt: Any, d: LiveSeries) -> None:
        if d.note:  # served above Λmax: say why, or it reads as capacity
            head = d.note.split(":")[0]
            self.title(plt, d.note, head + (": unsustainable" if "grows" in d.note else
                                            ": backlog drains" if "drains" in d.note else ""))
        else:
            self.title(plt, f"throughput req/s · served {d.served[-1]:.2f} of offered "
                            f"{d.offered[-1]:.2f} · Λmax {d.lam[-1]:.2f}",
                       f"req/s served {d.served[-1]:.2f} Λ {d.lam[-1]:.2f}")
        top = d.top("throughput", max(1e-3, float(np.nanmax([d.offered.max(), d.served.max(),
                                                                d.lam.max()]))) * 1.15)
        self.time_axis(plt, d.frame, top)
        self.line(plt, d.t, d.offered, "foreground", "offered")
        self.line(plt, d.t, d.served, "primary", "served")
        self.line(plt, d.t, d.lam, "error", "Λmax")
        plt.ylim(0, top)


class LinkChart(Chart):
    def draw(self, plt: Any, d: LiveSeries) -> None:
        u = d.egress_gbps[-1] / d.capacity_gbps[-1] if d.capacity_gbps[-1] > 0 else 0
        self.title(plt, f"link Gbps · egress {d.egress_gbps[-1]:.1f} of {d.capacity_gbps[-1]:.4g}"
                        f" ({u:.0%})", f"link {d.egress_gbps[-1]:.1f}/{d.capacity_gbps[-1]:.4g} Gbps")
        top = d.top("link", max(1e-3, float(d.capacity_gbps.max())) * 1.1)
        self.time_axis(plt, d.frame, top)
        self.line(plt, d.t, d.capacity_gbps, "error", "capacity")
        self.line(plt, d.t, d.egress_gbps, "primary", "egress")
        plt.ylim(0, top)


class CeilingsChart(Chart):
    """The three ceilings over time; the binding one (the minimum) drawn over them in the
    highlight color."""

    def draw(self, plt: Any, d: LiveSeries) -> None:
        top = float(np.nanmax(np.where(np.isfinite(d.ceilings), d.ceilings, np.nan), initial=1.0))
        top = d.top("ceilings", max(top, 1e-3) * 1.15)
        self.title(plt, f"ceilings req/s · binding: {STAGE_LABELS[d.binding[-1]]}",
                   f"binds: {STAGE_LABELS[d.binding[-1]]}")
        self.time_axis(plt, d.frame, top)
        for st, row, col in zip(STAGES, d.ceilings, ("warning", "success", "foreground"), strict=True):
            if np.isfinite(row).any():
                self.line(plt, d.t, finite(row, top), col, STAGE_LABELS[st])
        self.line(plt, d.t, finite(d.ceilings.min(axis=0), top), "error", "binding", marker="hd")
        plt.ylim(0, top)


class TTFTChart(Chart):
    def draw(self, plt: Any, d: LiveSeries) -> None:
        p50, p90 = d.ttft_p50[-1], d.ttft_p90[-1]
        txt = "-" if math.isnan(p90) else f"{format_duration(p50)} / {format_duration(p90)}"
        slo = f" · SLO {format_duration(d.ttft_slo)}" if d.ttft_slo else ""
        self.title(plt, f"TTFT s · p50/p90 {txt}{slo}", f"TTFT {txt}")
        vals = np.concatenate([d.ttft_p50, d.ttft_p90])
        top = float(np.nanmax(vals)) if np.isfinite(vals).any() else 1.0
        top = d.top("ttft", max(top, d.ttft_slo or 0.0) * 1.15)
        self.time_axis(plt, d.frame, top)
        self.line(plt, d.t, d.ttft_p50, "primary", "p50")
        self.line(plt, d.t, d.ttft_p90, "warning", "p90")
        if d.ttft_slo:
            plt.hline(d.ttft_slo, color=self.c("error"))
        plt.ylim(0, top)


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
        self.line(plt, f.n_p, f.lambda_max, "primary", "Λmax")
        big = self.roomy
        plt.scatter([f.n_p_star], [f.best], color=self.c("success"), marker="●",
                    label="N_p*" if big else None)
        if f.now is not None:
            plt.scatter([f.now], [f.lambda_max[f.now]], color=self.c("error"), marker="◆",
                        label="now" if big else None)
        plt.xticks(list(f.n_p))
        plt.ylim(0, max(1e-3, float(np.nanmax(f.lambda_max))) * 1.2)


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
        self.line(plt, t, finite(f.prfaas[sel], top), "warning", "PrfaaS")
        self.line(plt, t, finite(f.pdp[sel], top), "success", "PD-P")
        plt.vline(d.t_now / 1000, color=self.c("error"))
        if d.t_star is not None:
            plt.vline(d.t_star / 1000, color=self.c("primary"))
        plt.ylim(0, top)
