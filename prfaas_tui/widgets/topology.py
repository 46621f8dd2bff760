"""The topology strip: one line, always on screen, PrfaaS == link == PD-P | PD-D with what is
alive of what is configured, the link's capacity now, and the stage that binds in colour."""

from __future__ import annotations

from rich.text import Text

from emulator.effective import EffectiveView
from prfaas_tui.pictures import LABELS, Topology, topology_segments
from prfaas_tui.widgets.theme import SizedStatic, color


class TopologyStrip(SizedStatic):
    DEFAULT_CSS = "TopologyStrip { height: 1; padding: 0 1; }"

    def show(self, view: EffectiveView | None) -> None:
        self.remember(view)
        if view is None:
            self.update("topology: waiting for the emulator…", layout=False)
            return
        top = Topology.of(view)
        bind, down = color(self, "text-error"), color(self, "text-warning")
        out = Text(no_wrap=True, overflow="ellipsis")
        for text, role in topology_segments(top, max(self.size.width - 2, 20)):
            if role == top.binding:
                out.append(text, style=f"bold reverse {bind}")
            elif role in LABELS and top.down(role):
                out.append(text, style=f"bold {down}")
            else:
                out.append(text, style="" if role else "dim")
        self.update(out, layout=False)
