"""The planner end to end, for a single pair or a topology: enumerate, score and prune with
the model, emulate the survivors in waves on an executor, and summarize (best candidates, the
cost/goodput Pareto front).

A pair plan keeps its records in a results file (`store`) as they finish, so it resumes; a
topology plan first emulates the preset as written (the shipped baseline the candidates must
beat) and reports the best candidate at its cost or less.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from emulator.planner.executors import LocalPool, run_dask
from emulator.planner.goodput import RULE, SHIPPED, Settings, bisect, slo_goodput
from emulator.planner.prices import Prices
from emulator.planner.prune import Scored, prune, score_topology
from emulator.planner.space import AUTO_T, Candidate, Space, TopologySpace
from emulator.planner.store import ResultsFile
from emulator.scenario.scenario import Scenario
from emulator.units import to_gbps


@dataclass
class Plan:
    """What to plan. A topology plan (`scenario.declared_topology` set) takes a TopologySpace
    and its Prices; `per_config`, `margin` and `analytic` are the pair's (its model-stage rules,
    and the model's SLO-bound rate that orders the waves and stops a bisection early)."""

    scenario: Scenario
    space: Space | TopologySpace
    settings: Settings
    per_config: int = 3
    margin: float = 0.10
    analytic: bool = True  # order and prune the emulations by the model's SLO-bound rate
    prices: Prices | None = None

    @property
    def is_topology(self) -> bool:
        return self.scenario.declared_topology is not None


def record(s: Scored, out: dict) -> dict:
    """A candidate's result line: its pair fields, or a topology's (sites, links, routing and
    its routing bound)."""
    c = s.cand
    per_cost = out["goodput"] / s.cost_per_hour if s.cost_per_hour else None
    if not c.is_pair:
        return {"key": c.key, "label": c.label(), "candidate": c.to_dict(),
                "bound": s.lambda_max, "binding": list(s.binding),
                "cost_per_hour": s.cost_per_hour, **out, "goodput_per_cost": per_cost}
    return {
        "key": c.key, "label": c.label(s.t), "candidate": c.to_dict(s.t),
        "bandwidth_gbps": to_gbps(c.bandwidth), "lambda_max": s.lambda_max,
        "binding": s.binding[0], "cost_per_hour": s.cost_per_hour, **out,
        "goodput_per_cost": per_cost,
    }


def _evaluate(base: Scenario, s: Scored, settings: Settings,
              incumbents: tuple[tuple[float | None, float], ...] = ()) -> dict | None:
    """One candidate's record (module-level so process pools can pickle it); None when its
    bisection showed that one of the finished `incumbents` (cost, goodput) beats it."""
    out = slo_goodput(base, s, settings,
                      (lambda bound: _beaten(s, bound, incumbents)) if incumbents else None)
    return None if out is None else record(s, out)


def _evaluate_shipped(sc: Scenario, prices: Prices, settings: Settings) -> dict:
    """The topology as written (its own thresholds, splits, shares and routing), emulated the
    same way: the baseline."""
    from emulator.topology.bound import routing_bound

    topo = sc.declared_topology
    b = routing_bound(topo)
    cand = Candidate.shipped(topo)
    s = Scored(cand, AUTO_T, b.lambda_max, tuple(b.binding), prices.cost_per_hour(topo))
    return {**record(s, bisect(sc, b.lambda_max, settings)), "key": SHIPPED,
            "label": f"shipped ({cand.label()})"}


class _Memory:
    """A topology plan's records, kept for the summary only."""

    def __init__(self) -> None:
        self.done: dict[str, dict] = {}

    def append(self, rec: dict) -> None:
        self.done[rec["key"]] = rec


def header(plan: Plan) -> dict:
    st = plan.settings
    return {"scenario": plan.scenario.name, "space": repr(plan.space),
            "slo": asdict(st.slo), "seeds": list(st.seeds), "duration": st.duration,
            "steps": st.steps, "per_config": plan.per_config, "margin": plan.margin,
            "rule": RULE}


def run_plan(plan: Plan, *, out: str | Path | None = None, workers: int = 1, dask: str | object | None = None,
             on_result: Callable[[dict], None] | None = None,
             on_start: Callable[[int, int], None] | None = None) -> dict:
    """Run (or resume) a plan; returns the summary. `on_start(total, already_done)` and
    `on_result(record)` feed a progress bar. A pair plan keeps its records in `out`."""
    if plan.is_topology:
        base = plan.scenario.declared_topology
        scored = score_topology(base, plan.space.candidates(base), plan.prices)
        return _sweep(plan, scored, scored, _Memory(), workers=workers, dask=dask,
                      on_result=on_result, on_start=on_start)
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

    if out is None:
        raise ValueError("a pair plan keeps its records in a results file: give one")
    with ResultsFile(out, header(plan), check=fits) as store:  # closing it removes the lock file
        return _sweep(plan, scored, survivors, store, workers=workers, dask=dask,
                      on_result=on_result, on_start=on_start)


def _sweep(plan: Plan, scored: list[Scored], survivors: list[Scored],
           store: ResultsFile | _Memory, *,
           workers: int, dask: str | object | None,
           on_result: Callable[[dict], None] | None,
           on_start: Callable[[int, int], None] | None) -> dict:
    todo = [s for s in survivors if s.cand.key not in store.done]
    if on_start:  # a topology's shipped deployment is one more emulation
        on_start(len(survivors) + plan.is_topology, len(survivors) - len(todo))
    ub: dict[str, float] = {s.cand.key: s.lambda_max for s in todo}  # a topology: its bound
    if plan.analytic and not plan.is_topology:
        from emulator.planner.bound import model_rate, upper_bound
        ub = {s.cand.key: upper_bound(s, model_rate(plan.scenario, s, plan.settings),
                                      plan.settings) for s in todo}
    pool = LocalPool(workers) if dask is None else None

    stopped: list[str] = []

    def emulate(batch: list[Scored], incumbents: tuple = ()) -> None:
        tasks = [(s.cand.key, _evaluate, (plan.scenario, s, plan.settings,
                                          () if plan.is_topology else incumbents))
                 for s in batch]
        run(tasks)

    def run(tasks: list) -> None:
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
        if plan.is_topology:
            run([(SHIPPED, _evaluate_shipped, (plan.scenario, plan.prices, plan.settings))])
        if plan.analytic or plan.is_topology:
            skipped = emulate_in_waves(survivors, store.done, ub, emulate)
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
    if plan.is_topology:
        return summarize_topology(plan, scored, records, store.done[SHIPPED], skipped)
    out = summarize(scored, records, evaluated=len(todo) - len(skipped) - len(stopped))
    out["skipped_by_slo_bound"] = len(skipped)
    out["stopped_early"] = len(stopped)
    return out


def emulate_in_waves(survivors: list[Scored], done: dict[str, dict], ub: dict[str, float],
                     emulate: Callable[[list[Scored], tuple], None]) -> list[Scored]:
    """Emulate only the candidates that can still be the best or on the cost/goodput front.

    Each candidate's emulated goodput is below its `ub`: a pair's `bound.upper_bound` (the
    model's SLO-bound rate with a margin, never above the bisection's own ceiling), a
    topology's routing bound. A wave emulates the analytic front
    of what is left (cheapest first, each with a bound above every cheaper one's): they set the
    incumbents. A candidate is dropped when a finished one costing no more has a goodput above
    its bound: it could then be neither the best nor on the front. The same test stops a
    candidate's bisection once its own probes bound it below a finished one of the earlier
    waves (the incumbents it is handed; the same whatever the workers, so the same records).
    Returns the dropped."""
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
    """Candidates no other beats on both cost (lower) and goodput (higher); a goodput of 0 (no
    rate met the SLO) is on no front."""
    pts = sorted((r for r in records if r["cost_per_hour"] is not None),
                 key=lambda r: (r["cost_per_hour"], -r["goodput"], r["key"]))
    front, best = [], 0.0
    for r in pts:
        if r["goodput"] > best:
            front.append(r)
            best = r["goodput"]
    return front


def summarize(scored: list[Scored], records: list[dict], evaluated: int) -> dict:
    """A pair plan's summary."""
    reasons: dict[str, int] = {}
    for s in scored:
        if s.pruned:
            reasons[s.pruned] = reasons.get(s.pruned, 0) + 1
    ranked = sorted(records, key=lambda r: (-r["goodput"], r["key"]))
    return {
        "candidates": len(scored), "pruned": sum(reasons.values()), "pruned_by": reasons,
        "emulated": len(records), "evaluated_now": evaluated,
        "best": ranked[0] if ranked and ranked[0]["goodput"] > 0 else None, "ranked": ranked,
        "pareto": pareto(records),
    }


def summarize_topology(plan: Plan, scored: list[Scored], records: list[dict], shipped: dict,
                       skipped: list[Scored]) -> dict:
    """A topology plan's summary: the front, the best candidate per budget (each front point is
    the best at its cost), the shipped baseline and the best at its cost or less."""
    sc, st, prices = plan.scenario, plan.settings, plan.prices
    records = sorted(records, key=lambda r: (-r["goodput"], r["key"]))
    within = [r for r in records
              if r["cost_per_hour"] <= shipped["cost_per_hour"] + 1e-9 and r["goodput"] > 0]
    best_within = max(within, key=lambda r: (r["goodput"], -r["cost_per_hour"]), default=None)
    return {"kind": "topology-plan", "scenario": sc.name, "preset": sc.path or sc.name,
            "space": plan.space.describe(), "prices": prices.describe(),
            "slo": {k: v for k, v in asdict(st.slo).items() if v is not None}, "seeds": list(st.seeds),
            "duration": st.duration, "steps": st.steps,
            "candidates": len(scored), "emulated": len(records),
            "pruned_by_bound": len(skipped),
            "pruned": [{"key": s.cand.key, "bound": s.lambda_max,
                        "cost_per_hour": s.cost_per_hour} for s in skipped],
            "shipped": shipped,
            "best": records[0] if records and records[0]["goodput"] > 0 else None,
            "best_within_shipped_cost": best_within,
            "ranked": records, "pareto": pareto(records)}
