"""`solve` on a topology: the routing bound, the best threshold policy and per-region TTFT as
tables per region, site and link (the JSON object `topology`)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from emulator import budget
from emulator.budget import Caps
from emulator.scenario.scenario import Scenario
from emulator.topology.answer import topology_answer
from emulator.units import format_tokens


def check_topology_instances(sc: Scenario, caps: Caps) -> None:
    """Every pool the policy search walks (a region's splits) and every site, under the caps."""
    topo = sc.topology
    budget.check_instances({**{f"region[{i}].pool ({r.name})": r.pool
                               for i, r in enumerate(topo.regions)},
                            **{f"site[{i}].instances ({s.name})": s.instances
                               for i, s in enumerate(topo.sites)}}, caps)


def answer(sc: Scenario, target: float | None, q: float) -> dict:
    return topology_answer(sc.topology, rate=sc.sim.rate, load=sc.sim.load,
                           rdma_latency=sc.sim.rdma_latency, target=target, q=q)


def _f(x: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if x is None else fmt.format(x)


def _binds(name: str, bound: dict, policy: dict) -> str:
    marks = [m for m, d in (("bound", bound), ("policy", policy)) if name in d["binding"]]
    return "[bold red]◀ " + ", ".join(marks) + "[/]" if marks else ""


def render(topo: dict, console: Console) -> None:
    b, pol = topo["bound"], topo["threshold_policy"]
    prices, util_b, util_p = b["shadow_prices"], b["utilization"], pol["utilization"]
    ttft = pol["ttft"]["regions"]
    t = Table(title=f"regions: the routing bound, Lambda = {b['lambda_max']:.3f} req/s",
              title_justify="left")
    for col in ("region", "share", "N_p/N_d", "remote", "PD-P", "PD-D", "+1 pool inst.", ""):
        t.add_column(col, justify="left" if col in ("region", "") else "right")
    for name, r in topo["regions"].items():
        t.add_row(name, f"{r['share']:.3f}", f"{b['n_p'][name]}/{b['n_d'][name]}",
                  f"{b['routing'][name]['remote_share']:.0%}",
                  _f(util_b.get(f"pd-p:{name}"), "{:.0%}"), _f(util_b.get(f"pd-d:{name}"), "{:.0%}"),
                  f"{prices[f'pool:{name}']:+.3f} req/s",
                  _binds(f"pd-p:{name}", b, {"binding": ()}) or
                  _binds(f"pd-d:{name}", b, {"binding": ()}))
    console.print(t)
    t = Table(title=f"regions: the best threshold policy, Lambda = {pol['lambda_max']:.3f} req/s "
                    f"(TTFT at {pol['ttft']['offered_rate']:.3f} req/s in total)",
              title_justify="left")
    rows = []
    for name in topo["regions"]:
        s, lat = pol["regions"][name], ttft[name]
        slo = (_f(lat["slo_rate"]),) if pol["ttft"]["target_s"] else ()
        rows.append((name, format_tokens(s["t"]), f"{s['n_p']}/{s['n_d']}", f"{s['p']:.2f}",
                     _f(util_p.get(f"pd-p:{name}"), "{:.0%}"),
                     _f(util_p.get(f"pd-d:{name}"), "{:.0%}"),
                     _f(lat["mean"], "{:.2f}"), _f(lat["p90"], "{:.2f}"), *slo,
                     _binds(f"pd-p:{name}", {"binding": ()}, pol) or
                     _binds(f"pd-d:{name}", {"binding": ()}, pol)))
    marks = any(r[-1] for r in rows)  # an empty 'binds' column costs 80-column room
    for col in ("region", "t", "N_p/N_d", "p", "PD-P", "PD-D", "TTFT s", "P90 s",
                *(("SLO rate",) if pol["ttft"]["target_s"] else ()), *(("",) if marks else ())):
        t.add_column(col, justify="left" if col in ("region", "") else "right")
    for r in rows:
        t.add_row(*(r if marks else r[:-1]))
    console.print(t)
    console.print("  utilization below: bound / policy")
    t = Table(title="sites", title_justify="left")
    for col in ("site", "instances", "compute", "egress", "+1 instance", "+1 Gbps egress", ""):
        t.add_column(col, justify="left" if col in ("site", "") else "right")
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
    for col in ("link", "Gbps", "RTT", "util", "+1 Gbps", ""):
        t.add_column(col, justify="left" if col in ("link", "") else "right")
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
                  f"bound {topo['gap']:.1%}; the preset's own settings: "
                  f"{topo['preset_policy']['lambda_max']:.3f} req/s")
    for reason in topo["gap_reasons"]:
        console.print(f"    - {reason}")
    console.print("  shadow prices: the LP's duals at the bound's split (held fixed): exact for "
                  "small changes; a +1% step is worth less where another constraint starts to "
                  "bind within it, and a change that moves the best split can be worth more")
