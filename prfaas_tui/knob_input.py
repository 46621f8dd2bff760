"""Typed knob values, parsed and range-checked in the project's words.

Every knob's range lives in `RANGES` (one row per knob key, the keys of the knob panel), so the
knob definitions (emulator/scenario/knobs.py after the refactor) can absorb the table as it is.
Ranges that depend on the deployment (t up to the top of the length support, N_p and N_d up to
the local pool, `%` of Lambda_max) come in `Limits`. Errors are `KnobInputError` (a ValueError)
with one line an operator can act on, never a Python message ("could not convert string to
float: 'ma'" was `max` with its trailing x stripped).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from emulator.units import GBPS, UnitError, format_tokens, parse_bandwidth, parse_tokens, to_gbps


class KnobInputError(ValueError):
    """A typed value the knob does not take; str() is the one-line reason."""


@dataclass(frozen=True)
class KnobRange:
    """What a knob accepts. `hi` None: the deployment decides (see `Limits`)."""

    key: str
    label: str  # as the panel shows it
    lo: float
    hi: float | None
    unit: str
    whole: bool
    words: str  # the range in a phrase, for hints and messages


MAX_SPEED = 1000.0
MIN_GBPS, MAX_GBPS = 0.001, 100_000.0  # 1 Mbps .. 100 Tbps: a cross-datacenter lease
MAX_RATE = 10_000.0  # req/s
MAX_RATE_PERCENT = 1000.0  # of Lambda_max
MAX_PRFAAS = 100_000  # presets.MAX_INSTANCES

RANGES: dict[str, KnobRange] = {r.key: r for r in (
    KnobRange("t", "t", 0, None, "tokens", True,
              "a whole number of tokens from 0 to the longest request, like 19400 or 32K (= 32,768)"),
    KnobRange("n_prfaas", "N_prfaas", 0, MAX_PRFAAS, "instances", True,
              f"a whole number of PrfaaS instances from 0 to {MAX_PRFAAS}"),
    KnobRange("n_p", "N_p", 0, None, "instances", True,
              "a whole number of local prefill instances, N_p + N_d within the pool"),
    KnobRange("n_d", "N_d", 1, None, "instances", True,
              "a whole number of decode instances from 1, N_p + N_d within the pool"),
    KnobRange("bandwidth", "B_out", MIN_GBPS * GBPS, MAX_GBPS * GBPS, "bytes/s", False,
              "1 Mbps to 100 Tbps, like 100 Gbps or 1000 MB/s (a bare number is Gbps)"),
    KnobRange("rate", "rate", 0, MAX_RATE, "req/s", False,
              f"more than 0 and at most {MAX_RATE:g} req/s, or a share of Λmax like 90%"),
    KnobRange("speed", "speed", 1, MAX_SPEED, "x", False, "1x to 1000x, or max"),
)}


@dataclass(frozen=True)
class Limits:
    """The deployment's bounds on the knobs whose range it decides."""

    t_max: float  # top of the length distribution's support (tokens)
    pool: int  # local instances (N_p + N_d <= pool)
    lambda_max: float | None = None  # for rates typed as '%' of Lambda_max


def _got(text: str) -> str:
    t = text.strip()
    return repr(t) if t else "nothing"


def parse_speed(text: str) -> float:
    """'20', '20x', 'max' -> simulated seconds per wall second (max: math.inf)."""
    t = text.strip().lower()
    if t in ("max", "inf", "∞"):
        return math.inf
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*x?", t)
    if not m:
        raise KnobInputError(f"speed is 1x to 1000x, or max (got {_got(text)})")
    x = float(m.group(1))
    if not 1 <= x <= MAX_SPEED:
        raise KnobInputError(f"speed is 1x to 1000x, or max (got {x:g}x)")
    return x


def parse_bandwidth_knob(text: str) -> float:
    """'100 Gbps', '8 Gb/s', '1000 MB/s', '30' (Gbps) -> bytes per second, 1 Mbps..100 Tbps."""
    try:
        b = parse_bandwidth(text.strip())
    except UnitError:
        raise KnobInputError(f"B_out is a bandwidth like 100 Gbps or 1000 MB/s "
                             f"(got {_got(text)})") from None
    r = RANGES["bandwidth"]
    if not r.lo <= b <= r.hi:
        raise KnobInputError(f"B_out is 1 Mbps to 100 Tbps (got {to_gbps(b):g} Gbps)")
    return b


def parse_threshold(text: str, t_max: float) -> float:
    """'19400', '32K' -> tokens; whole tokens only (2.5 is refused, not rounded) in 0..t_max."""
    try:
        t = parse_tokens(text.strip())
    except UnitError:
        raise KnobInputError(f"t is a token count like 19400 or 32K (got {_got(text)})") from None
    if t != math.floor(t):
        lo = math.floor(t)
        typed = text.strip()
        value = "" if typed == f"{t:g}" else f" = {t:g} tokens"  # 2.5 says nothing more
        raise KnobInputError(f"t is a whole number of tokens (got {typed}{value}: "
                             f"try {lo} or {lo + 1})")
    if not 0 <= t <= t_max:
        raise KnobInputError(f"t is 0 to {format_tokens(t_max)} tokens, the "
                             f"longest request (got {format_tokens(t)})")
    return t


def parse_rate(text: str, lambda_max: float | None = None) -> float:
    """'2.5', '2.5 req/s' -> req/s; '90%' -> 0.9 x lambda_max."""
    t = text.strip().lower()
    pct = t.endswith("%")
    t = t.removesuffix("%").removesuffix("req/s").strip()
    try:
        x = float(t)
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or not re.fullmatch(r"[0-9.e+-]+", t):
        raise KnobInputError(f"rate is a number of req/s, or a share of Λmax like 90% "
                             f"(got {_got(text)})")
    if pct:
        if lambda_max is None or not lambda_max > 0:
            raise KnobInputError("rate as a share of Λmax needs a Λmax: give req/s")
        if not 0 < x <= MAX_RATE_PERCENT:
            raise KnobInputError(f"rate is more than 0% and at most {MAX_RATE_PERCENT:g}% of "
                                 f"Λmax (got {x:g}%)")
        x = x / 100 * lambda_max
    if not 0 < x <= MAX_RATE:
        raise KnobInputError(f"rate is more than 0 and at most {MAX_RATE:g} req/s (got {x:g})")
    return x


def parse_count(key: str, text: str, hi: int) -> int:
    """A whole number of instances in [RANGES[key].lo, hi]."""
    r = RANGES[key]
    t = text.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", t):
        raise KnobInputError(f"{r.label} is a whole number of instances (got {_got(text)})")
    n = int(t)
    if not r.lo <= n <= hi:
        raise KnobInputError(f"{r.label} is {r.lo:g} to {hi} (got {n})")
    return n


def parse_knob(key: str, text: str, limits: Limits) -> dict[str, float | int]:
    """{key: value} in internal units (tokens, bytes/s, req/s, x), the shape the settings'
    `apply` takes; KnobInputError with the reason otherwise. Cross-knob rules (N_p + N_d within
    the pool) stay with `apply`: this checks one value."""
    if key not in RANGES:
        raise KnobInputError(f"no knob {key!r} (knobs: {', '.join(RANGES)})")
    if key == "speed":
        return {key: parse_speed(text)}
    if key == "bandwidth":
        return {key: parse_bandwidth_knob(text)}
    if key == "t":
        return {key: parse_threshold(text, limits.t_max)}
    if key == "rate":
        return {key: parse_rate(text, limits.lambda_max)}
    hi = MAX_PRFAAS if key == "n_prfaas" else limits.pool
    return {key: parse_count(key, text, hi)}
