"""What the dashboard's pictures show, computed without Textual: the topology strip, the heat
map of Λmax over (t, N_p), the length and TTFT CDFs, and the utilization gauges.

Every picture is drawn at the live state (`emulator.effective.LiveState`: alive instances, the
link now, the live length mix, the current t and split), the state the model panel and `o`
use, so the pictures and the numbers beside them agree during an incident. The widgets in
`prfaas_tui.widgets` draw these values and compute nothing of their own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.effective import EffectiveView, LiveState, effective_grid, effective_system
from emulator.figure5 import flat_segments, with_corners
from emulator.model import System
from emulator.optimizer import Grid
from emulator.paradigm import Paradigm, Stage
from emulator.topology.spec import PAIR_REGION, PAIR_SITE
from emulator.units import to_gbps

LABELS = {"prfaas": "PrfaaS", "link": "link", "pd-p": "PD-P", "pd-d": "PD-D"}


def binding_stage(op: Any) -> str:
    """The stage that limits an operating point's Λmax, the link counted as its own stage:
    when the PrfaaS ceiling binds through its bandwidth term (Eq. 3), the link is what to
    fix. The one word for "what binds" on screen (strip, panel, charts, compare)."""
    if op.binding == "prfaas" and op.prfaas_term == "bandwidth":
        return "link"
    return str(op.binding)


def binding_of(view: EffectiveView) -> str:
    """What binds at the live state (`binding_stage` of the view's point)."""
    return binding_stage(view.point)


# -- topology ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Topology:
    """The deployment as a chain: PrfaaS == link == PD-P | PD-D, alive of configured."""

    alive: dict[str, int]  # stage -> instances taking work
    configured: dict[str, int]
    link_now_gbps: float
    link_gbps: float  # configured B_out
    binding: str  # prfaas, link, pd-p or pd-d
    lambda_max: float
    remote: bool  # the paradigm has a PrfaaS stage (and so a link)
    mode: str = ""  # the model's mode behind lambda_max (paper or exact)

    @classmethod
    def of(cls, view: EffectiveView) -> Topology:
        s = view.state
        return cls(alive={"prfaas": s.alive.prfaas, "pd-p": s.alive.pd_p, "pd-d": s.alive.pd_d},
                   configured={"prfaas": s.n_prfaas, "pd-p": s.n_p, "pd-d": s.n_d},
                   link_now_gbps=to_gbps(s.link_capacity), link_gbps=to_gbps(s.bandwidth),
                   binding=binding_of(view), lambda_max=view.point.lambda_max,
                   remote=Stage.PRFAAS in Paradigm(s.paradigm).stages, mode=view.driving)

    def down(self, part: str) -> bool:
        """Fewer alive than configured, or a link delivering less than B_out."""
        if part == "link":
            return self.link_now_gbps < self.link_gbps * (1 - 1e-9)
        return self.alive[part] < self.configured[part]


Segment = tuple[str, str]  # (text, role): role is a stage ("prfaas", "link"...) or "" for glue


def topology_segments(top: Topology, width: int) -> list[Segment]:
    """The pair's map as segments that fit `width` columns: the 1x1 topology's elements named
    as a topology's (site prfaas, its link, region pd) always, then what binds and Λmax while
    they fit (the words "site" and "region" give way to what binds). Segments carry their
    stage, or the element's kind, as the role, so the widget colours the binding stage and the
    degraded ones and marks the selected element's."""
    def stage(key: str) -> Segment:
        return f"{LABELS[key]} {top.alive[key]}/{top.configured[key]}", key

    def chain(kinds: bool) -> list[Segment]:
        out: list[Segment] = []
        if top.remote:
            out += [(f"site {PAIR_SITE}" if kinds else PAIR_SITE, "site"),
                    (f" {top.alive['prfaas']}/{top.configured['prfaas']}", "prfaas"),
                    (" ══ ", ""),
                    (f"link {top.link_now_gbps:.3g}/{top.link_gbps:.3g} Gbps", "link"),
                    (" ══ ", "")]
        return out + [(f"region {PAIR_REGION} " if kinds else f"{PAIR_REGION} ", "region"),
                      stage("pd-p"), (" │ ", ""), stage("pd-d")]

    extras: list[list[Segment]] = [  # the binding stage first, then Λmax, long or short
        [(" · ", ""), (f"{LABELS[top.binding]} binds", top.binding)],
        [(f" · Λmax {top.lambda_max:.2f} req/s" + (f" ({top.mode})" if top.mode else ""), "")],
        [(f" · Λ {top.lambda_max:.2f}", "")],
    ]
    named = chain(True)
    binds = sum(len(t) for t, _ in extras[0])
    segs = named if sum(len(t) for t, _ in named) + binds <= width else chain(False)
    used = sum(len(t) for t, _ in segs)
    for i, extra in enumerate(extras):
        n = sum(len(t) for t, _ in extra)
        if used + n <= width and not (i == 2 and any("Λmax" in t for t, _ in segs)):
            segs = segs + extra
            used += n
    return segs


# -- heat map ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)  # holds arrays: compared by identity
class HeatMap:
    """Λmax over (t, N_p) at the live state, with where the deployment runs and the optimum
    (the grid's argmax: `emulator.effective.effective_optimum`)."""

    grid: Grid
    now: tuple[int, int]  # (t index, N_p) of the running point
    mode: str

    @property
    def best(self) -> tuple[int, int]:
        return self.grid.argmax

    @property
    def best_value(self) -> float:
        it, ip = self.best
        return float(self.grid.lambda_max[it, ip])

    @property
    def now_value(self) -> float:
        it, ip = self.now
        return float(self.grid.lambda_max[it, ip])

    def t_at(self, index: int) -> float:
        return float(self.grid.t_values[index])


def t_index(t_values: np.ndarray, t: float) -> int:
    """The grid threshold in force at t: the last one at or below it (the split is the same
    until the next one), or the first."""
    return int(np.clip(np.searchsorted(t_values, t, side="right") - 1, 0, len(t_values) - 1))


def heat_map(system: System, state: LiveState, mode: str) -> HeatMap:
    """The heat map at the live state in `mode` (about 5 ms on paper-case-study's 2049 x 9
    grid: the optimizer's own vectorized evaluation)."""
    g = effective_grid(system, state, mode)
    now = (t_index(g.t_values, state.t), int(min(state.alive.pd_p, g.pool)))
    return HeatMap(g, now, mode)


def axis_cells(n: int, k: int) -> list[range]:
    """The grid items each drawn cell covers, for n items in at most k cells: each item
    repeated k // n times when they fit, else n split into k nearly equal runs."""
    if n <= 0 or k <= 0:
        return []
    if n <= k:
        return [range(i, i + 1) for i in range(n) for _ in range(k // n)]
    edges = np.linspace(0, n, k + 1).round().astype(int)
    return [range(int(edges[c]), int(edges[c + 1])) for c in range(k)]


def cell_of(cells: Sequence[range], index: int) -> int:
    """The middle cell among those covering `index`."""
    hits = [c for c, r in enumerate(cells) if index in r]
    return hits[len(hits) // 2]


@dataclass(frozen=True)
class HeatCells:
    """The heat map binned to a screen area: each cell the best Λmax it covers (so the
    optimum's cell shows the maximum), rows from the highest N_p down."""

    values: np.ndarray  # (rows, cols)
    t_cells: list[range]  # t indices per column
    n_p_cells: list[range]  # N_p per row, top row first
    now: tuple[int, int]  # (row, col)
    best: tuple[int, int]


def heat_cells(hm: HeatMap, cols: int, rows: int) -> HeatCells:
    lam = hm.grid.lambda_max
    tc = axis_cells(lam.shape[0], cols)
    pc = axis_cells(lam.shape[1], rows)[::-1]
    # the max over each cell's block; reduceat on a run's start takes the run up to the next
    # start, and a repeated start (an item drawn in several cells) takes that item alone
    by_t = np.maximum.reduceat(lam, [r.start for r in tc], axis=0)
    values = np.maximum.reduceat(by_t, [r.start for r in pc[::-1]], axis=1).T[::-1]

    def at(point: tuple[int, int]) -> tuple[int, int]:
        return cell_of(pc, point[1]), cell_of(tc, point[0])
    return HeatCells(values, tc, pc, at(hm.now), at(hm.best))


# -- length CDF -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LengthCDF:
    """P(L <= x) of the live mix, drawable (steps where a discrete mix has no mass), with the
    threshold t and the long share p = P(L > t) routed to PrfaaS."""

    x: np.ndarray
    cdf: np.ndarray
    t: float
    p: float


def length_cdf(lengths: LengthDistribution, t: float) -> LengthCDF:
    g = np.asarray(lengths.threshold_grid(), dtype=float)
    x, y = with_corners(g, flat_segments(lengths, g), np.asarray(lengths.cdf(g), dtype=float))
    return LengthCDF(x, y, float(t), float(lengths.p_above(t)))


def live_lengths(system: System, state: LiveState) -> LengthDistribution:
    """The mix new requests draw from now (a surge or shift included), else the preset's."""
    return effective_system(system, state).lengths


# -- TTFT CDF ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TTFTCDF:
    """The emulated TTFT distribution over the window against the P90 SLO target, with the
    analytic P50/P90 at the live state (`modelview.live_latency`, the model panel's; infinite
    at or above the live Λmax)."""

    seconds: np.ndarray
    q: np.ndarray
    slo: float
    met: float | None  # share of the window's requests with TTFT <= the SLO
    model_p50: float | None
    model_p90: float | None

    @property
    def p90(self) -> float | None:
        return float(np.interp(0.9, self.q, self.seconds)) if len(self.q) else None


def share_within(seconds: np.ndarray, q: np.ndarray, limit: float) -> float | None:
    """P(TTFT <= limit) read off the quantile points: linear between them; 0 below the first;
    beyond the last its q (0.99: at least that share, the tail above is not known)."""
    if not len(q):
        return None
    if limit < seconds[0]:
        return 0.0
    return float(np.interp(limit, seconds, q))


def ttft_cdf(snap: Any, slo: float, model: tuple[float, float] | None = None) -> TTFTCDF:
    """From a snapshot's `ttft_cdf` (q, seconds) points; `model` the analytic (P50, P90)."""
    pts = sorted(getattr(snap, "ttft_cdf", ()) or ())
    q = np.array([p for p, _ in pts], dtype=float)
    s = np.maximum.accumulate(np.array([v for _, v in pts], dtype=float)) if pts else np.array([])
    p50, p90 = model if model is not None else (None, None)
    return TTFTCDF(s, q, slo, share_within(s, q, slo), p50, p90)


# -- gauges -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Gauge:
    key: str  # prfaas, link, pd-p, pd-d
    utilization: float  # the engine's, over the window
    note: str
    binding: bool


def gauges(snap: Any, top: Topology | None) -> tuple[Gauge, ...]:
    """Utilization per stage as the engine measures it over its window (PrfaaS: compute time
    over instance time; the link: bytes sent over what it could carry), in chain order."""
    st, link = snap.stages, snap.link
    order = ("prfaas", "link", "pd-p", "pd-d") if top is None or top.remote else ("pd-p", "pd-d")
    out = []
    for key in order:
        if key == "link":
            util = float(link.utilization)
            note = f"{to_gbps(link.utilization * link.capacity):.1f} of {to_gbps(link.capacity):.3g} Gbps"
        else:
            util = float(st[key].utilization)
            alive = f"{top.alive[key]}/{top.configured[key]} alive · " if top else ""
            note = f"{alive}queue {st[key].queue}"
        out.append(Gauge(key, util, note, top is not None and top.binding == key))
    return tuple(out)


def region_gauges(region: str, stages: Any, utilization: Mapping[str, float] | None
                  ) -> tuple[Gauge, ...]:
    """A topology region's chain as the pair's gauges, from the snapshot's `RegionStages`:
    each site feeding it and its link in, then its PD-P and PD-D, as the engine measures them.
    The one marked binding is the region's tightest row in the model (the running policy's
    utilization at its Λ, `utilization`), else (no model yet) the measured hottest."""
    several = len(stages.feeds) > 1
    rows: list[tuple[str, Gauge]] = []
    for f in stages.feeds:
        st, lk = f.stage, f.link_snap
        rows.append((f"site:{f.site}", Gauge(
            "prfaas", float(st.utilization),
            f"{f.site} {st.instances}/{st.instances + st.failed} alive · q{st.queue}",
            False)))
        carried = f"{to_gbps(lk.utilization * lk.capacity):.1f} of {to_gbps(lk.capacity):.3g} Gbps"
        rows.append((f"link:{f.link}", Gauge("link", float(lk.utilization),
                                             f"{f.site}: {carried}" if several else carried,
                                             False)))
    for key, st in (("pd-p", stages.pd_p), ("pd-d", stages.pd_d)):
        rows.append((f"{key}:{region}", Gauge(
            key, float(st.utilization),
            f"{st.instances}/{st.instances + st.failed} alive · queue {st.queue}", False)))
    model = {r: utilization[r] for r, _ in rows if utilization and r in utilization}
    binding = max(model, key=model.__getitem__) if model else stages.hottest
    return tuple(replace(g, binding=r == binding) for r, g in rows)


def bar(fraction: float, width: int) -> str:
    """A horizontal bar of `width` cells in eighths (full at 1, clipped to [0, 1])."""
    if width <= 0:
        return ""
    f = min(max(fraction if math.isfinite(fraction) else 0.0, 0.0), 1.0)
    eighths = round(f * width * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + (" ▏▎▍▌▋▊▉"[rest] if rest else "")).ljust(width, "·")[:width]
