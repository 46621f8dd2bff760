"""Drills: pick an incident rehearsal, watch its timeline play, read the scorecard at the end;
or inject an incident by hand into whatever is running.

The drill logic (incident schedules, the scorecard) is the engine's (`emulator.sim.runs.drills`, via
`prfaas_tui.live`); these screens only show it, and the pickers return the choice (`dismiss`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static

from emulator.scenario.drill import Drill
from emulator.scenario.drills import drill_on, drills_for
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario
from emulator.units import format_duration
from prfaas_tui import live
from prfaas_tui.screens.prompt import FIELD_KEYS, steady_input
from prfaas_tui.widgets.filter_list import FilterList, named_options
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
                yield FilterList(named_options([(n, d, n) for n, d in self.items]),
                                 list_id=self.list_id, blink=getattr(self.app, "live", True))
            else:
                yield Static(self.empty, classes="help")
            yield Static(self.keys, classes="help")

    def on_mount(self) -> None:
        if self.query(OptionList):
            self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def on_key(self, event: events.Key) -> None:
        """Keys typed ahead reach the screen before its list has the focus: filter with them."""
        if self.query(FilterList) and self.query_one(FilterList).take(event):
            event.stop()


class DrillPicker(_Picker):
    """Lists the shipped drills that fit the running scenario (it has every link, site, region
    or stage they target); returns the chosen name."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="drill-cancel")]

    def __init__(self, scenario: Scenario) -> None:
        super().__init__(f"Run a drill on this scenario ({scenario.name}): its incidents, load "
                         "and SLO on this deployment", drills_for(scenario),
                         "enter: start · /: filter · esc: cancel",
                         empty=f"no shipped drill fits {scenario.name} (presets/drills/*.toml: "
                               "prfaas-tui drill lists them)", list_id="drills")


def drill_here(name: str, scenario: Scenario) -> Drill:
    """The drill `name` on the running scenario (never on the drill's own base preset):
    PresetError, one line, when it is broken or the scenario lacks what it targets."""
    return drill_on(live.load_drill(name), scenario)


class InjectPicker(_Picker):
    """Incidents that can be injected now; returns the chosen kind."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="inject-cancel")]

    def __init__(self, kinds: Sequence[tuple[str, str]]) -> None:
        super().__init__("Inject an incident at the current simulated time", kinds,
                         "enter: set its parameters · /: filter · esc: cancel")


HAND_HINTS = {  # what a key means when typed by hand (its range is the kind's own check)
    "duration": "how long; blank: until you end it (i, end all)",
    "factor": "share of B_out the link delivers (brownout), or x offered rate (surge)",
    "long_factor": "x the odds of a request longer than cut",
    "cut": "tokens; blank: the preset's threshold t",
    "count": "how many instances die",
    "stage": "prfaas, pd-p or pd-d",
    "low": "the trough, a share of B_out",
    "cluster": "prfaas or pd; blank: both",
}


def typed_value(text: str) -> int | float | str:
    """What a typed parameter is, as a TOML file would hold it: a whole number, a number, or
    text (a duration like '5 min', a token count like '32K', a stage name), so the kind's own
    parser and check see exactly what they see in a drill file."""
    t = text.strip()
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    return t


def shown(value: object) -> str:
    """A ready-made incident's value, as the form shows it (blank: None)."""
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


class IncidentForm(ModalScreen[object | None]):
    """The parameters of an incident to inject (depth, duration, count...), prefilled with the
    catalog's; `build({key: value})` makes the incident or raises PresetError, whose one line
    shows under the form, which stays open."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="incident-cancel")] + FIELD_KEYS

    def __init__(self, label: str, describe: str, keys: Sequence[str], ready: object,
                 build: Callable[[dict[str, object]], object]) -> None:
        super().__init__(classes="dialog")
        self.label, self.describe, self.keys = label, describe, list(keys)
        self.ready, self.build = ready, build

    def compose(self) -> ComposeResult:
        with Vertical(classes="frame"):
            yield Label(Text.assemble(("inject ", "bold"), self.label, (f" · {self.describe}",
                                                                       "dim")), id="title")
            for key in self.keys:
                with Horizontal(classes="row"):
                    yield Label(f"{key:>12} ", classes="help")
                    yield steady_input(self, shown(getattr(self.ready, key, None)),
                                       id=f"inc-{key}", placeholder=HAND_HINTS.get(key, ""))
            yield Static("enter: inject now · tab: next · esc: cancel · the ranges are those of "
                         "a drill file's [[incidents]]", classes="help")
            yield Static("", id="error", classes="error")

    def values(self) -> dict[str, object]:
        """The typed parameters ({key: value}); a blank one is left out (its default)."""
        out = {}
        for key in self.keys:
            text = self.query_one(f"#inc-{key}", Input).value
            if text.strip():
                out[key] = typed_value(text)
        return out

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            incident = self.build(self.values())
        except PresetError as exc:
            self.query_one("#error", Static).update(Text(f"✗ {exc}"))
            return
        self.dismiss(incident)


METRICS = (  # scorecard key, label, format
    ("lost", "lost requests", str),
    ("slo_attainment", "SLO attainment", lambda v: f"{v:.1%}"),
    ("peak_ttft_p90", "peak TTFT p90", format_duration),
    ("ttft_p90_during", "TTFT p90 during incidents", format_duration),
    ("unfinished_during", "unfinished from incidents", str),
    ("recovery_seconds", "recovery (served = offered)", format_duration),
    ("conversions", "prefill/decode conversions", str),
)


def scorecard_rows(card: dict, slo: float | None = None) -> list[tuple[str, str, str, bool | None]]:
    """(label, value, bar, passed) per metric; passed is None where the drill sets no bar.
    A missing value reads 'never' for recovery and '-' otherwise. Recovery is the throughput's
    (served back to offered); with `slo` (P90 TTFT target, s), an in-incident P90 above it
    says so beside it, so a 0 ms recovery is not read as latency back within the SLO."""
    expect = card.get("expectations", {})
    rows = []
    for key, label, fmt in METRICS:
        if key not in card:
            continue
        val = card[key]
        text = "never" if val is None and key == "recovery_seconds" else "-" if val is None else fmt(val)
        bar = expect.get(key)
        bar_text = "" if bar is None else ("≥ " if key == "slo_attainment" else "≤ ") + fmt(bar["bar"])
        passed = None if bar is None else bool(bar["ok"])
        if key == "ttft_p90_during" and bar is None and slo is not None and val is not None:
            bar_text, passed = f"SLO ≤ {format_duration(slo)}", val <= slo
        rows.append((label, text, bar_text, passed))
    if isinstance(card.get("peak_queue"), dict):
        q = card["peak_queue"]  # as the CLI's scorecard: names in the label, counts in the value
        rows.append((f"peak queues {' / '.join(q)}", " / ".join(map(str, q.values())), "", None))
    return rows


class ScorecardScreen(ModalScreen[None]):
    """The drill's scorecard: each metric against the drill's bar, and the scheduler's
    decisions (`emulator.sim.runs.drills.Scorecard.to_dict()`)."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape,enter,q", "dismiss(None)", "Close", id="scorecard-close")]

    def __init__(self, name: str, card: dict, slo: float | None = None) -> None:
        super().__init__(classes="dialog")
        self.drill, self.card, self.slo = name, card, slo

    def compose(self) -> ComposeResult:
        ok, bad = color(self, "text-success"), color(self, "text-error")
        table = Table(box=None, padding=(0, 2, 0, 0), header_style="bold")
        for col, just in (("metric", "left"), ("value", "right"), ("bar", "right"), ("", "left")):
            table.add_column(col, justify=just)  # type: ignore[arg-type]
        for label, value, bar, passed in scorecard_rows(self.card, self.slo):
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
            # the close hint above the decisions: on a short terminal they run off the bottom
            yield Static("enter/esc: close (the emulator stays paused at the end)",
                         classes="help")
            yield Static(Text(f"scheduler decisions ({len(decisions)}), latest last:\n" +
                              "\n".join(decisions[-10:]) if decisions else
                              "no scheduler decisions"), id="decisions")


REGION_COLUMNS = (("lost", "lost"), ("slo_attainment", "SLO met"),
                  ("ttft_p90_during", "P90 during"), ("peak_ttft_p90", "peak P90"),
                  ("recovery_seconds", "recovered in"))


class TopologyScorecard(ModalScreen[None]):
    """A topology drill's scorecard: the totals' verdict and one row per region."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape,enter,q", "dismiss(None)", "Close", id="topology-card-close")]

    def __init__(self, name: str, card: dict) -> None:
        super().__init__(classes="dialog")
        self.drill, self.card = name, card

    def compose(self) -> ComposeResult:
        table = Table(box=None, padding=(0, 2, 0, 0), header_style="bold")
        table.add_column("region")
        for _, label in REGION_COLUMNS:
            table.add_column(label, justify="right")
        for name, row in (self.card.get("regions") or {}).items():
            table.add_row(name, *(_card_value(k, row.get(k)) for k, _ in REGION_COLUMNS))
        passed = self.card.get("passed")
        head = f"scorecard · drill {self.drill}" + (
            "" if passed is None else "  PASSED" if passed else "  FAILED")
        with Vertical(classes="frame"):
            yield Label(Text(head, style="bold"))
            yield Static(table)
            yield Static(f"total lost {self.card.get('lost')} · P90 during incidents "
                         f"{_card_value('ttft_p90_during', self.card.get('ttft_p90_during'))}")
            yield Static("enter/esc: close (the emulator stays paused at the end)",
                         classes="help")


def _card_value(key: str, v: Any) -> str:
    if v is None:
        return "–"
    if key == "lost":
        return str(v)
    if key == "slo_attainment":
        return f"{v:.1%}"
    return f"{v:.2f} s"
