"""Utilization gauges, one bar per stage in chain order (PrfaaS, link, PD-P, PD-D): the
engine's measured utilization over its window, the binding stage marked."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from prfaas_tui.pictures import LABELS, Topology, bar, gauges
from prfaas_tui.widgets.theme import SizedStatic, color


class Gauges(SizedStatic):
    DEFAULT_CSS = "Gauges { height: auto; padding: 0 1; }"

    def show(self, snap: Any, top: Topology | None) -> None:
        self.remember(snap, top)
        items = gauges(snap, top)
        room = max(self.size.width - 2, 30)
        two = room >= 100  # two gauges a line on a wide screen
        cell = room // 2 - 1 if two else room
        width = max(cell - 40, 6)  # label 7, percent 5, note up to 28
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
            out.append(f"{g.note:<28}"[:28] if two else g.note[:28], style="dim")
        self.update(out, layout=False)
