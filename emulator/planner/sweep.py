"""The planner end to end: enumerate, prune with the model, emulate the survivors on an
executor, and summarize (best candidates, the cost/goodput Pareto front)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from emulator.planner.executors import run_dask, run_local
from emulator.planner.goodput import Settings, slo_goodput
from emulator.planner.prune import Scored, prune
from emulator.planner.space import Space
from emulator.scenario.scenario import Scenario
from emulator.units import to_gbps


@dataclass
class Plan:
    scenario: Scenario
    space: Space
    settings: Settings
    per_config: int = 3
    margin: float = 0.10


def _evaluate(base: Scenario, s: Scored, settings: Settings) -> dict:
    """One candidate's record (module-level so process pools can pickle it)."""
    out = slo_goodput(base, s, settings)
    c = s.cand
    return {
        "key": c.key, "label": c.label(s.t), "candidate": {**asdict(c), "t": s.t},
        "bandwidth_gbps": to_gbps(c.bandwidth), "lambda_max": s.lambda_max,
        "binding": s.binding, "cost_per_hour": s.cost_per_hour, **out,
        "goodput_per_cost": (out["goodput"] / s.cost_per_hour if s.cost_per_hour else None),
    }


def header(plan: Plan) -> dict:
    st = plan.settings
    return {"scenario": plan.scenario.name, "space": repr(plan.space),
            "slo": asdict(st.slo), "seeds": list(st.seeds), "duration": st.duration,
            "steps": st.steps, "per_config": plan.per_config, "margin": plan.margin}


def run_plan(plan: Plan, *, out: str | Path, workers: int = 1, dask: str | object | None = None,
             on_result: Callable[[dict], None] | None = None,
             on_start: Callable[[int, int], None] | None = None) -> dict:
    """Run (or resume) a plan; returns the summary. `on_start(total, already_done)` and
    `on_result(record)` feed a progress bar."""
    from emulator.planner.store import ResultsFile

    cands = plan.space.candidates()
    scored = prune(plan.scenario.system, cands, per_config=plan.per_config, margin=plan.margin)
    survivors = [s for s in scored if s.pruned is None]
    store = ResultsFile(out, header(plan))
    todo = [s for s in survivors if s.cand.key not in store.done]
    if on_start:
        on_start(len(survivors), len(survivors) - len(todo))
    tasks = [(s.cand.key, _evaluate, (plan.scenario, s, plan.settings)) for s in todo]
    stream = run_dask(tasks, dask) if dask is not None else run_local(tasks, workers)
    for _key, rec in stream:
        store.append(rec)
        if on_result:
            on_result(rec)
    return summarize(scored, [store.done[s.cand.key] for s in survivors], evaluated=len(todo))


def pareto(records: list[dict]) -> list[dict]:
    """Candidates no other beats on both cost (lower) and goodput (higher)."""
    pts = sorted((r for r in records if r["cost_per_hour"] is not None),
                 key=lambda r: (r["cost_per_hour"], -r["goodput"], r["key"]))
    front, best = [], -1.0
    for r in pts:
        if r["goodput"] > best:
            front.append(r)
            best = r["goodput"]
    return front


def summarize(scored: list[Scored], records: list[dict], evaluated: int) -> dict:
    reasons: dict[str, int] = {}
    for s in scored:
        if s.pruned:
            reasons[s.pruned] = reasons.get(s.pruned, 0) + 1
    ranked = sorted(records, key=lambda r: (-r["goodput"], r["key"]))
    return {
        "candidates": len(scored), "pruned": sum(reasons.values()), "pruned_by": reasons,
        "emulated": len(records), "evaluated_now": evaluated,
        "best": ranked[0] if ranked else None, "ranked": ranked, "pareto": pareto(records),
    }
