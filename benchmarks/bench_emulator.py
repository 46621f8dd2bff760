"""Emulator speed and memory: one simulated hour of `paper-case-study` at 0.9 x Lambda_max, and
the same for a deployment 10x larger (10x instances, 10x bandwidth) at 10x the rate.

Prints simulated requests per wall second, events per second, the real-time factor and peak
memory (Python allocations by tracemalloc, in a separate run, and the process's max RSS).
Targets: >= 10,000 requests per wall second (>= 3,000x real time) on the paper preset; the 10x
hour in <= 15 s; peak memory <= 500 MB.

Then a decode from the cards against the constant step: `new --model kimi-linear-48b-a3b
--decode cards` (H200 PrfaaS, H20 local) run once with its `[decode] from = "cards"` steps and
once with the same Eq. 5 constants and a constant step, in one process, alternating: the
median requests per CPU second of each and the median of the pairs' ratios (target >= 0.8).

    python benchmarks/bench_emulator.py [--hours 1] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulator.scenario.presets import load  # noqa: E402
from emulator.scenario.scenario import Scenario  # noqa: E402
from emulator.sim.engine import Emulation  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import record  # noqa: E402

TARGETS = {"paper-case-study": ">= 10,000 req/wall s, >= 3,000x", "paper-case-study x10": "<= 15 s"}


def scaled(sc: Scenario, k: int) -> Scenario:
    """k times the instances (PrfaaS and local), link and RDMA bandwidth."""
    s = sc.system
    system = replace(s, n_prfaas=k * s.n_prfaas, local_pool=k * s.local_pool,
                     bandwidth=k * s.bandwidth)
    return replace(sc, system=system, n_p=k * sc.n_p, n_d=k * sc.n_d,
                   rdma_bandwidth=k * sc.rdma_bandwidth, name=f"{sc.name} x{k}")


def one(sc: Scenario, seconds: float, profile: bool = False) -> dict:
    emu = Emulation(sc, load=0.9, duration=seconds, seed=1)
    prof = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if prof:
        prof.enable()
    result = emu.run()
    if prof:
        prof.disable()
    wall = time.perf_counter() - start
    emu.close()
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    acc = result.accounting
    return {"wall": wall, "arrived": acc.arrived, "completed": acc.completed,
            "events": result.events, "rate": emu.workload.mean_rate,
            "lambda": emu.model_point("exact").lambda_max}


def peak_memory(sc: Scenario, seconds: float) -> float:
    tracemalloc.start()
    try:
        with Emulation(sc, load=0.9, duration=seconds, seed=1) as emu:
            emu.run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def cards_vs_constant(seconds: float, repeat: int) -> dict:
    """Requests per CPU second of the Kimi-Linear preset with its decode from the cards and with
    the same preset's constant step, in `repeat` alternating pairs: the medians of each and of
    the pairs' ratios (a pair runs back to back, so load from other processes on a shared
    machine skews both of its runs alike)."""
    from prfaas_tui.preset_builder import NewSpec, write_preset

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "kimi.toml"
        write_preset(NewSpec(model="kimi-linear-48b-a3b", decode="cards"), out)
        cards = load(out)
    constant = replace(cards, sim=replace(cards.sim, step=None))
    rates: dict[str, list[float]] = {"cards": [], "constant": []}
    for _ in range(repeat):
        for name, sc in (("cards", cards), ("constant", constant)):
            with Emulation(sc, load=0.9, duration=seconds, seed=1) as emu:
                start = time.process_time()
                result = emu.run()
                rates[name].append(result.accounting.arrived / (time.process_time() - start))
    ratios = [c / k for c, k in zip(rates["cards"], rates["constant"], strict=True)]
    return {name: statistics.median(r) for name, r in rates.items()} | {
        "ratio": statistics.median(ratios)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per case (best kept)")
    ap.add_argument("--profile", action="store_true", help="cProfile one run per case")
    args = ap.parse_args()
    seconds = args.hours * 3600
    base = load("paper-case-study")
    cases = [("paper-case-study", base), ("paper-case-study x10", scaled(base, 10))]
    print(f"{'case':<22} {'req':>8} {'events':>9} {'wall s':>7} {'req/s':>8} {'events/s':>9} "
          f"{'x real':>7} {'peak MB':>8}")
    rows = []
    for name, sc in cases:
        runs = [one(sc, seconds, args.profile and i == 0) for i in range(args.repeat)]
        best = min(runs, key=lambda r: r["wall"])
        peak = peak_memory(sc, seconds) / 2**20
        print(f"{name:<22} {best['arrived']:>8,} {best['events']:>9,} {best['wall']:>7.2f} "
              f"{best['arrived'] / best['wall']:>8,.0f} {best['events'] / best['wall']:>9,.0f} "
              f"{seconds / best['wall']:>7,.0f} {peak:>8.1f}   "
              f"(offered {best['rate']:.2f} req/s = 0.9 x {best['lambda']:.2f})")
        rows.append([f"{name}, {args.hours:g} simulated h at 0.9 x Λmax", TARGETS[name],
                     f"{best['arrived']:,}", f"{best['wall']:.2f}",
                     f"{best['arrived'] / best['wall']:,.0f}", f"{best['events'] / best['wall']:,.0f}",
                     f"{seconds / best['wall']:,.0f}x", f"{peak:.1f} MB"])
    dec = cards_vs_constant(seconds, args.repeat)
    print(f"decode from the cards (kimi-linear-48b-a3b, H20): {dec['cards']:,.0f} req/CPU s, "
          f"constant step {dec['constant']:,.0f}: {dec['ratio']:.2f}x (target >= 0.8x)")
    rows.append([f"kimi-linear decode from the cards, {args.hours:g} simulated h at 0.9 x Λmax",
                 f">= 0.8 x constant ({dec['ratio']:.2f}x)", "", "", f"{dec['cards']:,.0f}",
                 "", "", ""])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS {rss:.0f} MB")
    if not args.profile:
        record("perf_emulator", source=f"python benchmarks/bench_emulator.py --repeat {args.repeat}",
               columns=["case", "target", "requests", "wall s", "req/wall s", "events/wall s",
                        "sim s / wall s", "peak traced memory"], rows=rows,
               values={"rss": f"{rss:.0f} MB", "decode_ratio": f"{dec['ratio']:.2f}x"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
