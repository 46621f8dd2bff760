"""Typed knob values on the dashboard: the knob registry's parse and range
(`emulator.scenario.knobs`), said in the panel's words.

The rules are the registry's, the ones the command line, the presets, the topology view and
the engine apply; this module only words a refusal for the panel (`KnobInputError`, a
ValueError with one line an operator can act on, never a Python message: "could not convert
string to float: 'ma'" was `max` with its trailing x stripped) and adds what only the
dashboard types: a rate as a share of Lambda_max ('90%', the `--load` rule) and the speed.
"""

from __future__ import annotations

import math
import re

from emulator.scenario.knobs import KNOBS, Knob, Limits
from emulator.scenario.reader import MAX_LOAD, a_load
from emulator.units import UnitError, format_tokens

__all__ = ["KEYS", "KnobInputError", "Limits", "hint", "parse_knob"]

MAX_SPEED = 1000.0
SPEED_WORDS = "1x to 1000x, or max"
KEYS = ("t", "n_prfaas", "n_p", "n_d", "bandwidth", "rate", "speed")  # the typed knobs


class KnobInputError(ValueError):
    """A typed value the knob does not take; str() is the one-line reason."""


def hint(key: str) -> str:
    """What the knob takes, in a phrase (the panel's hints)."""
    if key == "speed":
        return SPEED_WORDS
    k = KNOBS[key]
    if key in ("n_p", "n_d"):
        return f"{k.written} from {k.lo}, N_p + N_d within the pool"
    if key == "t":
        return f"{k.written} (= 32,768), from 0 to the longest request"
    if key == "rate":
        return f"{k.span()}, or a share of Λmax like 90%"
    if key == "bandwidth":
        return f"{k.span()}, {k.written.removeprefix('a bandwidth ')} (a bare number is Gbps)"
    return f"{k.written} from {k.span()}"


def _got(text: str) -> str:
    t = text.strip()
    return repr(t) if t else "nothing"


def _refused(k: Knob, value: float, limits: Limits) -> str | None:
    """The registry's verdict on `value` in the panel's words (None: accepted)."""
    why = k.problem(value, limits)
    if why is None:
        return None
    if why == "must be a whole number":
        return f"{k.label} is {k.written} (got {value:g})"
    tail = ", the longest request" if k.name == "t" else ""
    got = format_tokens(value) if k.name == "t" and math.isfinite(value) else k.show(value)
    return f"{k.label} is {k.span(limits)}{tail} (got {got})"


def _typed(key: str, text: str, limits: Limits):
    k = KNOBS[key]
    try:
        value = k.parse(text.strip())
    except (UnitError, ValueError):
        raise KnobInputError(f"{k.label} is {k.written} (got {_got(text)})") from None
    if (why := _refused(k, value, limits)) is not None:
        raise KnobInputError(why)
    return value


def parse_speed(text: str) -> float:
    """'20', '20x', 'max' -> simulated seconds per wall second (max: math.inf)."""
    t = text.strip().lower()
    if t in ("max", "inf", "∞"):
        return math.inf
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*x?", t)
    if not m:
        raise KnobInputError(f"speed is {SPEED_WORDS} (got {_got(text)})")
    x = float(m.group(1))
    if not 1 <= x <= MAX_SPEED:
        raise KnobInputError(f"speed is {SPEED_WORDS} (got {x:g}x)")
    return x


def parse_bandwidth_knob(text: str) -> float:
    """'100 Gbps', '8 Gb/s', '1000 MB/s', '30' (Gbps) -> bytes per second."""
    return _typed("bandwidth", text, Limits())


def parse_threshold(text: str, t_max: float) -> float:
    """'19400', '32K' -> tokens in 0..t_max."""
    return float(_typed("t", text, Limits(t_max=t_max)))


def parse_rate(text: str, lambda_max: float | None = None) -> float:
    """'2.5', '2.5 req/s' -> req/s; '90%' -> 0.9 x lambda_max (a load, as `--load 0.9`)."""
    t = text.strip().lower()
    pct = t.endswith("%")
    body = t.removesuffix("%").removesuffix("req/s").strip()
    if not pct:
        return float(_typed("rate", body, Limits()))
    try:
        x = float(body)
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or not re.fullmatch(r"[0-9.e+-]+", body):
        raise KnobInputError(f"rate is a number of req/s, or a share of Λmax like 90% "
                             f"(got {_got(text)})")
    if lambda_max is None or not lambda_max > 0:
        raise KnobInputError("rate as a share of Λmax needs a Λmax: give req/s")
    if a_load(x / 100) is not None:
        raise KnobInputError(f"rate as a share of Λmax is more than 0% and at most "
                             f"{MAX_LOAD * 100:g}% (got {x:g}%)")
    return x / 100 * lambda_max


def parse_knob(key: str, text: str, limits: Limits) -> dict[str, float | int]:
    """{key: value} in internal units (tokens, bytes/s, req/s, x), the shape the settings'
    `apply` takes; KnobInputError with the reason otherwise. Cross-knob rules (N_p + N_d within
    the pool) stay with `apply`: this checks one value."""
    if key not in KEYS:
        raise KnobInputError(f"no knob {key!r} (knobs: {', '.join(KEYS)})")
    if key == "speed":
        return {key: parse_speed(text)}
    if key == "rate":
        return {key: parse_rate(text, limits.lambda_max)}
    value = _typed(key, text, limits)
    return {key: float(value) if key == "t" else value}
