"""Time the full 2-D (t, N_p) search: the dashboard re-solves on every keypress.

Targets (issue 2): <= 20 ms on `paper-case-study`, <= 200 ms on a deployment 10x its size,
one core. Run: `python benchmarks/bench_model.py` (prints a row per case and records the table
as `perf_model` in benchmarks/results.json).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import dataclasses  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from emulator.optimizer import search  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import record  # noqa: E402

from emulator.scenario import presets  # noqa: E402


def bench(system, mode: str, repeats: int = 30) -> tuple[float, int]:
    search(system, mode)  # warm caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        found = search(system, mode)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, found.evaluated


def main() -> None:
    paper = presets.load("paper-case-study").system
    big = dataclasses.replace(paper, n_prfaas=paper.n_prfaas * 10, local_pool=paper.local_pool * 10,
                              bandwidth=paper.bandwidth * 10)
    columns = ["case", "mode", "grid points", "median ms per full search", "target"]
    rows = []
    for name, system, target in (("paper-case-study", paper, 20), ("10x deployment", big, 200)):
        for mode in ("paper", "exact"):
            ms, n = bench(system, mode)
            rows.append([name, mode, f"{n:,}", f"{ms:.2f}", f"<= {target}"])
            print(" | ".join(rows[-1]))
    record("perf_model", source="python benchmarks/bench_model.py", columns=columns, rows=rows)


if __name__ == "__main__":
    main()
