"""Predicted (emulator/latency.py) against emulated TTFT, and the SLO-bound rate against the
emulator's bisected SLO goodput.

Table 1: toy, paper-case-study and dense-contrast, each paradigm that applies, at 0.3, 0.5, 0.7
and 0.85 of the exact Lambda_max of that paradigm's operating point: mean and P90 TTFT, predicted
and emulated (Poisson arrivals, `REQUESTS` x 0.7 / (1 - load) requests per cell and seed, seeds
1 and 2 averaged). Table 2: paper-case-study at its preset point, SLO P90 TTFT of 4, 6 and 10 s: the
model's SLO-bound rate against a bisection of the emulator (P90 TTFT within the SLO and served
>= 95% of offered, the planner's test) on the same long runs.

Run: `python benchmarks/bench_latency.py [--quick]` (prints the tables and records them as
`latency_accuracy` and `latency_slo_rate` in benchmarks/results.json); `--speed` times `solve`
with and without the latency layer instead (`latency_speed`); `--predictions` prints the 36
predicted cells alone as JSON (no emulation: a refactoring of the latency layer must leave them
unchanged).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from emulator.latency import layout_at, predict, slo_rate
from emulator.optimizer import homogeneous, naive
from emulator.scenario import presets
from emulator.sim.engine import Emulation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import record  # noqa: E402

LOADS = (0.3, 0.5, 0.7, 0.85)
REQUESTS = 20_000  # per cell at load 0.3, scaled by 1 / (1 - load): heavy load needs more
SEEDS = (1, 2)


def points(sc):
    """(paradigm, knobs, profiles) for the paradigms the preset has."""
    s = sc.system
    out = [("prfaas-pd", sc.knobs, None)]
    h = homogeneous(s, "exact")
    if h is not None:
        prof = s.homogeneous_profile or s.local
        out.append(("homogeneous", h.knobs, (prof, prof)))
    out.append(("naive-heterogeneous", naive(s, "exact").knobs, None))
    return out


def emulate(sc, paradigm: str, rate: float, requests: int, seeds=SEEDS) -> dict:
    means, p90s, served = [], [], []
    for seed in seeds:
        r = Emulation(sc, seed=seed, rate=rate, duration=requests / rate,
                      paradigm=paradigm).run().to_json()
        means.append(r["ttft"]["mean"])
        p90s.append(r["ttft"]["p90"])
        served.append(r["served_rate"] / max(r["offered_rate"], 1e-12))
    return {"mean": float(np.mean(means)), "p90": float(np.mean(p90s)),
            "served": float(np.min(served))}


def cells():
    """(preset, scenario, paradigm, load, rate, prediction) of the 36 cells."""
    for name in ("toy", "paper-case-study", "dense-contrast"):
        sc = presets.load(name)
        lat = dict(link_latency=sc.sim.link_latency, rdma_latency=sc.sim.rdma_latency)
        for paradigm, knobs, profs in points(sc):
            _, lam = layout_at(sc.system, knobs, profiles=profs)
            for load in LOADS:
                rate = load * lam
                yield name, sc, paradigm, load, rate, predict(sc.system, knobs, rate,
                                                              profiles=profs, **lat)


def table(requests: int) -> list[dict]:
    rows = []
    for name, sc, paradigm, load, rate, pred in cells():
        emu = emulate(sc, paradigm, rate, int(requests * 0.7 / (1 - load)))
        rows.append({"preset": name, "paradigm": paradigm, "load": load, "rate": rate,
                     "pred_mean": pred.mean, "emu_mean": emu["mean"],
                     "pred_p90": pred.p90, "emu_p90": emu["p90"]})
    return rows


def emulated_goodput(sc, slo: float, hi: float, requests: int, steps: int = 9) -> float:
    """The planner's test, bisected on long runs (seeds pooled: the mean P90, the worst served)."""
    lo = 0.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        e = emulate(sc, "prfaas-pd", mid, requests)
        if e["p90"] <= slo and e["served"] >= 0.95:
            lo = mid
        else:
            hi = mid
    return lo


def slo_table(requests: int) -> list[dict]:
    sc = presets.load("paper-case-study")
    _, lam = layout_at(sc.system, sc.knobs)
    rows = []
    for slo in (4.0, 6.0, 10.0):
        model = slo_rate(sc.system, sc.knobs, slo, 0.9)
        emu = emulated_goodput(sc, slo, lam, requests)
        rows.append({"slo": slo, "model": model, "emulator": emu, "lambda_max": lam,
                     "p90_model_at_emu": predict(sc.system, sc.knobs, emu).p90,
                     "p90_emu_at_emu": emulate(sc, "prfaas-pd", emu, requests)["p90"]})
    return rows


def _pct(a: float, b: float) -> str:
    return f"{(a / b - 1) * 100:+.1f}%"


def speed(repeats: int = 31) -> None:
    """Median wall and CPU milliseconds of `solve` (the function behind `prfaas-tui solve`) on
    paper-case-study without and with --slo-ttft, and of the latency calls alone. CPU time,
    median and min of 31: the machine is shared, and wall time there measures the
    neighbours (the min is the least disturbed run)."""
    import argparse
    import statistics
    import time

    from emulator.latency import slo_search
    from prfaas_tui.commands import solve

    parser = argparse.ArgumentParser()
    solve.add_parser(parser.add_subparsers(dest="cmd"))
    sc = presets.load("paper-case-study")
    cases = {
        "solve": lambda a=parser.parse_args(["solve"]): solve.solve(a),
        "solve --slo-ttft 6s": lambda a=parser.parse_args(["solve", "--slo-ttft", "6s"]): solve.solve(a),
        "solve --slo-ttft 4s": lambda a=parser.parse_args(["solve", "--slo-ttft", "4s"]): solve.solve(a),
        "solve --slo-ttft 10s": lambda a=parser.parse_args(["solve", "--slo-ttft", "10s"]): solve.solve(a),
        "predict + slo_rate at the operating point": lambda: (
            predict(sc.system, sc.knobs, 2.8), slo_rate(sc.system, sc.knobs, 6.0)),
        "slo_search (6 s)": lambda: slo_search(sc.system, 6.0),
    }
    print("| call (paper-case-study) | median wall ms | median CPU ms | min CPU ms |")
    print("|---|---|---|---|")
    rows = []
    for name, fn in cases.items():
        fn()
        wall, cpu = [], []
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - w0)
            cpu.append(time.process_time() - c0)
        print(f"| {name} | {statistics.median(wall) * 1000:.1f} | "
              f"{statistics.median(cpu) * 1000:.1f} | {min(cpu) * 1000:.1f} |")
        rows.append([f"`{name}`", f"{min(cpu) * 1000:.1f} / {statistics.median(cpu) * 1000:.1f}"])
    record("latency_speed", source="python benchmarks/bench_latency.py --speed",
           columns=["call (paper-case-study)", f"CPU ms, min / median of {repeats}"], rows=rows)


def main() -> None:
    if "--speed" in sys.argv:
        speed()
        return
    if "--predictions" in sys.argv:
        print(json.dumps([[n, p, ld, r, pr.mean, pr.p90] for n, _, p, ld, r, pr in cells()]))
        return
    quick = "--quick" in sys.argv
    requests = 5_000 if quick else REQUESTS
    source = "python benchmarks/bench_latency.py" + (" --quick" if quick else "")
    cols = ["preset", "paradigm", "load", "rate", "mean pred / emu", "err", "P90 pred / emu", "err"]
    rows = []
    for r in table(requests):
        em = abs(r["pred_mean"] / r["emu_mean"] - 1) <= 0.10
        ep = abs(r["pred_p90"] / r["emu_p90"] - 1) <= 0.20
        rows.append([r["preset"], r["paradigm"], f"{r['load']:.2f}", f"{r['rate']:.3f}",
                     f"{r['pred_mean']:.2f} / {r['emu_mean']:.2f}",
                     _pct(r["pred_mean"], r["emu_mean"]) + ("" if em else " **miss**"),
                     f"{r['pred_p90']:.2f} / {r['emu_p90']:.2f}",
                     _pct(r["pred_p90"], r["emu_p90"]) + ("" if ep else " **miss**")])
        print(" | ".join(rows[-1]))
    record("latency_accuracy", source=source, columns=cols, rows=rows)
    cols = ["SLO (P90 TTFT)", "model SLO-bound rate", "emulator SLO goodput", "err", "of Lambda_max"]
    rows, slo = [], slo_table(requests)
    for r in slo:
        rows.append([f"{r['slo']:g} s", f"{r['model']:.3f}", f"{r['emulator']:.3f}",
                     _pct(r["model"], r["emulator"]), f"{r['model'] / r['lambda_max']:.0%}"])
        print(" | ".join(rows[-1]))
    sc = presets.load("paper-case-study")
    tight = slo[0]
    record("latency_slo_rate", source=source, columns=cols, rows=rows, values={
        "p90_zero_load": f"{predict(sc.system, sc.knobs, 1e-9).p90:.2f} s",
        "p90_at_goodput": f"P90 {tight['p90_model_at_emu']:.2f} s against the emulator's "
                          f"{tight['p90_emu_at_emu']:.2f} s"})


if __name__ == "__main__":
    main()
