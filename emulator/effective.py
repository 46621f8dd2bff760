"""The model at what is alive now: the effective operating point and optimum during an incident.

The nominal model (Eqs. 3-5) reads instance counts and B_out from the configured knobs. While
something is broken those are the wrong inputs: two of four PrfaaS instances down halve the
compute term, a brownout to 20% cuts the bandwidth term to 20%, a surge of long requests moves
p and the conditional lengths. `LiveState` carries what is true now; `effective_view` evaluates
the model there (both modes), finds the optimum `o` must apply, and lists what differs from the
nominal deployment in an operator's words ("PrfaaS 2 of 4 alive", "link 6.0 of 30 Gbps").

How instances count: N_prfaas, N_p and N_d of Eqs. 3-5 are instances that take new work. An
instance that is down counts 0. An instance draining (finishing what it holds before a role
change) counts 0 in the stage it leaves: it takes nothing new, and the sustainable rate is what
the accepting instances carry. An instance reloading for its new role counts in neither stage
until it serves. So the effective ceilings dip during a conversion, which is true.

Only model-layer imports: the engine snapshot and the UI adopt this through `LiveState.of`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.latency import Prediction, SLOOptimum, predict, slo_rate, slo_search
from emulator.model import (
    MODES,
    STAGES,
    Knobs,
    OperatingPoint,
    System,
    ceilings,
    evaluate,
    split_stats,
)
from emulator.optimizer import Grid, grid, search
from emulator.profiles import Profile
from emulator.units import format_tokens, to_gbps

DRIVING_MODE = "exact"  # the emulator sustains exact-mode Lambda_max: it drives the live line


@dataclass(frozen=True)
class StageCounts:
    """One integer per stage (alive, failed, draining...)."""

    prfaas: int = 0
    pd_p: int = 0
    pd_d: int = 0

    def __getitem__(self, stage: str) -> int:
        return {"prfaas": self.prfaas, "pd-p": self.pd_p, "pd-d": self.pd_d}[stage]

    def as_dict(self) -> dict[str, int]:
        """Keyed by the model's stage names (JSON, tables)."""
        return {s: self[s] for s in STAGES}

    @classmethod
    def of(cls, d: dict[str, int]) -> StageCounts:
        return cls(int(d.get("prfaas", 0)), int(d.get("pd-p", 0)), int(d.get("pd-d", 0)))


@dataclass(frozen=True)
class LiveState:
    """What the deployment is now, whoever set it (operator, scheduler, incident).

    `n_prfaas`, `n_p`, `n_d`, `bandwidth` and `t` are the configured knobs (targets);
    `alive` the instances per stage that take new work; `link_capacity` what the link delivers
    now (B_out x the incidents' factor); `lengths` the current mix (None: the preset's)."""

    t: float
    n_prfaas: int
    n_p: int
    n_d: int
    bandwidth: float  # configured B_out, bytes/s
    alive: StageCounts
    link_capacity: float  # bytes/s now
    lengths: LengthDistribution | None = None
    failed: StageCounts = StageCounts()
    draining: StageCounts = StageCounts()
    paradigm: str = "prfaas-pd"

    @classmethod
    def healthy(cls, system: System, knobs: Knobs) -> LiveState:
        """Everything configured is alive and the link delivers B_out."""
        return cls(t=knobs.t, n_prfaas=knobs.n_prfaas, n_p=knobs.n_p, n_d=knobs.n_d,
                   bandwidth=knobs.bandwidth,
                   alive=StageCounts(knobs.n_prfaas, knobs.n_p, knobs.n_d),
                   link_capacity=knobs.bandwidth)

    @classmethod
    def of(cls, snap: SnapshotLike, lengths: LengthDistribution | None = None) -> LiveState:
        """From an engine Snapshot (duck-typed: knobs, stages[s].instances/failed/draining,
        link.capacity, lengths). `lengths` overrides the snapshot's mix (None: the snapshot's,
        else the preset's)."""
        k = snap.knobs
        if lengths is None:
            lengths = getattr(snap, "lengths", None)
        st = snap.stages
        return cls(t=float(k.t), n_prfaas=int(k.n_prfaas), n_p=int(k.n_p), n_d=int(k.n_d),
                   bandwidth=float(k.bandwidth),
                   alive=StageCounts.of({s: st[s].instances for s in STAGES}),
                   link_capacity=float(snap.link.capacity), lengths=lengths,
                   failed=StageCounts.of({s: getattr(st[s], "failed", 0) for s in STAGES}),
                   draining=StageCounts.of({s: getattr(st[s], "draining", 0) for s in STAGES}),
                   paradigm=str(getattr(k, "paradigm", "prfaas-pd")))

    @property
    def local_alive(self) -> int:
        """Local instances the effective optimum may split: the configured pool's minus the
        failed ones (spare instances are assumed alive; the snapshot does not see them)."""
        return self.n_p + self.n_d - self.failed.pd_p - self.failed.pd_d


class _Knobs(Protocol):
    @property
    def t(self) -> float: ...
    @property
    def n_p(self) -> int: ...
    @property
    def n_d(self) -> int: ...
    @property
    def n_prfaas(self) -> int: ...
    @property
    def bandwidth(self) -> float: ...


class _Link(Protocol):
    @property
    def capacity(self) -> float: ...


class SnapshotLike(Protocol):
    """What `LiveState.of` reads from an engine Snapshot (read-only: a snapshot is frozen)."""

    @property
    def knobs(self) -> _Knobs: ...
    @property
    def stages(self) -> dict: ...
    @property
    def link(self) -> _Link: ...


def effective_system(system: System, state: LiveState) -> System:
    """The System as the model should see it now: the live mix and what the link delivers."""
    return replace(system, lengths=state.lengths or system.lengths,
                   n_prfaas=state.alive.prfaas, bandwidth=state.link_capacity)


def nominal_knobs(state: LiveState) -> Knobs:
    return Knobs(t=state.t, n_p=state.n_p, n_d=state.n_d, n_prfaas=state.n_prfaas,
                 bandwidth=state.bandwidth)


def effective_knobs(state: LiveState) -> Knobs:
    """Alive instances and the link's capacity now, at the current t."""
    return Knobs(t=state.t, n_p=state.alive.pd_p, n_d=state.alive.pd_d,
                 n_prfaas=state.alive.prfaas, bandwidth=state.link_capacity)


def _paradigm_knobs(system: System, knobs: Knobs,
                    paradigm: str) -> tuple[Knobs, tuple[Profile, Profile] | None]:
    """As Emulation.model_point: homogeneous runs one local-type pool with everything local
    (p = 0); naive prefills everything remotely (t below the support). The knobs and the
    (PrfaaS, local) profiles the model reads (None: the system's)."""
    lo, hi = system.lengths.support
    if paradigm == "homogeneous":
        prof = system.homogeneous_profile or system.local
        return replace(knobs, t=hi, n_prfaas=0), (prof, prof)
    if paradigm == "naive-heterogeneous":
        return replace(knobs, t=max(lo - 1.0, 0.0)), None
    return knobs, None


def _paradigm_eval(system: System, knobs: Knobs, mode: str, paradigm: str) -> OperatingPoint:
    knobs, profiles = _paradigm_knobs(system, knobs, paradigm)
    return evaluate(system, knobs, mode, profiles=profiles)


def nominal_point(system: System, state: LiveState, mode: str = DRIVING_MODE) -> OperatingPoint:
    """The model at the configured knobs, the preset's mix and the full link: what the
    deployment would sustain if nothing were broken."""
    return _paradigm_eval(system, nominal_knobs(state), mode, state.paradigm)


def effective_point(system: System, state: LiveState, mode: str = DRIVING_MODE) -> OperatingPoint:
    """The model at what is alive now: alive instances, the link's capacity, the live mix."""
    return _paradigm_eval(effective_system(system, state), effective_knobs(state), mode,
                          state.paradigm)


def _search_space(state: LiveState) -> dict:
    """The optimizer's inputs at the live state: alive PrfaaS, the link now, the alive pool."""
    return {"n_prfaas": state.alive.prfaas, "bandwidth": state.link_capacity,
            "pool": max(state.local_alive, 1)}


def effective_optimum(system: System, state: LiveState,
                      mode: str = DRIVING_MODE) -> OperatingPoint:
    """Best (t, N_p, N_d) for the alive instances, the link now and the live mix: what `o`
    applies during an incident. N_p + N_d span the alive local instances; turn the split into
    configured targets with `targets_for`."""
    return search(effective_system(system, state), mode, **_search_space(state)).best


def effective_grid(system: System, state: LiveState, mode: str = DRIVING_MODE) -> Grid:
    """Lambda_max over every (t, N_p) the effective optimum searches (the heat map's data):
    its argmax is `effective_optimum`."""
    return grid(effective_system(system, state), mode, **_search_space(state))


def effective_best_threshold(system: System, state: LiveState,
                             mode: str = DRIVING_MODE) -> OperatingPoint:
    """Best t alone at the alive split (Eq. 7 on the live state): the change that costs no
    conversion, which the short scheduler loop would make. Ties go to the lowest t."""
    eff = effective_system(system, state)
    grid = eff.lengths.threshold_grid()
    st = split_stats(eff.lengths, eff.prfaas, eff.local, grid, mode)
    *_, lam = ceilings(st, state.alive.prfaas, state.alive.pd_p, state.alive.pd_d,
                       state.link_capacity, eff.decode)
    i = int(np.argmax(lam))
    return evaluate(eff, replace(effective_knobs(state), t=float(grid[i])), mode)


def targets_for(optimum: OperatingPoint | SLOOptimum, state: LiveState) -> tuple[float, int, int]:
    """(t, N_p, N_d) to configure so that the alive instances split as `optimum` (Lambda_max's
    or the SLO's) says: the failed instances keep their stage (they come back there)."""
    k = optimum.knobs if isinstance(optimum, OperatingPoint) else optimum
    return k.t, k.n_p + state.failed.pd_p, k.n_d + state.failed.pd_d


# -- latency at the live state ----------------------------------------------------------------
@dataclass(frozen=True)
class Delays:
    """The fixed delays the latency model adds (the scenario's [emulator] link/RDMA latency)."""

    link: float = 0.0
    rdma: float = 0.0

    def kwargs(self) -> dict[str, float]:
        return {"link_latency": self.link, "rdma_latency": self.rdma}


def effective_prediction(system: System, state: LiveState, rate: float,
                         delays: Delays = Delays()) -> Prediction:
    """Predicted TTFT (emulator/latency.py) at the offered rate on what is alive now: alive
    instances, the link's capacity, the live mix, the running paradigm. Cached on the state
    and the rate (~4 ms each; the panel redraws on every tick)."""
    key = (id(system), state, rate, delays)
    if key not in _PREDICTIONS:
        if len(_PREDICTIONS) > 256:
            _PREDICTIONS.clear()
        eff = effective_system(system, state)
        knobs, profiles = _paradigm_knobs(eff, effective_knobs(state), state.paradigm)
        _PREDICTIONS[key] = (system, predict(eff, knobs, rate, profiles=profiles,
                                             **delays.kwargs()))
    return _PREDICTIONS[key][1]


def effective_slo(system: System, state: LiveState, target: float, q: float = 0.9,
                  delays: Delays = Delays()) -> tuple[float, SLOOptimum | None]:
    """(the SLO-bound rate at the live state, the (t, split) of the alive instances that
    maximizes it; None for a paradigm without t). Split it into targets with `targets_for`.
    Cached on the state, like `effective_view`: a search costs ~15-25 ms."""
    key = (id(system), state, target, q, delays)
    if key not in _SLOS:
        if len(_SLOS) > 64:
            _SLOS.clear()
        eff = effective_system(system, state)
        knobs, profiles = _paradigm_knobs(eff, effective_knobs(state), state.paradigm)
        rate = slo_rate(eff, knobs, target, q, profiles=profiles, **delays.kwargs())
        best = (slo_search(eff, target, q, **_search_space(state), **delays.kwargs())
                if state.paradigm == "prfaas-pd" else None)
        _SLOS[key] = (system, (rate, best))  # pins id(system)
    return _SLOS[key][1]


_SLOS: dict[tuple, tuple[System, tuple[float, SLOOptimum | None]]] = {}
_PREDICTIONS: dict[tuple, tuple[System, Prediction]] = {}


@dataclass(frozen=True)
class Difference:
    """One way the live state departs from the nominal one, with the operator's wording."""

    what: str  # "prfaas", "pd-p", "pd-d", "link", "lengths", "lambda"
    nominal: float
    effective: float
    text: str


@dataclass(frozen=True)
class EffectiveView:
    """Nominal and effective points and the effective optimum, in every mode."""

    state: LiveState
    nominal: dict[str, OperatingPoint]  # mode -> point
    effective: dict[str, OperatingPoint]
    optimum: dict[str, OperatingPoint]  # effective optimum per mode (prfaas-pd only)
    differences: tuple[Difference, ...]
    driving: str = DRIVING_MODE

    @property
    def point(self) -> OperatingPoint:
        """The effective point of the driving mode: the live Lambda_max line."""
        return self.effective[self.driving]

    @property
    def degraded(self) -> bool:
        return bool(self.differences)


_STAGE_WORDS = {"prfaas": "PrfaaS", "pd-p": "PD-P", "pd-d": "PD-D"}


def differences(system: System, state: LiveState, nominal: OperatingPoint,
                effective: OperatingPoint) -> tuple[Difference, ...]:
    """What differs, in words: instances, link capacity, the routed share, Lambda_max."""
    out: list[Difference] = []
    configured = {"prfaas": state.n_prfaas, "pd-p": state.n_p, "pd-d": state.n_d}
    for s in STAGES:
        n, a = configured[s], state.alive[s]
        if a == n and not state.draining[s]:
            continue
        why = []
        if state.failed[s]:
            why.append(f"{state.failed[s]} down")
        if state.draining[s]:
            why.append(f"{state.draining[s]} draining")
        rest = n - a - state.failed[s]
        if rest > 0:
            why.append(f"{rest} reloading")
        tail = f" ({', '.join(why)})" if why else ""
        out.append(Difference(s, n, a, f"{_STAGE_WORDS[s]} {a} of {n} alive{tail}"))
    if abs(state.link_capacity - state.bandwidth) > 1e-9 * max(state.bandwidth, 1.0):
        out.append(Difference("link", state.bandwidth, state.link_capacity,
                              f"link {to_gbps(state.link_capacity):.1f} of "
                              f"{to_gbps(state.bandwidth):.4g} Gbps"))
    if abs(effective.p - nominal.p) > 1e-3:
        out.append(Difference("lengths", nominal.p, effective.p,
                              f"share above t {format_tokens(state.t)}: {effective.p:.2f} "
                              f"(nominal {nominal.p:.2f})"))
    if out and abs(effective.lambda_max - nominal.lambda_max) > 1e-9:
        out.append(Difference("lambda", nominal.lambda_max, effective.lambda_max,
                              f"Λmax {effective.lambda_max:.2f} of {nominal.lambda_max:.2f} req/s "
                              f"({_STAGE_WORDS[effective.binding]} binds)"))
    return tuple(out)


_VIEWS: dict[tuple, tuple[System, EffectiveView]] = {}


def effective_view(system: System, state: LiveState,
                   modes: tuple[str, ...] = MODES, driving: str = DRIVING_MODE) -> EffectiveView:
    """Both modes: `exact` drives the live line, `paper` stands beside it. The optimum is
    computed for prfaas-pd only (the other paradigms have no t to move). Cached on the state
    (about 30 ms to build on paper-case-study; the state changes far less often than the UI
    refreshes)."""
    key = (id(system), state, modes, driving)
    if key not in _VIEWS:
        if len(_VIEWS) > 64:
            _VIEWS.clear()
        _VIEWS[key] = (system, _build_view(system, state, modes, driving))  # pins id(system)
    return _VIEWS[key][1]


def _build_view(system: System, state: LiveState, modes: tuple[str, ...],
                driving: str) -> EffectiveView:
    if driving not in modes:
        raise ValueError(f"driving mode {driving!r} is not among {modes}")
    nom = {m: nominal_point(system, state, m) for m in modes}
    eff = {m: effective_point(system, state, m) for m in modes}
    opt = ({m: effective_optimum(system, state, m) for m in modes}
           if state.paradigm == "prfaas-pd" else {})
    return EffectiveView(state, nom, eff, opt, differences(system, state, nom[driving],
                                                           eff[driving]), driving)


def point_summary(op: OperatingPoint, state: LiveState, *, effective: bool) -> dict:
    """The headless JSON's model point: Lambda_max, binding, the PrfaaS term, the ceilings, the
    link capacity and the instances it counted."""
    alive = state.alive if effective else StageCounts(state.n_prfaas, state.n_p, state.n_d)
    cap = state.link_capacity if effective else state.bandwidth
    d = op.to_dict()
    return {"mode": op.mode, "lambda_max": op.lambda_max, "binding": op.binding,
            "prfaas_term": op.prfaas_term, "ceilings": d["ceilings"],
            "link_capacity_gbps": to_gbps(cap), "alive": alive.as_dict(),
            "t": d["t"], "p": op.p}
