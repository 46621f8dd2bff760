"""`prfaas-tui plan`: which deployment, threshold and link serve the most traffic within the
SLO, per dollar — the model prunes, emulation decides (see emulator/planner).

One command for a single pair and a topology preset. The shared flags mean the same on both;
the pair ranges its site, link and region by --n-prfaas, --bandwidth, --pool, --t and
--paradigm, a topology its sites, links and routing by --site, --link and --routing (with
--price and --price-per-tb); a flag of the other kind is refused in one line. A declared 1x1
topology given a single-pair flag is planned as the pair it is.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from emulator import budget
from emulator.budget import Caps
from emulator.files import cap_help
from emulator.model import evaluate
from emulator.paradigm import Paradigm
from emulator.planner.goodput import SLO, Settings, too_short, tpot_unmeetable, unmeetable
from emulator.planner.prices import PlanInputError, Prices
from emulator.planner.space import AUTO_T, Candidate, Space, TopologySpace
from emulator.planner.store import OtherPlan, check_resume, check_writable
from emulator.planner.sweep import Plan, header, run_plan
from emulator.scenario import presets
from emulator.scenario.knobs import (
    CONNECTIONS,
    KNOBS,
    KnobError,
    best_cache_problem,
    number,
    retuned,
    whole,
)
from emulator.scenario.reader import a_price, a_price_or_free, positive
from emulator.topology.spec import ROUTINGS
from emulator.units import parse_bandwidth, parse_duration, parse_tokens
from prfaas_tui import json_out
from prfaas_tui.commands.common import (
    add_budget_flags,
    as_the_pair,
    caps_from_args,
    knob_error,
)
from prfaas_tui.commands.trace_flags import add_trace_flags, with_workload, workload_from_args
from prfaas_tui.console import make_console
from prfaas_tui.errors import UsageError, parse_flag


def _ints(flag: str, text: str | None) -> range | tuple[int, ...] | None:
    """'2:6' (inclusive, kept as a range: a 0:100000000 is counted, never built) or '2,4,8';
    `flag` names the flag (and the site) in a refusal."""
    if text is None:
        return None
    try:
        if ":" in text:
            a, b = (int(x) for x in text.split(":", 1))
            vals: range | tuple[int, ...] = range(a, b + 1)
        else:
            vals = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"{flag}: expected a range like 2:6 or a list like 2,4,8, got {text!r}") from None
    if not vals or _lowest(vals) < 0:
        raise UsageError(f"{flag}: values must be >= 0 and the range non-empty, got {text!r}")
    return vals


def _lowest(vals: Sequence[int]) -> int:
    """min() in O(1) for a range (min over range(0, 10**8) walks all of it)."""
    return vals[0] if isinstance(vals, range) else min(vals)


def _highest(vals: Sequence[int]) -> int:
    return (vals[-1] if vals else 0) if isinstance(vals, range) else max(vals, default=0)


def _count(flag: str, raw: str | None, lo: int) -> int | None:
    """A whole-number flag >= lo (None when not given)."""
    return parse_flag(flag, whole, raw, lambda n: None if n >= lo else f"must be >= {lo}")


def _check_work(sc, space_kw: dict, settings_kw: dict, per_config: int, caps: Caps) -> None:
    """The sweep's size before any list of candidates is built: instances per run, candidates
    (counted on the ranges), emulation runs and each run's requests (at most the largest
    candidate's Lambda_max, estimated as the base's scaled by its instances, x --duration)."""
    s = sc.system
    pools = space_kw["pools"] or (s.local_pool,)
    remote = space_kw["n_prfaas"] or (s.n_prfaas,)
    homo = space_kw["homogeneous_pools"] or ((s.homogeneous_pool,) if s.homogeneous_pool else ())
    top_pool, top_remote, top_homo = _highest(pools), _highest(remote), _highest(homo)
    budget.check_instances({"--pool": top_pool, "--n-prfaas": top_remote,
                            "--homogeneous-pool": top_homo}, caps)
    paradigms = [str(p) for p in space_kw["paradigms"]]
    candidates = budget.space_size(
        n_prfaas=remote, pools=pools, homogeneous_pools=homo,
        thresholds=len(space_kw["thresholds"]),
        bandwidths=len(space_kw["bandwidths"] or (s.bandwidth,))
        * len(space_kw["connections"] or (1,)), paradigms=paradigms)
    configs = len(remote) * len(pools) * len(space_kw["bandwidths"] or (1,)) \
        * len(space_kw["connections"] or (1,)) + len(homo)
    scale = max(1.0, top_pool / max(s.local_pool, 1), top_remote / max(s.n_prfaas, 1),
                top_homo / max(s.homogeneous_pool, 1))
    lam = evaluate(s, sc.knobs, "exact").lambda_max * scale
    try:
        budget.check_plan(candidates=candidates, seeds=settings_kw["seeds"],
                          steps=settings_kw["steps"], per_config=per_config, configs=configs,
                          requests_per_run=budget.run_requests(lam, settings_kw["duration"]),
                          caps=caps)
    except budget.BudgetError as exc:
        raise UsageError(str(exc)) from None


def _list(flag: str, text: str | None, conv) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        vals = tuple(conv(x.strip()) for x in text.split(","))
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    if any(not v > 0 for v in vals):
        raise UsageError(f"{flag}: every value must be > 0, got {text!r}")
    return vals


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("plan", help="SLO-aware capacity planning: the model prunes candidate "
                                    "deployments, emulation measures the rest")
    p.add_argument("--preset", default="paper-case-study", metavar="NAME|PATH",
                   help=f"base preset name or TOML path ({cap_help('preset')})")
    p.add_argument("--n-prfaas", dest="n_prfaas", metavar="RANGE|LIST",
                   help="PrfaaS instances: a range 2:6 or a list 2,4 (default: the preset's)")
    p.add_argument("--nprfaas", dest="n_prfaas", help=argparse.SUPPRESS)
    p.add_argument("--pool", metavar="RANGE|LIST",
                   help="local pool sizes, each split every way (default: the preset's)")
    p.add_argument("--homogeneous-pool", metavar="RANGE|LIST",
                   help="homogeneous baseline pool sizes (default: the preset's)")
    p.add_argument("--t", metavar="auto|TOKENS,...",
                   help="'auto' (the model picks t per deployment, the default) or a list like "
                        "16K,24K")
    p.add_argument("--bandwidth", metavar="GBPS,...",
                   help="B_out values in Gbps, e.g. 25,50,100 (default: the preset's)")
    p.add_argument("--connections", action="append", metavar="[SITE->REGION=]LIST",
                   help="TCP connections to try per link, e.g. 4,16,64 (every link) or "
                        "hub->west=4,16 (repeat per link); the bandwidths are then line rates "
                        "and each candidate's link its goodput (docs/transport.md)")
    p.add_argument("--paradigm", metavar="P,...",
                   help="comma list of paradigms, each of " + ", ".join(Paradigm)
                        + " (default: all of them)")
    p.add_argument("--slo-ttft", default="5 s", metavar="DURATION", help="P90 TTFT target")
    p.add_argument("--slo-tpot", default=None, metavar="DURATION",
                   help="P90 TPOT target, e.g. '30 ms', met in every region of a topology "
                        "(default: none)")
    p.add_argument("--seeds", default="3", metavar="N", help="seeds per candidate")
    p.add_argument("--duration", default="10 min", metavar="DURATION",
                   help="simulated time per emulation run")
    p.add_argument("--steps", default="7", metavar="N", help="bisection steps on the rate")
    p.add_argument("--per-config", metavar="N",
                   help="model-stage survivors per hardware configuration (default 3)")
    p.add_argument("--workers", default=None, metavar="N",
                   help="local processes (default: all cores)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a Dask cluster, e.g. tcp://10.0.0.1:8786")
    p.add_argument("--out", metavar="FILE",
                   help="keep the results here (a pair: JSON lines, resumed from when it exists; "
                        "a topology: its summary as JSON) (default: not kept)")
    p.add_argument("--csv", metavar="FILE", help="also write the ranked candidates as CSV")
    p.add_argument("--top", default="10", metavar="N", help="rows in the table")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_budget_flags(p, ("candidates", "runs", "requests", "instances"))
    add_trace_flags(p)
    p.add_argument("--site", action="append", metavar="NAME=LIST",
                   help="topology presets: a site's PrfaaS instances to try, e.g. hub=6,8,10 "
                        "or hub=6:10 (repeat per site)")
    p.add_argument("--link", action="append", metavar="SITE->REGION=LIST",
                   help="topology presets: a link's bandwidths in Gbps, e.g. hub->west=20,40")
    p.add_argument("--routing", metavar="LIST",
                   help=f"topology presets: routing policies to try ({', '.join(ROUTINGS)}"
                        "; default the preset's)")
    p.add_argument("--price", action="append", metavar="NAME=X",
                   help="topology presets: a site's or region's price per instance-hour")
    p.add_argument("--price-per-tb", action="append", metavar="LINK=X",
                   help="topology presets: a link's price per TB (its bandwidth is leased: "
                        "priced as if it carried its full rate)")
    return p


# the flags of one kind of preset: (attribute, flag, why it does not apply to the other kind)
PAIR_FLAGS = (
    ("n_prfaas", "--n-prfaas", "a single-pair flag; on a topology use --site"),
    ("pool", "--pool", "a single-pair flag; on a topology each region keeps its pool"),
    ("homogeneous_pool", "--homogeneous-pool", "a single-pair flag"),
    ("bandwidth", "--bandwidth", "a single-pair flag; on a topology use --link"),
    ("paradigm", "--paradigm", "a single-pair flag; on a topology use --routing"),
    ("t", "--t", "a single-pair flag; on a topology the planner runs each candidate's best "
                 "thresholds (or the bound's routing)"),
    ("per_config", "--per-config", "a single-pair flag; a topology candidate's split and "
                                   "threshold are its policy's"),
    ("trace", "--trace", "a single-pair flag; a topology region replays its own trace "
                         "([region.workload] replay in the preset)"),
    ("columns", "--columns", "a single-pair flag (with --trace)"),
    ("incremental", "--incremental", "a single-pair flag (with --trace)"),
    ("max_requests", "--max-requests", "a single-pair flag; a topology plan is bounded by its "
                                       "candidates and runs (--max-candidates, --max-runs)"),
)
TOPOLOGY_FLAGS = (("site", "--site"), ("link", "--link"), ("routing", "--routing"),
                  ("price", "--price"), ("price_per_tb", "--price-per-tb"))


def pair_if_asked(args: argparse.Namespace, sc):
    """A declared 1x1 topology given a single-pair flag is planned as the pair it is."""
    topo = sc.declared_topology
    flag = next((flag for attr, flag, _ in PAIR_FLAGS
                 if getattr(args, attr, None) not in (None, False)), None)
    if topo is None or not topo.is_pair or flag is None:
        return sc
    return as_the_pair(sc, flag, "")


def refuse_other_kind(args: argparse.Namespace, topology: bool) -> None:
    """One line for the first flag given that applies only to the other kind of preset."""
    if topology:
        for attr, flag, why in PAIR_FLAGS:
            if getattr(args, attr, None) not in (None, False):
                raise UsageError(f"{flag}: {why} (a 1x1 topology is planned as the pair)")
        return
    for attr, flag in TOPOLOGY_FLAGS:
        if getattr(args, attr, None) is not None:
            raise UsageError(f"{flag}: a topology flag; {args.preset} is a single pair")


def _slo(args: argparse.Namespace) -> SLO:
    """--slo-ttft and --slo-tpot: the targets every region of a pair or a topology meets."""
    return SLO(parse_flag("--slo-ttft", parse_duration, args.slo_ttft, positive),
               parse_flag("--slo-tpot", parse_duration, args.slo_tpot, positive))


def build_plan(args: argparse.Namespace, sc) -> Plan:
    if (wl := workload_from_args(args)) is not None:
        sc = with_workload(sc, wl)
    try:
        paradigms = tuple(Paradigm(x.strip())
                          for x in (args.paradigm or ",".join(Paradigm)).split(","))
    except ValueError as exc:
        raise UsageError(f"--paradigm: {exc}") from None
    t = (AUTO_T,) if args.t in (None, "auto") else _list("--t", args.t, parse_tokens)
    bandwidths = _list("--bandwidth", args.bandwidth, parse_bandwidth)
    for knob, xs in (("t", t if t != (AUTO_T,) else ()), ("bandwidth", bandwidths or ())):
        for x in xs:  # the knob's one range check (Controls.validate)
            try:
                sc.controls.changed(sc.system, **{knob: x})
            except KnobError as exc:
                raise knob_error(exc) from None
    slo = _slo(args)
    duration = parse_flag("--duration", parse_duration, args.duration, positive)
    seeds, steps = _count("--seeds", args.seeds, 1), _count("--steps", args.steps, 1)
    per_config = _count("--per-config", args.per_config or "3", 1)
    space_kw = dict(n_prfaas=_ints("--n-prfaas", args.n_prfaas), pools=_ints("--pool", args.pool),
                    homogeneous_pools=_ints("--homogeneous-pool", args.homogeneous_pool),
                    thresholds=t, bandwidths=bandwidths,
                    paradigms=paradigms, connections=_pair_connections(args.connections))
    _check_work(sc, space_kw, {"seeds": seeds, "steps": steps, "duration": duration},
                per_config, caps_from_args(args))
    try:
        space = Space.around(sc, **{k: tuple(v) if isinstance(v, range) else v
                                    for k, v in space_kw.items()})
    except KnobError as exc:  # a goodput under the bandwidth floor
        raise UsageError(f"--connections: {exc}") from None
    settings = Settings(slo=slo, seeds=tuple(range(1, seeds + 1)), duration=duration,
                        steps=steps)
    return Plan(sc, space, settings, per_config=per_config)


def _connections(text: str, where: str = "") -> tuple[int, ...]:
    """A list of connection counts, each through the knob's parse and range."""
    try:
        return tuple(CONNECTIONS.read(x) for x in text.split(","))
    except KnobError as exc:
        raise UsageError(f"--connections: {where}{exc.reason}") from None


def _pair_connections(items: list[str] | None) -> tuple[int, ...] | None:
    """The single pair's --connections: one list for its one link."""
    if not items:
        return None
    if len(items) > 1 or "=" in items[0]:
        raise UsageError("--connections: a single pair has one link: give one list, e.g. "
                         "--connections 4,16,64")
    return _connections(items[0])


def _topology_connections(items: list[str] | None, topo, links: dict[str, tuple[float, ...]]
                          ) -> dict[str, tuple[int, ...]]:
    """--connections per link (NAME=LIST, or a bare LIST for every link), each list checked
    with every bandwidth tried there: the goodput must stay in the bandwidth knob's range."""
    named = {k.name: k for k in topo.links}
    bare = [x for x in items or () if "=" not in x]
    if len(bare) > 1:
        raise UsageError("--connections: one list for every link, or NAME=LIST per link")
    out = dict.fromkeys(named, _connections(bare[0])) if bare else {}
    for name, text in _pairs("--connections", [x for x in items or () if "=" in x]).items():
        if name not in named:
            raise UsageError(f"--connections: no link named {name!r} (links: "
                             f"{', '.join(named)})")
        out[name] = _connections(text, f"{name}: ")
    for name, counts in out.items():
        k = named[name]
        for line in links.get(name, (k.line if k.line is not None else k.bandwidth,)):
            for n in counts:
                try:
                    retuned(k, line, connections=n)
                except KnobError as exc:
                    raise UsageError(f"--connections: {exc}") from None
    return out


def _pairs(flag: str, items: list[str] | None) -> dict[str, str]:
    """Repeated NAME=VALUE flags, each name once."""
    out: dict[str, str] = {}
    for it in items or ():
        name, sep, value = it.rpartition("=")
        if not sep or not name or not value:
            raise UsageError(f"{flag}: expected NAME=VALUE, got {it!r}")
        if name in out:
            raise UsageError(f"{flag}: {name} given twice")
        out[name] = value
    return out


def build_topology_plan(args: argparse.Namespace, sc) -> Plan:
    """A topology's space (--site, --link, --routing), its prices and the shared settings,
    bounded before any candidate is built."""
    topo = sc.declared_topology
    caps = caps_from_args(args)
    sites: dict[str, tuple[int, ...]] = {}
    for name, text in _pairs("--site", args.site).items():
        if name not in {s.name for s in topo.sites}:
            raise UsageError(f"--site: no site named {name!r} (sites: "
                             f"{', '.join(s.name for s in topo.sites)})")
        vals = _ints(f"--site: {name}", text)
        try:
            budget.check_instances({f"--site {name}": _highest(vals)}, caps)
            budget.check("candidates", len(vals), f"--site {name}", caps)
        except budget.BudgetError as exc:
            raise UsageError(str(exc)) from None
        sites[name] = tuple(vals)
    links: dict[str, tuple[float, ...]] = {}
    for name, text in _pairs("--link", args.link).items():
        if name not in {k.name for k in topo.links}:
            raise UsageError(f"--link: no link named {name!r} (links: "
                             f"{', '.join(k.name for k in topo.links)})")
        try:  # the bandwidth knob's parse and range (a bare number is Gbps)
            links[name] = tuple(KNOBS["bandwidth"].read(x) for x in text.split(","))
        except KnobError as exc:
            raise UsageError(f"--link: {name}: {exc.reason}") from None
    routings = tuple(x.strip() for x in (args.routing or topo.routing).split(","))
    for r in routings:
        if r not in ROUTINGS:
            raise UsageError(f"--routing: {r!r} is not one of {', '.join(ROUTINGS)}")
        if r == "best-cache" and (why := best_cache_problem(sc.sim)) is not None:
            raise UsageError(f"--routing: {why}")
    prices_kw = {n: parse_flag(f"--price: {n}", number, v, a_price)
                 for n, v in _pairs("--price", args.price).items()}
    per_tb = {n: parse_flag(f"--price-per-tb: {n}", number, v, a_price_or_free)
              for n, v in _pairs("--price-per-tb", args.price_per_tb).items()}
    try:
        prices = Prices.of(topo, prices_kw, per_tb)
    except PlanInputError as exc:
        raise UsageError(str(exc)) from None
    space = TopologySpace(sites, links, routings,
                          _topology_connections(args.connections, topo, links))
    seeds, steps = _count("--seeds", args.seeds, 1), _count("--steps", args.steps, 1)
    settings = Settings(_slo(args), tuple(range(1, seeds + 1)),
                        parse_flag("--duration", parse_duration, args.duration, positive), steps)
    try:  # each candidate is a routing bound and a policy search before its emulations
        n = budget.check("candidates", space.size(topo),
                         "--site x --link x --connections x --routing", caps)
        budget.check("runs", budget.plan_runs(int(n) + 1, seeds, steps),
                     "--seeds x --steps x the candidates (and the shipped deployment)", caps)
    except budget.BudgetError as exc:
        raise UsageError(str(exc)) from None
    return Plan(sc, space, settings, prices=prices)


def main(args: argparse.Namespace) -> int:
    sc = pair_if_asked(args, presets.load(args.preset, topology=True))
    topology = sc.declared_topology is not None
    refuse_other_kind(args, topology)
    plan = build_topology_plan(args, sc) if topology else build_plan(args, sc)
    if (why := tpot_unmeetable(plan.scenario, plan.settings.slo)) is not None:
        raise UsageError(why)
    workers = _count("--workers", args.workers, 1) or os.cpu_count() or 1
    top = _count("--top", args.top, 0)
    _check_files(args, plan)  # every input is checked before a warning is printed
    if not topology:
        if (why := too_short(plan.scenario, plan.settings.duration)) is not None:
            print(f"prfaas-tui plan: warning: --duration: {why}", file=sys.stderr)
        if (why := unmeetable(plan.scenario, plan.settings.slo)) is not None:
            print(f"prfaas-tui plan: warning: {why}", file=sys.stderr)
    if topology:  # its --out is the summary, written at the end (no resume)
        return _sweep(args, plan, args.out, workers, top)
    with tempfile.TemporaryDirectory(prefix="prfaas-plan-") as tmp:
        # without --out the results live only as long as the command: nothing is left behind
        out = args.out or str(Path(tmp) / f"plan-{plan.scenario.name}.jsonl")
        return _sweep(args, plan, out, workers, top)


def _check_files(args: argparse.Namespace, plan: Plan) -> None:
    """--out and --csv before any work: writable, and a pair's --out that holds results this
    plan's (a sweep resumes it); one line naming the flag otherwise."""
    try:
        if args.out is not None:
            if plan.is_topology:
                check_writable(args.out, "--out")
            else:
                check_resume(args.out, header(plan), "--out")
        if args.csv:
            check_writable(args.csv, "--csv")
    except OtherPlan as exc:
        raise UsageError(other_plan_message(exc)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _sweep(args: argparse.Namespace, plan: Plan, out: str | None, workers: int, top: int) -> int:
    err = make_console(stderr=True)
    progress = Progress(TextColumn("plan"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("ETA"), TimeRemainingColumn(), console=err,
                        disable=not sys.stderr.isatty())
    task = None

    def on_start(total: int, done: int) -> None:
        nonlocal task
        task = progress.add_task("plan", total=total, completed=done)

    try:  # --out and --csv were checked before any work (`_check_files`)
        with progress:
            summary = run_plan(plan, out=None if plan.is_topology else out, workers=workers,
                               dask=args.dask, on_start=on_start,
                               on_result=lambda rec: progress.advance(task))
    except OtherPlan as exc:
        raise UsageError(other_plan_message(exc)) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # Dask: no scheduler at the address (after the client's timeout)
        if args.dask is None:
            raise
        raise UsageError(f"--dask: cannot reach a Dask scheduler at {args.dask}: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if plan.is_topology and out is not None:
        try:
            Path(out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--out: cannot write {out}: {exc.strerror}") from None
    if args.csv:
        write_csv(summary["ranked"], args.csv)
    if args.json:
        print(json_out.dumps(summary, indent=2))
        return 0
    if plan.is_topology:
        render_topology(summary, make_console(), top, args.out)
        return 0
    render(summary, make_console(), top, args.out,
           zero_goodput_reasons(plan, summary["ranked"], top))
    return 0


# the results-file header's fields, as the flags that set them
HEADER_FLAGS = {"scenario": "--preset/--trace", "seeds": "--seeds", "duration": "--duration",
                "steps": "--steps", "per_config": "--per-config", "margin": "the pruning margin"}
SPACE_FLAGS = {"n_prfaas": "--n-prfaas", "pools": "--pool", "homogeneous_pools": "--homogeneous-pool",
               "thresholds": "--t", "bandwidths": "--bandwidth", "paradigms": "--paradigm",
               "connections": "--connections"}
SLO_FLAGS = {"ttft_p90": "--slo-ttft", "tpot_p90": "--slo-tpot"}


def _space_fields(text: object) -> dict[str, str]:
    """Space(n_prfaas=(2, 3), pools=...) -> {"n_prfaas": "(2, 3)", ...}."""
    return dict(re.findall(r"(\w+)=(\(.*?\))(?=, \w+=|\)$)", str(text)))


def changed_flags(exc: OtherPlan) -> list[str]:
    """The flags whose values differ between the file's plan and this one."""
    flags: list[str] = []
    for key in exc.differs:
        old, new = exc.theirs.get(key), exc.ours.get(key)
        if key == "space":
            a, b = _space_fields(old), _space_fields(new)
            flags += [SPACE_FLAGS.get(k, k) for k in SPACE_FLAGS | a | b if a.get(k) != b.get(k)]
        elif key == "slo" and isinstance(old, dict) and isinstance(new, dict):
            flags += [SLO_FLAGS.get(k, k) for k in SLO_FLAGS | old | new if old.get(k) != new.get(k)]
        else:
            flags.append(HEADER_FLAGS.get(key, key))
    return flags or ["the plan's settings"]


def free_name(path: Path) -> Path:
    """plan.jsonl -> plan-2.jsonl (-3, ... when taken)."""
    stem, suffix = (path.name[:-len(".jsonl")], ".jsonl") if path.name.endswith(".jsonl") \
        else (path.stem, path.suffix)
    n = 2
    while (cand := path.with_name(f"{stem}-{n}{suffix}")).exists():
        n += 1
    return cand


def other_plan_message(exc: OtherPlan) -> str:
    return (f"--out {exc.path}: holds the results of another plan (its {', '.join(changed_flags(exc))} "
            f"differ from this command's); write this plan to another file, e.g. "
            f"--out {free_name(exc.path)}, or delete {exc.path.name} to start over")


def zero_goodput_reasons(plan: Plan, ranked: list[dict], top: int) -> list[str]:
    """Why each candidate at goodput 0 got it: the failing probe at the lowest rate tried (up to
    `top`, the rest counted), and one line per paradigm whose every candidate is below the SLO
    even at zero load."""
    from emulator.planner.bound import zero_load_p90

    zeros = [r for r in ranked if r["goodput"] <= 0]
    lines = []
    for r in zeros[:top]:
        fail = r.get("fails_at")
        lines.append(f"{r['label']}: goodput 0: " + (
            f"at {fail['rate']:.3g} req/s (the lowest rate tried) {fail['why']}" if fail else
            "no rate tried met the SLO"))
    if len(zeros) > top:
        lines.append(f"... and {len(zeros) - top} more at goodput 0 (--json gives each reason)")
    by: dict[str, list[dict]] = {}
    for r in ranked:
        by.setdefault(r["candidate"]["paradigm"], []).append(r)
    slo = plan.settings.slo.ttft_p90
    for paradigm, recs in by.items():
        if any(r["goodput"] > 0 for r in recs):
            continue
        floor = min(zero_load_p90(plan.scenario, Candidate.of(r["candidate"]),
                                  r["candidate"]["t"]) for r in recs)
        if floor > slo:
            lines.append(f"{paradigm}: goodput 0 for all {len(recs)}: its P90 TTFT is "
                         f"{floor:.2f} s or more even at zero load (the prefill of its longest "
                         f"requests), above --slo-ttft {slo:g} s")
    return lines


CSV_FIELDS = ("label", "goodput", "goodput_lo", "goodput_hi", "lambda_max", "utilization",
              "cost_per_hour", "goodput_per_cost", "binding", "bandwidth_gbps", "key")
TOPOLOGY_CSV_FIELDS = ("label", "goodput", "goodput_lo", "goodput_hi", "bound", "utilization",
                       "cost_per_hour", "goodput_per_cost", "binding", "key")


def write_csv(records: list[dict], path: str) -> None:
    """The ranked records, a pair's or a topology's (what binds joined by spaces)."""
    topology = bool(records) and "bound" in records[0]
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=TOPOLOGY_CSV_FIELDS if topology else CSV_FIELDS,
                           extrasaction="ignore")
        w.writeheader()
        w.writerows({**r, "binding": " ".join(r["binding"])} if topology else r
                    for r in records)


def render(summary: dict, console: Console, top: int, out: str | None,
           why_zero: Sequence[str] = ()) -> None:
    console.print(f"{summary['candidates']} candidates; the model pruned {summary['pruned']} "
                  f"({summary['pruned'] / max(summary['candidates'], 1):.0%}: "
                  + ", ".join(f"{v} {k}" for k, v in summary["pruned_by"].items())
                  + f"); emulated {summary['emulated']} ({summary['evaluated_now']} now)"
                  + (f", skipped {summary['skipped_by_slo_bound']} the model's SLO bound shows "
                     "cannot be best or on the front" if summary.get("skipped_by_slo_bound") else "")
                  + (f", stopped {summary['stopped_early']} whose first probes showed a cheaper "
                     "finished candidate beats them" if summary.get("stopped_early") else "")
                  + (f". Results: {out}" if out else
                     ". Results not kept: --out FILE keeps them (and resumes)"))
    served = [r for r in summary["ranked"] if r["goodput"] > 0]
    if not served:
        console.print("no candidate met the SLO at any rate tried: no best candidate; why, "
                      "per candidate:")
    t = Table(title="best candidates by SLO goodput", title_justify="left")
    for col in ("candidate", "goodput (req/s)", "95% band", "Λmax", "util", "cost/h", "per $/h"):
        t.add_column(col, justify="left" if col == "candidate" else "right")
    for r in served[:top]:
        t.add_row(r["label"], f"{r['goodput']:.3f}", f"{r['goodput_lo']:.2f}-{r['goodput_hi']:.2f}",
                  f"{r['lambda_max']:.2f}", f"{r['utilization']:.0%}",
                  "-" if r["cost_per_hour"] is None else f"{r['cost_per_hour']:.1f}",
                  "-" if r["goodput_per_cost"] is None else f"{r['goodput_per_cost']:.3f}")
    if served:
        console.print(t)
    for line in why_zero:
        console.print(line, markup=False, highlight=False)
    front = summary["pareto"]
    if front:
        import plotext as plt
        plt.clear_figure()
        plt.plotsize(min(console.width, 100), 18)
        allr = summary["ranked"]
        plt.scatter([r["cost_per_hour"] for r in allr if r["cost_per_hour"] is not None],
                    [r["goodput"] for r in allr if r["cost_per_hour"] is not None], label="candidates")
        plt.plot([r["cost_per_hour"] for r in front], [r["goodput"] for r in front],
                 label="Pareto front", marker="dot")
        plt.xlabel("cost per hour")
        plt.ylabel("SLO goodput (req/s)")
        plt.title("cost / goodput")
        # parsed as styled text, so rich measures it and drops the colours where the output
        # is not a terminal (a file, a pipe): no escape bytes there
        console.print(Text.from_ansi(plt.build()), highlight=False)


def render_topology(summary: dict, console: Console, top: int, out: str | None) -> None:
    """A topology plan: the shipped deployment, the best at its cost or less, the front."""
    sh = summary["shipped"]
    console.print(f"{summary['candidates']} candidates; the routing bound pruned "
                  f"{summary['pruned_by_bound']}; emulated {summary['emulated']}. "
                  + (f"Results: {out}" if out else "Results not kept: --out FILE keeps them"))
    console.print(f"shipped: {sh['label']}: SLO goodput {sh['goodput']:.3f} req/s (bound "
                  f"{sh['bound']:.3f}) at {sh['cost_per_hour']:.2f}/h", markup=False)
    for r in [sh, *summary["ranked"]][:top + 1]:
        if r["goodput"] <= 0 and (fail := r.get("fails_at")):
            console.print(f"{r['label']}: goodput 0: at {fail['rate']:.3g} req/s (the lowest "
                          f"rate tried) {fail['why']}", markup=False, highlight=False)
    best = summary["best_within_shipped_cost"]
    if best is not None:
        console.print(f"best at the shipped cost or less: {best['label']}: {best['goodput']:.3f}"
                      f" req/s at {best['cost_per_hour']:.2f}/h "
                      f"({best['goodput'] / sh['goodput'] - 1:+.1%} goodput, "
                      f"{best['cost_per_hour'] - sh['cost_per_hour']:+.2f}/h)"
                      if sh["goodput"] > 0 else f"best at the shipped cost or less: "
                      f"{best['label']}")
    t = Table(title="cost/goodput Pareto front (each the best candidate at its budget)",
              title_justify="left")
    for col in ("candidate", "cost/h", "goodput (req/s)", "bound", "binds"):
        t.add_column(col, justify="left" if col in ("candidate", "binds") else "right")
    for r in summary["pareto"][:top]:
        t.add_row(r["label"], f"{r['cost_per_hour']:.2f}", f"{r['goodput']:.3f}",
                  f"{r['bound']:.3f}", ", ".join(r["binding"]))
    console.print(t)
