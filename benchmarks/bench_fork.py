"""How long `f` takes to ready a what-if fork of a long run: a dashboard session of
`paper-case-study` run for 3 simulated hours (t moved at 1 h, an incident started by hand at
2 h), recorded as the dashboard records it (a full plot history, the whole-run record thinned),
then forked. The fork rebuilds the emulation, replays the change log unpaced to 3 h and checks
itself against the parent's history and record; the figure is the wall time from `f` to a fork
ready to run on (what the fork view waits for), and the replay's own share.

    python benchmarks/bench_fork.py [--hours 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record  # noqa: E402

from emulator.scenario.presets import load  # noqa: E402
from prfaas_tui.fork import Fork  # noqa: E402
from prfaas_tui.live import incident_catalog  # noqa: E402
from prfaas_tui.session import Session  # noqa: E402

STEPS_PER_HOUR = 200  # the parent advances in steps of 18 s, 30 snapshots each (as `.` does)


def parent_run(hours: float) -> Session:
    """The parent as a dashboard would hold it after `hours` of simulated time."""
    s = Session(load("paper-case-study"), live=False, post_tick=lambda tick: None,
                post_error=lambda text, gen: None)
    s.start()
    end = hours * 3600.0
    step = 3600.0 / STEPS_PER_HOUR
    label, _, _ = next(c for c in incident_catalog() if "brownout" in c[0])
    while s.tick.snapshot.sim_time < end - 1e-9:
        now = s.tick.snapshot.sim_time
        if abs(now - 3600.0) < step / 2:
            s.request(t=s.settings.scenario.t + 4096.0)
        if abs(now - 7200.0) < step / 2:
            s.inject(label)
        s.step(min(step, end - now))
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    t0 = time.perf_counter()
    parent = parent_run(args.hours)
    snap = parent.tick.snapshot
    print(f"parent: {args.hours:g} h of paper-case-study in {time.perf_counter() - t0:.1f} s wall, "
          f"{snap.events:,} events, {len(parent.tick.history)} snapshots in the history, "
          f"{len(parent.record):,} record rows, {len(parent.driver.log)} logged changes")
    readies, replays, bare, checks = [], [], [], ""
    for _ in range(args.repeat):
        # the replay alone, same path: the log without the parent's snapshots to check
        fork = Fork(parent, post_tick=lambda tick: None, post_error=lambda text, gen: None)
        fork.origin = replace(fork.origin, history=(), rows=())
        fork.start()
        bare.append(fork.verdict.wall_s)
        fork.drop()
        t0 = time.perf_counter()
        fork = Fork(parent, post_tick=lambda tick: None, post_error=lambda text, gen: None)
        fork.start()  # not live: returns once the replay is done and the first tick taken
        readies.append(time.perf_counter() - t0)
        replays.append(fork.verdict.wall_s)
        print(f"  fork ready in {readies[-1]:.2f} s wall; {fork.verdict.text()}")
        checks = f"{fork.verdict.checked:,} of {fork.verdict.checked:,}"
        if not fork.verdict.ok:
            sys.exit("the fork is not the parent's run")
        fork.drop()
    parent.stop()
    print(f"fork of a {args.hours:g} h run: ready in {statistics.median(readies):.2f} s wall "
          f"(median of {args.repeat}; replay and checks {statistics.median(replays):.2f} s, "
          f"the replay alone {statistics.median(bare):.2f} s)")
    record("fork_speed", source=f"python benchmarks/bench_fork.py --hours {args.hours:g} "
           f"--repeat {args.repeat}",
           values={"ready": f"{statistics.median(readies):.1f} s",
                   "replay": f"{statistics.median(bare):.1f} s", "checks": checks})


if __name__ == "__main__":
    main()
