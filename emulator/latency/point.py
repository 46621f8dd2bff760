"""One operating point: predicted TTFT (mean, P50, P90, per path) at an offered rate, and its
SLO-bound rate: the highest offered rate below Lambda_max at which the predicted quantile meets
the target."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from emulator.latency.layout import Layout, layout_at
from emulator.latency.queueing import _prepare
from emulator.latency.quiet import _quiet
from emulator.latency.tails import mean_ttft, quantiles, rate_state, tail
from emulator.model import Knobs, System
from emulator.profiles import Profile

RATE_STEPS = 16  # bisection steps on the rate: resolution Lambda_max / 2^16 (0.002%)
SECTIONS = 63  # rates per multisection call: 3 calls reach Lambda_max / 2^18
NEAR = 0.03  # the winner's 256-node rate lies within 1.2% of its 64-node one on the presets


@dataclass(frozen=True)
class Prediction:
    """Predicted TTFT at one operating point and offered rate (seconds; inf when unstable)."""

    rate: float
    mean: float
    p50: float
    p90: float
    paths: dict[str, dict[str, float]]

    def to_dict(self) -> dict:
        def num(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None
        return {"rate": self.rate, "mean": num(self.mean), "p50": num(self.p50),
                "p90": num(self.p90),
                "paths": {k: {kk: num(vv) for kk, vv in v.items()} for k, v in self.paths.items()}}


@_quiet
def predict(system: System, knobs: Knobs, rate: float, *,
            profiles: tuple[Profile, Profile] | None = None, link_latency: float = 0.0,
            rdma_latency: float = 0.0, layout: Layout | None = None) -> Prediction:
    """TTFT mean, P50 and P90 overall and per path at one operating point and offered rate.
    `layout`: the point's `layout_at`, when the caller already has it."""
    lay = layout if layout is not None else layout_at(
        system, knobs, profiles=profiles, link_latency=link_latency, rdma_latency=rdma_latency)[0]
    lam = np.array([rate], dtype=float)
    rs = rate_state(lay, lam)  # once for the mean and the quantiles
    mean, per = mean_ttft(lay, lam, rs)
    p = float(lay.paths[0].share[0])
    shares = (p, 1.0 - p)
    rows = [((p, 1 - p), 0.5), ((p, 1 - p), 0.9), ((1.0, 0.0), 0.9), ((0.0, 1.0), 0.9)]
    qs = quantiles(lay, rate, rows, rs=rs)
    paths = {name: {"share": shares[i], "mean": float(per[i][0]), "p90": float(qs[2 + i])}
             for i, name in enumerate(("prfaas", "pd-p")) if shares[i] > 0}
    return Prediction(rate, float(mean[0]), float(qs[0]), float(qs[1]), paths)


def _multisect(ok_at, lo: float, hi: float, tol: float, sections: int) -> float:
    """The highest rate in [lo, hi] where `ok_at` (vectorized, monotone: true below some rate)
    holds, to `tol`, `lo` known good and `hi` known bad: `sections` rates per call instead of
    one, since a call costs about the same for one rate as for sixty-four."""
    while hi - lo > tol:
        rates = np.linspace(lo, hi, sections + 2)[1:-1]
        ok = np.asarray(ok_at(rates))
        i = int(np.argmin(ok)) if not ok.all() else sections
        lo, hi = (rates[i - 1] if i else lo), (rates[i] if i < sections else hi)
    return float(lo)


@_quiet
def slo_rate(system: System, knobs: Knobs, target: float, q: float = 0.9, *,
             profiles: tuple[Profile, Profile] | None = None, link_latency: float = 0.0,
             rdma_latency: float = 0.0, steps: int = RATE_STEPS,
             layout: tuple[Layout, float] | None = None, near: float | None = None) -> float:
    """The SLO-bound rate of one operating point: the highest offered rate below Lambda_max at
    which the predicted TTFT q-quantile is within `target` (0 when none is), to
    Lambda_max / 2^steps. `layout`: the point's `layout_at`, when the caller already has it;
    `near`: a rate the answer is expected within NEAR of (the search's 64-node rate), tried
    first as the bracket (one call saved), else the whole range."""
    lay, lam = layout if layout is not None else layout_at(
        system, knobs, profiles=profiles, link_latency=link_latency, rdma_latency=rdma_latency)
    x = np.asarray(target, dtype=float)
    if not lam > 0:
        return 0.0
    lay = _prepare(lay)

    def ok_at(rates: np.ndarray) -> np.ndarray:
        return tail(lay, rates, x) <= 1 - q

    tol = lam * 2.0 ** -steps
    if near is not None and 0 < near * (1 + NEAR) < lam * (1 - 1e-12):
        rates = np.linspace(near * (1 - NEAR), near * (1 + NEAR), SECTIONS + 2)
        ok = ok_at(rates)
        if ok[0] and not ok[-1]:
            i = int(np.argmin(ok))
            return _multisect(ok_at, float(rates[i - 1]), float(rates[i]), tol, SECTIONS)
    rates = np.linspace(1e-9, lam * (1 - 1e-12), SECTIONS + 2)  # both ends and 63 between
    ok = ok_at(rates)
    if not ok[0]:
        return 0.0
    if ok[-1]:
        return float(rates[-1])
    i = int(np.argmin(ok))
    return _multisect(ok_at, float(rates[i - 1]), float(rates[i]), tol, SECTIONS)
