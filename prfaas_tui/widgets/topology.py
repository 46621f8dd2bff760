"""The pair's map: its 1x1 topology on one line, always on screen, named as a topology's
elements are (site prfaas == link == region pd: PD-P | PD-D) with what is alive of what is
configured, the link's capacity now, the stage that binds in colour and the selected element
(the one the knob cursor turns) marked `▸` and underlined."""

from __future__ import annotations

from rich.text import Text

from emulator.effective import EffectiveView
from emulator.topology.spec import PAIR_LINK, PAIR_REGION, PAIR_SITE
from prfaas_tui.pictures import LABELS, Topology, topology_segments
from prfaas_tui.topology_text import Element
from prfaas_tui.widgets.theme import SizedStatic, color

# the map's segment roles of each of the pair's elements
ROLES: dict[Element, frozenset[str]] = {
    ("site", PAIR_SITE): frozenset({"site", "prfaas"}),
    ("link", PAIR_LINK): frozenset({"link"}),
    ("region", PAIR_REGION): frozenset({"region", "pd-p", "pd-d"}),
}
# the element each of the pair's knobs turns (rate, paradigm and speed: the run's, none)
KNOB_ELEMENT: dict[str, Element] = {"n_prfaas": ("site", PAIR_SITE),
                                    "bandwidth": ("link", PAIR_LINK),
                                    "t": ("region", PAIR_REGION), "n_p": ("region", PAIR_REGION),
                                    "n_d": ("region", PAIR_REGION)}


class TopologyStrip(SizedStatic):
    DEFAULT_CSS = "TopologyStrip { height: 1; padding: 0 1; }"

    def show(self, view: EffectiveView | None, selected: Element | None = None) -> None:
        self.remember(view, selected)
        if view is None:
            self.update("map: waiting for the emulator…", layout=False)
            return
        top = Topology.of(view)
        bind, down = color(self, "text-error"), color(self, "text-warning")
        mine = ROLES.get(selected, frozenset()) if selected is not None else frozenset()
        out = Text(no_wrap=True, overflow="ellipsis")
        marked = extras = False
        for text, role in topology_segments(top, max(self.size.width - 3, 20)):
            extras = extras or text == " · "  # what binds, Λmax: the model's, no element's
            style = "dim" if not role else ""
            if role == top.binding:
                style = f"bold reverse {bind}"
            elif role in LABELS and top.down(role):
                style = f"bold {down}"
            elif role in ("site", "region"):
                style = "bold"
            if role in mine and not extras:
                if not marked:
                    out.append("▸", style="bold")
                    marked = True
                style = f"{style} underline".strip()
            out.append(text, style=style)
        self.update(out, layout=False)
