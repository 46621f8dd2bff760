"""What the operator controls (`Settings`) and what the closed-form model says about it
(`ModelView`). Pure Python, no Textual: the dashboard, the compare view and the exporters share
it, and tests can check validation without an app.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from emulator import budget
from emulator.effective import Delays, EffectiveView, effective_prediction, effective_slo
from emulator.latency import SLOOptimum, predict, slo_rate, slo_search
from emulator.model import OperatingPoint, ceilings, evaluate, split_stats
from emulator.optimizer import SearchResult, homogeneous, naive, search
from emulator.paradigm import Paradigm
from emulator.scenario.decode import CardStep
from emulator.scenario.knobs import KNOBS as KNOB_SPECS
from emulator.scenario.knobs import Controls, KnobError
from emulator.scenario.scenario import Scenario, with_tpot

SPEEDS: tuple[float, ...] = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, math.inf)
DEFAULT_SPEED = 20.0


class Refused(ValueError):
    """A change the deployment cannot take; str() is the one-line reason shown to the user."""


@dataclass(frozen=True)
class Settings:
    """Everything a knob can change: the live knobs (`controls`: t, N_p, N_d, N_prfaas and
    B_out carried by the scenario, the offered rate and the paradigm), the TPOT SLO of a
    decode from the cards (the scenario's decode step) and the speed."""

    scenario: Scenario
    paradigm: Paradigm = Paradigm.PRFAAS_PD
    rate: float = 1.0  # offered req/s
    speed: float = DEFAULT_SPEED  # simulated seconds per wall second (inf: flat out)

    @classmethod
    def initial(cls, scenario: Scenario, speed: float = DEFAULT_SPEED) -> Settings:
        """The preset's knobs; the offered rate is the preset's, else load x Lambda_max in
        exact mode, as the emulator (and so `prfaas-tui run`) computes it."""
        rate = scenario.sim.rate
        if rate is None:
            rate = scenario.sim.load * evaluate(scenario.system, scenario.knobs, "exact").lambda_max
        return cls(scenario=scenario, rate=float(rate), speed=speed)

    @property
    def tpot(self) -> float | None:
        """The TPOT SLO the decode from the cards runs under (None: constant decode)."""
        return getattr(self.scenario.sim.step, "tpot", None) if isinstance(
            self.scenario.sim.step, CardStep) else None

    @property
    def controls(self) -> Controls:
        sc = self.scenario
        return Controls(t=sc.t, n_p=sc.n_p, n_d=sc.n_d, n_prfaas=sc.system.n_prfaas,
                        bandwidth=sc.system.bandwidth, rate=self.rate, paradigm=self.paradigm)

    def apply(self, **changes) -> Settings:
        """A validated copy; raises Refused with the reason when the change is impossible.

        The knobs are checked by `Controls.validate`, the check the command line and the
        engine use. They are the operator's PrfaaS-PD knobs whatever the paradigm (another
        paradigm runs its own split and ignores t), so they are checked as such, and the
        paradigm by whether it runs on this system."""
        speed = float(changes.pop("speed", self.speed))
        if not speed > 0:
            raise Refused("the speed must be > 0")
        if "tpot" in changes:  # a decode from the cards, derived again (Eq. 5 follows)
            try:
                turned = replace(self, scenario=with_tpot(self.scenario,
                                                          float(changes.pop("tpot"))))  # type: ignore[arg-type]
            except KnobError as exc:
                raise Refused(f"TPOT {exc.reason}" if exc.reason.startswith("must")
                              else exc.reason) from None
            return turned.apply(speed=speed, **changes)
        if unknown := set(changes) - set(KNOB_SPECS):
            raise Refused(f"unknown setting {sorted(unknown)[0]!r}")
        try:
            paradigm = Paradigm(changes.pop("paradigm", self.paradigm))
            new = replace(self.controls, **changes)
            replace(new, paradigm=Paradigm.PRFAAS_PD).validate(self.scenario.system)
            if (why := paradigm.unavailable(self.scenario.system)) is not None:
                raise KnobError("paradigm", why)
        except KnobError as exc:
            raise Refused(_reason(exc, changes)) from None
        except ValueError as exc:  # an unknown paradigm
            raise Refused(str(exc)) from None
        caps = budget.caps_for("dashboard")
        try:  # the CLI's work caps (emulator.budget) on what this change adds
            if "n_prfaas" in changes:
                budget.check_instances({"N_prfaas": new.n_prfaas}, caps)
            duration = self.scenario.sim.duration
            if new.rate != self.rate:
                budget.check("requests", budget.run_requests(new.rate, duration),
                             f"rate x the run's {duration:g} s", caps)
        except budget.BudgetError as exc:
            raise Refused(str(exc)) from None
        return replace(self.running(t=new.t, n_p=new.n_p, n_d=new.n_d, n_prfaas=new.n_prfaas,
                                    bandwidth=new.bandwidth, paradigm=paradigm),
                       rate=float(new.rate), speed=speed)

    def running(self, *, paradigm: Paradigm | None = None, **knobs) -> Settings:
        """The settings at knobs an emulation already runs (the engine accepted them, or its
        scheduler chose them): a copy without a second validation."""
        sc = self.scenario
        n_prfaas, bandwidth = knobs.pop("n_prfaas", sc.system.n_prfaas), knobs.pop(
            "bandwidth", sc.system.bandwidth)
        if (n_prfaas, bandwidth) != (sc.system.n_prfaas, sc.system.bandwidth):
            sc = replace(sc, system=replace(sc.system, n_prfaas=n_prfaas, bandwidth=bandwidth))
        if any(getattr(sc, k) != v for k, v in knobs.items()):
            sc = replace(sc, **knobs)
        return replace(self, scenario=sc,
                       paradigm=self.paradigm if paradigm is None else Paradigm(paradigm))


def _reason(exc: KnobError, changes: dict) -> str:
    """A KnobError names the knob as a flag or preset key does; the operator reads its label,
    and for the pool which knob to lower."""
    label = KNOB_SPECS[exc.knob].label
    reason = f"{label} {exc.reason}" if exc.reason.startswith("must") else exc.reason
    if "local pool" in exc.reason:
        reason += f": lower {'N_d' if 'n_p' in changes else 'N_p'} first"
    return reason


def step_speed(speed: float, direction: int) -> float:
    """The next speed on the ladder 1x .. 1000x, max."""
    i = sum(1 for s in SPEEDS if s < speed)  # the first rung >= speed
    if direction > 0 and i < len(SPEEDS) and SPEEDS[i] == speed:
        i += 1
    i = i if direction > 0 else i - 1
    return SPEEDS[max(0, min(len(SPEEDS) - 1, i))]


def nice_step(x: float, digits: int = 1) -> float:
    """A round step for +/- keys: one unit of the `digits`-th significant digit of x."""
    if not x > 0:
        return 1.0
    return 10.0 ** (math.ceil(math.log10(x)) - digits)


@dataclass(frozen=True)
class Figure5:
    """The paper's Figure 5 at the current knobs: Lambda_max against N_p (t fixed) and both
    producer ceilings against t (split fixed)."""

    n_p: np.ndarray
    lambda_vs_np: np.ndarray
    t: np.ndarray
    prfaas_vs_t: np.ndarray
    pdp_vs_t: np.ndarray
    lambda_vs_t: np.ndarray


@dataclass(frozen=True)
class ModelView:
    """The model at the settings: the operating point of the chosen paradigm, the optimum and
    the Figure-5 curves."""

    settings: Settings
    point: OperatingPoint
    optimum: SearchResult = field(repr=False)

    @classmethod
    def of(cls, settings: Settings) -> ModelView:
        return cls(settings, paradigm_point(settings), optimum_of(settings.scenario))

    @property
    def scenario(self) -> Scenario:
        return self.settings.scenario

    @property
    def load(self) -> float:
        """Offered rate over Lambda_max: above 1 the deployment cannot keep up."""
        lam = self.point.lambda_max
        return self.settings.rate / lam if lam > 0 else math.inf

    @property
    def at_optimum(self) -> bool:
        b, k = self.optimum.best.knobs, self.scenario
        return (b.n_p, b.n_d) == (k.n_p, k.n_d) and abs(b.t - k.t) < 0.5

    @cached_property
    def latency(self) -> LatencyView:
        """Predicted TTFT at the offered rate, the SLO-bound rate here and the SLO optimum."""
        return latency_of(self.settings, self.point)

    @cached_property
    def figure5(self) -> Figure5:
        sc = self.scenario
        s, k = sc.system, sc.knobs
        pool = s.local_pool
        n_p = np.arange(pool + 1)
        at_t = split_stats(s.lengths, s.prfaas, s.local, np.array([k.t]), sc.mode)
        *_, lam_np = ceilings(at_t, k.n_prfaas, n_p, pool - n_p, k.bandwidth, s.decode)
        grid = self.optimum.t_values
        st = split_stats(s.lengths, s.prfaas, s.local, grid, sc.mode)
        *_, stack, lam_t = ceilings(st, k.n_prfaas, k.n_p, k.n_d, k.bandwidth, s.decode)
        return Figure5(n_p, np.asarray(lam_np)[0], grid, stack[0], stack[1], lam_t)


def paradigm_point(settings: Settings) -> OperatingPoint:
    """The model of the paradigm's deployment (see _POINT)."""
    return _POINT[settings.paradigm](settings.scenario)


_POINT: dict[Paradigm, Callable[[Scenario], OperatingPoint]] = {
    Paradigm.PRFAAS_PD: lambda sc: evaluate(sc.system, sc.knobs, sc.mode),  # at the knobs
    # at its own best split (t, N_p and N_d do not apply), if the preset has its pool
    Paradigm.HOMOGENEOUS: lambda sc: (homogeneous(sc.system, sc.mode)
                                      or evaluate(sc.system, sc.knobs, sc.mode)),
    Paradigm.NAIVE: lambda sc: naive(sc.system, sc.mode),  # every request prefilled remotely
}


DEFAULT_SLO_TTFT = 6.0  # seconds of P90 TTFT when the preset has no [slo] ttft


@dataclass(frozen=True)
class LatencyView:
    p50: float
    p90: float
    target: float  # P90 TTFT target, seconds
    slo_rate: float  # highest offered rate meeting it at the current point
    slo_optimum: SLOOptimum | None  # (t, split) with the highest such rate (PrfaaS-PD)
    unstable: tuple[str, ...] = ()  # paths ("prfaas", "pd-p") whose queue grows without bound

    @classmethod
    def of(cls, pred: Any, target: float, slo_rate: float,
           slo_optimum: SLOOptimum | None) -> LatencyView:
        """From a latency.Prediction: a path whose P90 is infinite is unstable (its queue
        grows); the overall P90 is then infinite too, and the P50 only the stable path's
        tail, so it is not shown as a latency."""
        bad = tuple(k for k, v in pred.paths.items() if not math.isfinite(v["p90"]))
        return cls(pred.p50, pred.p90, target, slo_rate, slo_optimum, bad)


def slo_target(sc: Scenario) -> float:
    """The P90 TTFT target the panel and `O` use: the preset's [slo] ttft, else the default."""
    return sc.sim.slo_ttft or DEFAULT_SLO_TTFT


def live_latency(settings: Settings, live: EffectiveView) -> LatencyView:
    """Predicted TTFT at the offered rate, the SLO-bound rate and the SLO optimum of the live
    state (alive instances, the link now, the live mix): what the deployment does now, as the
    panel's live Lambda_max line. The SLO optimum splits the alive instances (None for a
    paradigm without t); `targets_for` turns it into knobs."""
    sc = settings.scenario
    delays = Delays(sc.sim.link_latency, sc.sim.rdma_latency)
    target = slo_target(sc)
    pred = effective_prediction(sc.system, live.state, settings.rate, delays)
    rate, best = effective_slo(sc.system, live.state, target, delays=delays)
    return LatencyView.of(pred, target, rate, best)


def latency_of(settings: Settings, op: OperatingPoint) -> LatencyView:
    sc = settings.scenario
    s = sc.system
    target = slo_target(sc)
    lat = {"link_latency": sc.sim.link_latency, "rdma_latency": sc.sim.rdma_latency}
    prof = s.homogeneous_profile or s.local
    profiles = (prof, prof) if settings.paradigm == "homogeneous" else None
    pred = predict(s, op.knobs, settings.rate, profiles=profiles, **lat)
    rate = slo_rate(s, op.knobs, target, profiles=profiles, **lat)
    key = (id(s.lengths), id(s.prfaas), id(s.local), s.n_prfaas, s.bandwidth, s.local_pool, target)
    if key not in _SLO_OPTIMA:
        if len(_SLO_OPTIMA) > 64:
            _SLO_OPTIMA.clear()
        _SLO_OPTIMA[key] = (s.lengths, s.prfaas, s.local, slo_search(s, target, **lat))
    return LatencyView.of(pred, target, rate, _SLO_OPTIMA[key][-1])


_OPTIMA: dict[tuple, tuple] = {}
_SLO_OPTIMA: dict[tuple, tuple] = {}


def optimum_of(sc: Scenario) -> SearchResult:
    """The grid search at the scenario's N_prfaas and B_out (cached: t and the split do not
    change it, and every keypress on them would otherwise redo it)."""
    s = sc.system
    key = (id(s.lengths), id(s.prfaas), id(s.local), s.n_prfaas, s.bandwidth, s.local_pool, sc.mode)
    if key not in _OPTIMA:
        if len(_OPTIMA) > 64:
            _OPTIMA.clear()
        # the value holds the keyed objects so that their ids cannot be reused while cached
        _OPTIMA[key] = (s.lengths, s.prfaas, s.local, search(s, sc.mode))
    return _OPTIMA[key][-1]
