"""Time from launching `prfaas-tui` to a dashboard whose clock runs, as a user sees it.

Starts the real command in a detached tmux pane of the given size, polls the screen every
20 ms, and stops the watch when the status line shows the simulated clock past zero (`▶ sim
0:00:0x` with x > 0): the model solved, the emulator thread started, the first frame drawn and
the clock moving at the preset's speed. Interpreter start-up and imports are included; that
is what a newcomer waits for.

    python benchmarks/bench_startup.py --repeats 5 --size 160x48,80x24
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNNING = re.compile(r"▶ sim (\d+):(\d\d):(\d\d(?:\.\d)?)")


def once(cmd: str, size: str, timeout: float = 30.0) -> float:
    """Seconds from launch to a running clock on screen."""
    cols, rows = size.split("x")
    sock = f"bench-startup-{os.getpid()}-{time.monotonic_ns()}"  # a fresh server per launch
    tmux = ["tmux", "-L", sock]
    t0 = time.perf_counter()
    subprocess.run([*tmux, "new-session", "-d", "-x", cols, "-y", rows, "-s", "b", cmd],
                   check=True)
    try:
        while time.perf_counter() - t0 < timeout:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", "b"],
                                    capture_output=True, text=True).stdout
            m = RUNNING.search(screen)
            if m and any(float(x) > 0 for x in m.groups()):
                return time.perf_counter() - t0
            time.sleep(0.02)
        raise SystemExit(f"no running clock within {timeout:.0f} s at {size}")
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--size", default="160x48,80x24", help="comma-separated COLSxROWS")
    ap.add_argument("--args", default="", help="extra arguments for prfaas-tui")
    a = ap.parse_args()
    if shutil.which("tmux") is None:
        print("bench_startup: needs tmux", file=sys.stderr)
        return 2
    exe = Path(sys.executable).with_name("prfaas-tui")
    cmd = f"{exe} {a.args}".strip()
    rows = []
    for size in a.size.split(","):
        once(cmd, size)  # warm the file cache: the figure is a second launch, as users see it
        times = [once(cmd, size) for _ in range(a.repeats)]
        print(f"{size}: median {statistics.median(times):.2f} s, min {min(times):.2f}, "
              f"max {max(times):.2f} ({a.repeats} launches, load average "
              f"{os.getloadavg()[0]:.1f})")
        rows.append([size, f"{statistics.median(times):.2f}", str(a.repeats)])
    if not a.args:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from results import record
        record("perf_startup", source=f"python benchmarks/bench_startup.py --repeats {a.repeats}",
               columns=["size", "median s to a running clock", "launches"], rows=rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
