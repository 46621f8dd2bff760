"""`prfaas-tui run`: one headless emulation of a preset, as JSON or a readable summary."""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from dataclasses import replace

from emulator import budget
from emulator.budget import BudgetError
from emulator.scenario.knobs import KNOBS, KnobError, whole
from emulator.scenario.prefill import PrefillBackendConfig, check_device
from emulator.scenario.presets import load
from emulator.scenario.reader import PresetError, a_load, a_seed, positive
from emulator.scenario.scenario import Scenario
from emulator.sim.books.accounting import AccountingError
from emulator.sim.engine import Emulation
from emulator.sim.reports.result import RunResult, SeriesCsv
from emulator.sim.routing.site_policy import POLICIES as ROUTINGS
from emulator.sim.runs.health import overload_warnings, served_warnings
from emulator.sim.runtime.topology import topology_bound
from emulator.torch_prefill import TorchUnavailable
from emulator.torch_prefill.config import get_config
from emulator.trace_formats import load_trace
from emulator.traces import LIMITS_HELP, TraceError
from emulator.units import parse_duration
from prfaas_tui import json_out
from prfaas_tui.commands.common import (
    add_budget_flags,
    add_scenario_flags,
    as_the_pair,
    caps_from_args,
    check_capacity,
    check_emulation,
    check_scenario_instances,
    controls_from_args,
    transport_from_args,
)
from prfaas_tui.commands.trace_flags import add_trace_flags
from prfaas_tui.console import make_console
from prfaas_tui.errors import UsageError, parse_flag

HELP = "emulate a preset in virtual time and report rates, latencies and the bottleneck"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("run", help=HELP, description=HELP + ".")
    add_scenario_flags(p, KNOBS)
    p.add_argument("--duration", metavar="S",
                   help="simulated seconds, or '1 h', '30 min' (default: the preset's; with "
                        "--trace, until the trace's last arrival)")
    p.add_argument("--load", metavar="F",
                   help="offered rate as a multiple of the model's Lambda_max, evaluated in "
                        "exact mode (conditional expectations of the profiles, what FIFO "
                        "servers sustain) at the run's knobs; default: the preset's load")
    p.add_argument("--seed", metavar="N", help="random seed (default: the preset's)")
    p.add_argument("--trace", metavar="FILE",
                   help="replay a Mooncake .jsonl, Azure or BurstGPT .csv, or any CSV with --columns "
                        "(its own rate unless "
                        "--rate/--load rescales its time; " + LIMITS_HELP + ")")
    add_trace_flags(p, with_trace=False)
    p.add_argument("--backend", choices=("profile", "torch"),
                   help="prefill service times from the preset's profiles, or from a real torch "
                        "model run at every prefill (default: the preset's [prefill])")
    p.add_argument("--torch-model", metavar="NAME",
                   help="model the torch backend runs, e.g. hybrid-tiny (default: the preset's)")
    p.add_argument("--length-scale", metavar="F",
                   help="run round(l * F) tokens per prefill and scale the results back, e.g. "
                        "0.01 (torch backend)")
    p.add_argument("--torch-device", metavar="cpu|cuda", help="torch backend device")
    p.add_argument("--routing", choices=ROUTINGS,
                   help="topology presets: the site policy every region runs (default: the "
                        "preset's `routing`); see docs/topology-emulator.md")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--csv", metavar="FILE", help="write the time series (one row per sample)")
    add_budget_flags(p, ("requests", "events", "instances"))
    p.set_defaults(func=main)
    return p


def build(args) -> Emulation:
    """The emulation the flags describe; UsageError/PresetError/TraceError on bad input."""
    sc: Scenario = load(args.preset, topology=True)
    for flag, dest, why in PAIR_FLAGS:  # a declared 1x1 runs as the pair for these
        if getattr(args, dest, None) is not None:
            sc = as_the_pair(sc, flag, why)
    sc = transport_from_args(sc, args)
    if sc.declared_topology is not None:
        return build_topology(sc, args)
    if args.routing not in (None, "threshold"):
        raise UsageError(f"--routing {args.routing}: a single-pair preset routes by its "
                         "threshold; site policies need a topology preset")
    duration = parse_flag("--duration", parse_duration, args.duration, positive)
    load_ = parse_flag("--load", float, args.load, a_load)
    seed = parse_flag("--seed", whole, args.seed, a_seed)
    caps = caps_from_args(args)
    controls, given = controls_from_args(sc, args)
    if controls.rate is not None and load_ is not None:
        raise UsageError("--rate/--load: give one or the other")
    if args.columns and not args.trace:
        raise UsageError("--columns: needs --trace FILE")
    # the split flags go to the engine, which starts each paradigm from its own split
    sc = _prefill_backend(sc.with_controls(replace(controls, n_p=sc.n_p, n_d=sc.n_d)), args)
    check_scenario_instances(sc, caps)  # before the pools are built
    if args.trace is not None:  # read once: the budget check counts its requests and span
        trace = load_trace(args.trace, args.columns)
    else:
        trace = load_trace(sc.sim.replay) if sc.sim.replay is not None else None
    try:
        emu = Emulation(sc, seed=seed, rate=controls.rate, load=load_, duration=duration,
                        paradigm=controls.paradigm, n_p=given.get("n_p"), n_d=given.get("n_d"),
                        trace=trace)
    except TraceError:
        raise
    except ValueError as exc:  # the offered rate: from the flags, else the preset's keys
        where = "--rate/--load" if controls.rate is not None or load_ is not None else \
            f"{args.preset}: workload.rate/load"
        raise UsageError(f"{where}: {exc}") from None
    try:  # built, not run: the arrival and timer chains have only their first events
        check_emulation(emu, caps, trace=trace,  # a replay's span: --duration, or the rate
                        rate_flag="--duration" if trace is not None and duration is not None
                        else "--rate/--load")
        check_capacity(emu)
    except BaseException:
        emu.close()
        raise
    return emu


# single-pair flags a declared 1x1 topology takes as the pair, each with what a larger one does
PAIR_FLAGS = (("--paradigm", "paradigm", "each region routes by its site policy (--routing)"),
              ("--trace", "trace", "each region replays its own trace ([region.workload] "
                                   "replay)"))
PAIR_ONLY = (("--columns", "columns"), ("--backend", "backend"),
             ("--torch-model", "torch_model"), ("--length-scale", "length_scale"),
             ("--torch-device", "torch_device"))


def build_topology(sc: Scenario, args) -> Emulation:
    """A topology preset's emulation: --rate is the total offered rate (each region its
    share), --load a multiple of the routing bound's Lambda."""
    for name, k in KNOBS.items():
        if name != "rate" and getattr(args, name, None) is not None:
            raise UsageError(f"{k.flag}: a topology preset sets its knobs per [[region]], "
                             "[[site]] and [[link]]; edit the preset")
    for flag, dest in PAIR_ONLY:
        if getattr(args, dest, None) not in (None, False):
            raise UsageError(f"{flag}: runs on single-pair presets only")
    duration = parse_flag("--duration", parse_duration, args.duration, positive)
    load_ = parse_flag("--load", float, args.load, a_load)
    seed = parse_flag("--seed", whole, args.seed, a_seed)
    rate = parse_flag("--rate", KNOBS["rate"].parse, args.rate, KNOBS["rate"].problem)
    if rate is not None and load_ is not None:
        raise UsageError("--rate/--load: give one or the other")
    caps = caps_from_args(args)
    topo = sc.declared_topology
    budget.check_instances({f"site[{i}].instances": s.instances
                            for i, s in enumerate(topo.sites)} |
                           {f"region[{i}].pool": r.pool for i, r in enumerate(topo.regions)},
                           caps)
    try:
        emu = Emulation(sc, seed=seed, rate=rate, load=load_, duration=duration,
                        routing=args.routing, bound=topology_bound(sc))
    except KnobError as exc:
        raise UsageError(f"--routing: {exc.reason}" if exc.knob == "routing" else str(exc)) \
            from None
    except ValueError as exc:
        where = "--rate/--load" if rate is not None or load_ is not None else \
            f"{args.preset}: workload.rate/load"
        raise UsageError(f"{where}: {exc}") from None
    try:
        check_emulation(emu, caps, rate_flag="--rate/--load")
    except BaseException:
        emu.close()
        raise
    return emu


def _prefill_backend(sc: Scenario, args) -> Scenario:
    """--backend and the --torch-* flags over the preset's [prefill]."""
    flags = {"--torch-model": args.torch_model, "--length-scale": args.length_scale,
             "--torch-device": args.torch_device}
    given = next((f for f, v in flags.items() if v is not None), None)
    base = sc.sim.prefill
    if args.backend == "profile" or (args.backend is None and base is None):
        if given:
            raise UsageError(f"{given}: needs --backend torch (or [prefill] backend = \"torch\")")
        return replace(sc, sim=replace(sc.sim, prefill=None))
    base = base or PrefillBackendConfig(backend="torch")
    model = args.torch_model or base.model
    try:
        get_config(model)
    except ValueError as exc:
        raise UsageError(f"--torch-model: {exc}") from None
    scale = parse_flag("--length-scale", float, args.length_scale, positive)
    device = parse_flag("--torch-device", str, args.torch_device, check_device)
    cfg = replace(base, model=model, length_scale=base.length_scale if scale is None else scale,
                  device=device or base.device)
    return replace(sc, sim=replace(sc.sim, prefill=cfg))


def main(args) -> int:
    try:
        emu = build(args)
    except (UsageError, PresetError, TraceError, TorchUnavailable, BudgetError) as exc:
        print(f"prfaas-tui run: error: {exc}", file=sys.stderr)
        return 2
    with emu, ExitStack() as files:
        if args.csv:  # opened first: rows go out as the run makes them (Ctrl-C keeps them)
            try:
                fh = files.enter_context(open(args.csv, "w", newline="", encoding="utf-8"))
            except OSError as exc:
                print(f"prfaas-tui run: error: --csv: cannot write {args.csv}: {exc.strerror}",
                      file=sys.stderr)
                return 2
            emu.observer.series.sink = SeriesCsv(fh).row
        warnings = overload_warnings(emu)
        for line in warnings:  # before the run: a long run says at once what it will show
            print(f"prfaas-tui run: warning: {line}", file=sys.stderr)
        started = time.perf_counter()
        try:
            result = _run(emu)
        except AccountingError as exc:
            print(f"prfaas-tui run: error: {exc}", file=sys.stderr)
            return 1
        wall = time.perf_counter() - started
        after = served_warnings(emu)
    out = result.to_json(wall)
    for line in after:
        print(f"prfaas-tui run: warning: {line}", file=sys.stderr)
    warnings += after
    if warnings:
        out["warnings"] = warnings
    if args.json:
        print(json_out.dumps(out, indent=2))
    elif "regions" in out:
        _topology_summary(out)
    else:
        _summary(out)
    return 0


def _run(emu: Emulation) -> RunResult:
    if not sys.stderr.isatty():
        return emu.run()
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("emulating"), BarColumn(),
                  TextColumn("{task.completed:.0f}/{task.total:.0f} s simulated"),
                  TimeRemainingColumn(), console=make_console(stderr=True), transient=True) as bar:
        task = bar.add_task("run", total=emu.duration)
        return emu.run(progress=lambda now, end: bar.update(task, completed=now))


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _summary(out: dict) -> None:
    from rich.table import Table

    from emulator.units import format_duration, format_tokens

    con = make_console()
    k = out["knobs"]
    con.print(f"[bold]{out['preset']}[/] · {out['paradigm']} · t = {format_tokens(k['t'])} · "
              f"N_prfaas {k['n_prfaas']} · N_p {k['n_p']} · N_d {k['n_d']} · "
              f"B_out {k['bandwidth_gbps']:.1f} Gbps · seed {out['seed']}")
    acc, ttft, tpot, model = out["accounting"], out["ttft"], out["tpot"], out["model"]
    top = Table(show_header=False, box=None, padding=(0, 2))
    top.add_row("simulated", f"{format_duration(out['simulated_seconds'])} · "
                f"{out['events']:,} events")
    top.add_row("offered / served", f"{out['offered_rate']:.3f} / {out['served_rate']:.3f} req/s")
    top.add_row("Lambda_max exact / paper", f"{model['exact']['lambda_max']:.3f} / "
                f"{model['paper']['lambda_max']:.3f} req/s")
    top.add_row("busiest (measured)", f"[bold]{out['bottleneck']}[/] · link "
                f"{out['link_utilization']:.1%} utilized")
    top.add_row("TTFT mean / p50 / p90 / p99", " / ".join(
        _fmt(ttft[k], 2) for k in ("mean", "p50", "p90", "p99")) + " s")
    slo = "" if out["slo"] is None else f" · SLO attainment {out['slo']['attainment']:.1%}"
    top.add_row("TPOT p50 / p90", f"{_fmt(tpot['p50'], 4)} / {_fmt(tpot['p90'], 4)} s{slo}")
    if (steps := out["stages"]["pd-d"].get("steps")) is not None:  # a stepped decode
        top.add_row("decode steps", f"{steps['steps']:,} · mean batch {steps['mean_batch']:.1f}"
                    f" · mean step {steps['mean_step'] * 1e3:.2f} ms · mean context "
                    f"{format_tokens(steps['mean_context'])} tokens")
    top.add_row("requests", f"{acc['arrived']:,} arrived · {acc['completed']:,} completed · "
                f"{acc['in_flight']:,} in flight · {acc['rejected']:,} rejected · "
                f"{acc['lost']:,} lost")
    if (cache := out.get("cache")) is not None:
        cl = cache["clusters"]
        top.add_row("prefix cache (token hits)", " · ".join(
            f"{c} {v['token_hit_rate']:.1%} ({v['cache_transfers']} moves out)"
            for c, v in cl.items()) + f" · {cache['prefill_tokens']['saved']:.1%} of prefill "
            f"saved · {'scarce' if cache['scarce'] else 'abundant'} now")
    con.print(top)
    st = Table(title="stages (second half of the run)", title_justify="left")
    for col in ("stage", "instances", "utilization", "queue", "offered req/s", "served req/s"):
        st.add_column(col, justify="left" if col == "stage" else "right")
    for name, s in out["stages"].items():
        st.add_row(name, str(s["instances"]), f"{s['utilization']:.1%}", str(s["queue"]),
                   f"{s['offered_rate']:.3f}", f"{s['served_rate']:.3f}")
    con.print(st)
    t = out["timing"]
    con.print(f"[dim]{t['wall_seconds']:.2f} s wall · {t['requests_per_wall_second']:,.0f} "
              f"requests per wall second · {t['realtime_factor']:,.0f}x real time[/]")


def _topology_summary(out: dict) -> None:
    from rich.table import Table

    from emulator.units import format_duration

    con = make_console()
    acc = out["accounting"]
    con.print(f"[bold]{out['preset']}[/] · routing {out['routing']} · seed {out['seed']} · "
              f"{format_duration(out['simulated_seconds'])} simulated · "
              f"offered {out['offered_rate']:.3f} / served {out['served_rate']:.3f} req/s · "
              f"{acc['arrived']:,} arrived · {acc['lost']} lost")
    if (cache := out.get("cache")) is not None:
        hits = " · ".join(f"{n} {v['token_hit_rate']:.1%}"
                          for n, v in {**cache["sites"], **cache["regions"]}.items())
        moves = " · ".join(f"{n} {v['moves']['to_region']} in, {v['moves']['to_site']} out"
                           f"{'' if v['headroom'] else ' (no headroom now)'}"
                           for n, v in cache["links"].items())
        con.print(f"prefix cache: {cache['prefill_tokens']['saved']:.1%} of prefill tokens "
                  f"saved · token hits {hits}\ncache moves (towards the region, towards the "
                  f"site): {moves}")
    rt = Table(title="regions", title_justify="left")
    for col in ("region", "offered", "served", "in flight", "rejected", "TTFT mean", "TTFT p90"):
        rt.add_column(col, justify="left" if col == "region" else "right")
    for name, r in out["regions"].items():
        rt.add_row(name, f"{r['offered_rate']:.3f}", f"{r['served_rate']:.3f}",
                   str(r["in_flight"]), str(r["rejected"]), _fmt(r["ttft"]["mean"], 2),
                   _fmt(r["ttft"]["p90"], 2))
    con.print(rt)
    st = Table(title="sites", title_justify="left")
    for col in ("site", "instances", "utilization", "queue", "egress Gbps"):
        st.add_column(col, justify="left" if col == "site" else "right")
    for name, s in out["sites"].items():
        st.add_row(name, str(s["instances"]), f"{s['utilization']:.1%}", str(s["queue"]),
                   f"{s['egress_gbps']:.2f}")
    con.print(st)
    lt = Table(title="links", title_justify="left")
    for col in ("link", "Gbps", "utilization", "saturated"):
        lt.add_column(col, justify="left" if col == "link" else "right")
    for name, k in out["links"].items():
        lt.add_row(name, f"{k['gbps']:.2f}", f"{k['utilization']:.1%}",
                   f"{k['saturated_fraction']:.1%}")
    con.print(lt)
