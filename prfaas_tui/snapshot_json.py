"""The `snapshot --format json` object: what the panels show, for an operator's CI to diff.

A pure builder from an engine snapshot (duck-typed), the effective view (emulator.effective)
and the stability report (emulator.stability); the CLI only runs the emulation and prints this.
Keys: sim_time, knobs, stable, unstable_stages, and `effective` / `nominal` model
points, each with lambda_max, binding, prfaas_term, ceilings {prfaas, pd-p, pd-d},
link_capacity_gbps and alive {prfaas, pd-p, pd-d}. `binding` is the model's: the stage whose
ceiling is Λmax, which "binds"; the emulator's measured busiest stage (the status line's
"busiest X (measured)") is not in this object. No inf or nan: an unbounded ceiling is null.
Also per stage what the router sent and what left served (`stages`), and the scheduler's state
and the run's recent events, structured (`scheduler`, `events`: the events view's rows).
"""

from __future__ import annotations

import math
from typing import Any

from emulator.effective import EffectiveView, point_summary
from emulator.stability import StabilityReport, served_note
from emulator.units import to_gbps
from prfaas_tui.events import events_of

SCHEMA_VERSION = 1


def _num(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def model_block(view: EffectiveView, *, effective: bool) -> dict[str, Any]:
    """One model point in the driving mode, with Lambda_max in every mode beside it."""
    points = view.effective if effective else view.nominal
    out = point_summary(points[view.driving], view.state, effective=effective)
    out["lambda_max_by_mode"] = {m: op.lambda_max for m, op in points.items()}
    return out


def stage_block(snap: Any, report: StabilityReport | None) -> dict[str, dict[str, Any]]:
    """Per stage: instances taking work and down, queue, utilization, served rate; with a
    stability report, the routed rate (req/s entering: served + backlog growth), its load on
    the stage's Theta and the queue's growth (req/s)."""
    out = {}
    for name, st in snap.stages.items():
        row: dict[str, Any] = {"instances": int(st.instances), "failed": int(st.failed),
                               "queue": int(st.queue), "utilization": _num(st.utilization),
                               "served_rate": _num(st.served_rate)}
        judged = report.stages.get(name) if report is not None else None
        if judged is not None:
            row |= {"routed_rate": _num(judged.routed_rate), "load": _num(judged.load),
                    "queue_growth": _num(judged.queue.slope), "growing": judged.growing}
        out[name] = row
    return out


def snapshot_json(snap: Any, view: EffectiveView, report: StabilityReport | None) -> dict:
    """The headless JSON object. `report` None: no history yet (stable is then null)."""
    k = snap.knobs
    opt = view.optimum.get(view.driving)
    lam = view.point.lambda_max
    return {
        "schema": SCHEMA_VERSION,
        "sim_time": float(snap.sim_time),
        "knobs": {"t": float(k.t), "n_prfaas": int(k.n_prfaas), "n_p": int(k.n_p),
                  "n_d": int(k.n_d), "bandwidth_gbps": to_gbps(k.bandwidth),
                  "paradigm": getattr(k, "paradigm", "prfaas-pd"),
                  "rate": _num(getattr(snap, "target_rate", None))},
        "stable": None if report is None or not report.judged else report.stable,
        "unstable_stages": list(report.unstable_stages) if report is not None else [],
        "banner": report.banner if report is not None else None,
        "served_note": served_note(report, lam) if report is not None else None,
        "offered_rate": _num(snap.offered_rate),
        "served_rate": _num(snap.served_rate),
        "mode": view.driving,
        "effective": model_block(view, effective=True),
        "nominal": model_block(view, effective=False),
        "optimum": None if opt is None else {
            "t": float(opt.knobs.t), "n_p": opt.knobs.n_p, "n_d": opt.knobs.n_d,
            "lambda_max": opt.lambda_max, "binding": opt.binding},
        "differences": [d.text for d in view.differences],
        "incidents": list(getattr(snap, "incidents", ())),
        "stages": stage_block(snap, report),
        "routed_share": None if report is None else _num(report.routed_share),
        "scheduler": {"enabled": getattr(snap, "scheduler_enabled", None),
                      "pinned": list(getattr(snap, "pinned", ())),
                      "last": getattr(snap, "scheduler_last", None)},
        "events": [{"t": e.t, "kind": e.kind, "text": e.text, "change": e.change}
                   for e in events_of(getattr(snap, "decisions", ()))],
    }
