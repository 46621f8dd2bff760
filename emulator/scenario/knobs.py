"""The live knobs — the ones an operator turns while a scenario runs — defined once.

`KNOBS` describes each knob (flag, units, label, help); the CLI generates its flags from it.
`Controls` is one complete setting of the knobs and `Controls.validate` is the single check that
the CLI, the dashboard and the engine share; a failure is a `KnobError` naming the knob.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from emulator.model import Knobs, System
from emulator.paradigm import Paradigm
from emulator.units import parse_bandwidth, parse_tokens, to_gbps

# the knobs' one range (preset keys, flags, the dashboard and the engine alike)
MAX_INSTANCES = 100_000  # instances of one pool; the work cap (emulator.budget) is lower
MAX_BANDWIDTH = 1e15  # bytes/s: 8 Pbps


class KnobError(ValueError):
    """An impossible knob setting. `reason` is the phrase after the knob's name (what a preset
    key or a flag is followed by); str() is the whole line."""

    def __init__(self, knob: str, reason: str):
        self.knob, self.reason = knob, reason
        super().__init__(f"{knob} {reason}" if reason.startswith("must") else reason)


def whole(raw: Any) -> int:
    """A count from a flag (text) or a TOML value (an int, or a float that is one)."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str):
        try:
            return int(raw)
        except ValueError:
            pass
    raise ValueError(f"must be a whole number, got {raw!r}")


def number(raw: Any) -> float:
    """A finite real number."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be finite, got {raw!r}")
    return value


@dataclass(frozen=True)
class Knob:
    """One live knob: its Controls field, command-line flag, parser and how people name it."""

    name: str  # the Controls field
    flag: str
    parse: Callable[[Any], Any]  # text (flag) or TOML value -> the field's value
    label: str  # the paper's symbol, shown in the UI
    unit: str  # metavar / display unit
    help: str
    key: str | None  # the preset key that sets it initially (None: no preset key)
    aliases: tuple[str, ...] = ()  # old spellings, accepted but not shown


KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob("t", "--t", parse_tokens, "t", "TOKENS", "routing threshold, e.g. 19400 or 32K",
         "deployment.threshold"),
    Knob("n_p", "--np", whole, "N_p", "N",
         "local prefill (PD-P) instances; alone, keeps the preset's N_d", "deployment.n_p"),
    Knob("n_d", "--nd", whole, "N_d", "N",
         "local decode (PD-D) instances; alone, keeps the preset's N_p", "deployment.n_d"),
    Knob("n_prfaas", "--n-prfaas", whole, "N_prfaas", "N", "PrfaaS prefill instances",
         "deployment.n_prfaas", aliases=("--nprfaas",)),
    Knob("bandwidth", "--bandwidth", parse_bandwidth, "B_out", "GBPS",
         "cross-datacenter egress B_out in Gbps, or with a unit ('1000 MB/s')",
         "deployment.bandwidth"),
    Knob("rate", "--rate", number, "rate", "R", "offered rate, req/s", "workload.rate"),
    Knob("paradigm", "--paradigm", Paradigm, "paradigm", "PARADIGM",
         "prfaas-pd (threshold routing), homogeneous (all local, the preset's [homogeneous] "
         "pool) or naive-heterogeneous (all remote)", None),
)}


@dataclass(frozen=True)
class Controls:
    """One setting of every live knob. `rate` None: the scenario's own offered rate."""

    t: float  # tokens
    n_p: int
    n_d: int
    n_prfaas: int
    bandwidth: float  # bytes per second
    rate: float | None = None  # req/s
    paradigm: Paradigm = Paradigm.PRFAAS_PD

    def validate(self, system: System) -> None:
        """Raise KnobError unless this setting can run on `system`."""
        par = Paradigm(self.paradigm)
        if (why := par.unavailable(system)) is not None:
            raise KnobError("paradigm", why)
        for name in ("n_p", "n_d", "n_prfaas"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise KnobError(name, f"must be a whole number (got {v!r})")
        if self.n_p < 0:
            raise KnobError("n_p", f"must be >= 0 (got {self.n_p})")
        if self.n_d < 1:
            raise KnobError("n_d", f"must be >= 1: every request needs decode (got {self.n_d})")
        pool = par.pool(system)
        if self.n_p + self.n_d > pool:
            raise KnobError("n_p", f"n_p + n_d = {self.n_p + self.n_d} exceeds the local pool "
                                   f"of {pool}")
        if (why := par.split_error(self.n_p)) is not None:
            raise KnobError("n_p", why)
        if self.n_prfaas < 0:
            raise KnobError("n_prfaas", f"must be >= 0 (got {self.n_prfaas})")
        if self.n_prfaas > MAX_INSTANCES:
            raise KnobError("n_prfaas", f"must be at most {MAX_INSTANCES} (got {self.n_prfaas})")
        if not (self.bandwidth > 0 and math.isfinite(self.bandwidth)):
            raise KnobError("bandwidth", f"must be > 0 (got {to_gbps(self.bandwidth):g} Gbps)")
        if self.bandwidth > MAX_BANDWIDTH:
            raise KnobError("bandwidth", f"must be at most {to_gbps(MAX_BANDWIDTH):g} Gbps "
                                         f"(got {to_gbps(self.bandwidth):g} Gbps)")
        lo, hi = system.lengths.support
        if not (0 <= self.t <= hi):
            raise KnobError("t", f"{self.t:.0f} tokens lies outside the length distribution's "
                                 f"support [{lo:.0f}, {hi:.0f}] (any t from 0 to {hi:.0f} routes)")
        if self.rate is not None and not (self.rate >= 0 and math.isfinite(self.rate)):
            raise KnobError("rate", f"must be >= 0 (got {self.rate!r})")

    def changed(self, system: System, **kw: Any) -> Controls:
        """A validated copy with some knobs changed; KnobError (and no copy) when impossible."""
        unknown = set(kw) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"no knob named {sorted(unknown)[0]!r}")
        if "paradigm" in kw:
            kw["paradigm"] = Paradigm(kw["paradigm"])
        out = replace(self, **kw)
        out.validate(system)
        return out

    def model_knobs(self) -> Knobs:
        """The closed-form model's knobs (rate and paradigm are not among them)."""
        return Knobs(t=self.t, n_p=self.n_p, n_d=self.n_d, n_prfaas=self.n_prfaas,
                     bandwidth=self.bandwidth)
