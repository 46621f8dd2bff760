"""A plan's results (`prfaas-tui plan --out FILE`, a single pair's or a topology's): every
finished candidate ranked by SLO goodput, those on the cost/goodput front starred, and any of
them loaded as the running scenario.

Loading a candidate replaces the running scenario exactly as loading a preset does: the plan's
base preset (named in the file) turned into the candidate's scenario (`scenario_from_record`):
a pair's with its paradigm and split, a topology's with its sites, links and the best threshold
policy of its hardware. A topology plan's first row is the preset as written (the shipped
deployment the candidates must beat). A file that is not a plan, a plan of the other kind, or a
candidate that does not load, keeps the screen open with a one-line reason. `/` narrows the
table to the rows whose text contains what is typed (the pickers' matcher, `matches`); the
Pareto chart keeps every candidate and marks the one under the cursor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Label, Static

from emulator.planner.goodput import SHIPPED, scenario_from_record
from emulator.planner.store import is_number, read_results
from emulator.planner.sweep import pareto
from emulator.scenario import presets
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario
from emulator.units import format_duration
from prfaas_tui.errors import UsageError
from prfaas_tui.modelview import Refused, Settings
from prfaas_tui.screens.presets import load_any
from prfaas_tui.screens.prompt import FIELD_KEYS, steady_input
from prfaas_tui.text_filter import matches
from prfaas_tui.widgets.pareto import ParetoChart, ParetoData

COLUMNS = ("#", "candidate", "goodput", "95% band", "Λmax", "util", "cost/h", "per $/h", "binds")
TOPOLOGY_KIND = "topology-plan"  # a topology plan's summary (JSON) says so


class PlanError(UsageError):
    """A results file or record the dashboard cannot use; str() is the one line shown (a
    UsageError, so the command line reports it and exits 2)."""


@dataclass(frozen=True)
class PlanChoice:
    """A candidate ready to run: what the dashboard's load_scenario takes (a topology's has no
    paradigm and split: its regions carry them)."""

    scenario: Scenario
    paradigm: str | None
    split: tuple[int, int] | None
    base: Scenario
    record: dict


def ceiling(rec: dict) -> float:
    """A record's ceiling on its goodput: the pair's Lambda_max, a topology's routing bound."""
    return rec["lambda_max"] if "lambda_max" in rec else rec["bound"]


@dataclass(frozen=True)
class PlanFile:
    path: Path
    shown: str  # the path as the user gave it
    header: dict  # a pair's results-file header, or a topology plan's summary
    records: list[dict]  # ranked: best SLO goodput first (a topology's: its shipped one first)

    @property
    def topology(self) -> bool:
        return self.header.get("kind") == TOPOLOGY_KIND

    @property
    def base_name(self) -> str:
        return self.header["scenario"]

    @cached_property
    def candidates(self) -> list[dict]:
        """The records the front is drawn over (not a topology's shipped baseline)."""
        return [r for r in self.records if r.get("key") != SHIPPED]

    def summary(self) -> str:
        h = self.header
        slo = h.get("slo") if isinstance(h.get("slo"), dict) else {}
        parts = [f"base {self.base_name}"]
        if is_number(slo.get("ttft_p90")):
            parts.append(f"SLO P90 TTFT ≤ {format_duration(slo['ttft_p90'])}"
                         + (f", TPOT ≤ {format_duration(slo['tpot_p90'])}"
                            if is_number(slo.get("tpot_p90")) else ""))
        seeds, dur = h.get("seeds"), h.get("duration")
        if isinstance(seeds, list) and is_number(dur):
            parts.append(f"{len(seeds)} seed{'s' * (len(seeds) != 1)} × {format_duration(dur)}")
        n = len(self.candidates)
        parts.append(f"{n} candidate{'s' * (n != 1)}")
        if self.topology:
            sh, best = self.header["shipped"], self.header.get("best_within_shipped_cost")
            parts.append(f"shipped {sh['goodput']:.3f} req/s at {sh['cost_per_hour']:.2f}/h"
                         + (f", best at that cost or less: {best['label']} "
                            f"({best['goodput']:.3f})" if best else ""))
        return " · ".join(parts)

    def base(self, running: Scenario | None = None) -> Scenario:
        """The plan's base preset; when it does not load here (a TOML file elsewhere), the
        running scenario's base if it has that name."""
        try:
            if self.topology:
                return presets.load(self.header["preset"], topology=True)
            return load_any(self.base_name)
        except PresetError as exc:
            if running is not None and running.name == self.base_name:
                return running
            raise PlanError(f"the plan's base preset {self.base_name!r} does not load here "
                            f"({exc.message}): load it with p, then reopen the plan") from None

    def choice(self, rec: dict, running: Scenario | None = None) -> PlanChoice:
        """The candidate of one record as a runnable scenario and paradigm."""
        base = self.base(running)
        if self.topology:
            return PlanChoice(scenario_from_record(base, rec), None, None, base, rec)
        try:
            sc = scenario_from_record(base, rec)
            paradigm = rec["candidate"]["paradigm"]
            Settings.initial(sc).apply(paradigm=paradigm)
        except (PresetError, Refused) as exc:
            msg = exc.message if isinstance(exc, PresetError) else str(exc)
            raise PlanError(f"{rec['label']} does not run on {base.name}: {msg}") from None
        return PlanChoice(sc, paradigm, (sc.n_p, sc.n_d), base, rec)


def is_topology_plan(path: str | Path) -> bool:
    """Whether a file is a topology plan's summary (not a pair's results file)."""
    try:
        with Path(path).expanduser().open("rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return f'"kind": "{TOPOLOGY_KIND}"' in head


def _topology_plan(p: Path, path: str | Path) -> PlanFile:
    """A topology plan's summary, checked for what the screen reads."""
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise PlanError(f"{path}: not a topology plan's results ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != TOPOLOGY_KIND:
        raise PlanError(f"{path}: kind: expected {TOPOLOGY_KIND!r}")
    for key in ("shipped", "ranked", "pareto", "preset", "scenario"):
        if key not in data:
            raise PlanError(f"{path}: {key}: missing")
    if not isinstance(data["ranked"], list):
        raise PlanError(f"{path}: ranked: expected a list")
    for where, rec in [("shipped", data["shipped"])] + [(f"ranked[{i}]", r)
                                                         for i, r in enumerate(data["ranked"])]:
        if not isinstance(rec, dict) or not isinstance(rec.get("label"), str):
            raise PlanError(f"{path}: {where}.label: expected a string")
        for k in ("goodput", "goodput_lo", "goodput_hi", "bound", "utilization", "cost_per_hour"):
            if not is_number(rec.get(k)):
                raise PlanError(f"{path}: {where}.{k}: expected a finite number")
    records = sorted(data["ranked"], key=lambda r: (-r["goodput"], str(r.get("key", ""))))
    return PlanFile(p, str(path), data, [data["shipped"], *records])


def open_plan(path: str | Path) -> PlanFile:
    """Read and check a plan's results, a pair's (JSON lines) or a topology's (its summary);
    PlanError (one line) when it is not one."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise PlanError(f"{path}: {'not a file' if p.exists() else 'no such file'}")
    if is_topology_plan(p):
        return _topology_plan(p, path)
    try:
        header, records = read_results(p)
    except UnicodeDecodeError:
        raise PlanError(f"{path}: not a prfaas-tui plan results file") from None
    except ValueError as exc:
        raise PlanError(str(exc)) from None
    except OSError as exc:
        raise PlanError(f"{path}: {exc.strerror or exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("scenario"), str):
        raise PlanError(f"{path}: not a prfaas-tui plan results file (no base scenario)")
    ranked = sorted(records, key=lambda r: (-r["goodput"], str(r.get("key", ""))))
    return PlanFile(p, str(path), header, ranked)


def newest_plan(directory: Path | None = None) -> Path | None:
    """The most recently written plan results file in a directory (the current one)."""
    d = directory or Path.cwd()
    try:
        files = sorted(d.glob("*.jsonl"), key=lambda f: f.stat().st_mtime, reverse=True)
    except OSError:
        return None
    for f in files[:50]:
        try:
            with f.open("rb") as fh:
                if fh.read(10).startswith(b'{"header"'):
                    return f
        except OSError:
            continue
    return None


def _cell(text: str) -> Text:
    return Text(text, justify="right")


def _row(rank: str, rec: dict, running: bool, front: bool) -> tuple[Text, ...]:
    cost, per = rec.get("cost_per_hour"), rec.get("goodput_per_cost")
    binds = rec.get("binding")
    return (_cell(f"{'★' if front else ''}{'▶' if running else ''}{rank}"),
            Text(rec["label"], style="bold" if running else ""),
            _cell(f"{rec['goodput']:.3f}"),
            _cell(f"{rec['goodput_lo']:.2f}–{rec['goodput_hi']:.2f}"),
            _cell(f"{ceiling(rec):.2f}"),
            _cell(f"{rec['utilization']:.0%}"),
            _cell("-" if cost is None else f"{cost:.1f}"),
            _cell("-" if per is None else f"{per:.3f}"),
            Text(", ".join(binds) if isinstance(binds, list) else str(binds or "")))


class PlanScreen(ModalScreen[PlanChoice | None]):
    """Returns the chosen candidate, or None. `plan` holds the file last opened here;
    `topology`: the caller runs topologies (a plan of the other kind is refused)."""

    CSS_PATH = "dialogs.tcss"
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    BINDINGS = [Binding("escape", "cancel", "Close", id="plan-close"),
                Binding("slash", "filter", "Filter", id="plan-filter", priority=True,
                        tooltip="Plan results: narrow the candidates by text (paradigm, "
                                "instances, t, B, sites, links...)")] + FIELD_KEYS

    def __init__(self, path: str | None = None, *, running: Scenario | None = None,
                 running_name: str | None = None, topology: bool = False) -> None:
        super().__init__(classes="dialog")
        self.path = path
        self.running = running  # the dashboard's base scenario: the fallback base
        self.running_name = running_name  # the running scenario's name: its row is marked
        self.topology = topology
        self.plan: PlanFile | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="frame"):
            yield Label("Plan results (req/s): load a candidate as the running scenario",
                        classes="title")
            yield Static("", id="summary", classes="help")
            yield steady_input(self, id="filter", placeholder="filter: type to narrow · enter/down: "
                                                              "the table · esc: clear")
            table: DataTable = DataTable(cursor_type="row", zebra_stripes=True, id="ranked")
            table.add_columns(*COLUMNS)
            yield table
            yield ParetoChart(id="pareto")
            newest = None if self.path or self.topology else newest_plan()
            yield steady_input(self, str(newest.name) if newest else "", id="path",
                               placeholder="path of a plan results file (prfaas-tui plan "
                                           "--out FILE), then enter")
            yield Static("", id="error", classes="error")
            yield Static("enter: load the candidate · /: filter · tab: path · esc: close",
                         classes="help")

    def on_mount(self) -> None:
        if self.path:
            self.open(self.path)
        if self.plan is None:
            self.query_one("#path", Input).focus()
            if not self.path:
                self.query_one("#summary", Static).update(
                    "no plan open: make one with  prfaas-tui plan --preset NAME --out "
                    "plan.json  (a sweep of paradigms, splits and t; on a topology of sites, "
                    "links and routings), then type its path below")

    def open(self, path: str) -> bool:
        """Show another results file; a bad one keeps what is shown and says why."""
        try:
            plan = open_plan(path)
        except PlanError as exc:
            self._error(str(exc))
            return False
        if plan.topology != self.topology:
            self._error(f"{path}: a {'topology' if plan.topology else 'single pair'}'s plan: "
                        f"open it with  prfaas-tui --plan {path}")
            return False
        self.plan = plan
        self._error("")
        if not plan.records:
            self._error("no finished candidates in this plan yet")
        self._fill()
        self.query_one(DataTable).focus()
        return True

    def _fill(self) -> None:
        """The plan's rows that pass the filter, ranked (a row keeps its rank and its record's
        index as its key); the cursor on the running candidate when it is shown."""
        if self.plan is None:
            return
        plan, typed = self.plan, self.query_one("#filter", Input).value
        table = self.query_one(DataTable)
        table.clear()
        current = 0
        front = {id(r) for r in pareto(plan.candidates)}
        rank = 0
        for i, rec in enumerate(plan.records):
            running = self.running_name == f"{plan.base_name}:{rec['label']}"
            shipped = rec.get("key") == SHIPPED
            rank += not shipped
            row = _row("shipped" if shipped else str(rank), rec, running, id(rec) in front)
            if matches(" ".join(cell.plain for cell in row), typed):
                current = table.row_count if running else current
                table.add_row(*row, key=str(i))
        table.move_cursor(row=current)
        shown = f" · {table.row_count} of {len(plan.records)} match '{typed.strip()}'" \
            if typed.strip() else ""
        self.query_one("#summary", Static).update(f"{plan.shown} · {plan.summary()}{shown}")
        self._show_front()

    def selected(self) -> dict | None:
        """The record under the table's cursor (None: no rows shown)."""
        table = self.query_one(DataTable)
        if self.plan is None or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return self.plan.records[int(key)] if key is not None else None

    def _show_front(self) -> None:
        """The cost/goodput front of the whole plan, the cursor's candidate marked."""
        if self.plan is not None:
            recs, sel = self.plan.candidates, self.selected()
            self.query_one(ParetoChart).set_data(ParetoData.of(recs, sel), (id(recs), id(sel)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_front()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`/` is a priority key that focuses the filter at once, so the keys typed after it
        (`/prf` at once from a terminal) find it; in a text box it is only a slash (a path)."""
        return action != "filter" or not isinstance(self.focused, Input)

    def action_filter(self) -> None:
        self.add_class("-filtering")
        self.set_focus(self.query_one("#filter", Input))  # now: Widget.focus() waits a turn

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            event.stop()
            self._fill()

    def on_key(self, event: events.Key) -> None:
        if event.key == "down" and self.query_one("#filter", Input).has_focus:
            event.stop()
            self.query_one(DataTable).focus()

    def _error(self, text: str) -> None:
        self.query_one("#error", Static).update(Text(f"✗ {text}" if text else ""))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "filter":
            self.query_one(DataTable).focus()
        elif event.value.strip():
            self.open(event.value.strip())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self.plan is None or event.row_key.value is None:
            return
        try:
            choice = self.plan.choice(self.plan.records[int(event.row_key.value)], self.running)
        except PlanError as exc:
            self._error(str(exc))
            return
        self.dismiss(choice)

    def action_cancel(self) -> None:
        """Esc: clears a filter first (all rows back), then closes."""
        box = self.query_one("#filter", Input)
        if self.has_class("-filtering"):
            self.remove_class("-filtering")
            box.value = ""
            self._fill()
            self.query_one(DataTable).focus()
            return
        self.dismiss(None)
