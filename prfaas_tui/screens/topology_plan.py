"""A topology plan's results (`prfaas-tui plan` on a topology preset, its --out JSON): the
shipped deployment, the cost/goodput Pareto front and every emulated candidate, with the front
drawn; `enter` opens the candidate under the cursor in the topology view."""

from __future__ import annotations

import json
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from emulator.scenario import presets
from emulator.scenario.scenario import Scenario
from prfaas_tui.errors import UsageError
from prfaas_tui.widgets.pareto import ParetoChart, ParetoData

COLUMNS = ("", "candidate", "cost/h", "goodput", "bound", "binds")


class TopologyPlanError(UsageError):
    """A file that is not a topology plan's results; str() is one line naming it."""


def is_topology_plan(path: str | Path) -> bool:
    try:
        head = Path(path).expanduser().read_text(encoding="utf-8")[:4096]
    except (OSError, UnicodeDecodeError):
        return False
    return '"kind": "topology-plan"' in head


def read_topology_plan(path: str | Path) -> dict:
    p = Path(path).expanduser()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TopologyPlanError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TopologyPlanError(f"{path}: not a topology plan's results ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != "topology-plan":
        raise TopologyPlanError(f"{path}: kind: expected 'topology-plan'")
    for key in ("shipped", "ranked", "pareto", "preset"):
        if key not in data:
            raise TopologyPlanError(f"{path}: {key}: missing")
    return data


def plan_base(summary: dict) -> Scenario:
    """The plan's preset (PresetError, one line, when it does not load here)."""
    return presets.load(summary["preset"], topology=True)


class TopologyPlanScreen(ModalScreen[dict | None]):
    """Returns the chosen record (the shipped one included), or None."""

    CSS_PATH = "dialogs.tcss"
    DEFAULT_CSS = """
    TopologyPlanScreen.dialog > .frame { width: 120; }
    TopologyPlanScreen DataTable { height: auto; max-height: 14; }
    TopologyPlanScreen ParetoChart { height: 10; min-height: 6; }
    """
    BINDINGS = [Binding("escape", "dismiss(None)", "Close", id="topology-plan-close"),
                Binding("enter", "choose", "Open", id="topology-plan-open", priority=True)]

    def __init__(self, summary: dict, path: str) -> None:
        super().__init__(classes="dialog")
        self.summary, self.path = summary, path
        front = {r["key"] for r in summary["pareto"]}
        self.records = [summary["shipped"], *summary["ranked"]]
        self.front = front

    def compose(self) -> ComposeResult:
        s = self.summary
        sh, best = s["shipped"], s.get("best_within_shipped_cost")
        line = (f"{self.path} · {s['candidates']} candidates, {s['pruned_by_bound']} pruned by "
                f"the routing bound, {s['emulated']} emulated · shipped {sh['goodput']:.3f} "
                f"req/s at {sh['cost_per_hour']:.2f}/h")
        if best is not None:
            line += f" · best at that cost or less: {best['label']} ({best['goodput']:.3f})"
        with Vertical(classes="frame"):
            yield Label("Topology plan: open a candidate in the topology view", classes="title")
            yield Static(line, id="summary", classes="help")
            table: DataTable = DataTable(cursor_type="row", zebra_stripes=True, id="ranked")
            table.add_columns(*COLUMNS)
            for i, r in enumerate(self.records):
                mark = "shipped" if i == 0 else "★ front" if r["key"] in self.front else ""
                table.add_row(Text(mark), r["label"], f"{r['cost_per_hour']:.2f}",
                              f"{r['goodput']:.3f}", f"{r['bound']:.3f}",
                              ", ".join(r["binding"]), key=str(i))
            yield table
            yield ParetoChart(id="pareto")
            yield Static("enter: open in the topology view · ★: on the cost/goodput front "
                         "(the best at its budget) · esc: close", classes="help")

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self._show_front()

    def selected(self) -> dict | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return self.records[int(key)] if key is not None else None

    def _show_front(self) -> None:
        recs, sel = self.summary["ranked"], self.selected()
        self.query_one(ParetoChart).set_data(ParetoData.of(recs, sel), (id(recs), id(sel)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_front()

    def action_choose(self) -> None:
        self.dismiss(self.selected())

