"""The dashboard's metrics export: one row per recorded snapshot of the whole run (what the
emulator measured and what the model predicted at the knobs it ran with, `SeriesRecord`) as
CSV and JSON, in timestamped files that never overwrite each other. No Textual: the screen
prompts for the folder."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from emulator.files import file_stem
from emulator.model import STAGES, OperatingPoint
from emulator.units import to_gbps
from prfaas_tui.events import Event
from prfaas_tui.modelview import ModelView
from prfaas_tui.series_record import SeriesRecord


def _clean(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def metric_row(s: Any, op: OperatingPoint) -> dict:
    """One flat row for a snapshot: what the emulator measured and what the model `op` (at the
    knobs it ran with) predicted."""
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
    return {k: _clean(v) for k, v in row.items()}


def default_export_dir() -> Path:
    """Where exports go unless `--export-dir` says otherwise: ./prfaas-exports."""
    return Path.cwd() / "prfaas-exports"


def fresh_base(folder: Path, stem: str, suffixes: Sequence[str], now: datetime | None = None
               ) -> Path:
    """folder/STEM-YYYYmmdd-HHMMSS, with -2, -3 ... appended while any of its files exists:
    two exports in the same second do not overwrite each other. STEM is made file-safe
    (emulator.files.file_stem): a scenario named `../x` writes inside `folder` all the same."""
    stem = file_stem(stem)
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = folder / f"{stem}-{stamp}"
    n = 1
    while any(base.with_name(base.name + sfx).exists() for sfx in suffixes):
        n += 1
        base = folder / f"{stem}-{stamp}-{n}"
    return base


def export_metrics(record: SeriesRecord, v: ModelView, folder: Path,
                   events: Sequence[Event] = ()) -> tuple[Path, Path]:
    """The whole run's series (`record`) as folder/prfaas-SCENARIO-STAMP.csv and .json, the JSON
    with the model view `v` (what the operator set), the record's thinning and the run's events
    in its head. Creates the folder; never overwrites a file (opened exclusively)."""
    folder.mkdir(parents=True, exist_ok=True)
    base = fresh_base(folder, f"prfaas-{v.scenario.name}", (".csv", ".json"))
    rows = record.dicts()
    csv_path, json_path = base.with_name(base.name + ".csv"), base.with_name(base.name + ".json")
    with csv_path.open("x", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(record.columns) or ["sim_time"])
        w.writeheader()
        w.writerows(rows)
    doc = {"scenario": v.scenario.name, "paradigm": v.settings.paradigm, "rate": v.settings.rate,
           "model": v.point.to_dict(), "optimum": v.optimum.best.to_dict(),
           "snapshots_seen": record.seen, "stride": record.stride,
           "events": [asdict(e) for e in events], "samples": rows}
    with json_path.open("x", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=1, allow_nan=False))
    return csv_path, json_path
