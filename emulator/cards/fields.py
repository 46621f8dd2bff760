"""Typed, strict reading of a config.json: every value a card rests on is checked where it is
read, and every refusal names the file and the key (a nested key in full, `text_config.x`).

Why here and not in the readers: each family reader (emulator/cards/families.py) reads a dozen
fields; the checks (whole numbers in range, finite floats, lists of known words) are the same for
all of them, and a value a reader never touches is never refused.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from emulator.cards import CardError
from emulator.units import finite, shown

MAX_DIM = 1 << 24  # any head count, dimension or layer count beyond this is a typo
DTYPE_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "float32": 4,
               "fp32": 4, "float": 4, "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1}


class Fields:
    """Typed, strict access to a config dict; every failure names the file and key. `nested`
    holds the keys that came from a sub-object (text_config), named with its prefix."""

    def __init__(self, data: dict, path: str | None, prefix: str = "",
                 nested: tuple[str, frozenset[str]] = ("", frozenset())):
        self.data, self.path, self.prefix, self.nested = data, path, prefix, nested

    def key(self, name: str) -> str:
        if self.prefix:
            return f"{self.prefix}.{name}"
        sub, keys = self.nested
        return f"{sub}.{name}" if name in keys else name

    def error(self, name: str, message: str) -> CardError:
        return CardError(self.path, self.key(name), message)

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def int(self, name: str, default: int | None = None, *, minimum: int = 1) -> int:
        if not self.has(name):
            if default is None:
                raise self.error(name, "missing (required for this architecture)")
            if default < minimum:  # a default derived from other fields (hidden // heads)
                raise self.error(name, f"missing, and the value derived from the other fields "
                                 f"is {default} (at least {minimum} needed)")
            return default
        return self.whole(name, self.data[name], minimum)

    def whole(self, name: str, v: object, minimum: int = 1, maximum: int = MAX_DIM) -> int:
        """v as a whole number in [minimum, maximum]; the type is checked before any float
        conversion, so a 400-digit integer is refused, not overflowed."""
        if isinstance(v, bool) or not isinstance(v, int | float) \
                or (isinstance(v, float) and not (math.isfinite(v) and v.is_integer())):
            raise self.error(name, f"must be a whole number, got {shown(v)}")
        if not minimum <= v <= maximum:  # int vs int/float compares exactly
            raise self.error(name, f"must be between {minimum} and {maximum}, got {shown(v)}")
        return int(v)

    def window(self, name: str, default: int | None = None) -> int:
        """A sliding window or chunk length: a whole number of tokens, at least 1."""
        return self.int(name, default)

    def number(self, name: str, default: float) -> float:
        """A finite real number (a multiplier, an expansion factor)."""
        if not self.has(name):
            return default
        v = self.data[name]
        if isinstance(v, bool) or not isinstance(v, int | float) or not finite(v) \
                or not 0 < v <= MAX_DIM:
            raise self.error(name, f"must be a positive finite number, got {shown(v)}")
        return float(v)

    def flag(self, name: str, default: bool) -> bool:
        v = self.data.get(name)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.error(name, f"must be true or false, got {shown(v)}")
        return v

    def first_int(self, names: Iterable[str], default: int | None = None, *,
                  minimum: int = 1) -> int:
        names = list(names)
        for n in names:
            if self.has(n):
                return self.int(n, minimum=minimum)
        if default is None:
            raise self.error(names[0], "missing (required for this architecture; also read as "
                             + ", ".join(names[1:]) + ")" if len(names) > 1 else "missing")
        return default

    def int_list(self, name: str, length: int | None = None, *, lo: int = 0,
                 hi: int = MAX_DIM, unique: bool = False) -> list[int]:
        """A list of whole numbers in [lo, hi] (each once if `unique`), of `length` entries."""
        v = self.data.get(name)
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                              for x in v):
            raise self.error(name, "must be a list of whole numbers")
        if length is not None and len(v) != length:
            raise self.error(name, f"has {len(v)} entries for {length} layers")
        bad = next((x for x in v if not lo <= x <= hi), None)
        if bad is not None:
            raise self.error(name, f"entries must be between {lo} and {hi}, got {shown(bad)}")
        if unique and len(set(v)) != len(v):
            dup = next(x for i, x in enumerate(v) if x in v[:i])
            raise self.error(name, f"lists layer {dup} more than once")
        return v

    def word_list(self, name: str, length: int, known: dict[str, str]) -> list[str]:
        """A per-layer list of words, each mapped through `known` (config word -> kind), of
        exactly `length` entries (num_hidden_layers)."""
        v = self.data.get(name)
        words = ", ".join(sorted(known))
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self.error(name, f"must list {length} entries of {words}")
        if len(v) != length:
            raise self.error(name, f"has {len(v)} entries for {length} layers (num_hidden_layers)")
        bad = next((x for x in v if x not in known), None)
        if bad is not None:
            raise self.error(name, f"unknown layer kind {shown(bad)} (known: {words})")
        return [known[x] for x in v]

    def section(self, name: str) -> Fields:
        v = self.data.get(name)
        if not isinstance(v, dict):
            raise self.error(name, "missing or not an object")
        return Fields(v, self.path, self.key(name))


def model_dtype(f: Fields, name: str = "torch_dtype") -> tuple[str, int]:
    for key in (name, "dtype"):
        if f.has(key):
            raw = f.data[key]
            if not isinstance(raw, str) or raw.lower() not in DTYPE_BYTES:
                raise f.error(key, f"unknown dtype {raw!r} (known: {', '.join(sorted(DTYPE_BYTES))})")
            return raw.lower(), DTYPE_BYTES[raw.lower()]
    return "bfloat16", 2


STATE_DTYPE_KEYS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype", "ssm_state_dtype")


def state_dtype_bytes(f: Fields) -> int:
    """Bytes per element of a recurrent (SSM / linear / lightning) state: the dtype the config
    names for it, else fp32 (what vLLM and the reference kernels keep)."""
    for key in STATE_DTYPE_KEYS:
        if f.has(key):
            raw = f.data[key]
            if not isinstance(raw, str) or raw.lower() not in DTYPE_BYTES:
                raise f.error(key, f"unknown dtype {shown(raw)}")
            return DTYPE_BYTES[raw.lower()]
    return 4


def text_fields(data: dict, path: str | None) -> Fields:
    """Multimodal wrappers keep the language model under text_config; its fields win, and the
    wrapper's (a vocab_size given only at the top, the dtype) fill in what it lacks."""
    tc = data.get("text_config")
    if isinstance(tc, dict):
        merged = {**{k: v for k, v in data.items() if k != "text_config"}, **tc}
        return Fields(merged, path, nested=("text_config", frozenset(tc)))
    return Fields(data, path)
