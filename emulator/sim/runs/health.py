"""What a run must say out loud: an offered rate over what its settings serve (overall and
per region, before it starts), too few of its arrivals served, and an offered rate far from its
target. Every command that runs an emulation (run, drill, snapshot) prints these lines as
warnings and adds them to its --json under "warnings".

Why: a run where 0 of N requests complete (a 1-byte KV budget, an output length past the
horizon, a rate far over capacity) otherwise ends with exit 0 and figures that look like an
answer; the reason is named so the user knows which input to change.
"""

from __future__ import annotations

import math

from emulator.sim.arrivals.workload import TraceSource
from emulator.sim.engine import Emulation
from emulator.topology.load import load_warnings, topology_load_warnings

MIN_SERVED_SHARE = 0.5  # below this share of arrivals completed, a run warns
OFFERED_FACTOR = 2.0  # arrivals beyond this factor of the rate's expectation are flagged
MIN_EXPECTED = 20.0  # ... when at least this many were expected (fewer: noise)


def overload_warnings(emu: Emulation) -> list[str]:
    """The offered rate against what the run's settings serve: a pair's Lambda_max (exact
    mode); a threshold-routed topology's own policy, overall and per region; any other routing
    its routing bound (what lp runs; no finer figure for a routing that decides per request)."""
    bounded = emu.scenario.sim.admission_bounded
    if emu.topology is None:
        return load_warnings(emu.workload.mean_rate, emu.model_point("exact").lambda_max,
                             "the model's Lambda_max (exact mode)", bounded=bounded)
    offered = emu.topology.rate
    topo = emu.scenario.declared_topology
    if emu.topology.routing == "threshold" and topo is not None:
        return topology_load_warnings(topo, offered, bounded)
    if emu.bound is None:
        return []
    return load_warnings(offered, emu.bound.lambda_max, "the routing bound", bounded=bounded)


def served_warnings(emu: Emulation) -> list[str]:
    """One line per problem of the run so far (normally at its end); [] when it is sound. A
    loss an incident set on a link that keeps no connections is one of them: one TCP
    connection then carries the link, a small fraction of its line rate."""
    out = [w for name, lk in emu.links.items() if (w := lk.lone_warning(name)) is not None]
    acc = emu.accounting
    wls = emu.workloads  # a topology: one per region, against the run's total
    replay = any(isinstance(wl.source, TraceSource) for wl in wls)  # it brings its arrivals
    expected = math.fsum(wl.expected() for wl in wls)
    if not replay and expected >= MIN_EXPECTED:
        ratio = acc.arrived / expected
        if not 1 / OFFERED_FACTOR <= ratio <= OFFERED_FACTOR:
            sim = emu.scenario.sim
            why = f"{sim.arrival} arrivals" + (f" with cv = {sim.cv:g}" if sim.arrival == "gamma"
                                               else "")
            out.append(f"offered rate: {why} brought {acc.arrived:,} requests where the target "
                       f"rate asks for {expected:,.0f} ({ratio:.3g}x): the run does not measure "
                       "the offered rate it was given")
    if acc.arrived == 0:
        out.append(f"nothing served: no request arrived in {emu.now:g} s (rate "
                   f"{math.fsum(wl.mean_rate for wl in wls):.3g} req/s x the horizon is under one request)")
        return out
    share = acc.completed / acc.arrived
    if share < MIN_SERVED_SHARE:
        out.append(f"nothing served: {acc.completed:,} of {acc.arrived:,} requests completed "
                   f"({share:.0%}, under {MIN_SERVED_SHARE:.0%}): {_why(emu)}")
    return out


def _why(emu: Emulation) -> str:
    """The most likely reason few requests finished: refusals (a budget or bound), a horizon
    shorter than one request's service, or an offered rate over capacity."""
    acc = emu.accounting
    if acc.rejected_total >= acc.in_flight:
        top = max(acc.rejected, key=acc.rejected.get)
        where = ("the decode KV budget ([decode] kv_budget) is below one request's KV"
                 if top == "kv-exceeds-decode-budget" else "an admission bound ([emulator] "
                 "max_queue / max_queue_seconds) turned them away")
        return f"{acc.rejected_total:,} refused ({top}): {where}"
    dec = emu.scenario.system.decode
    one = dec.l_out * dec.t_decode
    if one >= emu.now:
        return (f"the horizon: one request decodes for about {dec.l_out:g} x "
                f"{dec.t_decode * 1000:g} ms = {one:g} s, past the run's {emu.now:g} s "
                "(lengthen --duration or shorten decode.l_out)")
    lam = emu.model_point("exact").lambda_max
    rate = acc.arrived / emu.now if emu.now > 0 else math.inf  # what arrived, not the target
    if acc.arrived >= MIN_EXPECTED and (not math.isfinite(lam) or rate > lam):  # fewer: noise
        return (f"the rate: {rate:.3g} req/s offered against a capacity (Lambda_max) of "
                f"{lam:.3g} req/s, so the queues only grow")
    return (f"the horizon: {acc.in_flight:,} still in flight when the run ended at "
            f"{emu.now:g} s (lengthen --duration)")
