"""`prfaas-tui plan` on a topology preset: PrfaaS instances per site, bandwidth per link and
the routing policy, pruned by the routing bound and checked by emulation
(emulator/planner/topology_plan.py). Flags: --site NAME=LIST, --link SITE->REGION=LIST (Gbps),
--routing LIST, --price NAME=X (per instance-hour), --price-per-tb LINK=X."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from rich.console import Console
from rich.table import Table

from emulator import budget
from emulator.planner.goodput import SLO
from emulator.planner.store import check_writable
from emulator.planner.topology_plan import (
    Prices,
    TopologyPlanError,
    TopologySettings,
    TopologySpace,
    plan_topology,
)
from emulator.scenario.knobs import KNOBS, KnobError, best_cache_problem
from emulator.scenario.reader import positive
from emulator.topology.spec import ROUTINGS
from emulator.units import parse_duration
from prfaas_tui.commands.common import caps_from_args
from prfaas_tui.errors import UsageError, parse_flag

PAIR_ONLY = (("n_prfaas", "--n-prfaas"), ("pool", "--pool"),
             ("homogeneous_pool", "--homogeneous-pool"), ("bandwidth", "--bandwidth"))


def add_topology_flags(p: argparse.ArgumentParser) -> None:
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


def _pairs(flag: str, items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items or ():
        name, sep, value = it.rpartition("=")
        if not sep or not name or not value:
            raise UsageError(f"{flag}: expected NAME=VALUE, got {it!r}")
        if name in out:
            raise UsageError(f"{flag}: {name} given twice")
        out[name] = value
    return out


def _ints(flag: str, name: str, text: str) -> tuple[int, ...]:
    try:
        if ":" in text:
            a, b = (int(x) for x in text.split(":", 1))
            vals = tuple(range(a, b + 1))
        else:
            vals = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"{flag}: {name}: expected a range like 6:10 or a list like 6,8, got "
                         f"{text!r}") from None
    if not vals or min(vals) < 0:
        raise UsageError(f"{flag}: {name}: values must be >= 0 and the range non-empty")
    return vals


def _floats(flag: str, name: str, text: str, *, positive_only: bool = True) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"{flag}: {name}: expected numbers like 20,40, got {text!r}") from None
    if any(not (v > 0 if positive_only else v >= 0) or v != v or v == float("inf")
           for v in vals):
        raise UsageError(f"{flag}: {name}: every value must be a finite number "
                         f"{'> 0' if positive_only else '>= 0'}, got {text!r}")
    return vals


def build(args: argparse.Namespace, sc) -> tuple[TopologySpace, Prices, TopologySettings]:
    topo = sc.declared_topology
    for attr, flag in PAIR_ONLY:
        if getattr(args, attr, None) is not None:
            raise UsageError(f"{flag}: a single-pair flag; on a topology use --site, --link "
                             "and --routing")
    if args.t != "auto":
        raise UsageError("--t: on a topology the planner runs each candidate's best "
                         "thresholds (or the bound's routing)")
    sites = {}
    for name, text in _pairs("--site", args.site).items():
        if name not in {s.name for s in topo.sites}:
            raise UsageError(f"--site: no site named {name!r} (sites: "
                             f"{', '.join(s.name for s in topo.sites)})")
        sites[name] = _ints("--site", name, text)
    links = {}
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
    prices_kw = {n: _floats("--price", n, v)[0] for n, v in _pairs("--price", args.price).items()}
    per_tb = {n: _floats("--price-per-tb", n, v, positive_only=False)[0]
              for n, v in _pairs("--price-per-tb", args.price_per_tb).items()}
    try:
        prices = Prices.of(topo, prices_kw, per_tb)
    except TopologyPlanError as exc:
        raise UsageError(str(exc)) from None
    space = TopologySpace(sites, links, routings)
    seeds = parse_flag("--seeds", int, args.seeds, lambda n: None if n >= 1 else "must be >= 1")
    steps = parse_flag("--steps", int, args.steps, lambda n: None if n >= 1 else "must be >= 1")
    settings = TopologySettings(
        SLO(parse_flag("--slo-ttft", parse_duration, args.slo_ttft, positive)),
        tuple(range(1, seeds + 1)),
        parse_flag("--duration", parse_duration, args.duration, positive), steps)
    caps = caps_from_args(args)
    try:
        budget.check_instances({f"--site {n}": max(v) for n, v in sites.items()}, caps)
        budget.check("candidates", space.size(topo), "--site x --link x --routing", caps)
    except budget.BudgetError as exc:
        raise UsageError(str(exc)) from None
    return space, prices, settings


def main(args: argparse.Namespace, sc) -> int:
    space, prices, settings = build(args, sc)
    workers = parse_flag("--workers", int, args.workers, lambda n: None if n >= 1 else
                         "must be >= 1") if args.workers else (os.cpu_count() or 1)
    out = args.out or f"plan-{sc.name}.json"
    check_writable(out, "--out")
    summary = plan_topology(sc, space, prices, settings, workers=workers, dask=args.dask)
    try:
        Path(out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--out: cannot write {out}: {exc.strerror}") from None
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    render(summary, Console(), int(args.top), out)
    return 0


def render(summary: dict, console: Console, top: int, out: str) -> None:
    sh = summary["shipped"]
    console.print(f"{summary['candidates']} candidates; the routing bound pruned "
                  f"{summary['pruned_by_bound']}; emulated {summary['emulated']}. "
                  f"Results: {out}")
    console.print(f"shipped: {sh['label']}: SLO goodput {sh['goodput']:.3f} req/s (bound "
                  f"{sh['bound']:.3f}) at {sh['cost_per_hour']:.2f}/h")
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
