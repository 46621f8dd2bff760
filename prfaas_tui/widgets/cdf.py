"""Two CDFs: the live length mix with the threshold t and the long share p it sends to PrfaaS,
and the emulated TTFT against the SLO with the model's P50/P90 beside it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from emulator.units import format_duration, format_tokens
from prfaas_tui.pictures import TTFTCDF, LengthCDF
from prfaas_tui.widgets.plots import Chart, decimate


class LengthCDFChart(Chart):
    """P(L <= x) in thousands of tokens (log x when the lengths span decades); t as a vertical line and
    1 - p as a horizontal one: they cross on the curve."""

    def draw(self, plt: Any, d: LengthCDF) -> None:
        self.title(plt, f"lengths CDF · t {format_tokens(d.t)} · long share p {d.p:.1%} → PrfaaS",
                   f"CDF t {format_tokens(d.t)} p {d.p:.0%}")
        x = np.maximum(d.x, 1.0) / 1000
        sel = decimate(len(x), self.width_points())
        xs, ys = x[sel], d.cdf[sel]
        if xs[-1] != x[-1]:
            xs, ys = np.append(xs, x[-1]), np.append(ys, d.cdf[-1])
        if x[-1] / max(x[0], 1e-9) > 20:
            plt.xscale("log")
        plt.xlabel("k tokens (k = 1,000)")  # before the y axis: it takes a row
        self.y_axis(plt, 1.0)
        self.line(plt, xs, ys, "primary", "P(L ≤ x)")
        plt.vline(max(d.t, 1.0) / 1000, color=self.c("error"))
        self.hline(plt, 1.0 - d.p, "warning")


class TTFTCDFChart(Chart):
    """The window's TTFT distribution (the engine's histogram at 21 quantiles) against the P90
    SLO target; the model's P50 and P90 at the live state as two points."""

    def draw(self, plt: Any, d: TTFTCDF) -> None:
        met = "-" if d.met is None else f"{d.met:.0%}"
        p90 = "-" if d.p90 is None else format_duration(d.p90)
        steady = d.model_p90 is not None and math.isfinite(d.model_p90)
        model = ("" if d.model_p90 is None else
                 f" · model {format_duration(d.model_p50)}/{format_duration(d.model_p90)}"
                 if steady else " · model: none, offered ≥ Λmax")
        full = f"TTFT CDF · P90 {p90} · SLO {format_duration(d.slo)}: {met} within{model}"
        medium = f"TTFT P90 {p90} · {met} ≤ SLO {format_duration(d.slo)}{model}"
        self.title(plt, full if len(full) <= self.size.width - 2 else medium,
                   f"TTFT P90 {p90} · {met} ≤ SLO {format_duration(d.slo)}")
        plt.xlabel("seconds")  # before the y axis: it takes a row
        self.y_axis(plt, 1.0)
        self.line(plt, d.seconds, d.q, "primary", "emulated")
        # the scale is the emulated TTFTs' and the SLO's: a model P90 far out near saturation
        # (minutes at 99% load) stays in the title instead of squashing the curve
        right = max([d.slo * 1.2, *(d.seconds[-1:] * 1.05)])  # no TTFT yet: the SLO's
        if steady:
            pts = [(x, q) for x, q in ((d.model_p50, 0.5), (d.model_p90, 0.9)) if x <= right]
            if pts:
                plt.scatter([x for x, _ in pts], [q for _, q in pts], color=self.c("success"),
                            marker="●", label="model P50/P90" if self.roomy else None)
        plt.vline(d.slo, color=self.c("error"))
        self.hline(plt, 0.9, "warning")
        plt.xlim(0, right)
