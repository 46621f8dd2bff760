"""What the operator controls (`Settings`) and what the closed-form model says about it
(`ModelView`). Pure Python, no Textual: the dashboard, the compare view and the exporters share
it, and tests can check validation without an app.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from emulator import budget
from emulator.model import OperatingPoint, ceilings, evaluate, split_stats
from emulator.optimizer import SearchResult, homogeneous, naive, search
from emulator.paradigm import Paradigm
from emulator.scenario.knobs import KNOBS, KnobError
from emulator.scenario.scenario import Scenario

SPEEDS: tuple[float, ...] = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, math.inf)
DEFAULT_SPEED = 20.0
PARADIGM_LABELS = {"prfaas-pd": "PrfaaS-PD", "homogeneous": "homogeneous",
                   "naive-heterogeneous": "naive"}


class Refused(ValueError):
    """A change the deployment cannot take; str() is the one-line reason shown to the user."""


@dataclass(frozen=True)
class Settings:
    """Everything a knob can change. The scenario carries t, N_p, N_d, N_prfaas and B_out."""

    scenario: Scenario
    paradigm: str = "prfaas-pd"
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

    def apply(self, **changes) -> Settings:
        """A validated copy; raises Refused with the reason when the change is impossible."""
        knobs = {k: changes.pop(k) for k in ("t", "n_p", "n_d", "n_prfaas", "bandwidth")
                 if k in changes}
        sc = self.scenario
        if knobs:
            try:
                sc = sc.with_knobs(**knobs)
            except KnobError as exc:
                raise Refused(_reason(exc, sc, knobs)) from None
        paradigm = changes.pop("paradigm", self.paradigm)
        if paradigm not in tuple(Paradigm):
            raise Refused(f"unknown paradigm {paradigm!r}")
        if paradigm == "homogeneous" and sc.system.homogeneous_pool <= 0:
            raise Refused("this preset defines no homogeneous pool ([homogeneous] section)")
        rate = float(changes.pop("rate", self.rate))
        if not (rate > 0 and math.isfinite(rate)):
            raise Refused("the offered rate must be a positive number of req/s")
        speed = float(changes.pop("speed", self.speed))
        if not speed > 0:
            raise Refused("the speed must be > 0")
        if changes:
            raise Refused(f"unknown setting {next(iter(changes))!r}")
        try:  # the CLI's work caps (emulator.budget) on what this change adds
            if "n_prfaas" in knobs:
                budget.check_instances({"N_prfaas": sc.system.n_prfaas})
            if rate != self.rate:
                budget.check("requests", budget.run_requests(rate, sc.sim.duration),
                             f"rate x the run's {sc.sim.duration:g} s")
        except budget.BudgetError as exc:
            raise Refused(str(exc)) from None
        return replace(self, scenario=sc, paradigm=paradigm, rate=rate, speed=speed)


def _reason(exc: KnobError, sc: Scenario, knobs: dict) -> str:
    """The rule that was broken, in the panel's words."""
    n_p, n_d = knobs.get("n_p", sc.n_p), knobs.get("n_d", sc.n_d)
    pool = sc.system.local_pool
    if n_p + n_d > pool:
        return (f"N_p + N_d = {n_p} + {n_d} = {n_p + n_d} exceeds the local pool of {pool}: "
                f"lower {'N_d' if 'n_p' in knobs else 'N_p'} first")
    label = "t =" if exc.knob == "t" else KNOBS[exc.knob].label
    return f"{label} {exc.reason}"


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
    """prfaas-pd at the knobs; homogeneous at its own best split; naive with every request
    prefilled remotely (t, N_p and N_d do not apply to the last two)."""
    sc = settings.scenario
    if settings.paradigm == "homogeneous":
        op = homogeneous(sc.system, sc.mode)
        if op is not None:
            return op
    if settings.paradigm == "naive-heterogeneous":
        return naive(sc.system, sc.mode)
    return evaluate(sc.system, sc.knobs, sc.mode)


_OPTIMA: dict[tuple, tuple] = {}


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
