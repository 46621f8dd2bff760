"""`prfaas-tui solve`: the closed-form model of a preset, as rich tables or one JSON object.

Every preset is a topology (a single pair is the 1x1 one): the answer always carries the
`topology` object (the routing bound, the best threshold policy and per-region TTFT, as tables
per region, site and link); a single pair adds what describes one pair: the operating point,
its optimum and the three paradigms (`--json`: the same numbers as keys, plus the `topology` object of docs/topology.md)."""

from __future__ import annotations

import argparse
import math
import sys

from rich.console import Console
from rich.table import Table

from emulator import budget
from emulator.budget import Caps
from emulator.model import MODES, STAGES, Knobs, evaluate
from emulator.optimizer import paradigms, search
from emulator.scenario.reader import positive
from emulator.scenario.scenario import Scenario
from emulator.topology.answer import SMALL_GAP, topology_answer
from emulator.topology.load import load_warnings, no_local_prefill_warning, topology_load_warnings
from emulator.units import format_tokens, parse_duration
from prfaas_tui import json_out
from prfaas_tui.commands.common import (
    add_budget_flags,
    add_scenario_flags,
    as_the_pair,
    caps_from_args,
    check_scenario_instances,
    scenario_from_args,
)
from prfaas_tui.commands.trace_flags import add_trace_flags, with_workload, workload_from_args
from prfaas_tui.console import make_console
from prfaas_tui.errors import UsageError, parse_flag

OBJECTIVES = ("lambda", "slo")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("solve", help="evaluate the throughput model (Eqs. 1-8) and its optimum")
    add_scenario_flags(p)
    p.add_argument("--mode", choices=MODES, default=None,
                   help="paper: profiles at conditional mean lengths (default, the paper's "
                        "linearization); exact: conditional expectations of the profiles")
    p.add_argument("--slo-ttft", metavar="DURATION",
                   help="TTFT target, e.g. 6s: adds the predicted TTFT, the SLO-bound rate and "
                        "the SLO-optimal (t, N_p/N_d) (object `slo`)")
    p.add_argument("--slo-quantile", metavar="Q", help="TTFT quantile the target bounds (default 0.9)")
    p.add_argument("--objective", default=None, metavar="|".join(OBJECTIVES),
                   help="what `optimum` maximizes: lambda (Lambda_max, default) or slo (the "
                        "SLO-bound rate; needs --slo-ttft)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_budget_flags(p, ("instances",))
    add_trace_flags(p)
    return p


def _quantile(x: float) -> str | None:
    return None if 0 < x < 1 else "must lie strictly between 0 and 1"


def slo_flags(args: argparse.Namespace) -> tuple[float | None, float, str]:
    """(--slo-ttft seconds or None, --slo-quantile, --objective), each checked with the error
    naming its flag."""
    target = parse_flag("--slo-ttft", parse_duration, getattr(args, "slo_ttft", None), positive)
    q = parse_flag("--slo-quantile", float, getattr(args, "slo_quantile", None), _quantile)
    objective = getattr(args, "objective", None)
    objective = "lambda" if objective is None else objective  # "" is a value, and refused
    if objective not in OBJECTIVES:
        raise UsageError(f"--objective: must be one of {', '.join(OBJECTIVES)} (got {objective!r})")
    if target is None and (q is not None or objective == "slo"):
        flag = "--slo-quantile" if q is not None else "--objective"
        raise UsageError(f"{flag}: needs --slo-ttft (the TTFT target)")
    return target, 0.9 if q is None else q, objective


def slo_section(sc, target: float, q: float) -> tuple[dict, Knobs]:
    """The `slo` object: predicted TTFT at the operating point's offered rate, its SLO-bound
    rate and the (t, split) that maximizes that rate; plus the SLO-optimal knobs."""
    from emulator.latency import ExactStats, layout_at, predict, slo_rate, slo_search

    s = sc.system
    lat = {"link_latency": sc.sim.link_latency, "rdma_latency": sc.sim.rdma_latency}
    # the operating point's exact split stats come with the search's, in one call
    stats = ExactStats(s)
    stats.want(sc.knobs.t)
    opt = slo_search(s, target, q, stats=stats, **lat)
    # one layout of the operating point for the prediction and its SLO-bound rate; its
    # Lambda_max is the exact-mode one (the same split stats and ceilings as `evaluate`)
    lay, lam_exact = layout_at(s, sc.knobs, stats=stats, **lat)
    offered = sc.sim.rate if sc.sim.rate is not None else sc.sim.load * lam_exact
    pred = predict(s, sc.knobs, offered, layout=lay, **lat)
    knobs = Knobs(t=opt.t, n_p=opt.n_p, n_d=opt.n_d, n_prfaas=s.n_prfaas, bandwidth=s.bandwidth)
    d = pred.to_dict()
    return {
        "target_s": target, "quantile": q,
        "rate": slo_rate(s, sc.knobs, target, q, layout=(lay, lam_exact), **lat),
        "lambda_max_exact": lam_exact,
        "ttft": {"offered_rate": offered, "mean": d["mean"], "p50": d["p50"], "p90": d["p90"],
                 "paths": d["paths"]},
        # an SLO nothing meets names no optimum: there is no point that serves it
        "optimum": {"t": opt.t, "n_p": opt.n_p, "n_d": opt.n_d, "rate": opt.rate}
        if opt.rate > 0 else None,
        "tail_approximation": "Allen-Cunneen M/G/c mean wait, exponential beyond P(wait) = "
                              "Erlang C, exact service-time distribution",
    }, knobs


def solve(args: argparse.Namespace) -> dict:
    """The answer for the preset of `args`: `scenario`, `mode`, the single pair's objects (none
    on a declared topology) and `topology`."""
    sc = scenario_from_args(args, topology=True)
    if getattr(args, "trace", None):  # a declared 1x1 takes the pair's trace as the pair
        topo = sc.declared_topology
        if topo is not None and topo.is_pair:
            sc = as_the_pair(sc, "--trace", "")
    pair = sc.declared_topology is None
    if not pair:
        for flag in ("trace", "columns"):
            if getattr(args, flag, None):
                raise UsageError(f"--{flag}: a topology of {len(sc.topology.regions)} regions "
                                 "takes its workload per region ([region.workload]; a 1x1 "
                                 "topology takes --trace as the pair)")
    elif getattr(args, "columns", None) and not getattr(args, "trace", None):
        raise UsageError("--columns: needs --trace FILE")
    wl = workload_from_args(args, sc) if pair else None
    if wl is not None:
        sc = with_workload(sc, wl)
    caps = caps_from_args(args)
    if pair:
        check_scenario_instances(sc, caps)  # the search walks every split of the pool
    target, q, objective = slo_flags(args)
    if not pair and objective == "slo":
        raise UsageError("--objective: slo is for single-pair presets (a topology reports each "
                         "region's SLO-bound rate with --slo-ttft)")
    if not pair:
        check_topology_instances(sc, caps)
    # the pair's model runs in the preset's mode (or --mode); the topology's in exact mode
    out: dict = {"scenario": sc.name, "mode": (args.mode or sc.mode) if pair else "exact"}
    warnings: list[str] = []
    if pair:
        out |= _pair(sc, out["mode"], wl, target, q, objective, warnings)
    out["topology"] = answer(sc, target, q)  # a single pair: the 1x1 topology beside the rest
    if not pair:
        warnings += _topology_load(sc, out["topology"])
    if warnings:
        out["warnings"] = warnings
    return out


def _pair(sc: Scenario, mode: str, wl, target: float | None, q: float, objective: str,
          warnings: list[str]) -> dict:
    """What describes a single pair: its operating point, the optimum, the paradigms and the
    search; with a trace its utilization, with --slo-ttft the `slo` object."""
    op = evaluate(sc.system, sc.knobs, mode)
    found = search(sc.system, mode, n_prfaas=sc.system.n_prfaas, bandwidth=sc.system.bandwidth)
    best = found.best
    slo = None
    if target is not None:
        slo, knobs = slo_section(sc, target, q)
        if slo["optimum"] is None:
            warnings.append(f"--slo-ttft: no threshold and split meets P{q * 100:g} TTFT <= "
                            f"{target:g} s at any rate > 0 (the predicted quantile is over the "
                            "target even with no queueing); no SLO optimum"
                            + ("; `optimum` is the Lambda_max one" if objective == "slo" else ""))
            objective = "lambda" if objective == "slo" else objective
        if objective == "slo":
            best = evaluate(sc.system, knobs, mode)
    if sc.sim.rate is not None:  # a load is a share of Lambda_max: never over it
        warnings += load_warnings(sc.sim.rate, op.lambda_max,
                                  f"the operating point's Lambda_max ({mode} mode)")
    if (risk := no_local_prefill_warning(best.knobs.n_p, sc.path or sc.name)) is not None:
        warnings.append(risk)
    out = {
        "operating_point": op.to_dict(),
        "optimum": best.to_dict(),
        "paradigms": paradigms(sc.system, mode, found.best),
        "search": {"evaluated": found.evaluated, "thresholds": len(found.t_values),
                   "lambda_vs_np": [round(float(x), 6) for x in found.lambda_vs_np]},
    }
    if wl is not None:
        lam = found.best.lambda_max
        out["trace"] = {**wl.to_dict(), "utilization_at_optimum":
                        wl.rate / lam if lam > 0 and wl.rate is not None else None}
    if slo is not None:
        out["objective"] = objective
        out["slo"] = slo
    return out


def _topology_load(sc: Scenario, topo: dict) -> list[str]:
    """The rate a run of the preset offers (its rate, or its load x the routing bound) against
    what the preset's own policy serves, overall and per region (the routing bound for a
    routing other than threshold)."""
    bound = topo["bound"]["lambda_max"]
    offered = sc.sim.rate if sc.sim.rate is not None else sc.sim.load * bound
    if sc.topology.routing == "threshold":
        return topology_load_warnings(sc.topology, offered)
    return load_warnings(offered, bound, "the routing bound")


def check_topology_instances(sc: Scenario, caps: Caps) -> None:
    """Every pool the policy search walks (a region's splits) and every site, under the caps."""
    topo = sc.topology
    budget.check_instances({**{f"region[{i}].pool ({r.name})": r.pool
                               for i, r in enumerate(topo.regions)},
                            **{f"site[{i}].instances ({s.name})": s.instances
                               for i, s in enumerate(topo.sites)}}, caps)


def answer(sc: Scenario, target: float | None, q: float) -> dict:
    """The `topology` object: the routing bound, the best threshold policy, per-region TTFT."""
    return topology_answer(sc.topology, rate=sc.sim.rate, load=sc.sim.load,
                           rdma_latency=sc.sim.rdma_latency, target=target, q=q)


def main(args: argparse.Namespace) -> int:
    out = solve(args)
    for line in out.get("warnings", ()):
        print(f"prfaas-tui solve: warning: {line}", file=sys.stderr)
    if args.json:
        print(json_out.dumps(out, indent=2))
        return 0
    console = make_console()
    if "operating_point" in out:
        render(out, console)
    else:
        console.print(f"[bold]{out['scenario']}[/] (a topology; the bound and the policy in "
                      "exact mode)")
    render_topology(out["topology"], console)
    return 0


def gap_text(gap: float) -> str:
    """A gap to the bound as the reasons under it write it: to 0.001% when under 0.1% (where
    "0.0%" would hide what the reasons then quote), else to 0.1%."""
    return f"{gap:.3%}" if gap < SMALL_GAP else f"{gap:.1%}"


def _f(x: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isinf(x)) else fmt.format(x)


def _binds(name: str, bound: dict, policy: dict) -> str:
    marks = [m for m, d in (("bound", bound), ("policy", policy)) if name in d["binding"]]
    return "[bold red]◀ " + ", ".join(marks) + "[/]" if marks else ""


def render(out: dict, console: Console) -> None:
    console.print(f"[bold]{out['scenario']}[/] (model mode: {out['mode']})")
    if tr := out.get("trace"):
        util = tr["utilization_at_optimum"]
        rate = ("an undefined rate (one request, or all at one instant)" if tr["rate"] is None
                else f"{tr['rate']:.2f} req/s")
        console.print(f"workload from {tr['path']}: {tr['requests']} requests at {rate}, "
                      f"mean input {tr['mean_input']:.0f}"
                      f"{' (incremental, after prefix reuse)' if tr['incremental'] else ''}; "
                      f"utilization at the optimum {_f(util, '{:.0%}')}")
    for title, d in (("operating point", out["operating_point"]), ("optimum", out["optimum"])):
        t = Table(title=f"{title}: t = {format_tokens(d['t'])} tokens, "
                        f"N_prfaas/N_p/N_d = {d['n_prfaas']}/{d['n_p']}/{d['n_d']}, p = {d['p']:.3f}",
                  title_justify="left")
        t.add_column("stage")
        t.add_column("Theta (req/s)", justify="right")
        t.add_column("ceiling (req/s)", justify="right")
        t.add_column("note")  # what binds, and PrfaaS's two Θ terms
        theta = d["theta"]
        for s in STAGES:
            mark = "[bold red]◀ binds[/]" if s == d["binding"] else ""
            extra = ""
            if s == "prfaas":
                extra = (f"  compute {_f(theta['prfaas_compute'])}, bandwidth "
                         f"{_f(theta['prfaas_bandwidth'])} ({d['prfaas_term']}-bound)")
            t.add_row(s, _f(theta[s]), _f(d["ceilings"][s]), mark + extra)
        console.print(t)
        console.print(
            f"  Lambda_max = [bold]{d['lambda_max']:.3f}[/] req/s ({out['mode']} mode)   egress {d['egress_gbps']:.2f} Gbps "
            f"of {d['bandwidth_gbps']:.1f} ({_f(d['link_utilization'], '{:.0%}')}), Eq. 2 demand "
            f"{d['egress_demand_gbps']:.2f} Gbps   Eq.7 residual {_f(d['eq7_residual'], '{:+.3f}')}   "
            f"Eq.8 residual {_f(d['eq8_residual'], '{:+.3f}')}")
    t = Table(title=f"paradigms on the same hardware ({out['mode']} mode)", title_justify="left")
    for col in ("paradigm", "Lambda_max", "N_prfaas/N_p/N_d", "t", "vs homogeneous", "per cost vs homo"):
        t.add_column(col, justify="right" if col != "paradigm" else "left")
    for name, d in out["paradigms"].items():
        t.add_row(name, f"{d['lambda_max']:.3f}", f"{d['n_prfaas']}/{d['n_p']}/{d['n_d']}",
                  format_tokens(d["t"]) if name.threshold_routing else "-",
                  _f(d["vs_homogeneous"], "{:.2f}x"), _f(d["per_cost_vs_homogeneous"], "{:.2f}x"))
    console.print(t)
    if "slo" in out:
        d = out["slo"]
        tt, o = d["ttft"], d["optimum"]
        console.print(
            f"  TTFT at the offered {tt['offered_rate']:.3f} req/s: mean {_f(tt['mean'], '{:.2f}')} s, "
            f"P50 {_f(tt['p50'], '{:.2f}')} s, P90 {_f(tt['p90'], '{:.2f}')} s   SLO P{d['quantile'] * 100:g} "
            f"<= {d['target_s']:g} s "
            + (f"holds up to [bold]{d['rate']:.3f}[/] req/s here; " if d["rate"] > 0
               else "is missed at any rate here; ")
            + (f"best t = {format_tokens(o['t'])}, N_p/N_d = {o['n_p']}/{o['n_d']}: "
               f"{o['rate']:.3f} req/s" if o is not None else "no threshold and split meets it"))


def render_topology(topo: dict, console: Console) -> None:
    """The `topology` object as tables: regions (the bound, the policy), sites, links and
    what binds the bound."""
    b, pol = topo["bound"], topo["threshold_policy"]
    prices, util_b, util_p = b["shadow_prices"], b["utilization"], pol["utilization"]
    ttft = pol["ttft"]["regions"]
    t = Table(title=f"regions: the routing bound, Lambda = {b['lambda_max']:.3f} req/s (exact mode)",
              title_justify="left")
    for col in ("region", "share", "N_p/N_d", "remote", "PD-P", "PD-D", "+1 pool inst.", "binds"):
        t.add_column(col, justify="left" if col in ("region", "binds") else "right")
    for name, r in topo["regions"].items():
        t.add_row(name, f"{r['share']:.3f}", f"{b['n_p'][name]}/{b['n_d'][name]}",
                  f"{b['routing'][name]['remote_share']:.0%}",
                  _f(util_b.get(f"pd-p:{name}"), "{:.0%}"), _f(util_b.get(f"pd-d:{name}"), "{:.0%}"),
                  f"{prices[f'pool:{name}']:+.3f} req/s",
                  _binds(f"pd-p:{name}", b, {"binding": ()}) or
                  _binds(f"pd-d:{name}", b, {"binding": ()}))
    console.print(t)
    t = Table(title=f"regions: the best threshold policy, Lambda = {pol['lambda_max']:.3f} req/s "
                    f"(exact mode; TTFT at {pol['ttft']['offered_rate']:.3f} req/s in total)",
              title_justify="left")
    rows = []
    for name in topo["regions"]:
        s, lat = pol["regions"][name], ttft[name]
        slo = (_f(lat["slo_rate"]) if lat["slo_rate"] != 0 else "missed",) \
            if pol["ttft"]["target_s"] else ()  # 0 req/s is no point to name
        rows.append((name, format_tokens(s["t"]), f"{s['n_p']}/{s['n_d']}", f"{s['p']:.2f}",
                     _f(util_p.get(f"pd-p:{name}"), "{:.0%}"),
                     _f(util_p.get(f"pd-d:{name}"), "{:.0%}"),
                     _f(lat["mean"], "{:.2f}"), _f(lat["p90"], "{:.2f}"), *slo,
                     _binds(f"pd-p:{name}", {"binding": ()}, pol) or
                     _binds(f"pd-d:{name}", {"binding": ()}, pol)))
    marks = any(r[-1] for r in rows)  # an empty 'binds' column costs 80-column room
    for col in ("region", "t", "N_p/N_d", "p", "PD-P", "PD-D", "TTFT s", "P90 s",
                *(("SLO rate",) if pol["ttft"]["target_s"] else ()), *(("binds",) if marks else ())):
        t.add_column(col, justify="left" if col in ("region", "binds") else "right")
    for r in rows:
        t.add_row(*(r if marks else r[:-1]))
    console.print(t)
    console.print("  utilization below: bound / policy")
    t = Table(title="sites", title_justify="left")
    for col in ("site", "instances", "compute", "egress", "+1 instance", "+1 Gbps egress", "binds"):
        t.add_column(col, justify="left" if col in ("site", "binds") else "right")
    for name, s in topo["sites"].items():
        eg = f"egress:{name}"
        t.add_row(name, str(s["instances"]),
                  f"{_f(util_b.get(f'site:{name}'), '{:.0%}')} / {_f(util_p.get(f'site:{name}'), '{:.0%}')}",
                  "-" if eg not in util_b else
                  f"{_f(util_b.get(eg), '{:.0%}')} / {_f(util_p.get(eg), '{:.0%}')}",
                  f"{prices[f'site:{name}']:+.3f} req/s",
                  "-" if eg not in prices else f"{prices[eg]:+.4f} req/s",
                  _binds(f"site:{name}", b, pol) or _binds(eg, b, pol))
    console.print(t)
    t = Table(title="links", title_justify="left")
    for col in ("link", "Gbps", "RTT", "util", "+1 Gbps", "binds"):
        t.add_column(col, justify="left" if col in ("link", "binds") else "right")
    for name, k in topo["links"].items():
        row = f"link:{name}"
        t.add_row(name, f"{k['bandwidth_gbps']:.1f}", f"{k['rtt_s'] * 1000:.1f} ms",
                  f"{_f(util_b.get(row), '{:.0%}')} / {_f(util_p.get(row), '{:.0%}')}",
                  f"{prices[row]:+.4f} req/s", _binds(row, b, pol))
    console.print(t)
    t = Table(title="what binds the bound, and what more of it is worth", title_justify="left")
    for col in ("constraint", "shadow price", "a +1% step, re-solved"):
        t.add_column(col, justify="left" if col == "constraint" else "right")
    for name in b["binding"]:
        unit = "Gbps" if b["shadow_price_units"][name].endswith("Gbps") else "instance"
        plus = b["plus_1pct"].get(name)
        t.add_row(name, f"{prices[name]:+.4f} req/s per {unit}",
                  "-" if plus is None else f"{plus:+.4f} req/s per {unit}")
    console.print(t)
    lp = b["lp"]
    console.print(f"  routing bound (exact mode, MILP over the splits): [bold]{b['lambda_max']:.3f}"
                  f"[/] req/s; LP {lp['variables']} variables, {lp['constraints']} constraints, "
                  f"{lp['integers']} integers; binds: {', '.join(b['binding']) or '-'}")
    console.print(f"  best threshold policy: [bold]{pol['lambda_max']:.3f}[/] req/s, gap to the "
                  f"bound {gap_text(topo['gap'])}; the preset's own settings: "
                  f"{topo['preset_policy']['lambda_max']:.3f} req/s")
    for reason in topo["gap_reasons"]:
        console.print(f"    - {reason}")
    console.print("  shadow prices: the LP's duals at the bound's split (held fixed): exact for "
                  "small changes; a +1% step is worth less where another constraint starts to "
                  "bind within it, and a change that moves the best split can be worth more")
