"""Reading TOML scenarios strictly: every bad value becomes one line naming file and key.

`Reader` wraps one TOML table, tracks which keys were read, and `finish()` rejects the rest, so a
typo in a preset is an error rather than a silently ignored setting.

Config dataclasses declare their keys with `setting()` (parser, check, TOML key and section in
the field's metadata, the default in the field itself) and `read_fields()` reads them, so a
default is written once, in the dataclass.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from emulator.files import MAX_DEPTH, FileRefused, printable, read_text, too_deep
from emulator.units import UnitError, finite, shown

T = TypeVar("T")
_MISSING = object()


class PresetError(ValueError):
    """A scenario file that cannot be used; str() is the one line a user sees."""

    def __init__(self, path: str | Path | None, key: str, message: str):
        self.path, self.key, self.message = str(path) if path else "<preset>", key, message
        # the key and message quote the file's own text: a newline must not split the line
        super().__init__(printable(f"{self.path}: {key}: {message}" if key
                                   else f"{self.path}: {message}"))


def read_toml(path: str | Path, kind: str = "preset") -> dict:
    """A TOML file's table through the bounded reader (a regular file within the kind's cap,
    strict UTF-8); PresetError (one line naming the file) when it is refused, malformed TOML, or
    nested deeper than MAX_DEPTH."""
    try:
        text = read_text(path, kind)
    except FileRefused as exc:
        raise PresetError(path, "", exc.message) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(path, "", f"malformed TOML: {exc}") from None
    except RecursionError:
        raise PresetError(path, "", f"nested deeper than {MAX_DEPTH} levels") from None
    if too_deep(data):
        raise PresetError(path, "", f"nested deeper than {MAX_DEPTH} levels")
    return data


class Reader:
    """A view of one TOML table with strict, typed access."""

    def __init__(self, data: dict, path: str | Path | None, prefix: str = ""):
        if not isinstance(data, dict):
            raise PresetError(path, prefix, f"must be a table, got {type(data).__name__}")
        self.data, self.path, self.prefix = data, path, prefix
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str, message: str) -> PresetError:
        return PresetError(self.path, self.key(name) if name else self.prefix, message)

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        self.used.add(name)
        if name not in self.data:
            if default is _MISSING:
                raise self.error(name, "missing (required)")
            return default
        return self.data[name]

    def get(self, name: str, conv: Callable[[Any], T], default: Any = _MISSING, *,
            check: Callable[[T], str | None] | None = None) -> T:
        """Read `name`, convert with `conv` (a unit parser or a type), run `check`, which returns
        an error text or None."""
        if name not in self.data and default is not _MISSING:
            self.used.add(name)
            return default if default is None else _convert(conv, default)
        value = self.raw(name)
        try:
            out = _convert(conv, value)
        except (UnitError, ValueError, TypeError) as exc:
            raise self.error(name, str(exc)) from None
        if check is not None and (msg := check(out)):
            raise self.error(name, f"{msg} (got {value!r})")
        return out

    def section(self, name: str, required: bool = False) -> Reader | None:
        if name not in self.data:
            if required:
                raise self.error(name, "missing section (required)")
            self.used.add(name)
            return None
        return Reader(self.raw(name), self.path, self.key(name))

    def sections(self, name: str) -> list[Reader]:
        """An array of tables ([[name]])."""
        items = self.raw(name, [])
        if not isinstance(items, list):
            raise self.error(name, "must be an array of tables ([[...]])")
        return [Reader(x, self.path, f"{self.key(name)}[{i}]") for i, x in enumerate(items)]

    def finish(self) -> None:
        extra = sorted(set(self.data) - self.used)
        if extra:
            raise self.error(extra[0], "unknown key" + _suggest(extra[0], self.used))


def _suggest(name: str, known: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _convert(conv: Callable[[Any], T], value: Any) -> T:
    if conv in (int, float) and isinstance(value, int) and not -2**63 <= value < 2**63:
        # TOML integers are 64-bit; Python reads any length, which overflows float arithmetic
        raise ValueError(f"must be a 64-bit integer (TOML's range), got {shown(value)}")
    if conv is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)  # type: ignore[return-value]
            raise ValueError(f"must be a whole number, got {value!r}")
        return value  # type: ignore[return-value]
    if conv is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"must be finite, got {value!r}")
        return float(value)  # type: ignore[return-value]
    if conv is str:
        if not isinstance(value, str):
            raise ValueError(f"must be a string, got {value!r}")
        return value  # type: ignore[return-value]
    if conv is bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, got {value!r}")
        return value  # type: ignore[return-value]
    return conv(value)


# config fields ---------------------------------------------------------------------------
def setting(default: Any = dataclasses.MISSING, *, parse: Callable[[Any], Any] = float,
            check: Callable[[Any], str | None] | None = None, key: str | None = None,
            section: str | None = None, present: Any = dataclasses.MISSING) -> Any:
    """A dataclass field that a TOML key sets. `parse`: a type or a unit parser; `check`: returns
    an error text or None; `key`: the TOML name when it differs from the field's; `section`:
    which table holds it when one dataclass spans several; `present`: the default when the table
    exists but omits the key (e.g. a [scheduler] section is enabled unless it says otherwise).
    No default: the key is required."""
    meta = {"parse": parse, "check": check, "key": key, "section": section, "present": present}
    return dataclasses.field(default=default, metadata=meta)


def read_fields(cls: type, r: Reader, section: str | None = None) -> dict[str, Any]:
    """The `setting()` fields of dataclass `cls` that live in `section`, read from `r` in
    declaration order: {field name: value} (absent keys give the field's default)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if "parse" not in meta or meta["section"] != section:
            continue
        default = meta["present"] if meta["present"] is not dataclasses.MISSING else f.default
        default = _MISSING if default is dataclasses.MISSING else default
        out[f.name] = r.get(meta["key"] or f.name, meta["parse"], default, check=meta["check"])
    return out


def default_of(cls: type, name: str) -> Any:
    """The default of dataclass `cls`'s field `name`: what a parser uses for an absent key
    whose field is not a `setting()` (e.g. the model's System)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    if f.default is dataclasses.MISSING:
        raise TypeError(f"{cls.__name__}.{name} has no default")
    return f.default


# common checks: one rule for every number, finite first --------------------------------------
def positive(x: float) -> str | None:
    return "must be finite" if not finite(x) else None if x > 0 else "must be > 0"


def non_negative(x: float) -> str | None:
    return "must be finite" if not finite(x) else None if x >= 0 else "must be >= 0"


def at_least(lo: float) -> Callable[[float], str | None]:
    return lambda x: None if x >= lo else f"must be >= {lo:g}"


def at_most(limit: float, what: str) -> Callable[[float], str | None]:
    return lambda x: None if x <= limit else f"is absurd: more than {what}"


MAX_PRICE = 1e6  # dollars per instance-hour or per TB: anything above is a typo, and 1e308
# would turn a cost per hour into inf


def a_price(x: float) -> str | None:
    """A positive price, at most MAX_PRICE."""
    return positive(x) or at_most(MAX_PRICE, "$1,000,000")(x)


def a_price_or_free(x: float) -> str | None:
    """A price that may be 0 (a link with no per-TB charge), at most MAX_PRICE."""
    return non_negative(x) or at_most(MAX_PRICE, "$1,000,000")(x)


def between(lo: float, hi: float) -> Callable[[float], str | None]:
    return lambda x: None if lo <= x <= hi else f"must be between {lo:g} and {hi:g}"


def one_of(*options: str) -> Callable[[str], str | None]:
    return lambda x: None if x in options else f"must be one of {', '.join(options)}"


MAX_LOAD = 1e6  # x Lambda_max: far past any overload worth emulating; load x Lambda_max stays finite


def a_load(x: float) -> str | None:
    """The one range of a load (preset workload.load, run --load): 1e308 overflowed the rate."""
    return positive(x) or (None if x <= MAX_LOAD else f"must be <= {MAX_LOAD:g} (x Lambda_max)")


MAX_SEED = 2**63 - 1  # numpy's SeedSequence and torch.manual_seed both take it


def a_seed(x: int) -> str | None:
    """The one range of a random seed (preset emulator.seed, every --seed flag)."""
    return None if 0 <= x <= MAX_SEED else f"must be between 0 and 2^63 - 1 ({MAX_SEED})"
