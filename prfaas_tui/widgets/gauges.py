"""Utilization gauges, one bar per stage in chain order (PrfaaS, link, PD-P, PD-D): the
engine's measured utilization over its window, the binding stage marked. The pair's pictures
view draws its chain (`prfaas_tui.pictures.gauges`), a topology's region detail the region's
(`prfaas_tui.pictures.region_gauges`)."""

from __future__ import annotations

from rich.text import Text

from prfaas_tui.pictures import LABELS, Gauge, bar
from prfaas_tui.widgets.theme import SizedStatic, color

WIDE = 100  # columns from which two gauges share a line


class Gauges(SizedStatic):
    DEFAULT_CSS = "Gauges { height: auto; padding: 0 1; }"
    _lines = 0  # lines of the last drawing (a new count needs a new layout)

    @staticmethod
    def rows(n: int, width: int, compact: bool) -> int:
        """Lines that n gauges take in `width` columns (the widget's own, padding included)."""
        return (n + 1) // 2 if compact or width - 2 >= WIDE else n

    def show(self, items: tuple[Gauge, ...], compact: bool = False) -> None:
        """`compact`: two gauges a line at any width, without their notes (a short screen)."""
        self.remember(items, compact)
        room = max(self.size.width - 2, 30)
        two = compact or room >= WIDE  # two gauges a line on a wide screen
        cell = room // 2 - 1 if two else room
        width = max(cell - (13 if compact else 40), 6)  # label 7, percent 5, note up to 28
        hot, warm = color(self, "text-error"), color(self, "text-warning")
        out = Text(no_wrap=True, overflow="ellipsis")
        for i, g in enumerate(items):
            if i:
                out.append("  " if two and i % 2 else "\n")
            style = hot if g.utilization >= 0.9 else warm if g.utilization >= 0.7 else ""
            label = f"{LABELS[g.key]:<7}"
            out.append(label, style=f"bold reverse {hot}" if g.binding else "bold")
            out.append(bar(g.utilization, width), style=style)
            out.append(f"{g.utilization:>5.0%} ", style=style)
            if not compact:
                out.append(f"{g.note:<28}"[:28] if two else g.note[:28], style="dim")
        lines = out.plain.count("\n") + 1 if items else 0
        self.update(out, layout=lines != self._lines)
        self._lines = lines
