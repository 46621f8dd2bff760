"""The incident timeline against simulated time: a drill's scripted incidents or the ones
injected by hand, each done, active or to come, and a drill's progress bar. An active or coming
incident also says when it starts relative to now, as the charts' time axis labels it (its
shading begins there)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from emulator.units import format_duration
from prfaas_tui.timeaxis import relative_label
from prfaas_tui.widgets.theme import SizedStatic, color


class DrillTimeline(SizedStatic):
    """The incident timeline against simulated time: done, active, to come."""

    DEFAULT_CSS = "DrillTimeline { height: auto; padding: 0 1; display: none; }"
    _lines = 0  # lines last shown

    def show(self, title: str, windows: Sequence[tuple[float, float | None, str]], now: float,
             end: float | None) -> None:
        """`end`: a drill's length (a progress bar), None for hand-made incidents."""
        self.remember(title, windows, now, end)
        self.display = True
        warn, dim = color(self, "text-warning"), "dim"
        out = Text.assemble((title, "bold"), f"\nat {format_duration(now)}")
        if end:
            width = max(self.size.width - 2, 10)
            done = int(width * min(1.0, now / end))
            out.append(f" of {format_duration(end)}\n")
            out.append("━" * done, style=warn)
            out.append("─" * (width - done), style=dim)
        for start, stop, label in windows:
            if now < start:
                mark, style = "○", dim
            elif stop is None or now < stop:
                mark, style = "⚠", f"bold {warn}"
            else:
                mark, style = "✓", ""
            span = f"{format_duration(start)}" + (f"-{format_duration(stop)}" if stop else "")
            when = "" if mark == "✓" else f" ({relative_label(start - now)})"
            out.append(f"\n{mark} {span}{when} {label}", style=style)
        lines = out.plain.count("\n") + 1  # the height (auto) changes only with the lines:
        self.update(out, layout=lines != self._lines)  # a full layout per tick costs ~50 ms
        self._lines = lines
