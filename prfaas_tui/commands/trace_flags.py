"""`--trace FILE [--columns MAP] [--incremental]` for solve and plan: a trace as the workload.

Why one helper: solve, plan and new read a trace the same way (emulator.trace_formats) and put
its empirical length distribution into the scenario; run replays the trace itself and only
borrows --columns.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from emulator.scenario.scenario import Scenario
from emulator.trace_formats import TraceWorkload, load_trace, trace_workload
from emulator.traces import LIMITS_HELP

COLUMNS_HELP = ("column map for a generic CSV trace, e.g. time=ts,input=prompt_tokens,"
                "output=completion_tokens (time in seconds or ISO date-times)")


def add_trace_flags(p: argparse.ArgumentParser, *, with_trace: bool = True) -> None:
    if with_trace:
        p.add_argument("--trace", metavar="FILE",
                       help="take the input-length distribution and arrival rate from a trace: "
                            "Mooncake .jsonl, Azure or BurstGPT .csv, or any CSV with --columns; "
                            + LIMITS_HELP)
        p.add_argument("--incremental", action="store_true",
                       help="with a Mooncake trace: the lengths left after prefix reuse "
                            "(hash ids), which is what routing sees")
    p.add_argument("--columns", metavar="MAP", help=COLUMNS_HELP)


def workload_from_args(args: argparse.Namespace,
                       sc: Scenario | None = None) -> TraceWorkload | None:
    """--trace's workload; without it, the preset's `[workload] replay` trace (the model then
    solves the traffic the emulator replays, not the length law beside it); None otherwise."""
    if getattr(args, "trace", None) is not None:
        return trace_workload(load_trace(args.trace, args.columns), incremental=args.incremental)
    if sc is not None and sc.sim.replay is not None:
        return trace_workload(load_trace(sc.sim.replay))
    return None


def with_workload(sc: Scenario, wl: TraceWorkload) -> Scenario:
    """The scenario with the trace's lengths; a threshold beyond the trace's longest request
    moves to it (every t from there up routes the same)."""
    lo, hi = wl.lengths.support
    system = replace(sc.system, lengths=wl.lengths)
    return replace(sc, system=system, t=min(sc.t, hi))
