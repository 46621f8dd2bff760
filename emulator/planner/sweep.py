"""The planner end to end: enumerate, prune with the model, emulate the survivors on an
executor, and summarize (best candidates, the cost/goodput Pareto front)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from emulator.planner.executors import LocalPool, run_dask
from emulator.planner.goodput import Settings, slo_goodput
from emulator.planner.prune import Scored, prune
from emulator.planner.space import Space
from emulator.planner.store import ResultsFile
from emulator.scenario.scenario import Scenario
from emulator.units import to_gbps


@dataclass
class Plan:
    scenario: Scenario
    space: Space
    settings: Settings
    per_config: int = 3
    margin: float = 0.10
    analytic: bool = True  # order and prune the emulations by the model's SLO-bound rate


def _evaluate(base: Scenario, s: Scored, settings: Settings,
              incumbents: tuple[tuple[float | None, float], ...] = ()) -> dict | None:
    """One candidate's record (module-level so process pools can pickle it); None when its
    bisection showed that one of the finished `incumbents` (cost, goodput) beats it."""
    out = slo_goodput(base, s, settings,
                      (lambda bound: _beaten(s, bound, incumbents)) if incumbents else None)
    if out is None:
        return None
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
    cands = plan.space.candidates()
    scored = prune(plan.scenario.system, cands, per_config=plan.per_config, margin=plan.margin)
    survivors = [s for s in scored if s.pruned is None]
    lam = {s.cand.key: s.lambda_max for s in survivors}

    def fits(rec: dict) -> str | None:  # a resumed record is checked like fresh input
        want = lam.get(rec["key"])
        if want is not None and abs(rec["lambda_max"] - want) > 1e-9 * max(want, 1.0):
            return (f"lambda_max: expected this candidate's {want:.6g} req/s, found "
                    f"{rec['lambda_max']:.6g}")
        return None

    with ResultsFile(out, header(plan), check=fits) as store:  # closing it removes the lock file
        return _sweep(plan, scored, survivors, store, workers=workers, dask=dask,
                      on_result=on_result, on_start=on_start)


def _sweep(plan: Plan, scored: list[Scored], survivors: list[Scored], store: ResultsFile, *,
           workers: int, dask: str | object | None,
           on_result: Callable[[dict], None] | None,
           on_start: Callable[[int, int], None] | None) -> dict:
    todo = [s for s in survivors if s.cand.key not in store.done]
    if on_start:
        on_start(len(survivors), len(survivors) - len(todo))
    rates: dict[str, float] = {}
    if plan.analytic:
        from emulator.planner.bound import model_rate
        rates = {s.cand.key: model_rate(plan.scenario, s, plan.settings) for s in todo}
    pool = LocalPool(workers) if dask is None else None

    stopped: list[str] = []

    def emulate(batch: list[Scored], incumbents: tuple = ()) -> None:
        tasks = [(s.cand.key, _evaluate, (plan.scenario, s, plan.settings, incumbents))
                 for s in batch]
        stream = run_dask(tasks, dask) if pool is None else pool.run(tasks)
        for key, rec in stream:
            if rec is None:
                stopped.append(key)
                continue
            store.append(rec)
            if on_result:
                on_result(rec)

    skipped: list[Scored] = []
    try:
        if plan.analytic:
            skipped = emulate_in_waves(plan, survivors, store.done, rates, emulate)
        else:
            emulate(todo)
    except BaseException:  # Ctrl-C above all: end now, not after the running tasks
        if pool is not None:
            pool.terminate()
        raise
    finally:
        if pool is not None:
            pool.close()
    records = [store.done[s.cand.key] for s in survivors if s.cand.key in store.done]
    out = summarize(scored, records, evaluated=len(todo) - len(skipped) - len(stopped))
    out["skipped_by_slo_bound"] = len(skipped)
    out["stopped_early"] = len(stopped)
    return out


def emulate_in_waves(plan: Plan, survivors: list[Scored], done: dict[str, dict],
                     rates: dict[str, float],
                     emulate: Callable[[list[Scored], tuple], None]) -> list[Scored]:
    """Emulate only the candidates that can still be the best or on the cost/goodput front.

    Each candidate's emulated goodput is below `bound.upper_bound` (the model's SLO-bound rate
    with a margin, never above the bisection's own ceiling). A wave emulates the analytic front
    of what is left (cheapest first, each with a bound above every cheaper one's): they set the
    incumbents. A candidate is dropped when a finished one costing no more has a goodput above
    its bound: it could then be neither the best nor on the front. The same test stops a
    candidate's bisection once its own probes bound it below a finished one of the earlier
    waves (the incumbents it is handed; the same whatever the workers, so the same records).
    Returns the dropped."""
    from emulator.planner.bound import upper_bound

    ub = {s.cand.key: upper_bound(s, rates[s.cand.key], plan.settings)
          for s in survivors if s.cand.key in rates}
    pending = sorted((s for s in survivors if s.cand.key not in done),
                     key=lambda s: (-ub[s.cand.key], s.cand.key))
    skipped: list[Scored] = []
    while pending:
        finished = [(r["cost_per_hour"], r["goodput"]) for r in done.values()]
        keep = [s for s in pending if not _beaten(s, ub[s.cand.key], finished)]
        skipped += [s for s in pending if s not in keep]
        if not keep:
            break
        wave, front_best = [], -1.0
        for s in sorted(keep, key=lambda s: (_cost(s), -ub[s.cand.key], s.cand.key)):
            if ub[s.cand.key] > front_best:
                wave.append(s)
                front_best = ub[s.cand.key]
        emulate(wave, tuple(finished))
        pending = [s for s in keep if s not in wave]
    return skipped


def _cost(s: Scored) -> float:
    return s.cost_per_hour if s.cost_per_hour is not None else 0.0


def _beaten(s: Scored, bound: float, finished: list[tuple[float | None, float]]) -> bool:
    """A finished candidate costing no more (any, without prices) has goodput above the bound."""
    for cost, goodput in finished:
        cheaper = cost is None or s.cost_per_hour is None or cost <= s.cost_per_hour
        if cheaper and goodput > bound:
            return True
    return False


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
