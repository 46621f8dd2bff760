"""Units: the one place that parses and formats sizes, bandwidths, token counts and durations.

Internally the project keeps bytes, bytes per second, tokens and seconds. Decimal (MB = 10^6)
and binary (MiB = 2^20) prefixes stay apart because the paper mixes them: Table 5 prints MiB,
the seed's toy prints MB, link speeds are Gbps (10^9 bit/s).
"""

from __future__ import annotations

import math
import re

KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40
GBPS = 1e9 / 8  # bytes per second in one Gbps
K_TOKENS = 1024  # token counts use binary K, as the paper's table headings do

_BYTE_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "kb": KB, "mb": MB, "gb": GB, "tb": TB,
    "kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB,
}
_BIT_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_TIME_UNITS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}
_TOKEN_SUFFIX = {"": 1, "k": K_TOKENS, "m": K_TOKENS**2}

_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_QTY = re.compile(rf"^\s*{_NUM}\s*([A-Za-zµ/]*)\s*$")


class UnitError(ValueError):
    """A value that does not parse in the unit expected; the message says what was expected."""


def shown(v: object) -> str:
    """A value for a one-line message: short, whatever its size (a 400-digit number)."""
    text = repr(v) if not isinstance(v, int) or abs(v) < 10**30 else \
        f"a {len(str(abs(v))) if abs(v) < 10**4000 else 'many'}-digit number"
    return text if len(text) <= 60 else text[:57] + "..."


def finite(x: float) -> bool:
    """math.isfinite for a value a user typed: an int is always finite, and may be too large
    for a float (TOML and JSON read integers of any length; isfinite() would overflow)."""
    return isinstance(x, int) or math.isfinite(x)


def _split(value: str | float | int, what: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise UnitError(f"expected {what}, got {value!r}")
    if isinstance(value, int | float):
        if isinstance(value, int) and abs(value) > 1e300:  # float() would overflow
            raise UnitError(f"expected a finite {what.removeprefix('a ')}, got an integer too large")
        return float(value), ""
    if not isinstance(value, str):
        raise UnitError(f"expected {what}, got {value!r}")
    m = _QTY.match(value)
    if not m:
        raise UnitError(f"expected {what}, got {value!r}")
    return float(m.group(1)), m.group(2).strip()


def _finite(x: float, raw: object, what: str) -> float:
    if not math.isfinite(x):
        raise UnitError(f"expected a finite {what}, got {raw!r}")
    return x


def parse_bytes(value: str | float | int) -> float:
    """'701.3 MiB' -> bytes. A bare number is bytes."""
    x, unit = _split(value, "a size like '701.3 MiB' or '100 MB'")
    if not unit:
        return _finite(x, value, "size")
    try:
        return _finite(x * _BYTE_UNITS[unit.lower()], value, "size")
    except KeyError:
        raise UnitError(f"unknown size unit {unit!r} in {value!r} (use B, MB, MiB, GB, GiB...)") from None


def parse_bandwidth(value: str | float | int) -> float:
    """'100 Gbps', '8 Gb/s' or '1000 MB/s' -> bytes per second. A bare number is Gbps.

    Case decides bits against bytes in 'X/s' forms: 'Mb/s' is megabits, 'MB/s' megabytes.
    """
    x, unit = _split(value, "a bandwidth like '100 Gbps' or '1000 MB/s'")
    if not unit:
        return _finite(x * GBPS, value, "bandwidth")
    low = unit.lower()
    for tail in ("bps", "bit/s"):
        if low.endswith(tail) and low[: -len(tail)] in _BIT_PREFIX:
            return _finite(x * _BIT_PREFIX[low[: -len(tail)]] / 8, value, "bandwidth")
    if unit.endswith("/s"):
        size = unit[:-2]
        if size.endswith("b") and size[:-1].lower() in _BIT_PREFIX:
            return _finite(x * _BIT_PREFIX[size[:-1].lower()] / 8, value, "bandwidth")
        if size.lower() in _BYTE_UNITS:
            return _finite(x * _BYTE_UNITS[size.lower()], value, "bandwidth")
    raise UnitError(f"unknown bandwidth unit {unit!r} in {value!r} (use Gbps or MB/s)")


def parse_tokens(value: str | float | int) -> float:
    """'32K' -> 32768 tokens (K = 1024). Bare numbers are tokens; '19,400' (as printed) too."""
    if isinstance(value, str):
        if re.fullmatch(r"\s*\d{1,3}(?:,\d{3})+\s*", value):
            value = value.replace(",", "")
        m = re.match(rf"^\s*{_NUM}\s*([kKmM]?)\s*(?:tokens?)?\s*$", value)
        if not m:
            raise UnitError(f"expected a token count like '32K' or 19400, got {value!r}")
        return _finite(float(m.group(1)) * _TOKEN_SUFFIX[m.group(2).lower()], value, "token count")
    x, _ = _split(value, "a token count like '32K'")
    return _finite(x, value, "token count")


def parse_duration(value: str | float | int) -> float:
    """'25 ms' -> 0.025 s. A bare number is seconds."""
    x, unit = _split(value, "a duration like '25 ms' or 2.5")
    if not unit:
        return _finite(x, value, "duration")
    try:
        return _finite(x * _TIME_UNITS[unit.lower()], value, "duration")
    except KeyError:
        raise UnitError(f"unknown time unit {unit!r} in {value!r} (use us, ms, s, min, h)") from None


def to_gbps(bytes_per_second: float) -> float:
    return bytes_per_second * 8 / 1e9


def format_bytes(n: float, binary: bool = True) -> str:
    """Human size: binary prefixes by default (the paper's tables use MiB)."""
    units = (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)) if binary else (
        ("TB", TB), ("GB", GB), ("MB", MB), ("kB", KB))
    for name, size in units:
        if abs(n) >= size:
            return f"{n / size:.1f} {name}"
    return f"{n:.0f} B"


def format_bandwidth(bytes_per_second: float) -> str:
    g = to_gbps(bytes_per_second)
    if math.isinf(g):
        return "inf"
    if abs(g) >= 1000:
        return f"{g / 1000:.2f} Tbps"
    if abs(g) >= 1 or g == 0:
        return f"{g:.2f} Gbps"
    return f"{g * 1000:.1f} Mbps"


def format_tokens(n: float) -> str:
    """32768 -> '32,768'; 19400.4 -> '19,400'.

    Printed counts are whole tokens with thousands separators: operators read a 'K' as 1,000,
    so a binary K on screen beside exact counts said two things at once. Input still takes
    '32K' = 32,768 (the paper's table headings), and the screen then shows what it meant.
    """
    if not math.isfinite(n):
        return "inf" if n > 0 else "-inf" if n < 0 else "nan"
    return f"{round(n):,}"


def format_tokens_short(n: float) -> str:
    """131072 -> '131k' (k = 1,000, SI): for axis ticks and cells too narrow for whole tokens."""
    if not math.isfinite(n):
        return "inf"
    if abs(n) < 1000:
        return f"{n:.0f}"
    k = n / 1000
    return f"{k:.0f}k" if abs(k) >= 10 or abs(k - round(k)) < 0.05 else f"{k:.1f}k"


def format_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "inf"
    if abs(seconds) < 1:
        return f"{seconds * 1000:.0f} ms"
    if abs(seconds) < 120:
        return f"{seconds:.2f} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
