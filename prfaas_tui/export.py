"""What the dashboard writes to disk: the current scenario as a preset TOML (checked by loading
it back), and the metrics history as CSV and JSON. No Textual: the screen prompts for the path."""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from emulator import presets
from emulator.config import PresetError
from emulator.model import STAGES, OperatingPoint
from emulator.units import to_gbps
from prfaas_tui.widgets.modelview import ModelView, Settings

# -- TOML ---------------------------------------------------------------------------------------
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return ("inf" if v > 0 else "-inf") if math.isinf(v) else "nan" if math.isnan(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # JSON escapes are valid TOML basic strings
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if hasattr(v, "isoformat"):
        return v.isoformat()
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _is_tables(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def toml_dumps(data: dict, path: tuple[str, ...] = ()) -> str:
    """TOML for what tomllib reads back as `data`: scalars first, then [tables] and
    [[arrays of tables]] (tables inside those are written inline)."""
    def scalar(v: Any) -> bool:
        return not isinstance(v, dict) and not _is_tables(v)

    out = "".join(f"{_key(k)} = {_value(v)}\n" for k, v in data.items() if scalar(v))
    for k, v in data.items():
        name = ".".join(_key(p) for p in (*path, k))
        if isinstance(v, dict):
            if not v or any(scalar(x) for x in v.values()):
                out += f"\n[{name}]\n"
            out += toml_dumps(v, (*path, k))
        elif _is_tables(v):
            for item in v:
                out += f"\n[[{name}]]\n" + "".join(f"{_key(a)} = {_value(b)}\n"
                                                    for a, b in item.items())
    return out


# -- presets ------------------------------------------------------------------------------------
def _rebase(value: str, src_dir: Path, dst_dir: Path) -> str:
    """A relative file reference of the original preset, made to work from the new place."""
    p = Path(value)
    if p.is_absolute():
        return value
    target = (src_dir / p).resolve()
    try:
        return os.path.relpath(target, dst_dir.resolve())
    except ValueError:  # another drive
        return str(target)


def scenario_source(settings: Settings, dest: Path) -> dict:
    """The scenario's TOML source with the knobs the operator set (and the offered rate)."""
    sc = settings.scenario
    data = copy.deepcopy(sc.source)
    src_dir = Path(sc.path).parent if sc.path else Path.cwd()
    data["name"] = dest.stem
    dep = data.setdefault("deployment", {})
    dep["threshold"] = int(sc.t) if float(sc.t).is_integer() else float(sc.t)
    dep["n_p"], dep["n_d"] = sc.n_p, sc.n_d
    if "prfaas_gpus" in dep:
        dep["prfaas_gpus"] = sc.system.n_prfaas * sc.system.parallelism
    else:
        dep["n_prfaas"] = sc.system.n_prfaas
    dep["bandwidth"] = f"{to_gbps(sc.system.bandwidth):.6g} Gbps"
    data.setdefault("workload", {})["rate"] = float(f"{settings.rate:.6g}")
    for prof in data.get("profiles", {}).values():
        if isinstance(prof, dict) and isinstance(prof.get("file"), str):
            prof["file"] = _rebase(prof["file"], src_dir, dest.parent)
    lengths = data.get("workload", {}).get("lengths", {})
    if isinstance(lengths, dict) and isinstance(lengths.get("trace"), str):
        lengths["trace"] = _rebase(lengths["trace"], src_dir, dest.parent)
    return data


def save_preset(settings: Settings, dest: Path) -> Path:
    """Write the preset and load it back; raises PresetError if it does not round-trip."""
    sc = settings.scenario
    head = (f"# saved by prfaas-tui from preset {sc.name!r}"
            f" (paradigm {settings.paradigm}, not a preset key)\n")
    dest.write_text(head + toml_dumps(scenario_source(settings, dest)), encoding="utf-8")
    back = presets.load(dest)
    if back.knobs != sc.knobs:
        raise PresetError(dest, "", f"saved knobs {back.knobs} differ from {sc.knobs}")
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
