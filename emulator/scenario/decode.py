"""The one parser of a `[decode]` table's Eq. 5 constants (the top level's, or a topology
region's override of some of them)."""

from __future__ import annotations

from dataclasses import replace

from emulator.model import DecodeSpec
from emulator.scenario.lengths import MAX_TOKENS
from emulator.scenario.reader import Reader, at_most, positive
from emulator.units import parse_duration, parse_tokens

_CHECKS = {
    "t_decode": (parse_duration, lambda x: positive(x) or at_most(60, "a minute per decode step")(x)),
    "bs_max": (int, lambda x: positive(x) or at_most(1_000_000, "10^6")(x)),
    "l_out": (parse_tokens, lambda x: positive(x) or at_most(MAX_TOKENS, "16M tokens")(x)),
}


def parse_decode(dec: Reader, base: DecodeSpec | None = None) -> DecodeSpec:
    """t_decode, bs_max and l_out from `dec`; without `base` all three are required, with it
    each absent key keeps the base's value."""
    values = {}
    for key, (conv, check) in _CHECKS.items():
        if base is not None and not dec.has(key):
            continue
        values[key] = dec.get(key, conv, check=check)
    return DecodeSpec(**values) if base is None else replace(base, **values)
