"""The three deployment paradigms and everything that differs between them, in one place.

- PrfaaS-PD routes a request to PrfaaS iff its incremental length exceeds the threshold t and
  keeps all three stages;
- homogeneous runs prefill and decode in one pool of local-type instances (its own
  `[homogeneous]` pool, p = 0): no PrfaaS stage, t fixed at the top of the support;
- naive heterogeneous prefills everything remotely (p = 1, t below the support): no PD-P.

Code that needs a paradigm-specific answer asks the member (`Paradigm.HOMOGENEOUS.pool(system)`)
instead of comparing names, so adding a paradigm is adding one `Behaviour`. The values are the
JSON and CLI spellings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from emulator.model import Cluster, Knobs, OperatingPoint, Stage, System, evaluate
from emulator.profiles import Profile

__all__ = ["Behaviour", "Cluster", "Paradigm", "Stage"]


@dataclass(frozen=True)
class Behaviour:
    """What one paradigm does; see the module docstring."""

    label: str  # the UI's short name
    stages: tuple[Stage, ...]  # the stages that take work
    rule: Callable[[float, float], bool]  # (incremental length, t) -> prefill on PrfaaS?
    threshold_routing: bool  # t is live (and the cache-aware rule applies)
    own_pool: bool  # the [homogeneous] pool and profile instead of the local ones
    # the threshold the model sees: (knob t, support (lo, hi)) -> t
    model_t: Callable[[float, tuple[float, float]], float]


class Paradigm(StrEnum):
    PRFAAS_PD = "prfaas-pd"
    HOMOGENEOUS = "homogeneous"
    NAIVE = "naive-heterogeneous"

    @classmethod
    def _missing_(cls, value: object) -> Paradigm:
        raise ValueError(f"paradigm must be one of {', '.join(cls)}, got {value!r}")

    @property
    def behaviour(self) -> Behaviour:
        return _BEHAVIOUR[self]

    @property
    def label(self) -> str:
        return _BEHAVIOUR[self].label

    @property
    def stages(self) -> tuple[Stage, ...]:
        return _BEHAVIOUR[self].stages

    @property
    def clusters(self) -> tuple[Cluster, ...]:
        """The clusters that hold instances (PrfaaS only where its stage exists)."""
        return (Cluster.PRFAAS, Cluster.PD) if Stage.PRFAAS in self.stages else (Cluster.PD,)

    @property
    def threshold_routing(self) -> bool:
        return _BEHAVIOUR[self].threshold_routing

    def remote(self, incremental_length: float, t: float) -> bool:
        """The router's rule: whether a request of this many uncached tokens prefills on PrfaaS."""
        return _BEHAVIOUR[self].rule(incremental_length, t)

    def pool(self, system: System) -> int:
        """Local instances this paradigm splits between PD-P and PD-D."""
        return system.homogeneous_pool if _BEHAVIOUR[self].own_pool else system.local_pool

    def local_profile(self, system: System) -> Profile:
        """The hardware of the local pool (PD-P's service times)."""
        if _BEHAVIOUR[self].own_pool:
            return system.homogeneous_profile or system.local
        return system.local

    def n_prfaas(self, n: int) -> int:
        """PrfaaS instances in use when `n` are configured."""
        return n if Stage.PRFAAS in self.stages else 0

    def unavailable(self, system: System) -> str | None:
        """Why the system cannot run this paradigm, or None."""
        if _BEHAVIOUR[self].own_pool and system.homogeneous_pool <= 0:
            return (f"the {self} paradigm needs a [homogeneous] section in the preset")
        return None

    def split_error(self, n_p: int) -> str | None:
        """Why `n_p` local prefill instances make no sense here, or None."""
        if Stage.PD_P not in self.stages and n_p > 0:
            return f"{self} prefills everything remotely: n_p must be 0"
        return None

    def model_knobs(self, system: System, knobs: Knobs) -> Knobs:
        """The knobs the closed-form model sees for this paradigm's deployment."""
        return replace(knobs, t=_BEHAVIOUR[self].model_t(knobs.t, system.lengths.support),
                       n_prfaas=self.n_prfaas(knobs.n_prfaas))

    def evaluate(self, system: System, knobs: Knobs, mode: str = "paper") -> OperatingPoint:
        """The model at these knobs, as this paradigm deploys them."""
        prof = self.local_profile(system)
        profiles = (prof, prof) if _BEHAVIOUR[self].own_pool else None
        return evaluate(system, self.model_knobs(system, knobs), mode, profiles=profiles)

    def cost_per_hour(self, system: System) -> float | None:
        """Instance-hours priced with the preset's [prices]; None when a price is missing."""
        if system.price_local is None:
            return None
        local = self.pool(system) * system.price_local
        if Stage.PRFAAS not in self.stages:
            return local
        if system.price_prfaas is None:
            return None
        return system.n_prfaas * system.price_prfaas + local


_BEHAVIOUR: dict[Paradigm, Behaviour] = {
    Paradigm.PRFAAS_PD: Behaviour(
        label="PrfaaS-PD", stages=(Stage.PRFAAS, Stage.PD_P, Stage.PD_D),
        rule=lambda length, t: length > t, threshold_routing=True, own_pool=False,
        model_t=lambda t, support: t),
    Paradigm.HOMOGENEOUS: Behaviour(
        label="homogeneous", stages=(Stage.PD_P, Stage.PD_D),
        rule=lambda length, t: False, threshold_routing=False, own_pool=True,
        model_t=lambda t, support: support[1]),
    Paradigm.NAIVE: Behaviour(
        label="naive", stages=(Stage.PRFAAS, Stage.PD_D),
        rule=lambda length, t: True, threshold_routing=False, own_pool=False,
        model_t=lambda t, support: max(support[0] - 1.0, 0.0)),
}
