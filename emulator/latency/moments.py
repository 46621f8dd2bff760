"""Exact moments of the prefill (service) time and its distribution: E[T(L)^k | side of t]
from the length distribution's partial moments (a profile is piecewise polynomial, so T^2 is
too), the conditional length quantiles T maps to service-time nodes, and the same moments for
a whole threshold grid in one pass over cumulative moments."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from emulator.distributions import Discrete, Empirical, LengthDistribution, TruncatedLogNormal
from emulator.model import SplitStats, System
from emulator.profiles import Curve, Profile


def _partial_moment(dist: LengthDistribution, a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """E[L^k 1{a < L <= b}] for k = 0..4 (k <= 2 from the distribution itself)."""
    if k <= 2:
        return dist.partial_moments(a, b)[k]
    if isinstance(dist, Discrete):
        a1, b1 = np.asarray(a, float)[..., None], np.asarray(b, float)[..., None]
        w = np.where((dist.values > a1) & (dist.values <= b1), dist.probs, 0.0)
        return (w * dist.values**k).sum(-1)
    if isinstance(dist, Empirical):
        x = dist.sorted_values
        cum = np.concatenate([[0.0], np.cumsum(x**k) / len(x)])
        ia = np.searchsorted(x, np.asarray(a, float), side="right")
        ib = np.searchsorted(x, np.asarray(b, float), side="right")
        return cum[ib] - cum[ia]
    if isinstance(dist, TruncatedLogNormal):
        lo, hi = dist.lo, dist.hi
        a = np.clip(np.asarray(a, float), lo, hi)
        b = np.clip(np.asarray(b, float), lo, hi)
        mass = ndtr(dist._z(hi, 0)) - ndtr(dist._z(lo, 0))
        scale = np.exp(k * dist.mu + 0.5 * k * k * dist.sigma**2) / mass
        return scale * np.maximum(ndtr(dist._z(b, k)) - ndtr(dist._z(a, k)), 0.0)
    raise NotImplementedError(f"no moments of order {k} for {type(dist).__name__}")


def _integrate_moments(curve: Curve, dist: LengthDistribution, lo: np.ndarray,
                       hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E[f(L) 1{lo < L <= hi}], E[f(L)^2 1{...}]) exactly: f^2 is a piecewise polynomial of
    degree <= 4, so each piece needs the partial moments of order 0..4 (3 and 4 only where f
    is quadratic). One partial-moment evaluation per piece."""
    edges = np.concatenate([[-np.inf], curve.breaks, [np.inf]])
    one = np.zeros(np.broadcast(lo, hi).shape)
    two = np.zeros_like(one)
    for i, (c0, c1, c2) in enumerate(curve.coefs):
        a = np.maximum(lo, edges[i])
        b = np.maximum(a, np.minimum(hi, edges[i + 1]))
        m = list(dist.partial_moments(a, b))
        one = one + c0 * m[0] + c1 * m[1] + c2 * m[2]
        two = two + c0 * c0 * m[0] + 2 * c0 * c1 * m[1] + (c1 * c1 + 2 * c0 * c2) * m[2]
        if c2:
            two = two + 2 * c1 * c2 * _partial_moment(dist, a, b, 3) \
                + c2 * c2 * _partial_moment(dist, a, b, 4)
    return one, two


def _side_bounds(dist: LengthDistribution, t: np.ndarray, above: bool):
    lo, hi = dist.support
    if above:
        return np.minimum(t, hi), np.full_like(t, hi)
    return np.full_like(t, lo - 1.0), np.maximum(t, lo - 1.0)


def service_moments(dist: LengthDistribution, prof: Profile, t: np.ndarray,
                    above: bool) -> tuple[np.ndarray, np.ndarray]:
    """(E[T(L) | side], E[T(L)^2 | side]) exactly, vectorized over t; nan on an empty side."""
    t = np.asarray(t, dtype=float)
    a, b = _side_bounds(dist, t, above)
    m0 = dist.partial_moments(a, b)[0]
    m1, m2 = _integrate_moments(prof.prefill_time, dist, a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = m0 > 0
        d = np.where(ok, m0, 1.0)
        return np.where(ok, m1 / d, np.nan), np.where(ok, m2 / d, np.nan)


# -- the service time's distribution: conditional length quantiles ----------------------------
def _quantile(dist: LengthDistribution, q: np.ndarray) -> np.ndarray:
    """The length distribution's inverse cdf, vectorized (closed form where there is one)."""
    q = np.clip(q, 0.0, 1.0)
    if isinstance(dist, TruncatedLogNormal):
        fa, fb = ndtr(dist._z(dist.lo, 0)), ndtr(dist._z(dist.hi, 0))
        u = np.clip(fa + q * (fb - fa), 1e-300, 1 - 1e-16)
        return np.clip(np.exp(dist.mu + dist.sigma * ndtri(u)), dist.lo, dist.hi)
    if isinstance(dist, Discrete):
        idx = np.searchsorted(np.cumsum(dist.probs), q - 1e-12, side="left")
        return dist.values[np.minimum(idx, len(dist.values) - 1)]
    if isinstance(dist, Empirical):
        n = len(dist.sorted_values)
        idx = np.ceil(q * n - 1e-9).astype(int) - 1
        return dist.sorted_values[np.clip(idx, 0, n - 1)]
    lo, hi = dist.support
    a, b = np.full_like(q, lo - 1.0), np.full_like(q, hi)
    for _ in range(60):
        mid = 0.5 * (a + b)
        below = np.asarray(dist.cdf(mid)) >= q
        b, a = np.where(below, mid, b), np.where(below, a, mid)
    return b


def length_nodes(dist: LengthDistribution, t: np.ndarray, above: bool, k: int,
                 stride: int = 1, f_t: np.ndarray | None = None) -> np.ndarray:
    """k equal-probability nodes (bin midpoints) of L given its side of t: shape (len(t), k);
    with `stride`, only every stride-th of them (the first of each group). `f_t`: the
    clipped cdf at t, when the caller has it (both sides share it)."""
    if f_t is None:
        f_t = _cdf(dist, t)
    u = (np.arange(0, k, stride) + 0.5) / k
    q = f_t[:, None] + u * (1 - f_t[:, None]) if above else u * f_t[:, None]
    return _quantile(dist, q)


def _cdf(dist: LengthDistribution, t: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(dist.cdf(np.asarray(t, dtype=float)), dtype=float), 0.0, 1.0)


# -- the same on a threshold grid, from cumulative moments --------------------------------
def _cumulative(dist: LengthDistribution, x: np.ndarray, kmax: int) -> list[np.ndarray]:
    """G_k(x) = E[L^k 1{L <= x}] for k = 0..kmax: every partial moment over (a, b] the grid
    needs is G_k(b) - G_k(a), so the distribution is evaluated once per point, not once per
    profile piece and threshold."""
    lo = np.full_like(x, dist.support[0] - 1.0)
    out = list(dist.partial_moments(lo, x))
    return out + [_partial_moment(dist, lo, x, k) for k in range(3, kmax + 1)]


def _piece_moments(dist: LengthDistribution, breaks: np.ndarray, t: np.ndarray, g_t: list,
                   above: bool) -> tuple[list[list[np.ndarray]], np.ndarray]:
    """Per piece between `breaks`, E[L^k 1{side of t, in the piece}] for k = 0..len(g_t) - 1,
    and P(side), for every t, from the cumulative moments g_t at t (and here at the breaks).
    The profiles of one system share their breaks, so their curves share these."""
    lo, hi = dist.support[0] - 1.0, dist.support[1]
    edges = np.clip(np.concatenate([[-np.inf], breaks, [np.inf]]), lo, hi)
    kmax = len(g_t) - 1
    g_e = _cumulative(dist, edges, kmax)
    pieces = []
    for i in range(len(edges) - 1):
        lo_i, hi_i = edges[i], edges[i + 1]
        if above:  # (max(t, lo_i), hi_i]
            m = [np.where(t < hi_i, g_e[k][i + 1] - np.where(t > lo_i, g_t[k], g_e[k][i]), 0.0)
                 for k in range(kmax + 1)]
        else:  # (lo_i, min(t, hi_i)]
            m = [np.where(t > lo_i, np.where(t < hi_i, g_t[k], g_e[k][i + 1]) - g_e[k][i], 0.0)
                 for k in range(kmax + 1)]
        pieces.append([np.maximum(v, 0.0) for v in m])
    total = g_e[0][-1] - g_e[0][0]
    mass = np.maximum(total - g_t[0], 0.0) if above else g_t[0] - g_e[0][0]
    return pieces, mass


def _curve_moments(curve: Curve, t: np.ndarray, pieces: list[list[np.ndarray]]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(E[f(L) 1{side}], E[f(L)^2 1{side}]) for every t from its pieces' moments
    (`_piece_moments` of the curve's breaks): exact like `_integrate_moments`."""
    one = np.zeros_like(t)
    two = np.zeros_like(t)
    for (c0, c1, c2), m in zip(curve.coefs, pieces, strict=True):
        one = one + c0 * m[0] + c1 * m[1] + c2 * m[2]
        two = two + c0 * c0 * m[0] + 2 * c0 * c1 * m[1] + (c1 * c1 + 2 * c0 * c2) * m[2]
        if c2:
            two = two + 2 * c1 * c2 * m[3] + c2 * c2 * m[4]
    return one, two


def _grid_stats(system: System, grid: np.ndarray) -> tuple[SplitStats, tuple[tuple, tuple]]:
    """The exact-mode split stats of every threshold (as `split_stats(..., "exact")`, to
    ~1e-13) and both sides' service moments (E[T], E[T^2]; nan on an empty side), in one pass
    over cumulative moments, at a fraction of their cost on a grid."""
    dist = system.lengths
    curves = ((system.prfaas.prefill_time, True), (system.prfaas.kv_size, True),
              (system.local.prefill_time, False))
    kmax = 4 if any(np.any(c.coefs[:, 2]) for c, _ in curves) else 2
    g_t = _cumulative(dist, grid, kmax)
    out, shared = [], {}
    for curve, above in curves:
        key = (curve.breaks.tobytes(), above)
        if key not in shared:
            shared[key] = _piece_moments(dist, curve.breaks, grid, g_t, above)
        pieces, mass = shared[key]
        one, two = _curve_moments(curve, grid, pieces)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(mass > 0, mass, 1.0)
            out.append((mass, np.where(mass > 0, one / d, np.nan),
                        np.where(mass > 0, two / d, np.nan)))
    (m_long, t_long, t2_long), (_, s_long, _), (m_short, t_short, t2_short) = out
    total = m_long + m_short
    p = np.clip(m_long / np.where(total > 0, total, 1.0), 0.0, 1.0)
    p = np.where(p < 1e-12, 0.0, np.where(p > 1 - 1e-12, 1.0, p))
    with np.errstate(invalid="ignore", divide="ignore"):
        l_long = np.where(m_long > 0, (g_t[1][-1] - g_t[1]) / np.where(m_long > 0, m_long, 1.0),
                          np.nan)
        l_short = np.where(m_short > 0, g_t[1] / np.where(m_short > 0, m_short, 1.0), np.nan)
    st = SplitStats(grid, p, l_long, l_short, np.where(p > 0, t_long, np.nan),
                    np.where(p > 0, s_long, np.nan), np.where(p < 1, t_short, np.nan))
    return st, ((t_long, t2_long), (t_short, t2_short))
