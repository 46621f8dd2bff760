"""Profiles: what one (model, hardware) instance costs per request of length l.

A profile holds two curves, `T_prefill(l)` in seconds and `S_kv(l)` in bytes. Every curve is a
piecewise polynomial of degree <= 2 in l: a table is piecewise linear between its points with a
stated rule beyond the ends, a fitted form `a + b*l + c*l^2` is one piece, and an affine map of
either stays in the family. That closure is what lets the model take *exact* conditional
expectations E[f(L) | L > t] from a distribution's partial moments, with no Monte Carlo.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from emulator.distributions import LengthDistribution

ArrayLike = float | np.ndarray
BEYOND_RULES = ("linear", "clamp")
# The most a profile may say for one request: past these a number is a typo, and the model's
# sums over the length distribution would overflow (a day-long prefill ~ 1e5 s; 16M tokens of a
# large model's KV ~ 1e13 B)
LIMITS = {"prefill_time": (1e6, "s"), "kv_size": (1e15, "B")}


@dataclass(frozen=True, eq=False)
class Curve:
    """f(l) = c0 + c1*l + c2*l^2 on each piece; pieces split at `breaks` (sorted)."""

    breaks: np.ndarray  # shape (m,)
    coefs: np.ndarray  # shape (m + 1, 3): piece i covers (breaks[i-1], breaks[i]]
    points: tuple[tuple[float, float], ...] = field(default=())  # the table, for display

    @classmethod
    def poly(cls, a: float, b: float = 0.0, c: float = 0.0) -> Curve:
        return cls(np.zeros(0), np.array([[a, b, c]], dtype=float))

    @classmethod
    def table(cls, lengths: Sequence[float], values: Sequence[float], beyond: str = "linear") -> Curve:
        """Piecewise linear through the points; `beyond` extends the end pieces ('linear') or
        holds the end values ('clamp'). One point gives a constant."""
        x = np.asarray(lengths, dtype=float)
        y = np.asarray(values, dtype=float)
        if x.ndim != 1 or x.shape != y.shape or len(x) == 0:
            raise ValueError("a table needs as many lengths as values, at least one")
        if np.any(np.diff(x) <= 0):
            raise ValueError("table lengths must be strictly increasing")
        if beyond not in BEYOND_RULES:
            raise ValueError(f"beyond must be one of {', '.join(BEYOND_RULES)}, got {beyond!r}")
        pts = tuple(zip(x.tolist(), y.tolist(), strict=True))
        if len(x) == 1:
            return cls(np.zeros(0), np.array([[y[0], 0.0, 0.0]]), pts)
        slope = np.diff(y) / np.diff(x)
        inner = np.stack([y[:-1] - slope * x[:-1], slope, np.zeros_like(slope)], axis=1)
        if beyond == "linear":
            first, last = inner[0], inner[-1]
        else:
            first, last = np.array([y[0], 0, 0.0]), np.array([y[-1], 0, 0.0])
        return cls(x.copy(), np.vstack([first, inner, last]), pts)

    @cached_property
    def _columns(self) -> tuple[np.ndarray, ...]:
        """c0, c1, c2 as contiguous arrays: gathering each is ~2.5x faster than gathering rows
        and slicing them (the latency layer evaluates ~100k lengths per `solve --slo-ttft`)."""
        return tuple(np.ascontiguousarray(self.coefs[:, j]) for j in range(3))

    def __call__(self, length: ArrayLike) -> ArrayLike:
        arr = np.asarray(length, dtype=float)
        idx = np.searchsorted(self.breaks, arr, side="left")
        c0, c1, c2 = self._columns
        out = c0[idx] + arr * (c1[idx] + arr * c2[idx])
        return float(out) if np.ndim(out) == 0 else out

    def affine(self, a: float, b: float) -> Curve:
        """a + b * f(l): how slower hardware is derived from a measured profile."""
        coefs = self.coefs * b
        coefs[:, 0] += a
        pts = tuple((x, a + b * y) for x, y in self.points)
        return Curve(self.breaks.copy(), coefs, pts)

    def integrate(self, dist: LengthDistribution, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """E[f(L) 1{lo < L <= hi}] exactly, vectorized over the bounds."""
        lo = np.asarray(lo, dtype=float)
        hi = np.asarray(hi, dtype=float)
        edges = np.concatenate([[-np.inf], self.breaks, [np.inf]])
        total = np.zeros(np.broadcast(lo, hi).shape)
        for i, (c0, c1, c2) in enumerate(self.coefs):
            a = np.maximum(lo, edges[i])
            b = np.minimum(hi, edges[i + 1])
            m0, m1, m2 = dist.partial_moments(a, np.maximum(a, b))
            total = total + c0 * m0 + c1 * m1 + c2 * m2
        return total


@dataclass(frozen=True, eq=False)
class StepCost:
    """What one batched prefill step costs, split so that a step of any mix of chunks can be
    timed: `fixed(N)` seconds for N tokens without their mixer FLOPs (GEMMs, experts,
    collectives, launches), `mixer(l)` a prompt's own causal attention and state-kernel seconds
    (a chunk of c tokens after p costs mixer(p + c) - mixer(p)), and the serving overhead per
    step and per request. A full step of whole prompts costs the sum of their T_prefill, so an
    emulator that times steps with it and the model that reads T agree on capacity."""

    fixed: Curve
    mixer: Curve
    per_step: float = 0.0
    per_request: float = 0.0

    def affine(self, a: float, b: float) -> StepCost:
        """The step cost under T' = a + b T: everything scales, the offset is per request."""
        return StepCost(self.fixed.affine(0.0, b), self.mixer.affine(0.0, b),
                        b * self.per_step, a + b * self.per_request)

    def ride(self, length: ArrayLike, budget: float, others: ArrayLike = 0.0,
             per_other: ArrayLike = 0.0) -> np.ndarray:
        """Seconds of a prompt's own steps: its full chunks of `budget` tokens, then its last
        chunk in a step shared with up to `others` tokens of other prompts, which cost the
        fixed part at their count plus `per_other` a token (their overhead and attention). With
        no others: the prompt on an idle instance."""
        length = np.asarray(length, dtype=float)
        full = np.floor(length / budget)
        rest = length - full * budget
        share = np.where(rest > 0, np.minimum(others, budget - rest), 0.0)
        last = np.where(rest > 0, np.asarray(self.fixed(rest + share)) + self.per_step
                        + share * per_other, 0.0)
        return (full * (np.asarray(self.fixed(budget)) + self.per_step) + last
                + self.per_request + np.asarray(self.mixer(length)))


@dataclass(frozen=True, eq=False)
class Profile:
    """One (model, hardware) pair: prefill seconds and KV bytes as functions of length."""

    name: str
    prefill_time: Curve
    kv_size: Curve
    description: str = ""
    # tokens per prefill step when the instance batches and chunks (cards.prefill_batch): then
    # T_prefill is each request's share of full steps, what capacity needs, and the latency layer
    # adds the step a request rides in; None: one request at a time (T is its latency too)
    token_budget: float | None = None
    # how a step of that budget is timed from its chunks (a card-made batched profile); None:
    # the emulator serves each request for T_prefill, one at a time
    step: StepCost | None = None

    def t_prefill(self, length: ArrayLike) -> ArrayLike:
        return self.prefill_time(length)

    def s_kv(self, length: ArrayLike) -> ArrayLike:
        return self.kv_size(length)

    def latency_time(self, length: ArrayLike) -> ArrayLike:
        """Seconds from a request's start of prefill to its last token prefilled on an idle
        instance. One request at a time: T_prefill. Batched (token_budget): T_prefill is the
        request's share of full steps, not its latency; alone, a prompt rides steps of its own
        chunks (StepCost.ride), which pay the fixed part and the per-step overhead in full.
        Without a step cost to split: a full step, T(budget), or the steps of its chunks,
        T(l), joined at a step boundary half a step later on average."""
        t = self.prefill_time(length)
        if self.token_budget is None:
            return t
        if self.step is not None:
            out = self.step.ride(length, self.token_budget)
        else:
            step = self.prefill_time(self.token_budget)
            out = np.maximum(t, step) + step / 2
        return float(out) if np.ndim(out) == 0 else out

    def phi_kv(self, length: ArrayLike) -> ArrayLike:
        """Eq. 1: KV throughput of one instance, bytes per second."""
        return self.kv_size(length) / self.prefill_time(length)

    def derived(self, name: str, *, time_scale: float = 1.0, time_offset: float = 0.0,
                description: str = "") -> Profile:
        """Slower (or faster) hardware running the same model: T' = offset + scale * T; the KV
        a request produces depends on the model only, so S_kv is shared."""
        return Profile(name, self.prefill_time.affine(time_offset, time_scale), self.kv_size,
                       description or f"{self.name} with T' = {time_offset:+g} + {time_scale:g} T",
                       self.token_budget,
                       None if self.step is None else self.step.affine(time_offset, time_scale))

    def check_range(self, lengths: np.ndarray) -> str | None:
        """The first length in range where a curve is not positive or past its limit (see
        LIMITS), as a message, else None."""
        for label, curve in (("prefill_time", self.prefill_time), ("kv_size", self.kv_size)):
            limit, unit = LIMITS[label]
            with np.errstate(all="ignore"):  # an absurd coefficient overflows: reported below
                vals = np.asarray(curve(lengths))
            bad = np.flatnonzero(~(vals > 0) | ~(vals <= limit))
            if bad.size:
                v = vals[bad[0]]
                rule = "must be > 0" if not v > 0 else f"must be at most {limit:g} {unit}"
                return f"{label} is {v:.4g} at length {lengths[bad[0]]:.0f} ({rule})"
        return None
