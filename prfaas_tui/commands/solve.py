"""`prfaas-tui solve`: the closed-form model at an operating point, its optimum and the three
paradigms, as a rich table or as the JSON contract of shared/design/architecture.md."""

from __future__ import annotations

import argparse
import json
import math

from rich.console import Console
from rich.table import Table

from emulator.model import MODES, STAGES, evaluate
from emulator.optimizer import paradigms, search
from emulator.units import format_tokens
from prfaas_tui.commands.common import (
    add_budget_flags,
    add_scenario_flags,
    caps_from_args,
    check_scenario_instances,
    scenario_from_args,
)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("solve", help="evaluate the throughput model (Eqs. 1-8) and its optimum")
    add_scenario_flags(p)
    p.add_argument("--mode", choices=MODES, default=None,
                   help="paper: profiles at conditional mean lengths (default, the paper's "
                        "linearization); exact: conditional expectations of the profiles")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_budget_flags(p, ("instances",))
    return p


def solve(args: argparse.Namespace) -> dict:
    sc = scenario_from_args(args)
    check_scenario_instances(sc, caps_from_args(args))  # the search walks every split of the pool
    mode = args.mode or sc.mode
    op = evaluate(sc.system, sc.knobs, mode)
    found = search(sc.system, mode, n_prfaas=sc.system.n_prfaas, bandwidth=sc.system.bandwidth)
    return {
        "scenario": sc.name,
        "mode": mode,
        "operating_point": op.to_dict(),
        "optimum": found.best.to_dict(),
        "paradigms": paradigms(sc.system, mode, found.best),
        "search": {"evaluated": found.evaluated, "thresholds": len(found.t_values),
                   "lambda_vs_np": [round(float(x), 6) for x in found.lambda_vs_np]},
    }


def main(args: argparse.Namespace) -> int:
    out = solve(args)
    if args.json:
        print(json.dumps(out, indent=2, allow_nan=False))
        return 0
    render(out, Console())
    return 0


def _f(x: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isinf(x)) else fmt.format(x)


def render(out: dict, console: Console) -> None:
    console.print(f"[bold]{out['scenario']}[/] (model mode: {out['mode']})")
    for title, d in (("operating point", out["operating_point"]), ("optimum", out["optimum"])):
        t = Table(title=f"{title}: t = {format_tokens(d['t'])} ({d['t']:.0f} tokens), "
                        f"N_prfaas/N_p/N_d = {d['n_prfaas']}/{d['n_p']}/{d['n_d']}, p = {d['p']:.3f}",
                  title_justify="left")
        t.add_column("stage")
        t.add_column("Theta (req/s)", justify="right")
        t.add_column("ceiling (req/s)", justify="right")
        t.add_column("")
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
            f"  Lambda_max = [bold]{d['lambda_max']:.3f}[/] req/s   egress {d['egress_gbps']:.2f} Gbps "
            f"of {d['bandwidth_gbps']:.1f} ({_f(d['link_utilization'], '{:.0%}')}), Eq. 2 demand "
            f"{d['egress_demand_gbps']:.2f} Gbps   Eq.7 residual {_f(d['eq7_residual'], '{:+.3f}')}   "
            f"Eq.8 residual {_f(d['eq8_residual'], '{:+.3f}')}")
    t = Table(title="paradigms on the same hardware", title_justify="left")
    for col in ("paradigm", "Lambda_max", "N_prfaas/N_p/N_d", "t", "vs homogeneous", "per cost vs homo"):
        t.add_column(col, justify="right" if col != "paradigm" else "left")
    for name, d in out["paradigms"].items():
        t.add_row(name, f"{d['lambda_max']:.3f}", f"{d['n_prfaas']}/{d['n_p']}/{d['n_d']}",
                  format_tokens(d["t"]) if name.threshold_routing else "-",
                  _f(d["vs_homogeneous"], "{:.2f}x"), _f(d["per_cost_vs_homogeneous"], "{:.2f}x"))
    console.print(t)

