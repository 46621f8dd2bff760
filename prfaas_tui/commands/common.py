"""What the headless commands share: knob flags generated from emulator.scenario.knobs.KNOBS,
parsed flag values, and turning them into validated Controls (Controls.validate, the check the
dashboard and the engine use too)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any

from emulator.optimizer import starting_split
from emulator.paradigm import Paradigm
from emulator.scenario.knobs import KNOBS, Controls, KnobError
from emulator.scenario.presets import load
from emulator.scenario.scenario import Scenario
from emulator.units import UnitError
from prfaas_tui.errors import UsageError

# the knobs every scenario command takes; `run` adds rate and paradigm
DEPLOYMENT_KNOBS = ("t", "n_p", "n_d", "n_prfaas", "bandwidth")


def add_scenario_flags(p: argparse.ArgumentParser,
                       names: Iterable[str] = DEPLOYMENT_KNOBS) -> None:
    """--preset and one flag per knob, spelled as KNOBS says (old spellings stay as hidden
    aliases)."""
    p.add_argument("--preset", default="paper-case-study", metavar="NAME|PATH",
                   help="shipped preset name or TOML path (default: paper-case-study)")
    for name in names:
        k = KNOBS[name]
        choices = {"choices": list(Paradigm)} if k.parse is Paradigm else {}
        p.add_argument(k.flag, dest=name, metavar=k.unit, help=k.help, **choices)
        for alias in k.aliases:
            p.add_argument(alias, dest=name, help=argparse.SUPPRESS)


def parse_flag(flag: str, conv: Callable[[Any], Any], raw: str | None,
               check: Callable[[Any], str | None] | None = None) -> Any:
    """A flag's value through `conv` (None when not given); every failure a UsageError naming
    the flag. `check` returns an error text or None."""
    if raw is None:
        return None
    try:
        value = conv(raw)
    except (UnitError, ValueError) as exc:
        raise UsageError(f"{flag}: {exc}") from None
    if check is not None and (msg := check(value)):
        raise UsageError(f"{flag}: {msg} (got {raw!r})")
    return value


def knob_error(exc: KnobError) -> UsageError:
    """A KnobError in flag terms: the split's checks name both split flags."""
    if exc.knob in ("n_p", "n_d"):
        return UsageError(f"{KNOBS['n_p'].flag}/{KNOBS['n_d'].flag}: {exc}")
    return UsageError(f"{KNOBS[exc.knob].flag}: {exc.reason}")


def controls_from_args(sc: Scenario, args: argparse.Namespace,
                       mode: str = "exact") -> tuple[Controls, dict[str, Any]]:
    """The scenario's controls with the knob flags applied and validated, and the flags that
    were given ({knob: value}). One meaning everywhere: a flag sets its knob and nothing else
    (--np alone keeps the preset's N_d); a paradigm starts from its own split."""
    given = {name: parse_flag(k.flag, k.parse, getattr(args, name))
             for name, k in KNOBS.items() if getattr(args, name, None) is not None}
    base = sc.controls
    paradigm = given.get("paradigm", base.paradigm)
    n_p, n_d = starting_split(sc.system, paradigm, (base.n_p, base.n_d), mode)
    try:
        c = base.changed(sc.system, **{"paradigm": paradigm, "n_p": n_p, "n_d": n_d, **given})
    except KnobError as exc:
        raise knob_error(exc) from None
    return c, given


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """Load the preset and deploy it at the knob flags."""
    sc = load(args.preset)
    c, _ = controls_from_args(sc, args)
    return sc.with_controls(c)
