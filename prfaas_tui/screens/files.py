"""Writing files from the dashboard: the current scenario as a preset TOML (through
emulator.scenario.writer), and the metrics history as CSV and JSON."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.model import STAGES, OperatingPoint
from emulator.scenario.reader import PresetError
from emulator.scenario.writer import write_preset
from emulator.units import to_gbps
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.widgets.modelview import Settings

if TYPE_CHECKING:
    from prfaas_tui.screens.dashboard import Dashboard

# -- presets ------------------------------------------------------------------------------------
def save_preset(settings: Settings, dest: Path) -> Path:
    """Write the preset (emulator.scenario.writer); raises PresetError if it does not load
    back the same."""
    write_preset(settings.scenario, dest, rate=settings.rate, paradigm=settings.paradigm)
    return dest


# -- metrics ------------------------------------------------------------------------------------
def _clean(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def metric_rows(history: Sequence[Any], model: Callable[[Any], OperatingPoint]) -> list[dict]:
    """One flat row per snapshot: what the emulator measured and what the model predicted."""
    rows = []
    for s in history:
        op = model(s)
        row = {"sim_time": s.sim_time, "offered_rate": s.offered_rate, "served_rate": s.served_rate,
               "lambda_max": op.lambda_max, "binding": op.binding}
        row |= {f"ceiling_{st}": op.ceilings[st] for st in STAGES}
        row |= {"link_capacity_gbps": to_gbps(s.link.capacity),
                "link_utilization": s.link.utilization,
                "egress_gbps": to_gbps(s.link.capacity) * s.link.utilization,
                "ttft_p50": s.ttft_p50, "ttft_p90": s.ttft_p90, "ttft_p99": s.ttft_p99}
        row |= {f"queue_{st}": s.stages[st].queue for st in STAGES}
        row |= {"link_queued_bytes": s.link.queued_bytes, "arrived": s.arrived,
                "completed": s.completed, "in_flight": s.in_flight, "rejected": s.rejected,
                "lost": s.lost, "bottleneck": s.bottleneck}
        k = s.knobs
        row |= {"t": k.t, "n_p": k.n_p, "n_d": k.n_d, "n_prfaas": k.n_prfaas,
                "bandwidth_gbps": to_gbps(k.bandwidth), "paradigm": k.paradigm}
        rows.append({k: _clean(v) for k, v in row.items()})
    return rows


def export_metrics(dash: Dashboard, base: Path) -> tuple[Path, Path]:
    """base.csv and base.json from the dashboard's history."""
    history = dash.tick.history if dash.tick else ()
    rows = metric_rows(history, dash.point_at)
    csv_path, json_path = base.with_suffix(".csv"), base.with_suffix(".json")
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["sim_time"])
        w.writeheader()
        w.writerows(rows)
    v = dash.view
    doc = {"scenario": v.scenario.name, "paradigm": v.settings.paradigm, "rate": v.settings.rate,
           "model": v.point.to_dict(), "optimum": v.optimum.best.to_dict(), "samples": rows}
    json_path.write_text(json.dumps(doc, indent=1, allow_nan=False), encoding="utf-8")
    return csv_path, json_path


# -- prompts ------------------------------------------------------------------------------------
def _dir_exists(text: str) -> str | None:
    p = Path(text).expanduser()
    return None if p.parent.is_dir() else f"no such directory: {p.parent}"


def save_preset_prompt(dash: Dashboard) -> None:
    def done(text: str | None) -> None:
        if text is None:
            return
        try:
            path = save_preset(dash.settings, Path(text).expanduser())
        except (OSError, PresetError) as exc:
            dash.notify(f"not saved: {exc}", severity="error")
            return
        dash.notify(f"saved {path} (loads back with --preset {path})")

    name = f"{dash.settings.scenario.name}-saved.toml"
    dash.app.push_screen(ValuePrompt("save the scenario as a preset TOML", name,
                                     "the knobs and offered rate as they are now",
                                     _dir_exists), done)


def export_prompt(dash: Dashboard) -> None:
    def done(text: str | None) -> None:
        if text is None:
            return
        try:
            paths = export_metrics(dash, Path(text).expanduser())
        except OSError as exc:
            dash.notify(f"not exported: {exc}", severity="error")
            return
        dash.notify("exported " + " and ".join(str(p) for p in paths))

    name = f"prfaas-{dash.settings.scenario.name}-metrics"
    dash.app.push_screen(ValuePrompt("export metrics (writes NAME.csv and NAME.json)", name,
                                     "one row per snapshot: measured and model values",
                                     _dir_exists), done)
