"""Layouts of operating points: both paths and decode as arrays, from a system and knobs (or a
grid), with the exact-mode Lambda_max of each point; and picking points out of a flat layout."""

from __future__ import annotations

import numpy as np

from emulator.latency.moments import length_nodes, service_moments
from emulator.latency.queueing import Layout, Path
from emulator.latency.steps import Steps
from emulator.model import Knobs, SplitStats, System, ceilings, split_stats
from emulator.profiles import Profile

NODES = 256  # quantile nodes of the service time for one operating point


class ExactStats:
    """Exact-mode split stats of one system per threshold, cached: `split_stats` costs about a
    millisecond per call whatever its size (and is elementwise in t, so batching keeps the
    bits), so thresholds announced with `want` are computed together at the next `get`
    (`solve --slo-ttft`: the operating point's with the search's)."""

    FIELDS = tuple(SplitStats.__dataclass_fields__)

    def __init__(self, system: System) -> None:
        self.system = system
        self._rows: dict[float, tuple] = {}
        self._pending: set[float] = set()

    def want(self, t) -> None:
        self._pending.update(float(x) for x in np.atleast_1d(t) if not np.isnan(x))

    def get(self, t) -> SplitStats:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        s = self.system
        if np.isnan(t).any():  # nan is no dict key: uncached
            return split_stats(s.lengths, s.prfaas, s.local, t, "exact")
        new = sorted((self._pending | {float(x) for x in t}) - self._rows.keys())
        self._pending.clear()
        if new:
            ex = split_stats(s.lengths, s.prfaas, s.local, np.array(new), "exact")
            for j, x in enumerate(new):
                self._rows[x] = tuple(getattr(ex, f)[j] for f in self.FIELDS)
        rows = [self._rows[float(x)] for x in t]
        return SplitStats(*(np.array([r[k] for r in rows]) for k in range(len(self.FIELDS))))


def _layout(system: System, prfaas: Profile, local: Profile, t: np.ndarray, n_prfaas, n_p, n_d,
            bandwidth, *, nodes: int, outer: bool, link_latency: float = 0.0,
            rdma_latency: float = 0.0,
            stats: ExactStats | None = None) -> tuple[Layout, np.ndarray]:
    """The two paths and decode on a grid (t x split with `outer`, else elementwise), with the
    exact-mode Lambda_max of each point. `stats`: the system's cache, for its own profiles."""
    dist = system.lengths
    t = np.asarray(t, dtype=float)
    uniq, inv = np.unique(t, return_inverse=True)  # grid points share thresholds
    st = (stats.get(uniq) if stats is not None
          else split_stats(dist, prfaas, local, uniq, "exact"))
    st = SplitStats(*(getattr(st, f)[inv] for f in SplitStats.__dataclass_fields__))
    *_, lam_max = ceilings(st, n_prfaas, n_p, n_d, bandwidth, system.decode, outer=outer)
    col = (lambda a: np.asarray(a)[:, None]) if outer else (lambda a: np.asarray(a))
    sides = []
    for prof, above, servers, delay in ((prfaas, True, n_prfaas, link_latency),
                                        (local, False, n_p, rdma_latency)):
        es, es2 = (m[inv] for m in service_moments(dist, prof, uniq, above))
        xn = np.asarray(prof.latency_time(length_nodes(dist, uniq, above, nodes)))[inv]
        share = st.p if above else 1.0 - st.p
        pace = 0.0
        if above:
            with np.errstate(divide="ignore", invalid="ignore"):
                pace = col(np.nan_to_num(st.s_long / st.t_long) / np.asarray(bandwidth, float))
        empty = ~np.isfinite(es)
        es_b = col(np.where(empty, 0.0, es))
        es2_b = col(np.where(empty, 0.0, es2))
        share_b = col(np.where(share > 0, share, 0.0))
        xn_b = np.nan_to_num(xn[:, None, :] if outer else xn)
        srv = np.broadcast_to(np.asarray(servers, dtype=float), np.broadcast(es_b, servers).shape)
        steps = None
        if prof.step is not None and prof.token_budget is not None:
            ln = np.asarray(length_nodes(dist, uniq, above, nodes))[inv]
            steps = Steps.of(prof, ln[:, None, :] if outer else ln)
        ex = None if prof.token_budget is None or steps is not None else xn_b.mean(axis=-1)
        sides.append(Path(share_b, srv, es_b, es2_b, xn_b, pace, delay, ex=ex, steps=steps))
    dec = system.decode
    n_d_arr = np.asarray(n_d, dtype=float)
    lay = Layout((sides[0], sides[1]), n_d_arr * dec.bs_max, dec.l_out * dec.t_decode,
                 dec.t_decode, n_d_arr)
    return lay, lam_max


def layout_at(system: System, knobs: Knobs, *, profiles: tuple[Profile, Profile] | None = None,
              nodes: int = NODES, link_latency: float = 0.0,
              rdma_latency: float = 0.0,
              stats: ExactStats | None = None) -> tuple[Layout, float]:
    """The layout of one operating point (arrays of shape (1,)) and its exact Lambda_max.
    `stats`: the system's exact split stats cache (unused with other `profiles`)."""
    prfaas, local = profiles or (system.prfaas, system.local)
    lay, lam = _layout(system, prfaas, local, np.array([knobs.t]), knobs.n_prfaas,
                       np.array([knobs.n_p], float), np.array([knobs.n_d], float), knobs.bandwidth,
                       nodes=nodes, outer=False, link_latency=link_latency,
                       rdma_latency=rdma_latency, stats=None if profiles else stats)
    return lay, float(lam[0])


def _per_rate(lay: Layout) -> Layout:
    """A flat layout with a rate axis after the point axis: tails of n points at k rates in one
    call, shape (n, k)."""
    def col(a):
        return np.asarray(a)[:, None] if np.ndim(a) else a
    paths = tuple(Path(col(p.share), col(p.servers), col(p.es), col(p.es2), p.nodes[:, None, :],
                       col(p.pace), p.delay, p.weights, *(None if v is None else col(v)
                                                          for v in (p.ac, p.busy, p.drain)),
                       p.paced, None if p.ex is None else col(p.ex),
                       None if p.steps is None else p.steps.pick(
                           lambda a, nodes: a[:, None, :] if nodes else col(a)))
                  for p in lay.paths)
    return Layout(paths, col(lay.decode_slots), lay.decode_service, lay.t_decode, col(lay.n_d))


def _take(lay: Layout, idx: np.ndarray) -> Layout:
    """The operating points `idx` of a flat layout."""
    def pick(a):
        return a[idx] if np.ndim(a) else a
    paths = tuple(Path(pick(p.share), pick(p.servers), pick(p.es), pick(p.es2), p.nodes[idx],
                       pick(p.pace), p.delay, p.weights, *(None if v is None else pick(v)
                                                           for v in (p.ac, p.busy, p.drain)),
                       p.paced, None if p.ex is None else pick(p.ex),
                       None if p.steps is None else p.steps.pick(lambda a, _: pick(a)))
                  for p in lay.paths)
    return Layout(paths, pick(lay.decode_slots), lay.decode_service, lay.t_decode, pick(lay.n_d))
