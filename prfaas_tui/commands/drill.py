"""`prfaas-tui drill`: run an incident drill in virtual time and print its scorecard, optionally
side by side with the same seeded workload under the static threshold (`--compare static`),
on the drill's own base preset or on another (`--preset`).

Exit status: 0 when the drill met its [expect] bars, 1 when it missed one (the scorecard says
which), 2 on a broken drill file or flag (one line naming the file and the key).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from emulator.budget import BudgetError, Caps
from emulator.files import cap_help
from emulator.scenario.drill import Drill
from emulator.scenario.drills import drills_for, list_drills, load_drill
from emulator.scenario.knobs import KnobError, whole
from emulator.scenario.presets import load
from emulator.scenario.reader import a_seed
from emulator.sim.books.accounting import AccountingError
from emulator.sim.routing.site_policy import POLICIES as ROUTINGS
from emulator.sim.runs.drills import drill_emulation, run_drill
from emulator.units import format_duration
from prfaas_tui import json_out
from prfaas_tui.commands.common import (
    add_budget_flags,
    caps_from_args,
    check_capacity,
    check_emulation,
    check_scenario_instances,
)
from prfaas_tui.console import make_console
from prfaas_tui.errors import UsageError, parse_flag

HELP = "run an incident drill (presets/drills) and print its scorecard"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("drill", help=HELP, description=HELP + ". Without NAME, list them "
                              "(with --preset, those that fit it).")
    p.add_argument("name", nargs="?", metavar="NAME|PATH",
                   help=f"shipped drill or drill TOML path ({cap_help('drill')})")
    p.add_argument("--preset", metavar="NAME|PATH",
                   help="run the drill on this preset instead of the drill's own base: its "
                        "deployment, with the drill's load, run, SLO, scheduler, routing and "
                        "incidents (docs/drills.md); a preset that lacks what the drill "
                        "targets is refused")
    p.add_argument("--compare", choices=("static", "threshold"),
                   help="also run the same seeded workload with the scheduler off (static), "
                        "or, on a topology, with the threshold site policy (threshold)")
    p.add_argument("--routing", choices=ROUTINGS,
                   help="topology drills: the site policy (default: the preset's `routing`)")
    p.add_argument("--seed", metavar="N", help="random seed (default: the drill's)")
    p.add_argument("--json", action="store_true",
                   help="print the run object plus `scorecard` (with --compare: an object with "
                        "keys `scheduler` and `static`)")
    add_budget_flags(p, ("requests", "events", "instances"))
    p.set_defaults(func=main)
    return p


def main(args) -> int:
    if args.name is None:
        return _list(args.preset)
    seed = parse_flag("--seed", whole, args.seed, a_seed)
    caps = caps_from_args(args)
    drill = load_drill(args.name, args.preset)
    topo = drill.scenario.declared_topology
    if topo is None and args.routing not in (None, "threshold"):
        raise UsageError(f"--routing {args.routing}: a single-pair drill routes by its "
                         "threshold; site policies need a topology preset")
    if args.compare == "threshold" and topo is None:
        raise UsageError("--compare threshold: compares site policies on a topology drill; "
                         "a single-pair drill compares --compare static")
    if args.compare == "static" and topo is not None:
        raise UsageError("--compare static: a topology drill has no scheduler to switch off; "
                         "use --compare threshold")
    routing = args.routing or (topo.routing if topo is not None else None)
    _check_work(drill, seed, caps, copies=2 if args.compare else 1, routing=args.routing)
    started = time.perf_counter()
    try:
        limit = caps.requests / (2 if args.compare else 1)
        if args.compare == "threshold":
            runs = {routing: run_drill(drill, seed, routing=routing, max_requests=limit)}
            if routing != "threshold":
                runs["threshold"] = run_drill(drill, seed, routing="threshold",
                                              max_requests=limit)
        elif args.compare:
            runs = {"scheduler": run_drill(drill, seed, scheduler=True, max_requests=limit),
                    "static": run_drill(drill, seed, scheduler=False, max_requests=limit)}
        else:
            runs = {"drill": run_drill(drill, seed, routing=args.routing, max_requests=limit)}
    except AccountingError as exc:
        print(f"prfaas-tui drill: error: {exc}", file=sys.stderr)
        return 1
    wall = time.perf_counter() - started
    for out in runs.values():
        out["timing"] = {"wall_seconds": wall / len(runs), "requests_per_wall_second": None,
                         "realtime_factor": out["simulated_seconds"] * len(runs) / wall}
    main_run = next(iter(runs.values()))  # the scheduler's, the drill's or its policy's
    for name, out in runs.items():
        for line in out.get("warnings", ()):
            what = f" ({name})" if args.compare else ""
            print(f"prfaas-tui drill: warning{what}: {line}", file=sys.stderr)
    if args.json:
        print(json_out.dumps(runs if args.compare else main_run, indent=2))
    else:
        _print(drill, runs)
    if not main_run["scorecard"]["passed"]:
        missed = [k for k, e in main_run["scorecard"]["expectations"].items() if not e["ok"]]
        print(f"prfaas-tui drill: {drill.name}: missed {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


def _check_work(drill: Drill, seed: int | None, caps: Caps, copies: int = 1,
                routing: str | None = None) -> None:
    """Refuse a drill (run `copies` times) over a cap before it runs (an emulation built, not
    run, is cheap)."""
    if drill.scenario.declared_topology is None:
        check_scenario_instances(drill.scenario, caps)
    try:
        emu, _ = drill_emulation(drill, seed, routing=routing)
    except KnobError as exc:
        raise UsageError(f"{drill.path}: {exc.knob}: {exc.reason}") from None
    except ValueError as exc:  # e.g. load = 1e308: load x Lambda_max is not a finite rate
        raise UsageError(f"{drill.path}: workload.rate/load: {exc}") from None
    with emu:
        try:
            check_emulation(emu, caps, rate_flag="workload.rate/load",
                            duration_flag="emulator.duration", copies=copies)
            if emu.topology is None:
                check_capacity(emu)
        except (BudgetError, UsageError) as exc:
            raise UsageError(f"{drill.path}: {exc}") from None


def _list(preset: str | None = None) -> int:
    """The shipped drills; with --preset, those that fit it (it has what they target)."""
    shown = list_drills() if preset is None else drills_for(load(preset, topology=True))
    for name, desc in shown:
        print(f"{name:<16} {desc}")
    return 0


ROWS = (  # scorecard key, label, format
    ("lost", "requests lost", str),
    ("slo_attainment", "SLO attainment", lambda v: f"{v:.1%}"),
    ("ttft_p90_during", "TTFT P90 of arrivals during incidents", lambda v: format_duration(v)),
    ("peak_ttft_p90", "peak TTFT P90 (30 s windows)", lambda v: format_duration(v)),
    ("recovery_seconds", "time to recover", lambda v: "0 s" if v == 0 else format_duration(v)),
    ("peak_queue", "peak queues prfaas / pd-p / pd-d", lambda v: " / ".join(map(str, v.values()))),
    ("conversions", "role conversions", str),
    ("decisions", "scheduler decisions", lambda v: str(len(v))),
)


def _cell(key: str, fmt, value) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "never" if key == "recovery_seconds" else "-"
    return fmt(value)


def _mark(run: dict, key: str) -> str:
    """✓ or ✗ beside a run's own figure, when an expectation judges that row."""
    judged = run["scorecard"].get("expectations", {}).get(key)
    if judged is None:
        return ""
    return " [green]✓[/]" if judged["ok"] else " [red]✗[/]"


def _print(drill: Drill, runs: dict[str, dict]) -> None:
    from rich.table import Table

    con = make_console()
    first = next(iter(runs.values()))
    con.print(f"[bold]drill {drill.name}[/] · {drill.description}")
    if "routing" in first:  # a topology
        where = f"routing {', '.join(runs)}" if len(runs) > 1 else f"routing {first['routing']}"
    else:
        where = f"B_out {first['knobs']['bandwidth_gbps']:.0f} Gbps"
    con.print(f"[dim]base {first['preset']} · seed {first['seed']} · "
              f"{format_duration(first['simulated_seconds'])} simulated · {where} · "
              f"offered {first['offered_rate']:.2f} req/s[/]")
    for start, end, label in drill.timeline:
        until = f"-{format_duration(end)}" if end is not None else ""
        con.print(f"  [yellow]⚠[/] {format_duration(start)}{until}  {label}")
    table = Table(title_justify="left", header_style="bold")
    table.add_column("metric")
    for name in runs:
        table.add_column(name if name != "drill" else "value", justify="right")
    table.add_column("expect", justify="right")
    expect = first["scorecard"]["expectations"]  # the bars (the exit status: the first run's)
    for key, label, fmt in ROWS:
        bar = ""
        if key in expect:
            op = ">=" if key == "slo_attainment" else "<="
            bar = f"{op} {_cell(key, fmt, expect[key]['bar'])}"
        table.add_row(label, *[_cell(key, fmt, r["scorecard"][key]) + _mark(r, key)
                               for r in runs.values()], bar)
    con.print(table)
    if "regions" in first["scorecard"]:
        rt = Table(title="per region", title_justify="left", header_style="bold")
        rt.add_column("region")
        rt.add_column("metric")
        for name in runs:
            rt.add_column(name if name != "drill" else "value", justify="right")
        for region in first["scorecard"]["regions"]:
            for key, label, fmt in ROWS[:5]:
                rt.add_row(region, label, *[_cell(key, fmt, r["scorecard"]["regions"][region][key])
                                            for r in runs.values()])
        con.print(rt)
    decisions = first["scorecard"]["decisions"]
    if decisions:
        con.print("[bold]scheduler decisions[/]")
        for d in decisions[:40]:
            con.print(f"  {d}", highlight=False)
        if len(decisions) > 40:
            con.print(f"  … {len(decisions) - 40} more (--json has them all)")
