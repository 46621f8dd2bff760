"""The dashboard's metrics export: one row per snapshot of what the emulator measured and
what the model predicted at the knobs it ran with, as CSV and JSON. No Textual: the screen
prompts for the path."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from emulator.model import STAGES, OperatingPoint
from emulator.units import to_gbps
from prfaas_tui.modelview import ModelView


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


def export_metrics(history: Sequence[Any], model: Callable[[Any], OperatingPoint], v: ModelView,
                   base: Path) -> tuple[Path, Path]:
    """base.csv and base.json: the snapshots of `history` with the model at their knobs, and
    the model view `v` (what the operator set) in the JSON's head."""
    rows = metric_rows(history, model)
    csv_path, json_path = base.with_suffix(".csv"), base.with_suffix(".json")
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["sim_time"])
        w.writeheader()
        w.writerows(rows)
    doc = {"scenario": v.scenario.name, "paradigm": v.settings.paradigm, "rate": v.settings.rate,
           "model": v.point.to_dict(), "optimum": v.optimum.best.to_dict(), "samples": rows}
    json_path.write_text(json.dumps(doc, indent=1, allow_nan=False), encoding="utf-8")
    return csv_path, json_path
