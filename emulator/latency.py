"""Latency in the closed-form model: predicted TTFT, the SLO-bound rate and the SLO-optimal
(t, N_p / N_d).

Lambda_max says where queues blow up; an operator needs the rate at which the TTFT quantile still
meets an SLO, which is lower and can prefer another (t, split). TTFT follows the emulator's
definition (docs/emulator-api.md): arrival to the end of the first decode step. Per path
(PrfaaS for L > t, PD-P for L <= t), with Poisson arrivals split by p:

    TTFT = W_prefill + X + delay + W_decode + first decode step

- W_prefill: the FIFO M/G/c wait of the path's prefill stage. Allen-Cunneen, fed with the exact
  first and second moments of the service time X (E[T(L)^k | side] from the distributions'
  partial moments; a profile is piecewise polynomial, so T^2 is too):
  P(W > 0) = C(c, a) (Erlang C), E[W] = C / (c mu - lambda) * (1 + Cs^2) / 2. It is exact for
  M/M/c and, with c = 1, for every M/G/1 (Pollaczek-Khinchine).
- X: prefill time T(L). An instance is held until its KV has left (layer-wise pipelining: with
  ample bandwidth the transfer ends with prefill, so there is no tail); when the link binds
  (Theta_b < Theta_c in Eq. 3) the instances are paced: X = T(L) * Theta_c / Theta_b, which makes
  the stage saturate at Theta_prfaas as the emulator's does.
- delay: the link's (or RDMA's) propagation delay.
- W_decode: M/D/c wait for one of N_d * BS_max decode slots (service L_out * T_decode), its mean.
- first decode step: T_decode, plus half a step when the decode instance is already stepping
  (a request joins at the next step boundary).

Tail approximation (stated, since the exact M/G/c wait distribution has no closed form): the
wait is 0 with probability 1 - C and exponential beyond, with the Allen-Cunneen mean, as in
M/M/c; the service time's own distribution is kept exactly (conditional length quantiles mapped
through T), and the two are independent (FIFO). The overall quantile is that of the p-mixture of
the two paths.

Everything is vectorized over thresholds and splits like the optimizer: the SLO-bound rate is a
bisection on the rate done for the whole grid at once, checking P(TTFT > target) <= 1 - q.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import gammaln, ndtr, ndtri, pdtr

from emulator.distributions import Discrete, Empirical, LengthDistribution, TruncatedLogNormal
from emulator.model import Knobs, SplitStats, System, ceilings, split_stats
from emulator.profiles import Curve, Profile

NODES = 256  # quantile nodes of the service time for one operating point
GRID_NODES = 64  # ... in the vectorized (t, split) search
TOP = 64  # grid points with the highest Lambda_max that set the SLO search's floor ...
FLOOR_STEPS = 6  # ... to Lambda_max / 64: a floor only needs to be feasible, not tight
RATE_STEPS = 16  # bisection steps on the rate: resolution Lambda_max / 2^16 (0.002%)
SECTIONS = 63  # rates per multisection call: 3 calls reach Lambda_max / 2^18
BUDGET = 1 << 15  # points x rates x nodes per grid call: more rates when fewer points are left
# (a call costs ~0.3 ms plus ~15 ns per element since the in-place tails; 2^15 measured a
# little faster than 2^14 and 2^16 on paper-case-study, within this machine's noise)
QUANTILE_LEVELS = 3  # halvings per evaluation in a TTFT quantile's bisection (7 x per row)
NEAR = 0.03  # the winner's 256-node rate lies within 1.2% of its 64-node one on the presets


_QUIET: ContextVar[bool] = ContextVar("latency_quiet", default=False)


def _quiet(fn):
    """Runs `fn` with numpy's floating-point warnings off, entering np.errstate only in the
    outermost such call: the queueing formulas divide by zero and overflow on purpose (inf
    and nan mark unstable queues and empty sides, masked right after), and a search makes
    thousands of nested calls where an errstate per formula cost ~60 us per tail evaluation."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if _QUIET.get():
            return fn(*args, **kwargs)
        token = _QUIET.set(True)
        try:
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        finally:
            _QUIET.reset(token)
    return run


# -- exact moments of the service time ------------------------------------------------------
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


# -- queueing ------------------------------------------------------------------------------
SMALL_C = 16  # up to this many servers Erlang B comes from its recurrence, not from pdtr


def _erlang_b(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B for c >= 1, a > 0 (c of a's shape, or one value). Few, whole servers (prefill): the
    recurrence 1/B(n) = 1 + n/a * 1/B(n-1), stable and ~10x cheaper than the Poisson cdf
    (pdtr, an incomplete gamma, is most of a grid's queueing cost). Many (decode slots): the
    Poisson pmf / cdf, on the distinct (c, a) pairs only (decode has one c per N_d)."""
    cmax = int(c.max()) if c.size else 0
    if cmax <= SMALL_C and (c == np.floor(c)).all():
        same = bool((c == cmax).all())
        inv = 1.0 + 1.0 / a  # n = 1 (every c >= 1 here): 1 + (1 / a) * 1, the same bits
        if not same:
            inv = np.broadcast_to(inv, np.broadcast_shapes(c.shape, a.shape))
        for n in range(2, cmax + 1):
            step = 1.0 + (n / a) * inv
            inv = step if same else np.where(n <= c, step, inv)
        return 1.0 / inv
    if c.size > 1 and c.shape != a.shape:  # the distinct pairs below need one shape
        c, a = np.broadcast_arrays(c, a)
    if c.size >= 64:
        uc, ic = np.unique(c, return_inverse=True)
        ua, ia = np.unique(a, return_inverse=True)
        if uc.size * ua.size < c.size // 2:
            return _erlang_b(uc[:, None], ua[None, :])[ic, ia].reshape(c.shape)
    pmf = np.exp(c * np.log(a) - a - gammaln(c + 1))
    cdf = pdtr(c, a)
    return np.where(cdf > 0, pmf / np.where(cdf > 0, cdf, 1.0), 1.0)


@_quiet
def erlang_c(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """P(wait > 0) in M/M/c with offered load a = lambda E[S] (1 when a >= c), vectorized:
    Erlang B (`_erlang_b`), then C = B / (1 - rho (1 - B))."""
    c = np.asarray(c, dtype=float)
    a = np.asarray(a, dtype=float)
    cs, apos = np.maximum(c, 1.0), np.maximum(a, 1e-300)
    b = _erlang_b(cs, apos)
    rho = a / cs
    out = b / (1 - rho * (1 - b))
    out = np.where(a <= 0, 0.0, out)
    return np.where((rho >= 1) | (c < 1), 1.0, np.minimum(np.maximum(out, 0.0), 1.0))


@_quiet
def mgc_wait(lam: np.ndarray, c: np.ndarray, es: np.ndarray, es2: np.ndarray):
    """Allen-Cunneen M/G/c: (P(wait > 0), mean wait, mean wait given a wait); inf when unstable."""
    lam, c, es, es2 = (np.asarray(x, dtype=float) for x in (lam, c, es, es2))
    a = lam * es
    scv = np.where(es > 0, es2 / np.where(es > 0, es * es, 1.0) - 1.0, 0.0)
    scv = np.maximum(np.nan_to_num(scv), 0.0)
    pw = erlang_c(c, a)
    stable = (a < c) & (c >= 1)
    cond = np.where(stable, es * (1 + scv) / (2 * np.where(stable, c - a, 1.0)), np.inf)
    cond = np.where(lam <= 0, 0.0, cond)
    pw = np.where(lam <= 0, 0.0, pw)
    return pw, np.where(pw > 0, pw * cond, 0.0), cond


@dataclass(frozen=True)
class Path:
    """One route through the system, as arrays broadcastable over a grid: its share of the
    arrivals, servers, exact moments of the prefill time T, T's quantile nodes, the KV
    production rate of one busy instance over the link's capacity, and the fixed delay."""

    share: np.ndarray
    servers: np.ndarray
    es: np.ndarray  # E[T]
    es2: np.ndarray  # E[T^2]
    nodes: np.ndarray  # T quantile nodes, trailing axis
    pace: np.ndarray | float  # (E[S] / E[T]) / B: n busy instances want n * pace of the link
    delay: np.ndarray | float
    weights: np.ndarray | None = None  # the nodes' probabilities (None: equal)
    # rate-independent parts of `path_state`, filled by `_prepare` for repeated evaluation
    ac: np.ndarray | None = None  # Allen-Cunneen's (1 + Cs^2) / 2
    busy: np.ndarray | None = None
    drain: np.ndarray | None = None
    paced: bool | None = None


def _scv(p: Path) -> np.ndarray:
    es = p.es
    return np.maximum(np.nan_to_num(p.es2 / np.where(es > 0, es * es, 1.0) - 1.0), 0.0)


def _drain(es: np.ndarray, c: np.ndarray, busy: np.ndarray) -> np.ndarray:
    """Service completions per second with all c busy (the queue's drain rate)."""
    return np.where(es > 0, c / np.where(es > 0, es * busy, 1.0), np.inf)


def _prepare(lay: Layout) -> Layout:
    """The layout with each path's rate-independent queue terms computed once (a search
    evaluates the same points at many rates; same arithmetic, so the same bits)."""
    paths = []
    for p in lay.paths:
        c = np.asarray(p.servers, dtype=float)
        busy = _stretch(c, p.pace)
        paths.append(replace(p, ac=(1 + _scv(p)) / 2, busy=busy, drain=_drain(p.es, c, busy),
                             paced=bool(c.size and np.any(np.asarray(p.pace) * np.max(c) > 1.0))))
    return replace(lay, paths=(paths[0], paths[1]))


@dataclass(frozen=True)
class Layout:
    """Both paths plus the decode stage, for a grid of operating points."""

    paths: tuple[Path, Path]
    decode_slots: np.ndarray
    decode_service: float
    t_decode: float
    n_d: np.ndarray


@dataclass(frozen=True)
class PathState:
    """A path at one offered rate: P(wait), the mean wait given a wait, and the link's stretch
    of the service time for a request that started without waiting (free) or after one (busy)."""

    pw: np.ndarray
    cond: np.ndarray
    free: np.ndarray
    busy: np.ndarray
    paced: bool = True  # False: free and busy are all 1 (no stretch)

    def mean_wait(self) -> np.ndarray:
        return np.where(self.pw > 0, self.pw * self.cond, 0.0)


def _stretch(n: np.ndarray, pace) -> np.ndarray:
    """Service stretch with n instances sending at once: the link shares B among them."""
    return np.maximum(1.0, n * pace)


@_quiet
def path_state(p: Path, lam: np.ndarray, iterations: int = 8) -> PathState:
    """Allen-Cunneen with link pacing. A request that waited starts while all c instances are
    busy, so its service is stretched by max(1, c pace) and the queue drains at Theta_prfaas
    (Eq. 3's min); one that did not meets n < c busy ones, n distributed as in M/M/c. The
    offered load a = lambda E[T] * (mean stretch) is solved by a few fixed-point steps."""
    lam = np.asarray(lam, dtype=float) * p.share
    c = np.asarray(p.servers, dtype=float)
    es = p.es
    ac = (1 + _scv(p)) / 2 if p.ac is None else p.ac
    busy = _stretch(c, p.pace) if p.busy is None else p.busy
    paced = (bool(c.size and np.any(np.asarray(p.pace) * np.max(c) > 1.0)) if p.paced is None
             else p.paced)
    kmax = int(np.max(c)) if paced and np.size(c) else 0
    free = np.ones(np.broadcast(lam, es, c).shape)
    a = lam * es
    for _ in range(iterations if paced else 0):  # unpaced: a is final, no fixed point
        pw = erlang_c(c, a)
        if paced:  # mean stretch over n < c busy others: weights a^n / n!, n = 0..c-1
            logw = np.zeros_like(free)
            num = np.zeros_like(free)
            den = np.zeros_like(free)
            la = np.log(np.maximum(a, 1e-300))
            for n in range(kmax):
                w = np.where(n < c, np.exp(logw), 0.0)
                num = num + w * _stretch(n + 1.0, p.pace)
                den = den + w
                logw = logw + la - np.log(n + 1.0)
            free = np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0)
            a = lam * es * ((1 - pw) * free + pw * busy)
    pw = erlang_c(c, a)
    drain = _drain(es, c, busy) if p.drain is None else p.drain  # all busy
    stable = (lam < drain) & (a < c) & (c >= 1)
    cond = np.where(stable, ac / (drain - np.where(stable, lam, 0.0)), np.inf)
    cond = np.where(lam <= 0, 0.0, cond)
    pw = np.where(lam <= 0, 0.0, np.where(stable, pw, 1.0))
    return PathState(pw, cond, free, np.broadcast_to(busy, free.shape), bool(paced))


def _decode_terms(lay: Layout, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean decode-slot wait, mean first-token time after the KV arrives). The wait is
    `mgc_wait` with a deterministic service, written out (same arithmetic, half the calls:
    it runs once per tail evaluation)."""
    lam = np.asarray(lam, dtype=float)
    c = np.asarray(lay.decode_slots, dtype=float)
    n_d = np.asarray(lay.n_d, dtype=float)
    # a grid has few distinct N_d: with one rate for all points (or a rate axis after the
    # point axis), the terms are those of the distinct N_d, gathered
    one_rate = c.ndim == 1 and lam.size == 1
    rate_axis = c.ndim == 2 and c.shape[1] == 1 and lam.ndim == 2 and lam.shape[0] == 1
    if c.size >= 64 and n_d.shape == c.shape and (one_rate or rate_axis):
        uc, first, inv = np.unique(c.ravel(), return_index=True, return_inverse=True)
        if uc.size * 4 <= c.size:
            col = (lambda v: v[:, None]) if rate_axis else (lambda v: v)
            wd, ft = _decode_core(lay, col(uc), col(n_d.ravel()[first]), lam)
            inv = inv.reshape(-1)
            return wd[inv], ft[inv]
    return _decode_core(lay, c, n_d, lam)


def _decode_core(lay: Layout, c: np.ndarray, n_d: np.ndarray,
                 lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    es = lay.decode_service
    a = lam * es
    scv = max(es ** 2 / (es * es) - 1.0, 0.0) if es > 0 else 0.0
    pw = erlang_c(c, a)
    stable = (a < c) & (c >= 1)
    cond = np.where(stable, es * (1 + scv) / (2 * np.where(stable, c - a, 1.0)), np.inf)
    cond = np.where(lam <= 0, 0.0, cond)
    pw = np.where(lam <= 0, 0.0, pw)
    wd = np.where(pw > 0, pw * cond, 0.0)
    per_instance = lam * es / np.maximum(n_d, 1)
    busy = 1.0 - np.exp(-per_instance)
    return wd, lay.t_decode * (1.0 + 0.5 * busy)


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
    return RateState(wd, first, (path_state(lay.paths[0], lam), path_state(lay.paths[1], lam)))


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
        if paced:
            late = base - p.nodes * st.free[..., None] <= 0  # late even without a wait
            expo = base - p.nodes * st.busy[..., None]
        else:
            expo = base - p.nodes
            late = expo <= 0
        # the exponential in place (one buffer for the nodes' pass, not four)
        if np.broadcast_shapes(expo.shape, rate.shape) == expo.shape:
            np.exp(np.multiply(np.maximum(expo, 0.0, out=expo), rate, out=expo), out=expo)
        else:
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
        service = p.es * ((1 - st.pw) * st.free + st.pw * st.busy)
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
    # the bisection, QUANTILE_LEVELS halvings per tails evaluation: every row's dyadic points
    # at once, then the halvings replayed (same midpoints, same stop as one per call)
    done, halvings = False, 0
    while not done and halvings < 80:
        j = min(QUANTILE_LEVELS, 80 - halvings)
        pts = _dyadic(lo, up, j)
        o = over(pts[:, 1:-1].ravel()).reshape(len(rows), -1)
        a = np.zeros(len(rows), dtype=int)
        rix = np.arange(len(rows))
        for level in range(1, j + 1):
            step = 1 << (j - level)
            a = np.where(o[rix, a + step - 1], a + step, a)
            lo, up = pts[rix, a], pts[rix, a + step]
            halvings += 1
            if np.all(up - lo <= rtol * np.maximum(up, 1e-3)):
                done = True
                break
    return np.where(up >= hi * (1 - 1e-9), np.inf, up)


# -- building layouts ----------------------------------------------------------------------
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
        xn = np.asarray(prof.prefill_time(length_nodes(dist, uniq, above, nodes)))[inv]
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
        sides.append(Path(share_b, srv, es_b, es2_b, xn_b, pace, delay))
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


def _per_rate(lay: Layout) -> Layout:
    """A flat layout with a rate axis after the point axis: tails of n points at k rates in one
    call, shape (n, k)."""
    def col(a):
        return np.asarray(a)[:, None] if np.ndim(a) else a
    paths = tuple(Path(col(p.share), col(p.servers), col(p.es), col(p.es2), p.nodes[:, None, :],
                       col(p.pace), p.delay, p.weights, *(None if v is None else col(v)
                                                          for v in (p.ac, p.busy, p.drain)),
                       p.paced) for p in lay.paths)
    return Layout(paths, col(lay.decode_slots), lay.decode_service, lay.t_decode, col(lay.n_d))


@_quiet
def best_rate(lay: Layout, lam_max: np.ndarray, target: float, q: float,
              steps: int = RATE_STEPS, floor: float = 0.0,
              checked: bool = False,
              refine: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[float, np.ndarray]:
    """The highest SLO-bound rate over a set of operating points (flat arrays), and the points
    that reach it. The bisection on the rate for the whole set, several halvings per call: a
    point feasible at a rate is feasible at every lower one (the predicted tail grows with the
    rate), so each call checks only the points still feasible, at every midpoint of as many
    halvings as BUDGET allows (dyadic, so it ends where one-halving-per-call would), each
    against the points whose Lambda_max exceeds it. Exact over the set to
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
    nodes = lay.paths[0].nodes.shape[-1]
    sub, sub_of = None, None
    while hi - lo > tol:
        levels, w = 0, hi - lo  # halvings a bisection would still take
        while w > tol:
            levels, w = levels + 1, 0.5 * w
        fit = int(np.log2(max(BUDGET // (alive.size * nodes), 2)))
        j = max(1, min(levels, fit, 6))
        pts = _dyadic(lo, hi, j)
        rates = pts[1:-1]
        if sub_of is not alive:  # alive changes only when lo moves: gather only then
            sub, sub_of = _per_rate(_take(lay, alive)), alive
        ok = tail(sub, rates[None, :], x) <= 1 - q
        ok &= lam_max[alive][:, None] > rates
        reach = ok.any(axis=0)
        last = int(np.argmin(reach)) if not reach.all() else rates.size  # pts[last] reached
        # replay the halvings, stopping where the actual hi - lo <= tol as a bisection does
        # (at hi - lo == tol the count hangs on rounding)
        for level in range(1, j + 1):
            step = 1 << (j - level)
            a = (last // step) * step
            if pts[a + step] - pts[a] <= tol:
                break
        if a:
            alive = alive[ok[:, a - 1]]
        lo, hi = float(pts[a]), float(pts[a + step])
    return lo, alive


def _dyadic(lo, hi, levels: int) -> np.ndarray:
    """lo, hi and the 2^levels - 1 points between them that a bisection could visit, by the
    same midpoint arithmetic, along a trailing axis (lo, hi: floats or arrays of one shape):
    a multisection ends where the bisection would, to the bit."""
    pts = np.stack([np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)], axis=-1)
    for _ in range(levels):
        out = np.empty(pts.shape[:-1] + (2 * pts.shape[-1] - 1,))
        out[..., 0::2] = pts
        out[..., 1::2] = 0.5 * (pts[..., :-1] + pts[..., 1:])
        pts = out
    return pts


def _take(lay: Layout, idx: np.ndarray) -> Layout:
    """The operating points `idx` of a flat layout."""
    def pick(a):
        return a[idx] if np.ndim(a) else a
    paths = tuple(Path(pick(p.share), pick(p.servers), pick(p.es), pick(p.es2), p.nodes[idx],
                       pick(p.pace), p.delay, p.weights, *(None if v is None else pick(v)
                                                           for v in (p.ac, p.busy, p.drain)),
                       p.paced) for p in lay.paths)
    return Layout(paths, pick(lay.decode_slots), lay.decode_service, lay.t_decode, pick(lay.n_d))


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
        """Service nodes per threshold (nan-free); `coarse`: the groups' minima."""
        dist = self.system.lengths
        if not coarse:
            xn = prof.prefill_time(length_nodes(dist, t, above, nodes, f_t=f_t))
            return np.nan_to_num(np.asarray(xn))
        sizes = _groups(nodes)
        first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        if rising:
            f = f_t[:, None]
            u = (first + 0.5) / nodes
            xn = np.asarray(prof.prefill_time(_quantile(dist, f + u * (1 - f) if above
                                                       else u * f)))
        else:
            full = np.asarray(prof.prefill_time(length_nodes(dist, t, above, nodes, f_t=f_t)))
            xn = np.sort(full, axis=-1)[:, first]
        return np.nan_to_num(xn)

    def __call__(self, idx: np.ndarray, nodes: int = GRID_NODES, coarse: bool = False,
                 n_d: np.ndarray | None = None) -> Layout:
        """The points `idx`; `n_d`: decode instances other than pool - N_p (`best_case`)."""
        it, ip = np.unravel_index(idx, (self.grid.size, self.pool + 1))
        tables = self._node_tables(it, nodes, coarse)
        w = _groups(nodes) / nodes if coarse else None
        paths = []
        for (_, above, servers, delay, share, es, es2, _), table in zip(self.sides, tables,
                                                                     strict=True):
            srv = np.full(idx.shape, servers) if above else ip.astype(float)
            paths.append(Path(share[it], srv, es[it], es2[it], table[it],
                              self.pace[it] if above else 0.0, delay, w))
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


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, largest first, ties by index (as a stable sort on
    -values), from the partition's candidates only: sorting the whole grid cost ~0.7 ms."""
    if values.size <= k or np.isnan(values).any():  # nan: the sort's order, not partition's
        return np.lexsort((np.arange(values.size), -values))
    kth = np.partition(values, values.size - k)[values.size - k]
    cand = np.flatnonzero(values >= kth)
    return cand[np.lexsort((cand, -values[cand]))][:k]


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
