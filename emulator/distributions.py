"""Input-length distributions with exact partial moments.

Everything the model needs reduces to M_k(a, b) = E[L^k 1{a < L <= b}] for k = 0, 1, 2: the
routed share p(t) = M_0(t, inf), the conditional means E[L | L > t] = M_1 / M_0, and (through
`Curve.integrate`) the conditional expectation of any profile. Each family computes them in
closed form (log-normal), by sums (discrete) or by prefix sums (empirical), vectorized over t.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.special import ndtr, ndtri

from emulator.units import format_tokens

Moments = tuple[np.ndarray, np.ndarray, np.ndarray]


class LengthDistribution(ABC):
    """Distribution of request input length L (tokens)."""

    kind: str = ""

    @abstractmethod
    def partial_moments(self, a: np.ndarray, b: np.ndarray) -> Moments:
        """(M0, M1, M2) over the interval (a, b], vectorized; requires a <= b."""

    @abstractmethod
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray: ...

    @abstractmethod
    def threshold_grid(self) -> np.ndarray:
        """Every threshold that changes the split, including one below the support (p = 1)
        and one at its top (p = 0)."""

    @property
    @abstractmethod
    def support(self) -> tuple[float, float]: ...

    @abstractmethod
    def describe(self) -> str: ...

    def quantile(self, q: float) -> float:
        """Smallest x with P(L <= x) >= q, by bisection on the exact cdf."""
        lo, hi = self.support
        lo = lo - 1.0
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if self.cdf(mid) >= q:
                hi = mid
            else:
                lo = mid
        return hi

    # -- derived quantities (all exact) --------------------------------------------------
    def _tail(self, t: np.ndarray, above: bool) -> Moments:
        t = np.asarray(t, dtype=float)
        lo, hi = self.support
        if above:
            return self.partial_moments(np.minimum(t, hi), np.full_like(t, hi))
        return self.partial_moments(np.full_like(t, lo - 1.0), np.maximum(t, lo - 1.0))

    def cdf(self, t: float | np.ndarray) -> float | np.ndarray:
        m0 = self._tail(np.asarray(t, dtype=float), above=False)[0]
        return float(m0) if np.ndim(m0) == 0 else m0

    def p_above(self, t: float | np.ndarray) -> float | np.ndarray:
        """p(t) = P(L > t): the share routed to PrfaaS."""
        m0 = self._tail(np.asarray(t, dtype=float), above=True)[0]
        return float(m0) if np.ndim(m0) == 0 else m0

    def mean_above(self, t: float | np.ndarray) -> float | np.ndarray:
        """E[L | L > t] (nan where nothing lies above t)."""
        m0, m1, _ = self._tail(np.asarray(t, dtype=float), above=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(m0 > 0, m1 / np.where(m0 > 0, m0, 1), np.nan)
        return float(out) if np.ndim(out) == 0 else out

    def mean_below(self, t: float | np.ndarray) -> float | np.ndarray:
        """E[L | L <= t] (nan where nothing lies at or below t)."""
        m0, m1, _ = self._tail(np.asarray(t, dtype=float), above=False)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(m0 > 0, m1 / np.where(m0 > 0, m0, 1), np.nan)
        return float(out) if np.ndim(out) == 0 else out

    @property
    def mean(self) -> float:
        lo, hi = self.support
        m0, m1, _ = self.partial_moments(np.array(lo - 1.0), np.array(hi))
        return float(m1 / m0)

    def expect(self, curve, t: float | np.ndarray, above: bool) -> float | np.ndarray:
        """E[f(L) | L > t] (above) or E[f(L) | L <= t], exactly; nan on an empty side."""
        t = np.asarray(t, dtype=float)
        lo, hi = self.support
        if above:
            a, b = np.minimum(t, hi), np.full_like(t, hi)
        else:
            a, b = np.full_like(t, lo - 1.0), np.maximum(t, lo - 1.0)
        m0 = self.partial_moments(a, b)[0]
        num = curve.integrate(self, a, b)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(m0 > 0, num / np.where(m0 > 0, m0, 1), np.nan)
        return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True, eq=False)
class Discrete(LengthDistribution):
    """Finitely many lengths with probabilities (the seed's toy: 1K or 32K, half each)."""

    values: np.ndarray
    probs: np.ndarray
    kind: str = field(default="discrete", init=False)

    @classmethod
    def of(cls, values: Sequence[float], probs: Sequence[float]) -> Discrete:
        v = np.asarray(values, dtype=float)
        p = np.asarray(probs, dtype=float)
        if v.ndim != 1 or v.shape != p.shape or len(v) == 0:
            raise ValueError("values and probs must be lists of equal, non-zero length")
        if not np.all((p >= 0) & (p <= 1)):  # also NaN
            bad = next(float(x) for x in p if not 0 <= x <= 1)
            raise ValueError(f"every probability must be in [0, 1], found {bad:g}")
        if not np.isclose(p.sum(), 1.0, atol=1e-6):
            raise ValueError(f"probs must be >= 0 and sum to 1 (they sum to {p.sum():.6g})")
        if np.any(v <= 0):
            raise ValueError("lengths must be positive")
        order = np.argsort(v)
        v, p = v[order], p[order] / p.sum()
        if np.any(np.diff(v) == 0):
            raise ValueError("values must be distinct")
        return cls(v, p)

    def partial_moments(self, a, b):
        a = np.asarray(a, dtype=float)[..., None]
        b = np.asarray(b, dtype=float)[..., None]
        inside = (self.values > a) & (self.values <= b)
        w = np.where(inside, self.probs, 0.0)
        return w.sum(-1), (w * self.values).sum(-1), (w * self.values**2).sum(-1)

    def sample(self, rng, n):
        return rng.choice(self.values, size=n, p=self.probs)

    def threshold_grid(self):
        return np.concatenate([[max(self.values[0] - 1.0, 0.0)], self.values])

    @property
    def support(self):
        return float(self.values[0]), float(self.values[-1])

    def describe(self):
        parts = ", ".join(f"{v:.0f} ({p:.0%})" for v, p in zip(self.values, self.probs, strict=True))
        return f"discrete: {parts}"


@dataclass(frozen=True, eq=False)
class TruncatedLogNormal(LengthDistribution):
    """log L ~ Normal(mu, sigma), truncated to [lo, hi] (the paper's case study)."""

    mu: float
    sigma: float
    lo: float
    hi: float
    grid_points: int = 2048
    kind: str = field(default="lognormal", init=False)

    def __post_init__(self) -> None:
        if not (self.sigma > 0 and 0 < self.lo < self.hi):
            raise ValueError("need sigma > 0 and 0 < lo < hi")
        za, zb = self._z(self.lo, 0), self._z(self.hi, 0)
        if not ndtr(zb) - ndtr(za) > 1e-12:
            raise ValueError("the truncation interval holds no probability")

    def _z(self, x, k):
        with np.errstate(divide="ignore"):
            return (np.log(np.maximum(x, 0.0)) - self.mu - k * self.sigma**2) / self.sigma

    @cached_property
    def _scales(self) -> tuple[float, ...]:
        """E[L^k] of the untruncated law over the truncated mass, k = 0, 1, 2: constants of
        every partial_moments call (the latency layer makes ~60 per solve)."""
        mass = ndtr(self._z(self.hi, 0)) - ndtr(self._z(self.lo, 0))
        return tuple(np.exp(k * self.mu + 0.5 * k * k * self.sigma**2) / mass for k in range(3))

    def partial_moments(self, a, b):
        a = np.clip(np.asarray(a, dtype=float), self.lo, self.hi)
        b = np.clip(np.asarray(b, dtype=float), self.lo, self.hi)
        with np.errstate(divide="ignore"):  # the logs once for the three k (same arithmetic)
            log_a, log_b = np.log(np.maximum(a, 0.0)), np.log(np.maximum(b, 0.0))
        out = []
        for k, scale in enumerate(self._scales):
            z_b = (log_b - self.mu - k * self.sigma**2) / self.sigma
            z_a = (log_a - self.mu - k * self.sigma**2) / self.sigma
            out.append(scale * np.maximum(ndtr(z_b) - ndtr(z_a), 0.0))
        return tuple(out)

    def sample(self, rng, n):
        fa, fb = ndtr(self._z(self.lo, 0)), ndtr(self._z(self.hi, 0))
        u = rng.uniform(fa, fb, size=n)
        return np.clip(np.exp(self.mu + self.sigma * ndtri(u)), self.lo, self.hi)

    def threshold_grid(self):
        fa, fb = ndtr(self._z(self.lo, 0)), ndtr(self._z(self.hi, 0))
        q = np.linspace(0, 1, self.grid_points + 1)[1:-1]
        inner = np.exp(self.mu + self.sigma * ndtri(fa + q * (fb - fa)))
        return np.concatenate([[self.lo - 1.0], inner, [self.hi]])

    @property
    def support(self):
        return float(self.lo), float(self.hi)

    def describe(self):
        return f"log-normal mu={self.mu:g} sigma={self.sigma:g} on [{self.lo:.0f}, {self.hi:.0f}]"


@dataclass(frozen=True, eq=False)
class Empirical(LengthDistribution):
    """The lengths of a sample (a trace's input lengths), each equally likely."""

    sorted_values: np.ndarray
    cum: np.ndarray  # shape (3, n + 1): prefix sums of L^0, L^1, L^2 over sorted values
    source: str = ""
    kind: str = field(default="empirical", init=False)

    @classmethod
    def of(cls, samples: Sequence[float] | np.ndarray, source: str = "") -> Empirical:
        x = np.sort(np.asarray(samples, dtype=float))
        if x.ndim != 1 or len(x) == 0:
            raise ValueError("an empirical distribution needs at least one sample")
        if np.any(~np.isfinite(x)) or np.any(x <= 0):
            raise ValueError("lengths must be positive and finite")
        n = len(x)
        cum = np.zeros((3, n + 1))
        for k in range(3):
            cum[k, 1:] = np.cumsum(x**k) / n
        return cls(x, cum, source)

    def partial_moments(self, a, b):
        ia = np.searchsorted(self.sorted_values, np.asarray(a, dtype=float), side="right")
        ib = np.searchsorted(self.sorted_values, np.asarray(b, dtype=float), side="right")
        return tuple(self.cum[k, ib] - self.cum[k, ia] for k in range(3))

    def sample(self, rng, n):
        return rng.choice(self.sorted_values, size=n)

    def threshold_grid(self):
        uniq = np.unique(self.sorted_values)
        return np.concatenate([[max(uniq[0] - 1.0, 0.0)], uniq])

    @property
    def support(self):
        return float(self.sorted_values[0]), float(self.sorted_values[-1])

    def describe(self):
        src = f" from {self.source}" if self.source else ""
        return f"empirical: {len(self.sorted_values)} samples{src}, mean {self.mean:.0f}"


@dataclass(frozen=True, eq=False)
class Reweighted(LengthDistribution):
    """`base` with the probability mass above `cut` multiplied by `factor`, renormalized: the
    odds of a long request x factor, the shape on each side unchanged."""

    base: LengthDistribution
    cut: float
    factor: float
    kind: str = field(default="reweighted", init=False)

    @classmethod
    def of(cls, base: LengthDistribution, cut: float, factor: float) -> Reweighted:
        out = cls(base, float(cut), float(factor))
        if not 0 < out.p < 1:
            raise ValueError(f"nothing to re-weight: P(L > {cut:.0f}) = {out.p:.3g}")
        return out

    @cached_property
    def p(self) -> float:
        """P(L > cut) of the base."""
        return float(self.base.p_above(self.cut))

    @property
    def mass(self) -> float:
        """(1 - p) + factor x p: the base's mass after re-weighting, before renormalizing (the
        rate multiplier that keeps requests below `cut` at their rate)."""
        return (1 - self.p) + self.factor * self.p

    @property
    def _weights(self) -> tuple[float, float]:
        """(weight below, weight above)."""
        z = self.mass
        return 1 / z, self.factor / z

    def partial_moments(self, a, b):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        c = self.cut
        w_lo, w_hi = self._weights
        lo = self.base.partial_moments(np.minimum(a, c), np.minimum(b, c))
        hi = self.base.partial_moments(np.maximum(a, c), np.maximum(b, c))
        return tuple(w_lo * x + w_hi * y for x, y in zip(lo, hi, strict=True))

    def sample(self, rng, n):
        above = rng.random(n) < self._weights[1] * self.p
        out = np.empty(n)
        for side in (True, False):
            want = int(np.count_nonzero(above == side))
            got, have = [np.empty(0)], 0
            while have < want:  # rejection from the base, one side at a time
                x = np.asarray(self.base.sample(rng, max(64, 2 * (want - have))), dtype=float)
                got.append(x[(x > self.cut) == side])
                have += len(got[-1])
            out[above == side] = np.concatenate(got)[:want]
        return out

    def threshold_grid(self):
        return self.base.threshold_grid()

    @property
    def support(self):
        return self.base.support

    def describe(self):
        return f"{self.base.describe()}, odds above {format_tokens(self.cut)} x{self.factor:g}"
