"""The one writer of every command's --json: strict JSON, never NaN or Infinity.

Why: `json.dumps` writes NaN and Infinity by default, which no JSON parser reads back, and a
degenerate input (a one-row trace, a zero-span one) can produce them. Sources say
"undefined" as null; if one is still missed, the command fails in one line naming the key
instead of printing a broken document."""

from __future__ import annotations

import json
import math
from typing import Any

from prfaas_tui.errors import UsageError


class NonFiniteOutput(UsageError):
    """A --json document that holds NaN or an infinity (a defect of the source it names)."""


def dumps(obj: Any, **kw: Any) -> str:
    try:
        return json.dumps(obj, allow_nan=False, **kw)
    except ValueError:
        where = non_finite(obj) or "a value"
        raise NonFiniteOutput(f"--json: {where} is not a finite number (NaN or infinite); "
                              "nothing written") from None


def non_finite(obj: Any, path: str = "") -> str | None:
    """The key path of the first NaN or infinity in `obj` (None if there is none)."""
    stack = [(obj, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return where or "the document"
        if isinstance(node, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))
    return None
