"""Charts: the live series (throughput, link, ceilings, TTFT, queues) and the paper's Figure 5.

textual-plotext rebuilds a whole chart on every render (tens of ms at dashboard sizes), and
Textual renders on any repaint, so `Chart` caches the built text and rebuilds only when its data,
size or theme changed; series are decimated to about twice the width.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.text import Text
from textual.widgets import Sparkline, Static
from textual_plotext import PlotextPlot

from emulator.model import STAGES, OperatingPoint
from emulator.units import K_TOKENS, format_bytes, format_duration, format_tokens, to_gbps
from prfaas_tui.modelview import Figure5, ModelView
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
            try:
                if self.data is not None and self.size.width > 10 and self.size.height > 3:
                    self.draw(plt, self.data)
                self._text = super().render()
            except (IndexError, ValueError, ZeroDivisionError):  # plotext on odd data: no chart
                plt.clear_figure()
                self._text = super().render()
            self._key = key
        return self._text

    def draw(self, plt: Any, data: Any) -> None:
        raise NotImplementedError

    def c(self, name: str) -> tuple[int, int, int]:
        return rgb(self, name)

    @property
    def roomy(self) -> bool:
        """Room for a legend beside the data."""
        return self.size.height >= 12 and self.size.width >= 30

    def title(self, plt: Any, full: str, short: str) -> None:
        """plotext drops a title wider than the chart: fall back to the short one."""
        room = self.size.width - 2
        plt.title(full if len(full) <= room else short[:room])

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
    """The live charts' series, extracted once per refresh from the snapshot history."""

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

    @classmethod
    def of(cls, history: Sequence[Any], model: Callable[[Any], OperatingPoint],
           width: int = 400, ttft_slo: float | None = None) -> LiveSeries:
        h = list(history)[decimate(len(history), width)]
        if history and (not h or h[-1] is not history[-1]):
            h.append(history[-1])
        ops = [model(s) for s in h]
        arr = lambda f: np.array([f(s) for s in h], dtype=float)  # noqa: E731
        cap = arr(lambda s: to_gbps(s.link.capacity))
        return cls(
            t=arr(lambda s: s.sim_time), offered=arr(lambda s: s.offered_rate),
            served=arr(lambda s: s.served_rate), lam=np.array([o.lambda_max for o in ops]),
            egress_gbps=arr(lambda s: s.link.utilization) * cap, capacity_gbps=cap,
            ceilings=np.array([[o.ceilings[st] for o in ops] for st in STAGES]).reshape(3, len(h)),
            binding=tuple(o.binding for o in ops),
            ttft_p50=arr(lambda s: _nan(s.ttft_p50)), ttft_p90=arr(lambda s: _nan(s.ttft_p90)),
            ttft_slo=ttft_slo,
            queues={st: arr(lambda s, st=st: s.stages[st].queue) for st in STAGES},
            link_queue=arr(lambda s: s.link.queued_bytes),
        )


def _nan(x: float | None) -> float:
    return math.nan if x is None else x


class ThroughputChart(Chart):
    def draw(self, plt: Any, d: LiveSeries) -> None:
        self.title(plt, f"throughput req/s · served {d.served[-1]:.2f} of offered "
                        f"{d.offered[-1]:.2f} · Λmax {d.lam[-1]:.2f}",
                   f"req/s served {d.served[-1]:.2f} Λ {d.lam[-1]:.2f}")
        self.line(plt, d.t, d.offered, "foreground", "offered")
        self.line(plt, d.t, d.served, "primary", "served")
        self.line(plt, d.t, d.lam, "error", "Λmax")
        plt.ylim(0, max(1e-3, float(np.nanmax([d.offered.max(), d.served.max(), d.lam.max()]))) * 1.15)


class LinkChart(Chart):
    def draw(self, plt: Any, d: LiveSeries) -> None:
        u = d.egress_gbps[-1] / d.capacity_gbps[-1] if d.capacity_gbps[-1] > 0 else 0
        self.title(plt, f"link Gbps · egress {d.egress_gbps[-1]:.1f} of {d.capacity_gbps[-1]:.4g}"
                        f" ({u:.0%})", f"link {d.egress_gbps[-1]:.1f}/{d.capacity_gbps[-1]:.4g} Gbps")
        self.line(plt, d.t, d.capacity_gbps, "error", "capacity")
        self.line(plt, d.t, d.egress_gbps, "primary", "egress")
        plt.ylim(0, max(1e-3, float(d.capacity_gbps.max())) * 1.1)


class CeilingsChart(Chart):
    """The three ceilings over time; the binding one (the minimum) drawn over them in the
    highlight color."""

    def draw(self, plt: Any, d: LiveSeries) -> None:
        top = float(np.nanmax(np.where(np.isfinite(d.ceilings), d.ceilings, np.nan), initial=1.0))
        top = max(top, 1e-3) * 1.15
        self.title(plt, f"ceilings req/s · binding: {STAGE_LABELS[d.binding[-1]]}",
                   f"binds: {STAGE_LABELS[d.binding[-1]]}")
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
        self.line(plt, d.t, d.ttft_p50, "primary", "p50")
        self.line(plt, d.t, d.ttft_p90, "warning", "p90")
        vals = np.concatenate([d.ttft_p50, d.ttft_p90])
        top = float(np.nanmax(vals)) if np.isfinite(vals).any() else 1.0
        if d.ttft_slo:
            plt.hline(d.ttft_slo, color=self.c("error"))
            top = max(top, d.ttft_slo)
        plt.ylim(0, top * 1.15)


class QueueStrip(Static):
    """Queue depth per stage and bytes queued on the link, as Sparklines."""

    DEFAULT_CSS = """
    QueueStrip { layout: grid; grid-size: 4; grid-gutter: 0 1; height: 3; }
    QueueStrip > .q { height: 3; }
    QueueStrip Sparkline { height: 2; }
    QueueStrip Static { height: 1; }
    """

    def compose(self):
        from textual.containers import Vertical

        for key in (*STAGES, "link"):
            with Vertical(classes="q"):
                yield Static(STAGE_LABELS[key], id=f"ql-{key}")
                yield Sparkline([0], id=f"qs-{key}")

    def show(self, d: LiveSeries) -> None:
        for key in STAGES:
            q = d.queues[key]
            self.query_one(f"#ql-{key}", Static).update(f"{STAGE_LABELS[key]} queue {q[-1]:.0f}",
                                                        layout=False)
            self.query_one(f"#qs-{key}", Sparkline).data = list(q[-60:])
        self.query_one("#ql-link", Static).update(f"link queue {format_bytes(d.link_queue[-1])}",
                                                  layout=False)
        self.query_one("#qs-link", Sparkline).data = list(d.link_queue[-60:])


class LambdaVsNpChart(Chart):
    """Figure 5a: Lambda_max against N_p (N_d = pool - N_p) at the current t."""

    def draw(self, plt: Any, v: ModelView) -> None:
        f: Figure5 = v.figure5
        sc = v.scenario
        self.title(plt, f"Fig. 5a: Λmax vs N_p at t={format_tokens(sc.t)}", "Λmax vs N_p")
        self.line(plt, f.n_p, f.lambda_vs_np, "primary", "Λmax")
        best = v.optimum.best.knobs.n_p
        big = self.roomy
        plt.scatter([best], [f.lambda_vs_np[best]], color=self.c("success"), marker="●",
                    label="N_p*" if big else None)
        if sc.n_p + sc.n_d == sc.system.local_pool:
            plt.scatter([sc.n_p], [f.lambda_vs_np[sc.n_p]], color=self.c("error"), marker="◆",
                        label="now" if big else None)
        plt.xticks(list(f.n_p))
        plt.ylim(0, max(1e-3, float(np.nanmax(f.lambda_vs_np))) * 1.2)


class CeilingsVsTChart(Chart):
    """Figure 5b: the PrfaaS and PD-P ceilings against t at the current split."""

    def draw(self, plt: Any, v: ModelView) -> None:
        f: Figure5 = v.figure5
        sel = decimate(len(f.t), self.width_points())
        t = f.t[sel] / K_TOKENS
        lam = f.lambda_vs_t[sel]
        top = max(1e-3, float(np.nanmax(np.where(np.isfinite(lam), lam, np.nan), initial=1.0))) * 2.0
        self.title(plt, f"Fig. 5b: producer ceilings vs t (K) at N_p={v.scenario.n_p}",
                   "ceilings vs t (K)")
        self.line(plt, t, finite(f.prfaas_vs_t[sel], top), "warning", "PrfaaS")
        self.line(plt, t, finite(f.pdp_vs_t[sel], top), "success", "PD-P")
        plt.vline(v.scenario.t / K_TOKENS, color=self.c("error"))
        plt.vline(v.optimum.best.knobs.t / K_TOKENS, color=self.c("primary"))
        plt.ylim(0, top)
