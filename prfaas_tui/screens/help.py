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

# a declared topology's knobs (enter on the selected element) and terms
TOPOLOGY_KNOBS = (
    ("rate", "r: the total offered rate in req/s; each region is offered its share"),
    ("region", "t N_p/N_d routing, any part: 32K 4/4 best-bandwidth (threshold, lp, "
               "best-bandwidth, best-cache with a [cache] and sessions); N_p + N_d within its "
               "pool, N_d >= 1"),
    ("site", "its PrfaaS prefill instances"),
    ("link", "its bandwidth knob in Gbps or with a unit; an incident keeps taking its share"),
)
TOPOLOGY_TERMS = (
    ("capacity now", "what a link may carry now: its bandwidth x the share incidents leave, "
                     "within its site's egress (water-filled over its busy links)"),
    ("utilization", "a link's bytes over the window / its bandwidth knob; a site's prefill "
                    "work / its instance-seconds"),
    ("q", "a link's KV transfers in flight; a site's or region's queued requests"),
    ("Λ policy", "the largest total rate the threshold policy sustains at the live state"),
    ("bound", "the routing bound: the best any routing could do at the live capacities "
              "(HiGHS MILP over length bins, sites and links)"),
    ("binds", "reversed on the map: the first binding row of the running policy's model"),
    ("+1 Gbps here", "the bound's shadow price per Gbps of the bandwidth knob (per instance "
                     "for sites and regions): exact for small changes at the bound's split"),
    ("re-solved", "the bound solved again with the knob raised by a step: what the change "
                  "does, also past the point where the price stops holding"),
    ("lost", "requests that vanished: must read 0 (accounting check, per region)"),
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
        from prfaas_tui.screens.dashboard import MAP_PAIR_KEYS, Dashboard

        under = self.app.screen_stack[-2] if len(self.app.screen_stack) > 1 else None
        dash = under if isinstance(under, Dashboard) else None
        keys = dash.keys_here() if dash is not None else Dashboard.BINDINGS
        if dash is not None and dash.mapped:  # a topology's map: its knobs and terms
            yield from self._sections((keys, type(self.app).BINDINGS), [MAP_PAIR_KEYS],
                                     ("knobs (enter on the selected element)", TOPOLOGY_KNOBS),
                                     TOPOLOGY_TERMS)
            return
        yield from self._sections((keys, ControlPanel.BINDINGS, FilterList.BINDINGS,
                                  type(self.app).BINDINGS), (),
                                 ("knobs (up/down on the left panel selects one)",
                                  [(k.label, k.hint) for k in KNOBS]), GLOSSARY)

    def _sections(self, groups, extra, knobs, terms) -> ComposeResult:
        rows: dict[str, str] = {}  # key -> what it does (a key bound twice is listed once)
        for group in groups:
            for b in group:
                if isinstance(b, Binding):
                    keys = ", ".join(_pretty(k) for k in b.key.split(","))
                    rows.setdefault(keys, b.tooltip or b.description)
        rows.update(extra)
        rows["ctrl+p"] = "command palette: every action by name"
        with VerticalScroll(classes="frame"):
            yield Static(Text("prfaas-tui help · esc to close", style="bold"))
            yield Static(_table("keys", list(rows.items())))
            yield Static(_table(*knobs))
            yield Static(_table("terms", terms))
