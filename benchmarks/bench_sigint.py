"""How fast Ctrl-C ends `run --csv` and `plan --out` (issue 11: "within a second").

Starts each command as a terminal would (its own process group), waits until its file holds a
record, sends SIGINT to the group and times the exit. The tests check what happens (one line,
exit 130, valid files); the time is measured here, where a wall clock belongs.

    python benchmarks/bench_sigint.py --repeats 5
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = "import sys; from prfaas_tui.cli import main; sys.exit(main())"
COMMANDS = {
    "run --csv": ["run", "--duration", "6e5", "--max-requests", "1e8", "--max-events", "1e8",
                  "--csv"],
    "plan --out": ["plan", "--pool", "4:12", "--workers", "2", "--max-requests", "1e9", "--out"],
}


def once(argv: list[str], path: Path, deadline: float = 60.0) -> float:
    """Seconds from SIGINT to the exit of the whole command."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", CLI, *argv, str(path)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    end = time.monotonic() + deadline
    while not (path.exists() and path.read_bytes().count(b"\n") >= 2):
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            raise SystemExit(f"{argv[0]}: no record before it ended or in {deadline:.0f} s")
        time.sleep(0.01)
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=deadline)
    took = time.monotonic() - sent
    if proc.returncode != 130:
        raise SystemExit(f"{argv[0]}: exit {proc.returncode}, expected 130")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    rows = []
    for name, argv in COMMANDS.items():
        times = []
        for i in range(a.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                times.append(once(argv, Path(tmp) / f"out{i}"))
        print(f"{name}: exit after SIGINT median {statistics.median(times):.2f} s, "
              f"max {max(times):.2f} s ({a.repeats} runs, load average {os.getloadavg()[0]:.1f})")
        rows.append([name, f"{statistics.median(times):.2f}", f"{max(times):.2f}", str(a.repeats)])
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from results import record
    record("perf_sigint", source=f"python benchmarks/bench_sigint.py --repeats {a.repeats}",
           columns=["command", "median s from SIGINT to exit", "max s", "runs"], rows=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
