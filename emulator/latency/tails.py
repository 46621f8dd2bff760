"""The TTFT distribution of a layout at an offered rate: P(TTFT > x) per path and for the
p-mixture, the mean, and quantiles by bisection.

Tail approximation (stated, since the exact M/G/c wait distribution has no closed form): the
wait is 0 with probability 1 - C and exponential beyond, with the Allen-Cunneen mean, as in
M/M/c; the service time's own distribution is kept exactly (its quantile nodes), and the two
are independent (FIFO)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from emulator.latency.queueing import (
    Layout,
    Path,
    PathState,
    _decode_terms,
    erlang_c,
    path_state,
)
from emulator.latency.quiet import _quiet

GAP_POINTS = 8  # points of a batched arrival's time to the step boundary


@dataclass(frozen=True)
class RateState:
    """The parts of the TTFT tail that depend on the rate but not on x: a quantile search (many
    x at one rate) computes the queueing formulas once instead of once per probe."""

    wd: np.ndarray
    first: np.ndarray
    paths: tuple[PathState, PathState]


@_quiet
def rate_state(lay: Layout, lam: np.ndarray) -> RateState:
    """Decode wait, first-token time and both paths' queue states at offered rate lam."""
    lam = np.asarray(lam, dtype=float)
    wd, first = _decode_terms(lay, lam)
    return RateState(wd, first, (_state(lay.paths[0], lam), _state(lay.paths[1], lam)))


def _state(p: Path, lam: np.ndarray) -> PathState:
    """The path's queue state, with a step-timed path's steps at that rate."""
    st = path_state(p, lam)
    if p.steps is None:
        return st
    c = np.asarray(p.servers, dtype=float)
    u, ride, gap = p.steps.at_rate(lam * p.share, c)
    cs = np.maximum(c, 1.0)  # all stepping: Erlang C at c u busy, at least the queue's P(wait)
    stepping = np.maximum(erlang_c(cs, cs * np.minimum(u, 1.0)), st.pw)
    return replace(st, stepping=stepping, ride=ride, gap=gap)


def _avg(p: Path, a: np.ndarray) -> np.ndarray:
    """The mean over a path's nodes."""
    return a.mean(axis=-1) if p.weights is None else a @ p.weights


@_quiet
def tails_at(lay: Layout, rs: RateState, x: np.ndarray) -> list[np.ndarray]:
    """P(TTFT > x | path) for both paths, given the rate's state. The per-node work (the
    search's bulk) is kept to a few passes: the atom and the exponential are averaged over the
    nodes before they are weighted, and an unpaced path has one slack for both."""
    out = []
    for p, st in zip(lay.paths, rs.paths, strict=True):
        base = (x - rs.wd - rs.first - p.delay)[..., None]
        paced = st.paced and not ((st.free == 1.0).all() and (st.busy == 1.0).all())
        rate = np.where(np.isfinite(st.cond) & (st.cond > 0), -1.0 / st.cond, 0.0)[..., None]
        if st.ride is not None:  # idle instance: its own steps; else the boundary, a shared
            ride = st.ride * st.busy[..., None]  # step and, with a queue, the wait
            late = expo = 0.0
            for k in range(GAP_POINTS):  # the boundary is uniformly 0 to 2 gaps away
                at = ride + st.gap[..., None] * (2 * k + 1) / GAP_POINTS
                late = late + _avg(p, base - at <= 0) / GAP_POINTS
                expo = expo + _avg(p, np.exp(np.maximum(base - at, 0.0) * rate)) / GAP_POINTS
            out.append((1 - st.stepping) * _avg(p, base - p.nodes * st.free[..., None] <= 0)
                       + (st.stepping - st.pw) * late + st.pw * expo)
            continue
        if paced:
            late = base - p.nodes * st.free[..., None] <= 0  # late even without a wait
            expo = base - p.nodes * st.busy[..., None]
        else:
            expo = base - p.nodes
            late = expo <= 0
        expo = np.exp(np.maximum(expo, 0.0) * rate)
        if p.weights is None:
            expo = expo.mean(axis=-1)
            atom = late.sum(axis=-1) / p.nodes.shape[-1]
        else:
            expo, atom = expo @ p.weights, late @ p.weights
        out.append((1 - st.pw) * atom + st.pw * expo)
    return out


@_quiet
def path_tails(lay: Layout, lam: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
    """P(TTFT > x | path) for both paths at offered rate lam (broadcast over the grid)."""
    return tails_at(lay, rate_state(lay, lam), x)


@_quiet
def tail(lay: Layout, lam: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(TTFT > x) at offered rate lam: the p-mixture of the two paths."""
    total = 0.0
    for p, t in zip(lay.paths, path_tails(lay, lam, x), strict=True):
        total = total + np.where(p.share > 0, p.share * t, 0.0)
    return total


@_quiet
def mean_ttft(lay: Layout, lam: np.ndarray,
              rs: RateState | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """(overall mean TTFT, per-path means) at offered rate lam (`rs`: its state, if known)."""
    lam = np.asarray(lam, dtype=float)
    rs = rate_state(lay, lam) if rs is None else rs
    per, total = [], 0.0
    for p, st in zip(lay.paths, rs.paths, strict=True):
        if st.ride is not None:
            service = ((1 - st.stepping) * _avg(p, p.nodes) * st.free
                       + st.stepping * (_avg(p, st.ride) * st.busy + st.gap))
        else:
            service = (p.es if p.ex is None else p.ex) * ((1 - st.pw) * st.free + st.pw * st.busy)
        m = st.mean_wait() + service + p.delay + rs.wd + rs.first
        per.append(m)
        total = total + np.where(p.share > 0, p.share * np.nan_to_num(m, nan=0.0, posinf=np.inf), 0.0)
    return total, per


@_quiet
def quantiles(lay: Layout, lam: float, rows: list[tuple[tuple[float, float], float]],
              hi: float = 1e6, rtol: float = 1e-4, rs: RateState | None = None) -> np.ndarray:
    """Quantiles of TTFT at one operating point (a layout of shape (1,)): each row is
    ((weight of path 0, weight of path 1), q), e.g. ((p, 1 - p), 0.9) for the overall P90 or
    ((1, 0), 0.9) for the PrfaaS path's. One bisection on x for all rows; inf beyond `hi`.
    `rs`: the rate's state, when the caller has it."""
    w = np.array([r[0] for r in rows], dtype=float)
    q = np.array([r[1] for r in rows], dtype=float)
    lam_a = np.array([lam], dtype=float)
    rs = rate_state(lay, lam_a) if rs is None else rs  # x-independent: once for all
    mean = float(np.nan_to_num(mean_ttft(lay, lam_a, rs)[0][0], nan=hi, posinf=hi))
    lo, up = np.zeros(len(rows)), np.full(len(rows), min(hi, 50.0 * mean + 1.0))

    def over(x: np.ndarray) -> np.ndarray:  # x: len(rows) values per row, row-major
        k = x.size // len(rows)
        t0, t1 = tails_at(lay, rs, x[:, None])
        return np.repeat(w[:, 0], k) * t0[:, 0] + np.repeat(w[:, 1], k) * t1[:, 0] \
            > np.repeat(1 - q, k)

    up = np.where(over(up), hi, up)  # the guess was too low: fall back to the wide bracket
    for _ in range(80):  # one bisection step on x per evaluation, all rows together
        mid = 0.5 * (lo + up)
        o = over(mid)
        lo, up = np.where(o, mid, lo), np.where(o, up, mid)
        if np.all(up - lo <= rtol * np.maximum(up, 1e-3)):
            break
    return np.where(up >= hi * (1 - 1e-9), np.inf, up)
