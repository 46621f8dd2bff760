"""Drills: pick an incident rehearsal, watch its timeline play, read the scorecard at the end;
or inject an incident by hand into whatever is running.

The drill logic (incident schedules, the scorecard) is the engine's (`emulator.sim.drills`, via
`prfaas_tui.live`); these screens only show it, and the pickers return the choice (`dismiss`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from emulator.units import format_duration
from prfaas_tui import live
from prfaas_tui.widgets.theme import color


class _Picker(ModalScreen[str | None]):
    """A list of (name, description) in a dialog; returns the chosen name, or None."""

    CSS_PATH = "dialogs.tcss"

    def __init__(self, title: str, items: Sequence[tuple[str, str]], keys: str,
                 empty: str = "", list_id: str | None = None) -> None:
        super().__init__(classes="dialog")
        self.title_text, self.items, self.keys = title, items, keys
        self.empty, self.list_id = empty, list_id

    def compose(self) -> ComposeResult:
        with Vertical(classes="frame"):
            yield Label(self.title_text, classes="title")
            if self.items or not self.empty:
                yield OptionList(*[Option(Text.assemble((f"{n:<24}", "bold"), (d, "dim")), id=n)
                                   for n, d in self.items], id=self.list_id)
            else:
                yield Static(self.empty, classes="help")
            yield Static(self.keys, classes="help")

    def on_mount(self) -> None:
        if self.query(OptionList):
            self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)


class DrillPicker(_Picker):
    """Lists the shipped drills; returns the chosen name."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="drill-cancel")]

    def __init__(self) -> None:
        super().__init__("Run a drill: its scenario replaces the running one", live.list_drills(),
                         "enter: start · esc: cancel",
                         empty="no drills shipped (presets/drills/*.toml)", list_id="drills")


class InjectPicker(_Picker):
    """Incidents that can be injected now; returns the chosen kind."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="inject-cancel")]

    def __init__(self, kinds: Sequence[tuple[str, str]]) -> None:
        super().__init__("Inject an incident at the current simulated time", kinds,
                         "enter: inject · esc: cancel")


METRICS = (  # scorecard key, label, format
    ("lost", "lost requests", str),
    ("slo_attainment", "SLO attainment", lambda v: f"{v:.1%}"),
    ("peak_ttft_p90", "peak TTFT p90", format_duration),
    ("ttft_p90_during", "TTFT p90 during incidents", format_duration),
    ("unfinished_during", "unfinished from incidents", str),
    ("recovery_seconds", "recovery", format_duration),
    ("conversions", "prefill/decode conversions", str),
)


def scorecard_rows(card: dict) -> list[tuple[str, str, str, bool | None]]:
    """(label, value, bar, passed) per metric; passed is None where the drill sets no bar.
    A missing value reads 'never' for recovery and '-' otherwise."""
    expect = card.get("expectations", {})
    rows = []
    for key, label, fmt in METRICS:
        if key not in card:
            continue
        val = card[key]
        text = "never" if val is None and key == "recovery_seconds" else "-" if val is None else fmt(val)
        bar = expect.get(key)
        bar_text = "" if bar is None else ("≥ " if key == "slo_attainment" else "≤ ") + fmt(bar["bar"])
        rows.append((label, text, bar_text, None if bar is None else bool(bar["ok"])))
    if isinstance(card.get("peak_queue"), dict):
        rows.append(("peak queues", " · ".join(f"{k} {v}" for k, v in card["peak_queue"].items()),
                     "", None))
    return rows


class ScorecardScreen(ModalScreen[None]):
    """The drill's scorecard: each metric against the drill's bar, and the scheduler's
    decisions (`emulator.sim.drills.Scorecard.to_dict()`)."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape,enter,q", "dismiss(None)", "Close", id="scorecard-close")]

    def __init__(self, name: str, card: dict) -> None:
        super().__init__(classes="dialog")
        self.drill, self.card = name, card

    def compose(self) -> ComposeResult:
        ok, bad = color(self, "text-success"), color(self, "text-error")
        table = Table(box=None, padding=(0, 2, 0, 0), header_style="bold")
        for col, just in (("metric", "left"), ("value", "right"), ("bar", "right"), ("", "left")):
            table.add_column(col, justify=just)  # type: ignore[arg-type]
        for label, value, bar, passed in scorecard_rows(self.card):
            mark = Text("" if passed is None else "✓ pass" if passed else "✗ fail",
                        style=ok if passed else bad)
            table.add_row(label, value, bar, mark)
        passed = self.card.get("passed")
        head = Text(f"scorecard · drill {self.drill}", style="bold")
        if passed is not None:
            head.append("  PASSED" if passed else "  FAILED", style=f"bold {ok if passed else bad}")
        decisions = [" ".join(str(d).split()) for d in self.card.get("decisions", [])]
        with Vertical(classes="frame"):
            yield Label(head)
            yield Static(table)
            yield Static(Text(f"scheduler decisions ({len(decisions)}), latest last:\n" +
                              "\n".join(decisions[-10:]) if decisions else
                              "no scheduler decisions"), id="decisions")
            yield Static("enter/esc: close (the emulator stays paused at the end)",
                         classes="help")
