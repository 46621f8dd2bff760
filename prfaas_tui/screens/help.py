"""? or F1: every key (read from the bindings themselves, so help never drifts from the keymap) and
the model's vocabulary."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from prfaas_tui.widgets.controls import KNOBS, ControlPanel
from prfaas_tui.widgets.filter_list import FilterList

GLOSSARY = (
    ("t", "routing threshold: requests longer than t tokens prefill on PrfaaS"),
    ("N_prfaas", "PrfaaS instances (remote, compute-dense) that prefill long requests"),
    ("N_p / N_d", "local instances for prefill (PD-P) and decode (PD-D); N_p + N_d <= pool"),
    ("B_out", "cross-datacenter link that carries PrfaaS KVCache to the local cluster"),
    ("Θ", "a stage's capacity in req/s (Eqs. 3-5); its ceiling is Θ divided by its share"),
    ("Λmax", "end-to-end ceiling: the smallest of the three ceilings (Eq. 6); it binds"),
    ("binds", "the model's word: the stage whose ceiling is Λmax at the live state (topology "
              "strip, model panel; `binding` in the snapshot JSON)"),
    ("busiest", "the emulator's word, '(measured)': the stage that worked hardest over the last "
                "window (a queue growing at ≥ 90% busy first, else the most utilized; the status "
                "line). It can differ from the one that binds while queues drain or refill"),
    ("Eq. 7", "best t: the PrfaaS and PD-P ceilings are equal (residual 0)"),
    ("Eq. 8", "best split: Θ_prfaas + Θ_pdp = Θ_pdd (residual 0)"),
    ("lost", "requests that vanished: must read 0 (accounting check)"),
)


def _pretty(key: str) -> str:
    names = {"full_stop": ".", "greater_than_sign": ">", "less_than_sign": "<", "space": "space",
             "minus": "-", "plus": "+", "equals_sign": "=", "enter": "enter",
             "question_mark": "?", "slash": "/"}
    return names.get(key, key)


def _table(title: str, rows: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=None,
              padding=(0, 2, 0, 0), show_header=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    for row in rows:
        t.add_row(*(Text(cell) for cell in row))  # plain text: "[cache]" is not markup
    return t


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape,question_mark,f1,q", "dismiss", "Close", id="help-close")]

    def __init__(self) -> None:
        super().__init__(classes="dialog")

    def compose(self) -> ComposeResult:
        from prfaas_tui.screens.dashboard import Dashboard
        from prfaas_tui.screens.topology import TOPOLOGY_KNOBS, TOPOLOGY_TERMS, TopologyScreen

        under = self.app.screen_stack[-2] if len(self.app.screen_stack) > 1 else None
        if isinstance(under, TopologyScreen):  # the topology view: its keys, knobs, terms
            yield from self._sections((TopologyScreen.BINDINGS, type(self.app).BINDINGS),
                                     ("knobs (enter on the selected element)", TOPOLOGY_KNOBS),
                                     TOPOLOGY_TERMS)
            return
        yield from self._sections((Dashboard.BINDINGS, ControlPanel.BINDINGS, FilterList.BINDINGS,
                                  type(self.app).BINDINGS),
                                 ("knobs (up/down on the left panel selects one)",
                                  [(k.label, k.hint) for k in KNOBS]), GLOSSARY)

    def _sections(self, groups, knobs, terms) -> ComposeResult:
        rows: dict[str, str] = {}  # key -> what it does (a key bound twice is listed once)
        for group in groups:
            for b in group:
                if isinstance(b, Binding):
                    keys = ", ".join(_pretty(k) for k in b.key.split(","))
                    rows.setdefault(keys, b.tooltip or b.description)
        rows["ctrl+p"] = "command palette: every action by name"
        with VerticalScroll(classes="frame"):
            yield Static(Text("prfaas-tui help · esc to close", style="bold"))
            yield Static(_table("keys", list(rows.items())))
            yield Static(_table(*knobs))
            yield Static(_table("terms", terms))
