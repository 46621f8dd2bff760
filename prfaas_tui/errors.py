"""The one error type of bad user input outside the scenario files (a flag, a plan choice),
and reading a flag's value into it.

Kept in a leaf module so that the commands, the screens and the entry point can all raise and
catch it without importing each other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator.units import UnitError


class UsageError(ValueError):
    """A bad command-line value; str() is the one line the user sees."""


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
