"""Planner throughput: candidates emulated per minute with 1 and 2 local workers, and the share of
a 10,000+ candidate space the model prunes before any emulation.

Run: `python benchmarks/bench_plan.py` (prints the figures and records them as `plan_speed` in
benchmarks/results.json).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from emulator.planner.goodput import SLO, Settings
from emulator.planner.prune import prune
from emulator.planner.space import AUTO_T, Space
from emulator.planner.sweep import Plan, run_plan
from emulator.scenario import presets
from emulator.units import GBPS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import record  # noqa: E402


def prune_share() -> tuple[int, int, float]:
    sc = presets.load("paper-case-study")
    sp = Space.around(sc, n_prfaas=tuple(range(1, 9)), pools=tuple(range(6, 11)),
                      bandwidths=tuple(b * GBPS for b in (25, 50, 100, 200)),
                      thresholds=(AUTO_T,) + tuple(float(t) for t in range(4096, 131072, 4096)))
    cands = sp.candidates()
    t0 = time.perf_counter()
    scored = prune(sc.system, cands)
    dt = time.perf_counter() - t0
    alive = sum(s.pruned is None for s in scored)
    return len(cands), alive, dt


def sweep(workers: int, analytic: bool = False) -> tuple[int, float, dict]:
    """(candidates after the model stage, seconds, summary): process CPU seconds with one
    worker (it runs in this process; the machine is shared, wall time measures the
    neighbours), wall seconds with more."""
    sc = presets.load("paper-case-study")
    sp = Space.around(sc, n_prfaas=(2, 3, 4, 5, 6, 7), thresholds=(AUTO_T,),
                      paradigms=("prfaas-pd", "homogeneous"))
    plan = Plan(sc, sp, Settings(SLO(10.0), seeds=(1, 2), duration=600.0, steps=6),
                per_config=2, margin=1.0, analytic=analytic)
    with tempfile.TemporaryDirectory() as d:
        clock = time.process_time if workers == 1 else time.perf_counter
        t0 = clock()
        out = run_plan(plan, out=Path(d) / "p.jsonl", workers=workers)
        return out["candidates"] - out["pruned"], clock() - t0, out


def _result(out: dict) -> tuple:
    """What must not change: the best candidate and the Pareto front (keys and goodputs)."""
    return (out["best"]["key"], out["best"]["goodput"],
            tuple((r["key"], r["goodput"]) for r in out["pareto"]))


def main() -> None:
    n, alive, dt = prune_share()
    print(f"model stage on {n:,} candidates: pruned {1 - alive / n:.1%} ({alive} survive) "
          f"in {dt * 1000:.0f} ms")
    rate: dict[tuple[bool, int], float] = {}
    runs: dict[bool, dict] = {}
    for w in (1, 2):
        for analytic in (False, True):
            k, secs, out = sweep(w, analytic=analytic)
            rate[analytic, w] = k / secs * 60
            runs.setdefault(analytic, out)
            print(f"{w} worker(s), {'SLO bound' if analytic else 'plain'}: "
                  f"{rate[analytic, w]:.0f} candidates/min")
    plain, bound = runs[False], runs[True]
    same = _result(plain) == _result(bound)
    rows = [["plain sweep", f"{rate[False, 1]:.0f}", f"{rate[False, 2]:.0f}",
             str(plain["emulated"]), f"{plain['best']['label']}"],
            ["SLO bound + early stop", f"{rate[True, 1]:.0f}", f"{rate[True, 2]:.0f}",
             f"{bound['emulated']} (+{bound['stopped_early']} stopped early)",
             "same as the plain sweep" if same else f"DIFFERENT: {bound['best']['label']}"]]
    record("plan_speed", source="python benchmarks/bench_plan.py",
           columns=["mode", "candidates/min, 1 worker (CPU)", "2 workers (wall)",
                    "emulated in full", "best / Pareto front"], rows=rows,
           values={"candidates": f"{n:,}", "pruned": f"{1 - alive / n:.1%}",
                   "survivors": f"{alive:,}", "prune_ms": f"{dt * 1000:.0f} ms"})


if __name__ == "__main__":
    main()
