"""Erlang / M/G/c queueing of one operating point (or a grid of them): Erlang B and C, the
Allen-Cunneen M/G/c wait, link pacing of the PrfaaS path, and the decode stage's M/D/c slots.
`Path` and `Layout` describe what is queued; `path_state` is a path at one offered rate."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import gammaln, pdtr

from emulator.latency.quiet import _quiet

if TYPE_CHECKING:
    from emulator.latency.steps import Steps

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
    ex: np.ndarray | None = None  # the mean of the nodes where they are not T's (a batched
    # profile's step latency, Profile.latency_time); None: E[T]
    steps: Steps | None = None  # a step-timed batched path's terms (its nodes: idle-instance
    # times); None: the nodes are the request's whole prefill time


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
    stepping: np.ndarray | None = None  # a step-timed path: P(all instances stepping) >= pw
    ride: np.ndarray | None = None  # ... its time from the boundary to its last chunk (nodes)
    gap: np.ndarray | None = None  # ... and its mean time to the boundary

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
    """(mean decode-slot wait, mean first-token time after the KV arrives)."""
    return _decode_core(lay, np.asarray(lay.decode_slots, dtype=float),
                        np.asarray(lay.n_d, dtype=float), np.asarray(lam, dtype=float))


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
