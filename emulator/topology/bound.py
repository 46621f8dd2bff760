"""The routing bound: the largest common scale Lambda of every region's offered rate that any
routing sustains, as a mixed-integer linear program solved by scipy's HiGHS.

Variables, per region r and length bin b (`emulator.topology.bins`): the rate of bin b prefilled
locally and the rate sent over each of r's links; per region the integers N_p and N_d. With
s_r the region's share and q_b the bin's probability, each bin's rates add up to s_r q_b Lambda.
Constraints (Eqs. 3-5 per bin, summed; names as reported):

- ``site:S``    sum of T_S(b) x over S's links            <= instances of S
- ``egress:S``  sum of S_kv(b) x over S's links           <= S's egress (when it has one)
- ``link:S->R`` sum of S_kv(b) x over the link            <= its bandwidth
- ``pd-p:R``    sum of T_R(b) x over R's local rates      <= N_p
- ``pd-d:R``    s_R Lambda / (BS_max / (T_decode L_out))  <= N_d
- ``pool:R``    N_p + N_d                                 <= R's pool

Costs are the exact conditional expectations per bin, so the bound is in the model's ``exact``
mode (the paper's linearization is not additive over bins; no linear program matches it).

Shadow prices: the integer split is fixed at the MILP's optimum and the linear program at that
split is solved again; its duals (HiGHS's ``ineqlin.marginals``) are dLambda/d(capacity), in
req/s per instance (site, pd-p, pd-d) or per Gbps (link, egress). ``pool:R`` is the better of R's
pd-p and pd-d prices: one more instance, put where it is worth more, split unchanged. A price is
exact for small changes at that split; a change large enough to move the best integer split can
be worth more (the MILP re-solved), never less.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from emulator.topology.bins import MAX_BINS, Bins, length_bins
from emulator.topology.errors import BoundError
from emulator.topology.spec import Topology
from emulator.units import GBPS

GB = 1e9  # bytes are scaled to GB in the program (rates of order 1, bandwidths of order 1-1e3)
BINDING_SLACK = 1e-7  # relative slack under which a constraint binds
PLUS_RESOLVES = 12  # +1% re-solves per answer (each an LP of the whole topology)
MIP_GAP = 1e-9  # HiGHS stops at 1e-4 by default: a bound must not stop short of the best split




@dataclass(frozen=True)
class Row:
    """One inequality: its name, kind and capacity in the user's units (instances, Gbps)."""

    name: str
    kind: str  # site, egress, link, pd-p, pd-d, pool
    capacity: float  # instances, or Gbps for link/egress

    @property
    def per_gbps(self) -> bool:
        return self.kind in ("link", "egress")


@dataclass(frozen=True)
class Program:
    """The bound's program for one topology: sparse rows over the variables
    [Lambda, per region (per bin: local, one per link), then N_p, N_d per region]."""

    topology: Topology
    bins: dict[str, Bins]
    links: dict[str, tuple[str, ...]]  # region -> its links' site names, in order
    offset: dict[str, int]  # region -> index of its first routing variable
    n_route: int  # routing variables, Lambda included
    a_ub: sparse.csr_matrix
    b_ub: np.ndarray
    a_eq: sparse.csr_matrix
    rows: tuple[Row, ...]
    scale: np.ndarray  # row units -> user units (1 for instances, GB/GBPS for bandwidths)

    @property
    def n_vars(self) -> int:
        return self.a_ub.shape[1]

    def var(self, region: str, b: int, j: int) -> int:
        """Index of bin b's rate in `region` at place j (0: local, 1 + i: its i-th link)."""
        return self.offset[region] + b * (1 + len(self.links[region])) + j

    def n_index(self, i: int) -> tuple[int, int]:
        """Indices of region i's N_p and N_d."""
        return self.n_route + 2 * i, self.n_route + 2 * i + 1


def program(topo: Topology, *, edges: dict[str, list[float]] | None = None,
            max_bins: int = MAX_BINS) -> Program:
    """Build the bound's program; `edges`: thresholds per region that must be bin edges (every
    region's own threshold always is)."""
    edges = edges or {}
    bins = {r.name: length_bins(r.lengths, [r.threshold, *edges.get(r.name, ())], max_bins)
            for r in topo.regions}
    links = {r.name: tuple(k.site for k in topo.links_of_region(r.name)) for r in topo.regions}
    offset, n = {}, 1
    for r in topo.regions:
        offset[r.name] = n
        n += len(bins[r.name]) * (1 + len(links[r.name]))
    n_route, n_vars = n, n + 2 * len(topo.regions)
    rows: list[Row] = []
    scale: list[float] = []
    ri: list[int] = []
    ci: list[int] = []
    vals: list[float] = []
    rhs: list[float] = []

    def add(name: str, kind: str, cap: float, cols: list[int], coefs, unit: float) -> None:
        r = len(rows)
        rows.append(Row(name, kind, cap))
        scale.append(unit)
        ri.extend([r] * len(cols))
        ci.extend(cols)
        vals.extend(np.asarray(coefs, dtype=float).tolist())

    prog = Program(topo, bins, links, offset, n_route, None, None, None, (), np.zeros(0))
    for s in topo.sites:
        cols_t, t_coef, s_coef = [], [], []
        for k in topo.links_of_site(s.name):
            b = bins[k.region]
            j = 1 + links[k.region].index(s.name)
            cols = [prog.var(k.region, i, j) for i in range(len(b))]
            kv = b.kv(s.profile, "exact") / GB
            cols_t += cols
            t_coef += b.prefill(s.profile, "exact").tolist()
            s_coef += kv.tolist()
            add(f"link:{k.name}", "link", k.bandwidth / GBPS, cols, kv, GB / GBPS)
            rhs.append(k.bandwidth / GB)
        add(f"site:{s.name}", "site", s.instances, cols_t, t_coef, 1.0)
        rhs.append(float(s.instances))
        if s.egress is not None:
            add(f"egress:{s.name}", "egress", s.egress / GBPS, cols_t, s_coef, GB / GBPS)
            rhs.append(s.egress / GB)
    for i, r in enumerate(topo.regions):
        b = bins[r.name]
        n_p, n_d = prog.n_index(i)
        cols = [prog.var(r.name, x, 0) for x in range(len(b))]
        add(f"pd-p:{r.name}", "pd-p", r.n_p, [*cols, n_p], [*b.prefill(r.profile, "exact"), -1.0], 1.0)
        rhs.append(0.0)
        add(f"pd-d:{r.name}", "pd-d", r.n_d, [0, n_d], [r.share / r.decode.per_instance_rate, -1.0], 1.0)
        rhs.append(0.0)
        add(f"pool:{r.name}", "pool", r.pool, [n_p, n_d], [1.0, 1.0], 1.0)
        rhs.append(float(r.pool))
    a_ub = sparse.csr_matrix((vals, (ri, ci)), shape=(len(rows), n_vars))
    # each bin's rates add up to its part of the region's rate
    ei, ec, ev = [], [], []
    row = 0
    for r in topo.regions:
        b = bins[r.name]
        for x in range(len(b)):
            for j in range(1 + len(links[r.name])):
                ei.append(row)
                ec.append(prog.var(r.name, x, j))
                ev.append(1.0)
            ei.append(row)
            ec.append(0)
            ev.append(-r.share * float(b.prob[x]))
            row += 1
    a_eq = sparse.csr_matrix((ev, (ei, ec)), shape=(row, n_vars))
    return Program(topo, bins, links, offset, n_route, a_ub, np.array(rhs), a_eq, tuple(rows),
                   np.array(scale))


@dataclass(frozen=True)
class RegionRouting:
    """Where each of a region's length bins is prefilled: fractions that sum to 1 per bin."""

    bins: Bins
    local: np.ndarray
    sites: dict[str, np.ndarray]

    def to_dict(self) -> dict:
        return {"bins": [{"lo": float(lo), "hi": float(hi), "share": float(q),
                          "local": round(float(loc), 6),
                          "sites": {s: round(float(v[i]), 6) for s, v in self.sites.items()}}
                         for i, (lo, hi, q, loc) in enumerate(zip(self.bins.lo, self.bins.hi,
                                                                  self.bins.prob, self.local,
                                                                  strict=True))],
                "remote_share": round(float(np.dot(self.bins.prob, 1.0 - self.local)), 6)}


@dataclass(frozen=True)
class Bound:
    """The bound's optimum: Lambda, the split, the routing, each row's use and price."""

    lambda_max: float
    n_p: dict[str, int]
    n_d: dict[str, int]
    routing: dict[str, RegionRouting]
    rows: tuple[Row, ...]
    used: dict[str, float]  # row name -> use at Lambda (instances or Gbps)
    capacity: dict[str, float]  # at the bound's split (pd-p / pd-d: its N_p / N_d)
    shadow_prices: dict[str, float]  # req/s per instance or per Gbps
    binding: tuple[str, ...]
    variables: int
    constraints: int
    integers: int
    program: Program | None = None  # what was solved (for re-solves)

    def finite_difference(self, name: str, rel: float = 0.01) -> float:
        """Row `name`'s price by re-solving the LP at the bound's split with `rel` more of its
        capacity: (Lambda' - Lambda) / the added capacity, in the price's units."""
        prog = self.program
        i = [r.name for r in prog.rows].index(name)
        row = prog.rows[i]
        if row.kind == "pool":
            raise ValueError("a pool's price is the better of its pd-p and pd-d prices")
        added = rel * self.capacity[name]  # instances, or Gbps
        n_p = [self.n_p[r.name] for r in prog.topology.regions]
        n_d = [self.n_d[r.name] for r in prog.topology.regions]
        lam = fixed_lambda(prog, n_p, n_d, {name: added / prog.scale[i]})
        return (lam - self.lambda_max) / added

    def plus_1pct(self) -> dict[str, float]:
        """Each binding row's gain per unit over a +1% step, re-solved at the split: the shadow
        price unless another row starts to bind within that 1% (then less). A row priced 0 gains
        0 (the value is concave: no step is worth more than a price); re-solved are the
        PLUS_RESOLVES highest-priced rows, the rest are left out."""
        if not hasattr(self, "_plus"):
            rows = [n for n in self.binding if self.capacity[n] > 0]
            priced = sorted((n for n in rows if self.shadow_prices[n] > 1e-12),
                            key=lambda n: -self.shadow_prices[n])[:PLUS_RESOLVES]
            plus = {n: 0.0 for n in rows if self.shadow_prices[n] <= 1e-12}
            plus |= {n: self.finite_difference(n) for n in priced}
            object.__setattr__(self, "_plus", {n: plus[n] for n in rows if n in plus})
        return self._plus

    def to_dict(self) -> dict:
        return {
            "lambda_max": self.lambda_max, "mode": "exact",
            "n_p": self.n_p, "n_d": self.n_d,
            "binding": list(self.binding),
            "shadow_prices": {k: round(v, 9) for k, v in self.shadow_prices.items()},
            "plus_1pct": {k: round(v, 9) for k, v in self.plus_1pct().items()},
            "shadow_price_units": {r.name: "req/s per Gbps" if r.per_gbps else
                                   "req/s per instance" for r in self.rows},
            "utilization": {r.name: (round(self.used[r.name] / self.capacity[r.name], 6)
                                     if self.capacity[r.name] > 0 else None) for r in self.rows},
            "routing": {name: rr.to_dict() for name, rr in self.routing.items()},
            "lp": {"variables": self.variables, "constraints": self.constraints,
                   "integers": self.integers},
            "prices_at_fixed_split": "duals of the LP with N_p/N_d fixed at the MILP optimum: "
                                     "exact for small changes at that split; a change that "
                                     "moves the best split is worth at least this",
        }


_FD_LOCK = threading.Lock()


@contextlib.contextmanager
def _solver_quiet() -> Iterator[None]:
    """HiGHS writes some warnings (badly scaled coefficients) straight to file descriptor 1,
    past Python's sys.stdout: during a solve, fd 1 points at stderr, so `--json` piped to a
    file or a program stays JSON. A terminal is left alone (the dashboard draws on it from
    another thread while a solve runs); one solve at a time swaps the shared descriptor."""
    try:
        sys.stdout.flush()
        swap = not os.isatty(1)
    except (OSError, ValueError):  # no real stdout (a captured stream): nothing to guard
        swap = False
    if not swap:
        yield
        return
    with _FD_LOCK:
        saved = os.dup(1)
        os.dup2(2, 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def _fixed(prog: Program, n_p: np.ndarray, n_d: np.ndarray,
           rhs_extra: dict[str, float] | None = None):
    """The LP at a fixed split (the N columns dropped, their values moved to the right-hand
    side); `rhs_extra` adds to rows' capacities in row units (for finite differences)."""
    k = prog.n_route
    a = prog.a_ub[:, :k]
    n_vals = np.empty(prog.n_vars - k)
    n_vals[0::2], n_vals[1::2] = n_p, n_d
    b = prog.b_ub - prog.a_ub[:, k:] @ n_vals
    for name, extra in (rhs_extra or {}).items():
        b[[r.name for r in prog.rows].index(name)] += extra
    keep = np.array([r.kind != "pool" for r in prog.rows])
    c = np.zeros(k)
    c[0] = -1.0
    with _solver_quiet():
        res = linprog(c, A_ub=a[keep], b_ub=b[keep], A_eq=prog.a_eq[:, :k],
                      b_eq=np.zeros(prog.a_eq.shape[0]), bounds=(0, None), method="highs")
    if res.status != 0:
        raise BoundError(f"HiGHS: {res.message}")
    return res, keep, b


def solve_milp(prog: Program, ub: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """The MILP's optimum: the variables and the best integer split (N_p, N_d per region, in
    region order; instances the optimum leaves idle go to decode, as the single-pair model's
    N_d = pool - N_p). `ub`: upper bounds on the variables (default none)."""
    c = np.zeros(prog.n_vars)
    c[0] = -1.0
    integrality = np.zeros(prog.n_vars)
    integrality[prog.n_route:] = 1
    with _solver_quiet():
        res = milp(c, constraints=[LinearConstraint(prog.a_ub, -np.inf, prog.b_ub),
                                   LinearConstraint(prog.a_eq, 0.0, 0.0)],
                   integrality=integrality, bounds=Bounds(0, np.inf if ub is None else ub),
                   options={"mip_rel_gap": MIP_GAP})
    if res.status != 0 or res.x is None:
        raise BoundError(f"HiGHS: {res.message}")
    n = np.round(res.x[prog.n_route:]).astype(int)
    n_p = n[0::2]
    pools = np.array([r.pool for r in prog.topology.regions])
    return res.x, n_p, pools - n_p


def solve_split(prog: Program) -> tuple[np.ndarray, np.ndarray]:
    """The MILP's best integer split (N_p, N_d per region, in region order)."""
    _, n_p, n_d = solve_milp(prog)
    return n_p, n_d


def fixed_lambda(prog: Program, n_p, n_d, rhs_extra: dict[str, float] | None = None) -> float:
    """Lambda at a fixed split, optionally with extra capacity on named rows (row units:
    instances, or GB/s for links and egress)."""
    return float(-_fixed(prog, np.asarray(n_p), np.asarray(n_d), rhs_extra)[0].fun)


def routing_bound(topo: Topology, *, edges: dict[str, list[float]] | None = None,
                  max_bins: int = MAX_BINS, prog: Program | None = None) -> Bound:
    """The routing bound of a topology, with its routing, binding rows and shadow prices."""
    prog = prog or program(topo, edges=edges, max_bins=max_bins)
    _, n_p, n_d = solve_milp(prog)
    res, keep, b = _fixed(prog, n_p, n_d)
    lam = float(-res.fun)
    x = res.x
    slack = np.full(len(prog.rows), np.nan)
    slack[keep] = res.ineqlin.residual
    marg = np.zeros(len(prog.rows))
    marg[keep] = -res.ineqlin.marginals
    names = [r.name for r in prog.rows]
    used, capacity, prices = {}, {}, {}
    split = {r.name: (int(n_p[i]), int(n_d[i])) for i, r in enumerate(topo.regions)}
    for i, row in enumerate(prog.rows):
        unit = prog.scale[i]
        if row.kind == "pool":
            region = row.name.split(":", 1)[1]
            capacity[row.name] = float(row.capacity)
            used[row.name] = float(sum(split[region]))
            prices[row.name] = max(prices[f"pd-p:{region}"], prices[f"pd-d:{region}"])
            continue
        cap = b[i] * unit
        if row.kind in ("pd-p", "pd-d"):
            region = row.name.split(":", 1)[1]
            cap = float(split[region][0 if row.kind == "pd-p" else 1])
        capacity[row.name] = float(cap)
        used[row.name] = float(cap - slack[i] * unit)
        prices[row.name] = float(marg[i] / unit)
    binding = tuple(n for i, n in enumerate(names) if prog.rows[i].kind != "pool" and
                    slack[i] <= BINDING_SLACK * max(1.0, abs(b[i])) and
                    (prices[n] > 1e-9 or capacity[n] > 0))
    routing = {}
    for r in topo.regions:
        bn = prog.bins[r.name]
        rate = np.maximum(r.share * bn.prob * lam, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            def frac(j: int, bn=bn, rate=rate, name=r.name) -> np.ndarray:
                v = np.array([x[prog.var(name, i, j)] for i in range(len(bn))])
                return np.where(rate > 0, np.clip(v / np.where(rate > 0, rate, 1.0), 0, 1),
                                1.0 if j == 0 else 0.0)
        routing[r.name] = RegionRouting(bn, frac(0), {s: frac(1 + j) for j, s in
                                                      enumerate(prog.links[r.name])})
    return Bound(lam, {k: v[0] for k, v in split.items()}, {k: v[1] for k, v in split.items()},
                 routing, prog.rows, used, capacity, prices, binding, prog.n_vars,
                 prog.a_ub.shape[0] + prog.a_eq.shape[0], 2 * len(topo.regions), prog)
