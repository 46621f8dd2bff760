"""Flags shared by the headless commands, and turning them into a validated Scenario."""

from __future__ import annotations

import argparse
import math

from emulator import presets
from emulator.config import PresetError
from emulator.presets import Scenario
from emulator.units import UnitError, parse_bandwidth, parse_tokens


class UsageError(ValueError):
    """A bad command-line value; str() is the one line the user sees."""


def add_scenario_flags(p: argparse.ArgumentParser, default_preset: str = "paper-case-study") -> None:
    p.add_argument("--preset", default=default_preset, help="preset name or TOML path")
    p.add_argument("--t", dest="t", metavar="TOKENS", help="routing threshold, e.g. 19400 or 32K")
    p.add_argument("--np", dest="n_p", type=int, metavar="N", help="local prefill instances (PD-P)")
    p.add_argument("--nd", dest="n_d", type=int, metavar="N", help="local decode instances (PD-D)")
    p.add_argument("--nprfaas", dest="n_prfaas", type=int, metavar="N", help="PrfaaS instances")
    p.add_argument("--bandwidth", metavar="GBPS",
                   help="cross-datacenter egress B_out: a number in Gbps or '1000 MB/s'")


def parse_flag(flag: str, conv, raw: str | None, check=None):
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


def whole(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"must be a whole number, got {raw!r}") from None


def positive(x: float) -> str | None:
    return None if x > 0 and math.isfinite(x) else "must be > 0"


def non_negative(x: float) -> str | None:
    return None if x >= 0 and math.isfinite(x) else "must be >= 0"


# check_knobs names preset keys; a scenario that loaded can only be broken by the flags
_FLAG_OF_KEY = {"deployment.threshold": "--t", "deployment.n_p": "--np/--nd",
                "deployment.n_d": "--np/--nd", "deployment.n_prfaas": "--nprfaas",
                "deployment.bandwidth": "--bandwidth"}


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """Load the preset and apply --t/--np/--nd/--nprfaas/--bandwidth, validated like a preset
    (presets.check_knobs) with the error naming the flag."""
    sc = presets.load(args.preset)
    t = parse_flag("--t", parse_tokens, args.t)
    bw = parse_flag("--bandwidth", parse_bandwidth, args.bandwidth)
    n_p, n_d = args.n_p, args.n_d
    pool = sc.system.local_pool
    if n_p is not None and n_d is None:
        n_d = max(pool - n_p, 0)
    elif n_d is not None and n_p is None:
        n_p = max(pool - n_d, 0)
    try:
        return sc.with_knobs(t=t, n_p=n_p, n_d=n_d, n_prfaas=args.n_prfaas, bandwidth=bw)
    except PresetError as exc:
        raise UsageError(f"{_FLAG_OF_KEY.get(exc.key, exc.key)}: {exc.message}") from None
