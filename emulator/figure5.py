"""The paper's Figure 5 as data a chart can draw without lying.

5a: Lambda_max against N_p (N_d = pool - N_p) at the current t, with N_p* the argmax of THAT
curve (the global optimum's N_p belongs to another t and sits off the curve).

5b: the PrfaaS and PD-P ceilings against t at the current split. For a discrete or empirical
length distribution p(t) and the conditional lengths only change at support points, so the
ceilings are step functions: flat on [x_i, x_{i+1}), jumping at x_{i+1} (L > t excludes L = t).
Joining the support points with straight lines, as a line chart does, invents values between
them (the toy at t = 16K read 3.0 / 2.0 where `solve --t 16K` says 2.0 / 4.0). `figure5b`
returns the curve with the corners a step needs; continuous distributions stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.effective import LiveState, effective_knobs, effective_system
from emulator.model import Knobs, System, ceilings, split_stats


@dataclass(frozen=True)
class Figure5a:
    n_p: np.ndarray  # 0..pool
    lambda_max: np.ndarray
    n_p_star: int  # argmax of this curve (lowest N_p on ties)
    now: int | None  # the current N_p when N_p + N_d fill the pool, else None

    @property
    def best(self) -> float:
        return float(self.lambda_max[self.n_p_star])


@dataclass(frozen=True)
class Figure5b:
    """Drawable x/y (corners inserted where the curve is flat) and the underlying grid."""

    t: np.ndarray  # drawable x
    prfaas: np.ndarray
    pdp: np.ndarray
    lambda_max: np.ndarray
    grid: np.ndarray  # the thresholds evaluated
    grid_prfaas: np.ndarray
    grid_pdp: np.ndarray
    flat: np.ndarray  # bool per segment [grid[i], grid[i+1]): no probability mass inside

    def at(self, t: float) -> tuple[float, float]:
        """(PrfaaS ceiling, PD-P ceiling) the chart shows at t: the left value on a flat
        segment, linear between grid points otherwise."""
        g = self.grid
        i = int(np.searchsorted(g, t, side="right")) - 1
        if i < 0:
            return float(self.grid_prfaas[0]), float(self.grid_pdp[0])
        if i >= len(g) - 1 or self.flat[i] or g[i] == t:
            return float(self.grid_prfaas[i]), float(self.grid_pdp[i])
        w = (t - g[i]) / (g[i + 1] - g[i])
        lerp = lambda a: float(a[i] + w * (a[i + 1] - a[i]))  # noqa: E731
        return lerp(self.grid_prfaas), lerp(self.grid_pdp)


def figure5a(system: System, knobs: Knobs, mode: str, pool: int | None = None) -> Figure5a:
    """Lambda_max against N_p at knobs.t (N_prfaas and bandwidth from the knobs)."""
    pool = system.local_pool if pool is None else pool
    n_p = np.arange(pool + 1)
    st = split_stats(system.lengths, system.prfaas, system.local, np.array([knobs.t]), mode)
    *_, lam = ceilings(st, knobs.n_prfaas, n_p, pool - n_p, knobs.bandwidth, system.decode)
    lam = np.asarray(lam)[0]
    now = knobs.n_p if knobs.n_p + knobs.n_d == pool else None
    return Figure5a(n_p, lam, int(np.argmax(lam)), now)


def figure5b(system: System, knobs: Knobs, mode: str,
             grid: np.ndarray | None = None) -> Figure5b:
    """Both producer ceilings against t at the knobs' split, as a step curve where the length
    distribution has no mass between grid points."""
    lengths = system.lengths
    g = np.asarray(lengths.threshold_grid() if grid is None else grid, dtype=float)
    st = split_stats(lengths, system.prfaas, system.local, g, mode)
    *_, stack, lam = ceilings(st, knobs.n_prfaas, knobs.n_p, knobs.n_d, knobs.bandwidth,
                              system.decode, outer=False)
    pf, pdp, lam = stack[0], stack[1], np.asarray(lam)
    flat = flat_segments(lengths, g)
    x, y_pf, y_pdp, y_lam = with_corners(g, flat, pf, pdp, lam)
    return Figure5b(x, y_pf, y_pdp, y_lam, g, pf, pdp, flat)


def flat_segments(lengths: LengthDistribution, g: np.ndarray) -> np.ndarray:
    """Per segment [g[i], g[i+1]): True where the distribution has no mass inside, so
    anything that depends on t only through the split (p, the ceilings, the CDF) is flat there
    and jumps at g[i+1]."""
    left_of_next = np.nextafter(g[1:], -np.inf)
    return np.isclose(np.asarray(lengths.p_above(g[:-1])),
                      np.asarray(lengths.p_above(left_of_next)), rtol=0, atol=1e-12)


def with_corners(g: np.ndarray, flat: np.ndarray, *ys: np.ndarray) -> tuple[np.ndarray, ...]:
    """(x, *y) drawable as lines: on a flat segment a corner (g[i+1], y[i]) is inserted, so
    the line stays level and then jumps; elsewhere the grid points are joined."""
    idx = [0]  # which grid value each drawn point takes: corners repeat the left one
    xs = [0]
    for i in range(len(g) - 1):
        if flat[i]:
            idx.append(i)
            xs.append(i + 1)
        idx.append(i + 1)
        xs.append(i + 1)
    return (np.asarray(g, dtype=float)[xs], *(np.asarray(y, dtype=float)[idx] for y in ys))


def effective_figure5(system: System, state: LiveState, mode: str) -> tuple[Figure5a, Figure5b]:
    """Both panels at the live state: alive instances, the link now, the live mix."""
    eff = effective_system(system, state)
    k = effective_knobs(state)
    pool = max(state.local_alive, 1)
    return figure5a(eff, k, mode, pool), figure5b(eff, k, mode)
