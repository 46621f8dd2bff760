"""What the operator chose for the live charts, btop-style: the time window (`w` cycles 1m, 5m,
30m, all), each chart's series shown or hidden (`1`-`4`: the n-th series of every chart, numbered
in the legends), and an auto (linear) or log y scale (`y`). Textual-free; the charts say the
state in their titles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from prfaas_tui.timeaxis import DEFAULT_SPAN, relative_label

WINDOWS: tuple[float, ...] = (60.0, DEFAULT_SPAN, 1800.0, math.inf)  # math.inf: the whole run kept
SERIES_KEYS = 4


def window_name(span: float) -> str:
    return "all" if math.isinf(span) else relative_label(span).lstrip("+")


@dataclass(frozen=True)
class ChartControls:
    window: float = DEFAULT_SPAN  # seconds shown (math.inf: everything the charts keep)
    log: bool = False
    hidden: frozenset[int] = frozenset()  # series numbers (1-based) not drawn

    def next_window(self) -> ChartControls:
        i = WINDOWS.index(self.window) if self.window in WINDOWS else 0
        return replace(self, window=WINDOWS[(i + 1) % len(WINDOWS)])

    def toggle_log(self) -> ChartControls:
        return replace(self, log=not self.log)

    def toggle(self, n: int) -> ChartControls:
        if not 1 <= n <= SERIES_KEYS:
            raise ValueError(f"series number must be 1-{SERIES_KEYS}, got {n}")
        return replace(self, hidden=self.hidden ^ {n})

    def shows(self, n: int) -> bool:
        return n not in self.hidden

    def describe(self, names: tuple[str, ...], compact: bool = False) -> str:
        """The state for a chart's title: 'window 5m · auto · off 2 served' (its own series
        named), or compact '5m·log·-2'."""
        off = [n for n in sorted(self.hidden) if n <= len(names)]
        scale = "log" if self.log else "auto"
        if compact:
            return "·".join([window_name(self.window), scale, *(f"-{n}" for n in off)])
        parts = [f"window {window_name(self.window)}", scale]
        if off:
            parts.append("off " + ", ".join(f"{n} {names[n - 1]}" for n in off))
        return " · ".join(parts)
