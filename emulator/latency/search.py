"""The SLO optimum: the (t, N_p, N_d = pool - N_p) on the optimizer's grid that maximizes the
SLO-bound rate, exact over the grid. One bisection on the rate for the whole grid
(`best_rate`), starting from the best of the TOP points with the highest Lambda_max; lower
bounds of the tail (each threshold's best case, groups of service nodes at their minimum) drop
the points that cannot reach the floor before the full check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from emulator.latency.layout import NODES, ExactStats, _take
from emulator.latency.moments import _cdf, _grid_stats, _quantile, length_nodes
from emulator.latency.point import RATE_STEPS, slo_rate
from emulator.latency.queueing import Layout, Path, _prepare
from emulator.latency.quiet import _quiet
from emulator.latency.steps import Steps
from emulator.latency.tails import tail
from emulator.model import Knobs, SplitStats, System, ceilings
from emulator.profiles import Curve, Profile

GRID_NODES = 64  # quantile nodes of the service time in the vectorized (t, split) search
TOP = 64  # grid points with the highest Lambda_max that set the SLO search's floor ...
FLOOR_STEPS = 6  # ... to Lambda_max / 64: a floor only needs to be feasible, not tight


@_quiet
def best_rate(lay: Layout, lam_max: np.ndarray, target: float, q: float,
              steps: int = RATE_STEPS, floor: float = 0.0,
              checked: bool = False,
              refine: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[float, np.ndarray]:
    """The highest SLO-bound rate over a set of operating points (flat arrays), and the points
    that reach it. One bisection on the rate for the whole set: a point feasible at a rate is
    feasible at every lower one (the predicted tail grows with the rate), so each step checks
    only the points still feasible, each against the points whose Lambda_max exceeds it. Exact over the set to
    max(Lambda_max) / 2^steps. `floor`: a rate some point is known to reach; `checked`: every
    point is known to meet the target there; `refine`: recomputes Lambda_max of the points
    given, for the ones within 1e-9 of the largest (the range's top must be the bit-exact one:
    the halving count hangs on it)."""
    lam_max = np.asarray(lam_max, dtype=float)
    alive = np.flatnonzero(lam_max > floor)
    x = np.asarray(target, dtype=float)
    lay = _prepare(lay)
    if alive.size and not checked:
        at = max(floor, 1e-9)
        alive = alive[tail(_take(lay, alive), np.array([at]), x) <= 1 - q]
    if not alive.size:
        return 0.0, alive
    if refine is not None:
        near = alive[lam_max[alive] >= lam_max[alive].max() * (1 - 1e-9)]
        lam_max = lam_max.copy()
        lam_max[near] = refine(near)
    lo, hi = floor, float(lam_max[alive].max())
    tol = hi * 2.0 ** -steps
    sub, sub_of = None, None
    while hi - lo > tol:  # each step checks only the points still feasible at lo
        mid = 0.5 * (lo + hi)
        if sub_of is not alive:  # alive changes only when lo moves: gather only then
            sub, sub_of = _take(lay, alive), alive
        ok = (tail(sub, np.array([mid]), x) <= 1 - q) & (lam_max[alive] > mid)
        if ok.any():
            lo, alive = mid, alive[ok]
        else:
            hi = mid
    return lo, alive


@dataclass(frozen=True)
class SLOOptimum:
    t: float
    n_p: int
    n_d: int
    rate: float
    evaluated: int  # grid points


def _nondecreasing(curve: Curve, lo: float, hi: float) -> bool:
    """Whether the curve never decreases on [lo, hi] (each piece's slope at both ends, and no
    drop at a break): then the service nodes come sorted from the sorted length nodes."""
    edges = np.concatenate([[-np.inf], curve.breaks, [np.inf]])
    for i, (c0, c1, c2) in enumerate(curve.coefs):
        a, b = max(lo, edges[i]), min(hi, edges[i + 1])
        if a <= b and (c1 + 2 * c2 * a < 0 or c1 + 2 * c2 * b < 0):
            return False
        if i and lo <= edges[i] <= hi:
            left = curve.coefs[i - 1] @ [1.0, edges[i], edges[i] ** 2]
            if c0 + edges[i] * (c1 + edges[i] * c2) < left:
                return False
    return True


def _groups(nodes: int) -> np.ndarray:
    """Sizes of the lower-bound groups of the sorted service nodes, halving towards the top
    (16, 16, 8, 8, 4, 4, 2, 2, 1, 1, 1, 1 for 64): coarse where the tail is flat, every node
    where a P90 is decided. 12 nodes for 64 leave ~3x fewer points for the exact check at
    4 s than 8 equal groups."""
    sizes, left, size = [], nodes, max(nodes // 4, 1)
    while left > 0:
        for _ in range(2):
            take = min(size, left)
            if take:
                sizes.append(take)
                left -= take
        size = max(size // 2, 1)
    return np.array(sizes)


class _GridLayouts:
    """Flat layouts of points of the (t, N_p) grid, from the grid's exact stats (computed once,
    not per layout), nodes only for the thresholds asked for. `coarse`: each group of sorted
    service nodes (`_groups`) stands for its minimum, weighted by its size, so the tail it
    gives is a lower bound of the full one (the tail grows with the service time)."""

    def __init__(self, system: System, grid: np.ndarray, st: SplitStats, moments: tuple,
                 n_prfaas: int, pool: int, bandwidth: float, link_latency: float,
                 rdma_latency: float) -> None:
        self.system, self.grid, self.st, self.pool = system, grid, st, pool
        dist = system.lengths
        p = np.where(st.p > 0, st.p, 0.0)
        q = 1.0 - st.p
        self.sides = []  # per side: profile, above, servers, delay, share, E[T], E[T^2], sorted
        for prof, above, servers, delay, share, (es, es2) in (
                (system.prfaas, True, float(n_prfaas), link_latency, p, moments[0]),
                (system.local, False, None, rdma_latency, np.where(q > 0, q, 0.0), moments[1])):
            empty = ~np.isfinite(es)  # what a layout gathers, cleaned once for the whole grid
            self.sides.append((prof, above, servers, delay, share, np.where(empty, 0.0, es),
                               np.where(empty, 0.0, es2),
                               _nondecreasing(prof.prefill_time, *dist.support)))
        with np.errstate(divide="ignore", invalid="ignore"):
            self.pace = np.nan_to_num(st.s_long / st.t_long) / float(bandwidth)
        # (nodes, coarse) -> (which thresholds are filled, each side's nodes per threshold)
        self._tables: dict[tuple[int, bool], tuple[np.ndarray, list[np.ndarray]]] = {}

    def _node_tables(self, it: np.ndarray, nodes: int, coarse: bool) -> list[np.ndarray]:
        """Each side's service-node table over the grid, filled for the thresholds `it` (grid
        indices): a threshold's nodes are computed once per search (the floor's, the lower
        bounds' and the full check's layouts share thresholds), elementwise, so the same bits."""
        key = (nodes, coarse)
        if key not in self._tables:
            k = len(_groups(nodes)) if coarse else nodes
            self._tables[key] = (np.zeros(self.grid.size, dtype=bool),
                                 [np.empty((self.grid.size, k)) for _ in self.sides])
        have, tables = self._tables[key]
        need = np.unique(it[~have[it]])
        if need.size:
            t = self.grid[need]
            f_t = _cdf(self.system.lengths, t)
            for (prof, above, *_, rising), table in zip(self.sides, tables, strict=True):
                table[need] = self._nodes(prof, t, f_t, above, nodes, coarse, rising)
            have[need] = True
        return tables

    def _nodes(self, prof: Profile, t: np.ndarray, f_t: np.ndarray, above: bool, nodes: int,
               coarse: bool, rising: bool) -> np.ndarray:
        """Service nodes per threshold (nan-free); `coarse`: the groups' minima. A step-timed
        profile's are length nodes (its times depend on the rate: `Steps`)."""
        dist = self.system.lengths
        time = prof.latency_time if _timed_alone(prof) else _same
        if not coarse:
            xn = time(length_nodes(dist, t, above, nodes, f_t=f_t))
            return np.nan_to_num(np.asarray(xn))
        sizes = _groups(nodes)
        first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        if rising or not _timed_alone(prof):
            f = f_t[:, None]
            u = (first + 0.5) / nodes
            xn = np.asarray(time(_quantile(dist, f + u * (1 - f) if above else u * f)))
        else:
            full = np.asarray(time(length_nodes(dist, t, above, nodes, f_t=f_t)))
            xn = np.sort(full, axis=-1)[:, first]
        return np.nan_to_num(xn)

    def __call__(self, idx: np.ndarray, nodes: int = GRID_NODES, coarse: bool = False,
                 n_d: np.ndarray | None = None) -> Layout:
        """The points `idx`; `n_d`: decode instances other than pool - N_p (`best_case`)."""
        it, ip = np.unravel_index(idx, (self.grid.size, self.pool + 1))
        tables = self._node_tables(it, nodes, coarse)
        w = _groups(nodes) / nodes if coarse else None
        paths = []
        for (prof, above, servers, delay, share, es, es2, _), table in zip(self.sides, tables,
                                                                        strict=True):
            srv = np.full(idx.shape, servers) if above else ip.astype(float)
            nodes_it = table[it]
            steps = None if _timed_alone(prof) else Steps.of(prof, nodes_it, w)
            if steps is not None:
                nodes_it = np.asarray(prof.latency_time(nodes_it))
            ex = (None if prof.token_budget is None or steps is not None
                  else np.average(nodes_it, axis=-1, weights=w))
            paths.append(Path(share[it], srv, es[it], es2[it], nodes_it,
                              self.pace[it] if above else 0.0, delay, w, ex=ex, steps=steps))
        dec = self.system.decode
        n_d = (self.pool - ip).astype(float) if n_d is None else np.asarray(n_d, dtype=float)
        return Layout((paths[0], paths[1]), n_d * dec.bs_max, dec.l_out * dec.t_decode,
                      dec.t_decode, n_d)

    def best_case(self, idx: np.ndarray) -> tuple[Layout, np.ndarray]:
        """A coarse layout of one virtual point per threshold of `idx` with the most local
        prefill instances and the most decode instances of that threshold's points, and the
        index of each point's. Its tail is a lower bound of each of those points' coarse tail:
        the PrfaaS path does not depend on the split, the PD-P wait only shrinks with more
        servers (Erlang C and the Allen-Cunneen mean both fall with c) and so do the decode
        wait and first step with more decode instances, and a shorter wait only lowers the
        tail."""
        it, ip = np.unravel_index(idx, (self.grid.size, self.pool + 1))
        ut, inv = np.unique(it, return_inverse=True)
        inv = inv.reshape(-1)
        most_p = np.zeros(ut.size, dtype=int)
        np.maximum.at(most_p, inv, ip)
        most_d = np.zeros(ut.size, dtype=int)
        np.maximum.at(most_d, inv, self.pool - ip)
        virtual = np.ravel_multi_index((ut, most_p), (self.grid.size, self.pool + 1))
        return self(virtual, coarse=True, n_d=most_d), inv


def _timed_alone(prof: Profile) -> bool:
    """Whether a request's prefill time does not depend on the rate (not a step-timed batched
    profile)."""
    return prof.token_budget is None or prof.step is None


def _same(x: np.ndarray) -> np.ndarray:
    return x


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, largest first, ties by index."""
    return np.lexsort((np.arange(values.size), -values))[:k]


@_quiet
def slo_search(system: System, target: float, q: float = 0.9, *, n_prfaas: int | None = None,
               bandwidth: float | None = None, pool: int | None = None,
               link_latency: float = 0.0, rdma_latency: float = 0.0,
               stats: ExactStats | None = None) -> SLOOptimum:
    """The (t, N_p, N_d = pool - N_p) on the optimizer's grid that maximizes the SLO-bound rate
    (`best_rate` over the whole grid). Among the points reaching the best rate, the lowest t,
    then the lowest N_p, as in the optimizer. `stats`: the system's exact split stats cache,
    shared with the caller's operating point."""
    n_prfaas = system.n_prfaas if n_prfaas is None else n_prfaas
    bandwidth = system.bandwidth if bandwidth is None else bandwidth
    pool = system.local_pool if pool is None else pool
    grid = system.lengths.threshold_grid()
    n_p = np.arange(pool + 1)
    st, moments = _grid_stats(system, grid)
    *_, lam = ceilings(st, n_prfaas, n_p, pool - n_p, bandwidth, system.decode)
    flat = lam.ravel()
    layout = _GridLayouts(system, grid, st, moments, n_prfaas, pool, bandwidth, link_latency,
                          rdma_latency)

    stats = ExactStats(system) if stats is None else stats

    def exact_lam(rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Lambda_max of points (`rows` of `idx`) from the optimizer's own split stats, to the
        bit: the rate bisection's range and halving count hang on max(Lambda_max), and a
        1-ulp change can move the floor (and with it a near-tie's winner). A decode-bound
        point's value does not depend on the split stats and is already exact."""
        pts = idx[rows]
        out = flat[pts].copy()
        it, ip = np.unravel_index(pts, lam.shape)
        need = out != (pool - ip).astype(float) * system.decode.per_instance_rate
        if not need.any():
            return out
        it, ip = it[need], ip[need]
        ex = stats.get(grid[it])
        out[need] = ceilings(ex, n_prfaas, ip.astype(float), (pool - ip).astype(float),
                             bandwidth, system.decode, outer=False)[-1]
        return out

    # the points with the highest Lambda_max give a floor; only points above it can beat it
    top = _top(flat, TOP)
    floor, _ = best_rate(layout(top), flat[top], target, q, steps=FLOOR_STEPS,
                         refine=lambda rows: exact_lam(rows, top))
    cand = np.flatnonzero(flat > floor) if floor > 0 else np.flatnonzero(flat > 0)
    at = np.array([max(floor, 1e-9)])  # one rate for all: decode terms per distinct N_d
    if cand.size:  # a point whose lower-bound tail misses at the floor cannot reach it
        best, inv = layout.best_case(cand)  # ... nor one whose threshold's best case misses
        cand = cand[(tail(best, at, target) <= 1 - q + 1e-9)[inv]]
        keep = tail(layout(cand, coarse=True), at, target) <= 1 - q + 1e-12
        cand = cand[keep]
    full = layout(cand)
    keep = np.flatnonzero(tail(full, at, target) <= 1 - q) if cand.size else cand
    cand, full = cand[keep], _take(full, keep)
    rate, winners = best_rate(full, flat[cand], target, q, floor=floor, checked=True,
                              refine=lambda rows: exact_lam(rows, cand))
    if rate < floor:  # cannot happen (the floor's points are in cand), kept for safety
        rate, winners = floor, top[:1]
    i = int(cand[winners].min()) if winners.size else int(np.argmax(flat))
    it, ip = np.unravel_index(i, lam.shape)
    knobs = Knobs(float(grid[it]), int(ip), int(pool - ip), n_prfaas, bandwidth)
    if rate > 0:  # the winner's rate with the full node count, as `slo_rate` reports it
        idx = np.array([i])
        rate = slo_rate(system, knobs, target, q, near=rate,
                        layout=(layout(idx, nodes=NODES), float(exact_lam(np.array([0]), idx)[0])))
    return SLOOptimum(knobs.t, knobs.n_p, knobs.n_d, rate, int(len(top) + len(cand)))
