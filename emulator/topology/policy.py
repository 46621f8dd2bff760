"""The threshold policy on a topology: per region a threshold t, a split N_p / N_d
(= pool - N_p) and the shares of its long requests (L > t) sent to each linked site.

Its Lambda is the single-pair model summed over the topology: each region's split statistics
come from `emulator.model.split_stats` (exact mode, as the routing bound), and every row of the
bound (site, egress, link, pd-p, pd-d) carries the policy's load per unit of Lambda; Lambda is
the smallest capacity / load. On a 1x1 topology that is the model's Lambda_max, and the search
below is the model's exhaustive (t, N_p) search.

The best policy: start from the preset's settings and from the bound's routing rounded to
thresholds (the edge whose remote share matches the bound's, its sites' shares, its split), then
coordinate search: per region, every threshold of its grid against every split (the others held);
then the long-request shares of every region at once, which at fixed thresholds and splits is a
small linear program; repeat until Lambda stops rising.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from emulator.model import SplitStats, split_stats
from emulator.topology.bound import Bound, BoundError, program, solve_milp
from emulator.topology.spec import Region, Topology

ROUNDS = 20  # coordinate rounds at most (the shipped presets settle in 2-5)
CONVERGED = 1e-6  # a round that raises Lambda by less ends the search


@dataclass(frozen=True)
class RegionSetting:
    t: float
    n_p: int
    n_d: int
    shares: dict[str, float]  # site -> part of the long requests


@dataclass(frozen=True)
class PolicyPoint:
    """A threshold policy's settings and its Lambda, with every row's use per unit Lambda."""

    settings: dict[str, RegionSetting]
    lambda_max: float
    loads: dict[str, float]  # row name -> load per req/s of Lambda (instances or bytes/s)
    capacity: dict[str, float]  # row name -> capacity (instances or bytes/s)
    p: dict[str, float]  # region -> share of its requests above t
    stats: _Stats | None = field(default=None, repr=False, compare=False)

    @property
    def binding(self) -> tuple[str, ...]:
        lam = self.lambda_max
        return tuple(n for n, load in self.loads.items()
                     if load > 0 and abs(load * lam - self.capacity[n]) <= 1e-9 * max(
                         1.0, self.capacity[n]))

    def to_dict(self, bound: Bound | None = None) -> dict:
        out = {"lambda_max": self.lambda_max, "mode": "exact",
               "binding": list(self.binding),
               "regions": {name: {"t": s.t, "n_p": s.n_p, "n_d": s.n_d, "p": self.p[name],
                                  "long_shares": {k: round(v, 6) for k, v in s.shares.items()}}
                           for name, s in self.settings.items()},
               "utilization": {n: (round(load * self.lambda_max / self.capacity[n], 6)
                                   if self.capacity[n] > 0 else None)
                               for n, load in self.loads.items()}}
        if bound is not None:
            out["gap_to_bound"] = (bound.lambda_max - self.lambda_max) / bound.lambda_max \
                if bound.lambda_max > 0 else 0.0
        return out


def preset_settings(topo: Topology) -> dict[str, RegionSetting]:
    """The policy a topology preset declares."""
    return {r.name: RegionSetting(r.threshold, r.n_p, r.n_d,
                                  {k.site: k.long_share for k in topo.links_of_region(r.name)})
            for r in topo.regions}


class _Stats:
    """Split statistics per (region, site) at thresholds, computed once: each region's whole
    threshold grid up front (what the coordinate steps sweep) and any other t on first use."""

    FIELDS = tuple(SplitStats.__dataclass_fields__)

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.grids: dict[str, np.ndarray] = {}
        self.full: dict[tuple[str, str | None], SplitStats] = {}
        self.index: dict[str, dict[float, int]] = {}
        self.extra: dict[tuple[str, str | None, float], SplitStats] = {}
        self.memo: dict[tuple, dict[str, float]] = {}
        for r in topo.regions:
            grid = np.asarray(r.lengths.threshold_grid(), dtype=float)
            self.grids[r.name] = grid
            self.index[r.name] = {float(x): i for i, x in enumerate(grid)}
            for site in self._sites(r):
                self.full[(r.name, site)] = self._compute(r, site, grid)

    def _sites(self, r: Region) -> list[str | None]:
        return [k.site for k in self.topo.links_of_region(r.name)] or [None]

    def _compute(self, r: Region, site: str | None, t: np.ndarray) -> SplitStats:
        prof = self.topo.site(site).profile if site is not None else r.profile
        return split_stats(r.lengths, prof, r.profile, t, "exact")

    def grid(self, r: Region) -> tuple[SplitStats, dict[str, SplitStats]]:
        """(local side, {site: long side}) over the region's whole threshold grid."""
        return self._split({s: self.full[(r.name, s)] for s in self._sites(r)})

    def at(self, r: Region, t: float) -> tuple[SplitStats, dict[str, SplitStats]]:
        """The same at one threshold (arrays of length 1)."""
        i = self.index[r.name].get(float(t))
        out = {}
        for s in self._sites(r):
            if i is not None:
                full = self.full[(r.name, s)]
                out[s] = SplitStats(*(getattr(full, f)[i:i + 1] for f in self.FIELDS))
            else:
                key = (r.name, s, float(t))
                if key not in self.extra:
                    self.extra[key] = self._compute(r, s, np.array([float(t)]))
                out[s] = self.extra[key]
        return self._split(out)

    def point_loads(self, r: Region, setting: RegionSetting) -> dict[str, float]:
        """Region r's load per unit Lambda on each row at one setting (memoized: the search
        asks for the others' loads at every step)."""
        key = (r.name, float(setting.t), tuple(sorted(setting.shares.items())))
        if key not in self.memo:
            st, per_site = self.at(r, setting.t)
            self.memo[key] = {n: float(np.asarray(v)[0]) for n, v in _region_loads(
                self.topo, r, st, per_site, setting.shares).items()}
        return self.memo[key]

    @staticmethod
    def _split(per: dict[str | None, SplitStats]) -> tuple[SplitStats, dict[str, SplitStats]]:
        local = next(iter(per.values()))
        return local, {s: v for s, v in per.items() if s is not None}


def _region_loads(topo: Topology, r: Region, st: SplitStats, per_site: dict[str, SplitStats],
                  shares: dict[str, float]) -> dict[str, np.ndarray]:
    """Region r's load on each row per unit Lambda, arrays over the thresholds of `st`, apart
    from pd-p (returned as PD-P seconds per unit Lambda; its capacity is N_p)."""
    p = st.p
    out: dict[str, np.ndarray] = {}
    for k in topo.links_of_region(r.name):
        s = per_site[k.site]
        a = shares.get(k.site, 0.0)
        tl = np.where(p > 0, np.nan_to_num(s.t_long), 0.0)
        sl = np.where(p > 0, np.nan_to_num(s.s_long), 0.0)
        out[f"site:{k.site}"] = out.get(f"site:{k.site}", 0.0) + r.share * p * a * tl
        out[f"egress:{k.site}"] = out.get(f"egress:{k.site}", 0.0) + r.share * p * a * sl
        out[f"link:{k.name}"] = r.share * p * a * sl
    out[f"pd-p:{r.name}"] = np.where(p < 1, r.share * (1 - p) * np.nan_to_num(st.t_short), 0.0)
    out[f"pd-d:{r.name}"] = np.full_like(p, r.share / r.decode.per_instance_rate)
    if not topo.links_of_region(r.name):  # nothing may leave: p > 0 is infeasible
        out[f"none:{r.name}"] = np.where(p > 0, np.inf, 0.0)
    return out


def _capacities(topo: Topology, settings: dict[str, RegionSetting]) -> dict[str, float]:
    cap: dict[str, float] = {}
    for s in topo.sites:
        cap[f"site:{s.name}"] = float(s.instances)
        cap[f"egress:{s.name}"] = np.inf if s.egress is None else s.egress
    for k in topo.links:
        cap[f"link:{k.name}"] = k.bandwidth
    for r in topo.regions:
        cap[f"pd-p:{r.name}"] = float(settings[r.name].n_p)
        cap[f"pd-d:{r.name}"] = float(settings[r.name].n_d)
        cap[f"none:{r.name}"] = 0.0
    return cap


def _lam(loads: dict[str, float], cap: dict[str, float]) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        vals = [cap[n] / x if x > 0 else np.inf for n, x in loads.items()]
    lam = min(vals, default=np.inf)
    return 0.0 if not np.isfinite(lam) or np.isnan(lam) else float(lam)


def evaluate_policy(topo: Topology, settings: dict[str, RegionSetting],
                    stats: _Stats | None = None) -> PolicyPoint:
    """Lambda of one threshold policy and its rows' loads."""
    stats = stats or _Stats(topo)
    loads: dict[str, float] = {}
    ps = {}
    for r in topo.regions:
        s = settings[r.name]
        ps[r.name] = float(stats.at(r, s.t)[0].p[0])
        for n, v in stats.point_loads(r, s).items():
            loads[n] = loads.get(n, 0.0) + v
    cap = _capacities(topo, settings)
    loads = {n: v for n, v in loads.items() if not (n.startswith("none:") and v == 0)}
    if any(np.isinf(v) for v in loads.values()):
        lam = 0.0
    else:
        lam = _lam(loads, cap)
    shown = {n: v for n, v in loads.items() if not n.startswith("egress:") or np.isfinite(cap[n])}
    return PolicyPoint(settings, lam, shown, {n: cap[n] for n in shown}, ps, stats)


def _region_step(topo: Topology, settings: dict[str, RegionSetting], r: Region,
                 stats: _Stats) -> RegionSetting:
    """Region r's best (t, N_p) over its whole threshold grid and every split, the others and
    its shares held: the highest Lambda of r's own rows and of the rows it shares (with the
    others' loads on them). Rows only the others load cap the topology's Lambda but not r's
    choice, so they are left out: a region with slack then still picks the setting that leaves
    it the most room instead of a tie. Ties: the lowest t, then the lowest N_p (as the
    single-pair search)."""
    s = settings[r.name]
    # the others' loads on the sites r uses (its links, pd-p and pd-d are its own)
    shared = {k.site for k in topo.links_of_region(r.name)}
    others: dict[str, float] = {}
    for q in topo.regions:
        if q.name == r.name or not shared & {k.site for k in topo.links_of_region(q.name)}:
            continue
        for n, v in stats.point_loads(q, settings[q.name]).items():
            if n.startswith(("site:", "egress:")):
                others[n] = others.get(n, 0.0) + v
    cap = _capacities(topo, settings)
    grid = stats.grids[r.name]
    st, per_site = stats.grid(r)
    mine = _region_loads(topo, r, st, per_site, s.shares)
    # rows region r shares with the others (sites, egress) and its own links
    lam_t = np.full(len(grid), np.inf)
    for n, v in mine.items():
        if n.startswith(("pd-p:", "pd-d:")):
            continue
        load = np.asarray(v, dtype=float) + others.get(n, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam_n = np.where(load > 0, cap[n] / np.where(load > 0, load, 1.0), np.inf)
        lam_t = np.minimum(lam_t, lam_n)
    pdp = np.asarray(mine[f"pd-p:{r.name}"], dtype=float)
    per_d = r.decode.per_instance_rate / max(r.share, 1e-300)  # Lambda per decode instance
    if r.share <= 0:
        return s
    if len(topo.regions) == 1:  # the single-pair search: every split, its tie rule
        n_p = np.arange(r.pool + 1, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam_p = np.where(pdp[:, None] > 0, n_p[None, :] / np.where(pdp > 0, pdp, 1.0)[:, None],
                             np.inf)
        lam = np.minimum(np.minimum(lam_t[:, None], lam_p), (r.pool - n_p)[None, :] * per_d)
        lam = np.where(np.isfinite(lam), lam, 0.0)
        it, ip = np.unravel_index(int(np.argmax(lam)), lam.shape)
        return RegionSetting(float(grid[it]), int(ip), int(r.pool - ip), s.shares)
    n_p, lam = _best_splits(lam_t, pdp, per_d, r.pool)
    it = int(np.argmax(lam))
    return RegionSetting(float(grid[it]), int(n_p[it]), int(r.pool - n_p[it]), s.shares)


def _best_splits(cap: np.ndarray, pdp: np.ndarray, per_d: float,
                 pool: int) -> tuple[np.ndarray, np.ndarray]:
    """Per threshold, the split N_p maximizing min(cap, N_p / pdp, (pool - N_p) per_d) and that
    maximum, in O(thresholds): the two middle terms cross at N* = pool per_d pdp /
    (1 + per_d pdp), so the best whole split is next to N*; when `cap` binds, the lowest split
    that reaches it (more decode headroom)."""
    def value(n: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            prefill = np.where(pdp > 0, n / np.where(pdp > 0, pdp, 1.0), np.inf)
        return np.minimum(np.minimum(cap, prefill), (pool - n) * per_d)

    star = pool * per_d * pdp / (1.0 + per_d * pdp)
    lo = np.clip(np.floor(star), 0, pool)
    hi = np.clip(np.ceil(star), 0, pool)
    v_lo, v_hi = value(lo), value(hi)
    n = np.where(v_hi > v_lo, hi, lo)
    best = np.maximum(v_lo, v_hi)
    least = np.clip(np.ceil(cap * pdp - 1e-9), 0, pool)  # the lowest split reaching `cap`
    reach = np.isfinite(cap) & (value(least) >= best * (1 - 1e-12))
    n = np.where(reach & (least < n), least, n)
    best = np.where(np.isfinite(best), best, 0.0)
    return n.astype(int), best


def _share_step(topo: Topology, settings: dict[str, RegionSetting],
                stats: _Stats) -> dict[str, RegionSetting]:
    """The best long-request shares and splits of every region at once, their thresholds
    held: the routing bound's program with two bins per region (below and above t), the short
    bin held local and the long bin remote. A region's long requests then go to its sites in
    one set of shares whatever their length, which is the threshold policy."""
    fixed = replace(topo, regions=tuple(replace(r, threshold=settings[r.name].t)
                                        for r in topo.regions))
    prog = program(fixed, max_bins=1)
    ub = np.full(prog.n_vars, np.inf)
    for r in fixed.regions:
        bins = prog.bins[r.name]
        for i in range(len(bins)):
            long = bool(bins.lo[i] >= r.threshold - 1e-9)
            if long:
                ub[prog.var(r.name, i, 0)] = 0.0
            else:
                for j in range(len(prog.links[r.name])):
                    ub[prog.var(r.name, i, 1 + j)] = 0.0
    try:
        x, n_p, n_d = solve_milp(prog, ub)
    except BoundError:
        return settings
    out = dict(settings)
    for i, r in enumerate(fixed.regions):
        bins, sites = prog.bins[r.name], prog.links[r.name]
        remote = {s: sum(x[prog.var(r.name, b, 1 + j)] for b in range(len(bins)))
                  for j, s in enumerate(sites)}
        total = sum(remote.values())
        shares = ({s: float(v / total) for s, v in remote.items()} if total > 1e-12
                  else settings[r.name].shares)
        out[r.name] = RegionSetting(r.threshold, int(n_p[i]), int(n_d[i]), shares)
    return out


def rounded(topo: Topology, bound: Bound) -> dict[str, RegionSetting]:
    """The bound's routing rounded to a threshold policy: per region the grid threshold whose
    remote share is nearest the bound's, the bound's split and its sites' shares of the remote
    rate (equal when nothing is remote)."""
    out = {}
    for r in topo.regions:
        rr = bound.routing[r.name]
        remote = float(np.dot(rr.bins.prob, 1.0 - rr.local))
        grid = np.asarray(r.lengths.threshold_grid(), dtype=float)
        if not topo.links_of_region(r.name):
            grid = grid[grid >= r.lengths.support[1]]
        p = np.asarray(r.lengths.p_above(grid), dtype=float)
        t = float(grid[int(np.argmin(np.abs(p - remote)))])
        per = {s: float(np.dot(rr.bins.prob, v)) for s, v in rr.sites.items()}
        total = sum(per.values())
        shares = ({s: v / total for s, v in per.items()} if total > 0 else
                  {s: 1.0 / len(per) for s in per})
        out[r.name] = RegionSetting(t, bound.n_p[r.name], r.pool - bound.n_p[r.name], shares)
    return out


def search_policy(topo: Topology, bound: Bound | None = None, *,
                  rounds: int = ROUNDS) -> tuple[PolicyPoint, int]:
    """The best threshold policy found (from the preset's settings and from the rounded
    bound) and the coordinate rounds it took."""
    stats = _Stats(topo)
    starts = [preset_settings(topo)]
    if bound is not None:
        starts.append(rounded(topo, bound))
    best: PolicyPoint | None = None
    used = 0
    for settings in starts:
        point = evaluate_policy(topo, settings, stats)
        for _ in range(rounds):
            used += 1
            before = point.lambda_max
            for r in topo.regions:
                cand = {**settings, r.name: _region_step(topo, settings, r, stats)}
                if (got := evaluate_policy(topo, cand, stats)).lambda_max >= \
                        point.lambda_max * (1 - 1e-12):
                    settings, point = cand, got  # ties move: to the step's lowest t and N_p
            if len(topo.regions) > 1 or len(topo.links) > 1:  # else the step was exhaustive
                cand = _share_step(topo, settings, stats)
                if (got := evaluate_policy(topo, cand, stats)).lambda_max > point.lambda_max:
                    settings, point = cand, got
            if point.lambda_max <= before * (1 + CONVERGED):
                break
        if best is None or point.lambda_max > best.lambda_max * (1 + 1e-12):
            best = point
    assert best is not None
    return best, used
