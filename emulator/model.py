"""The closed-form PrfaaS-PD throughput model (Eqs. 1-8 of the paper and the seed).

Three stages: PrfaaS (remote prefill of requests longer than t, KV over the Ethernet link), PD-P
(local prefill of the rest) and PD-D (decode of everything). Each has a capacity Theta; the
end-to-end ceiling is Lambda_max = min(Theta_prfaas / p, Theta_pdp / (1 - p), Theta_pdd).

Two evaluation modes:
- `paper`: profiles evaluated at the conditional mean lengths, T(E[L | L > t]) — the paper's
  linearization, which reproduces its tables;
- `exact`: conditional expectations of the profiles, E[T(L) | L > t] — what a FIFO server with
  per-request service times really sustains (the emulator agrees with this one). The two differ
  by the Jensen gap of the curves: equal for linear profiles, `exact` lower for convex T.

All functions are vectorized over t and the split so the optimizer can sweep a grid at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.profiles import Profile
from emulator.units import to_gbps

MODES = ("paper", "exact")


class Stage(StrEnum):
    """The model's three stages, in the order of its ceiling stack (JSON keys and CLI names)."""

    PRFAAS = "prfaas"
    PD_P = "pd-p"
    PD_D = "pd-d"


class Cluster(StrEnum):
    """Where instances live: the remote PrfaaS cluster or the local PD cluster."""

    PRFAAS = "prfaas"
    PD = "pd"


STAGES: tuple[Stage, ...] = tuple(Stage)


@dataclass(frozen=True)
class DecodeSpec:
    """Decode constants the SLO fixes: step time, max batch, output length (mean)."""

    t_decode: float  # seconds per decode step
    bs_max: int
    l_out: float  # mean output tokens per request

    @property
    def per_instance_rate(self) -> float:
        """Requests per second one decode instance finishes (Eq. 5 with N_d = 1)."""
        return self.bs_max / (self.t_decode * self.l_out)


@dataclass(frozen=True)
class System:
    """Everything fixed about a deployment; the knobs (t, N_p, N_d, ...) come separately."""

    prfaas: Profile  # remote, compute-dense hardware
    local: Profile  # local PD cluster hardware
    lengths: LengthDistribution
    decode: DecodeSpec
    n_prfaas: int
    local_pool: int
    bandwidth: float  # B_out, bytes per second
    parallelism: int = 1  # GPUs per instance (P of Eq. 2)
    homogeneous_pool: int = 0
    homogeneous_profile: Profile | None = None
    price_prfaas: float | None = None  # per instance-hour
    price_local: float | None = None


@dataclass(frozen=True)
class Knobs:
    t: float
    n_p: int
    n_d: int
    n_prfaas: int
    bandwidth: float  # bytes per second


@dataclass(frozen=True)
class OperatingPoint:
    """The model evaluated at one set of knobs."""

    knobs: Knobs
    mode: str
    p: float
    l_long: float
    l_short: float
    t_long: float  # PrfaaS prefill seconds per request (at l_long, or its expectation)
    s_long: float  # KV bytes per PrfaaS request
    t_short: float  # PD-P prefill seconds per request
    theta_prfaas_compute: float
    theta_prfaas_bandwidth: float
    theta_pdp: float
    theta_pdd: float
    ceilings: dict[str, float] = field(default_factory=dict)
    lambda_max: float = 0.0
    binding: Stage = Stage.PRFAAS

    @property
    def theta_prfaas(self) -> float:
        return min(self.theta_prfaas_compute, self.theta_prfaas_bandwidth)

    @property
    def prfaas_term(self) -> str:
        """Which term of Eq. 3 binds inside the PrfaaS stage."""
        return "bandwidth" if self.theta_prfaas_bandwidth < self.theta_prfaas_compute else "compute"

    def egress(self, rate: float | None = None) -> float:
        """KV bytes per second leaving PrfaaS at an offered rate (default: Lambda_max)."""
        r = self.lambda_max if rate is None else rate
        return 0.0 if self.p == 0 else self.p * r * self.s_long

    @property
    def egress_demand(self) -> float:
        """Eq. 2: egress when every PrfaaS instance computes flat out (N * S / T)."""
        if self.p == 0 or not np.isfinite(self.t_long):
            return 0.0
        return self.knobs.n_prfaas * self.s_long / self.t_long

    def link_utilization(self, rate: float | None = None) -> float:
        return self.egress(rate) / self.knobs.bandwidth if self.knobs.bandwidth > 0 else float("inf")

    @property
    def eq7_residual(self) -> float:
        """(PrfaaS ceiling - PD-P ceiling) / the larger: 0 when t balances the producers."""
        a, b = self.ceilings[Stage.PRFAAS], self.ceilings[Stage.PD_P]
        if not (np.isfinite(a) and np.isfinite(b)):
            return float("nan")
        return (a - b) / max(a, b) if max(a, b) > 0 else 0.0

    @property
    def eq8_residual(self) -> float:
        """(Theta_prfaas + Theta_pdp - Theta_pdd) / Theta_pdd: 0 when producers match decode."""
        prod = (self.theta_prfaas if self.p > 0 else 0.0) + (self.theta_pdp if self.p < 1 else 0.0)
        return (prod - self.theta_pdd) / self.theta_pdd if self.theta_pdd > 0 else float("inf")

    def to_dict(self) -> dict:
        k = self.knobs
        return {
            "t": _num(k.t), "n_prfaas": k.n_prfaas, "n_p": k.n_p, "n_d": k.n_d,
            "bandwidth_gbps": to_gbps(k.bandwidth), "mode": self.mode,
            "p": self.p, "l_long": _num(self.l_long), "l_short": _num(self.l_short),
            "lambda_max": self.lambda_max, "binding": self.binding,
            "prfaas_term": self.prfaas_term,
            "ceilings": {s: _num(v) for s, v in self.ceilings.items()},
            "theta": {Stage.PRFAAS: _num(self.theta_prfaas),
                      "prfaas_compute": _num(self.theta_prfaas_compute),
                      "prfaas_bandwidth": _num(self.theta_prfaas_bandwidth),
                      Stage.PD_P: _num(self.theta_pdp), Stage.PD_D: _num(self.theta_pdd)},
            "egress_gbps": to_gbps(self.egress()),
            "egress_demand_gbps": to_gbps(self.egress_demand),
            "link_utilization": _num(self.link_utilization()),
            "eq7_residual": _num(self.eq7_residual), "eq8_residual": _num(self.eq8_residual),
        }


def _num(x: float) -> float | None:
    """JSON has no inf/nan: an unbounded ceiling or an empty side becomes null."""
    return float(x) if np.isfinite(x) else None


@dataclass(frozen=True)
class SplitStats:
    """Length-dependent quantities at each threshold (arrays over t)."""

    t: np.ndarray
    p: np.ndarray
    l_long: np.ndarray
    l_short: np.ndarray
    t_long: np.ndarray
    s_long: np.ndarray
    t_short: np.ndarray


def split_stats(lengths: LengthDistribution, prfaas: Profile, local: Profile,
                t: np.ndarray, mode: str = "paper") -> SplitStats:
    """p, the conditional lengths and the per-request costs of both sides, for every t."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    t = np.atleast_1d(np.asarray(t, dtype=float))
    p = np.clip(lengths.p_above(t), 0.0, 1.0)
    p = np.where(p < 1e-12, 0.0, np.where(p > 1 - 1e-12, 1.0, p))
    l_long = np.asarray(lengths.mean_above(t))
    l_short = np.asarray(lengths.mean_below(t))
    if mode == "paper":
        t_long = np.asarray(prfaas.t_prefill(np.nan_to_num(l_long, nan=1.0)))
        s_long = np.asarray(prfaas.s_kv(np.nan_to_num(l_long, nan=1.0)))
        t_short = np.asarray(local.t_prefill(np.nan_to_num(l_short, nan=1.0)))
    else:
        t_long = np.asarray(lengths.expect(prfaas.prefill_time, t, above=True))
        s_long = np.asarray(lengths.expect(prfaas.kv_size, t, above=True))
        t_short = np.asarray(lengths.expect(local.prefill_time, t, above=False))
    t_long = np.where(p > 0, t_long, np.nan)
    s_long = np.where(p > 0, s_long, np.nan)
    t_short = np.where(p < 1, t_short, np.nan)
    return SplitStats(t, p, l_long, l_short, t_long, s_long, t_short)


def ceilings(stats: SplitStats, n_prfaas, n_p, n_d, bandwidth, decode: DecodeSpec,
             *, outer: bool | None = None):
    """Eqs. 3-6 on broadcastable arrays. With `outer` (the default when n_p is an array) the
    result is a (threshold x split) grid; without, everything is elementwise. Returns
    (theta_c, theta_b, theta_pdp, theta_pdd, ceiling stack of shape (3, ...), lambda_max)."""
    outer = bool(np.ndim(n_p)) if outer is None else outer
    p = stats.p[:, None] if outer else stats.p
    col = (lambda a: a[:, None]) if outer else (lambda a: a)
    n_p = np.asarray(n_p, dtype=float)
    n_d = np.asarray(n_d, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta_c = np.where(p > 0, n_prfaas / col(stats.t_long), 0.0)
        theta_b = np.where(p > 0, bandwidth / col(stats.s_long), 0.0)
        theta_pdp = np.where(p < 1, n_p / col(stats.t_short), 0.0)
        theta_pdd = n_d * decode.per_instance_rate
        theta_pf = np.minimum(theta_c, theta_b)
        c_pf = np.where(p > 0, theta_pf / np.where(p > 0, p, 1.0), np.inf)
        c_pdp = np.where(p < 1, theta_pdp / np.where(p < 1, 1.0 - p, 1.0), np.inf)
    c_pdd = np.broadcast_to(theta_pdd, np.broadcast(c_pf, c_pdp).shape)
    stack = np.stack(np.broadcast_arrays(c_pf, c_pdp, c_pdd))
    return theta_c, theta_b, theta_pdp, theta_pdd, stack, stack.min(axis=0)


def evaluate(system: System, knobs: Knobs, mode: str = "paper",
             *, profiles: tuple[Profile, Profile] | None = None) -> OperatingPoint:
    """The model at one operating point. `profiles` overrides (prfaas, local), which is how the
    homogeneous paradigm evaluates one local pool."""
    prfaas, local = profiles or (system.prfaas, system.local)
    st = split_stats(system.lengths, prfaas, local, np.array([knobs.t]), mode)
    tc, tb, tp, td, stack, lam = ceilings(st, knobs.n_prfaas, knobs.n_p, knobs.n_d,
                                          knobs.bandwidth, system.decode)
    stack = stack[:, 0]
    return OperatingPoint(
        knobs=knobs, mode=mode, p=float(st.p[0]),
        l_long=float(st.l_long[0]), l_short=float(st.l_short[0]),
        t_long=float(st.t_long[0]), s_long=float(st.s_long[0]), t_short=float(st.t_short[0]),
        theta_prfaas_compute=float(tc[0]), theta_prfaas_bandwidth=float(tb[0]),
        theta_pdp=float(tp[0]), theta_pdd=float(td),
        ceilings={s: float(c) for s, c in zip(STAGES, stack, strict=True)},
        lambda_max=float(lam[0]), binding=STAGES[int(np.argmin(stack))],
    )

