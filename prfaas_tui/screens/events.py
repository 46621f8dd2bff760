"""The events view: the run's knob changes, incidents and scheduler decisions (with their
reasons) as one full-width, scrollable table, filtered by kind and text, exportable.

It reads the engine's note log through `load` (`Session.events`): no copy is kept beyond the
rows on screen, and a live run is read again every second.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from emulator.files import unusable
from prfaas_tui.events import EXPORT_SUFFIXES, KINDS, Event, select, write_events
from prfaas_tui.metrics_export import fresh_base
from prfaas_tui.screens.prompt import ValuePrompt, steady_input
from prfaas_tui.widgets.status import clock

RELOAD_S = 1.0  # a live run's events are read again this often (wall seconds)
KIND_STYLE = {"knob": "bold", "incident": "bold yellow", "scheduler": "cyan"}


class EventsScreen(Screen):
    DEFAULT_CSS = """
    EventsScreen #events-head { height: 1; padding: 0 1; background: $boost; }
    EventsScreen #events-filter { height: 1; border: none; padding: 0 1; }
    EventsScreen DataTable { height: 1fr; }
    EventsScreen #events-detail { height: auto; max-height: 4; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape,E", "app.pop_screen", "Back", id="events-back"),
        Binding("k", "toggle('knob')", "Knobs", id="events-knob",
                tooltip="Show or hide knob changes"),
        Binding("i", "toggle('incident')", "Incidents", id="events-incident",
                tooltip="Show or hide incidents"),
        Binding("s", "toggle('scheduler')", "Scheduler", id="events-scheduler",
                tooltip="Show or hide scheduler decisions"),
        Binding("slash", "filter", "Filter", id="events-filter",
                tooltip="Filter the events by text"),
        Binding("x", "export", "Export", id="events-export",
                tooltip="Write the events shown as JSON lines (.jsonl) or CSV (.csv)"),
    ]

    def __init__(self, load: Callable[[], list[Event]], *, scenario: str, export_dir: Path,
                 live: bool = True) -> None:
        super().__init__()
        self._load, self.scenario, self.export_dir, self.live = load, scenario, export_dir, live
        self.events: list[Event] = []
        self.kinds: set[str] = set(KINDS)
        self.text = ""
        self.shown: list[Event] = []

    def compose(self) -> ComposeResult:
        yield Static(id="events-head")
        yield steady_input(self, placeholder="/ filter by text (Enter: back to the list)",
                           id="events-filter")
        table: DataTable = DataTable(cursor_type="row", zebra_stripes=True, id="events-table")
        table.add_column("time", key="t")
        table.add_column("kind", key="kind")
        table.add_column("event", key="text")
        yield table
        yield Static(id="events-detail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.reload()
        self.query_one(DataTable).focus()
        if self.live:
            self.set_interval(RELOAD_S, self.reload)

    def reload(self) -> None:
        """Read the log again; new events at its end are appended, not the table rebuilt (a
        long run holds thousands)."""
        events, old = self._load(), self.events
        if events == old:
            return
        self.events = events
        grown = len(events) > len(old) and events[len(old) - 1:len(old)] == old[-1:] \
            and events[:1] == old[:1]
        self.show(events[len(old):] if grown and old else None)

    def show(self, new: list[Event] | None = None) -> None:
        """Fill the table with the events that pass the filters, oldest first; `new`: only
        append these (the cursor follows the newest while it is on the last row)."""
        table = self.query_one(DataTable)
        follow = table.row_count == 0 or table.cursor_row >= table.row_count - 1
        if new is None:
            self.shown = select(self.events, self.kinds, self.text)
            table.clear()
            added = self.shown
        else:
            added = select(new, self.kinds, self.text)
            self.shown = self.shown + added
        for e in added:
            table.add_row(clock(e.t), Text(e.kind, style=KIND_STYLE[e.kind]),
                          " ".join(e.text.split()))
        if follow and self.shown:
            table.move_cursor(row=len(self.shown) - 1)
        head = Text(f"events · {len(self.shown)} of {len(self.events)} shown ·")
        for k in KINDS:
            head.append(f" [{k[0]}] ")
            if k in self.kinds:
                head.append(k, style=KIND_STYLE[k])
            else:
                head.append(f"{k} hidden", style="dim strike")
        if self.text:
            head.append(f" · text '{self.text}'")
        self.query_one("#events-head", Static).update(head)
        self._detail()

    def _detail(self) -> None:
        """The event under the cursor in full (a long reason scrolls off the table)."""
        table = self.query_one(DataTable)
        row = table.cursor_row
        e = self.shown[row] if 0 <= row < len(self.shown) else None
        self.query_one("#events-detail", Static).update(
            f"{clock(e.t)} {e.kind}: {e.text}" if e else "no events match")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.text = event.value
        self.show()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    def action_toggle(self, kind: str) -> None:
        self.kinds ^= {kind}
        self.show()

    def action_filter(self) -> None:
        self.query_one(Input).focus()

    def action_export(self) -> None:
        def check(text: str) -> str | None:
            if (why := unusable(text)) is not None:
                return why
            p = Path(text).expanduser()
            if p.suffix not in EXPORT_SUFFIXES:
                return "name a .jsonl or .csv file"
            if p.exists():
                return f"{p} exists: exports never overwrite"
            return None

        def done(text: str | None) -> None:
            if text is None:
                return
            path = Path(text).expanduser()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_events(self.shown, path)
            except (OSError, ValueError) as exc:
                self.notify(f"not exported: {exc}", severity="error")
                return
            self.notify(f"exported {len(self.shown)} events to {path}")

        base = fresh_base(self.export_dir, f"prfaas-{self.scenario}-events", EXPORT_SUFFIXES)
        self.app.push_screen(ValuePrompt(
            "export the events shown", f"{base}.jsonl",
            "JSON lines (.jsonl) or CSV (.csv), by the name's suffix", check), done)
