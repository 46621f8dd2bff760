"""`solve` on a topology: median wall time of the whole `topology` answer (the routing bound's
MILP and its fixed-split LP, the +1% re-solves, the threshold policy's search, per-region TTFT),
and the LP's size.

    python benchmarks/bench_topology.py [--preset global] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

from emulator.scenario.presets import load
from emulator.topology.answer import topology_answer
from emulator.topology.bound import routing_bound


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="global")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    sc = load(args.preset, topology=True)
    topo = sc.topology
    times, bound_times = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        out = topology_answer(topo, rate=sc.sim.rate, load=sc.sim.load,
                              rdma_latency=sc.sim.rdma_latency)
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        routing_bound(topo)
        bound_times.append(time.perf_counter() - t0)
    lp = out["bound"]["lp"]
    print(f"{args.preset}: {len(topo.sites)} sites, {len(topo.regions)} regions, "
          f"{len(topo.links)} links, {topo.gpus} GPUs")
    print(f"LP: {lp['variables']} variables, {lp['constraints']} constraints, "
          f"{lp['integers']} integers")
    print(f"solve's topology answer: median {statistics.median(times) * 1000:.0f} ms "
          f"(min {min(times) * 1000:.0f}, {args.repeat} runs); the bound alone: median "
          f"{statistics.median(bound_times) * 1000:.0f} ms")
    print(f"bound {out['bound']['lambda_max']:.3f} req/s, threshold policy "
          f"{out['threshold_policy']['lambda_max']:.3f} req/s, gap {out['gap']:.3%}")


if __name__ == "__main__":
    main()
