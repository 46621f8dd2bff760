"""Stage 2 of the planner: SLO goodput by emulation, for a pair or a topology candidate.

SLO goodput is the highest offered rate at which P90 TTFT (and P90 TPOT, when set) stay within
the SLO and the deployment keeps up. It is found by bisection on the rate between 0 and the
candidate's ceiling (stage 1), separately for each seed; the spread across seeds is the
confidence band. Every run is an independent virtual-time emulation, so a candidate's result
depends only on its inputs — the same whichever worker, process or machine computes it.

Keeping up: a single pair serves >= 95% of what it was offered over the run; on a topology
every region rejects nothing and, over the run's second half, what it holds in flight grows by
less than 5% of its offered rate (served = offered in steady state, whatever the decode tail a
run ends with), and meets the TTFT target. A topology candidate runs the best threshold policy
of its hardware (`run_topology`); an `lp` one the routing bound's split and per-bin routing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from emulator.planner.prune import Scored, candidate_system
from emulator.planner.space import Candidate
from emulator.scenario.scenario import Scenario, check_knobs
from emulator.topology.spec import Topology

KEEPS_UP = 0.95
SHIPPED = "shipped"  # a topology plan's baseline record: the preset as written


@dataclass(frozen=True)
class SLO:
    ttft_p90: float  # seconds
    tpot_p90: float | None = None  # seconds per output token

    def met(self, ttft_p90: float | None, tpot_p90: float | None) -> bool:
        if ttft_p90 is None or not ttft_p90 <= self.ttft_p90:
            return False
        return self.tpot_p90 is None or (tpot_p90 is not None and tpot_p90 <= self.tpot_p90)


def too_short(sc: Scenario, duration: float) -> str | None:
    """Why no run of `duration` seconds can count as keeping up, or None. The requests that
    arrive in the last (decode time) seconds are still in flight at the end, so a run serves
    at most 1 - (l_out x t_decode) / duration of what it was offered: below KEEPS_UP every
    candidate gets goodput 0, silently."""
    dec = sc.system.decode
    latency = dec.l_out * dec.t_decode  # a lower bound of any request's time in the system
    if duration * (1 - KEEPS_UP) >= latency:
        return None
    need = latency / (1 - KEEPS_UP)
    share = 1 - latency / duration
    serves = (f"serves at most {share:.0%} of what it is offered (a request decodes for "
              f"{latency:.3g} s)" if share > 0 else "serves none of what it is offered (a "
              f"request decodes for {latency:.3g} s, longer than the run)")
    return (f"a run of {duration:g} s {serves}, under "
            f"the {KEEPS_UP:.0%} a candidate must serve: every goodput will be 0; use "
            f"--duration of at least {math.ceil(need)} s")


def unmeetable(sc: Scenario, slo: SLO) -> str | None:
    """Why no candidate can meet `slo` whatever its size, or None: a TTFT target below the
    fastest prefill of the shortest request, or a TPOT target below the fastest decode step (every
    output token takes one step: t_decode, or a stepped decode's at batch 1)."""
    s = sc.system
    lo = s.lengths.support[0]
    profiles = [p for p in (s.prfaas, s.local, s.homogeneous_profile) if p is not None]
    fastest = min(float(p.t_prefill(max(lo, 1.0))) for p in profiles)
    if slo.ttft_p90 < fastest:
        return (f"--slo-ttft: {slo.ttft_p90:g} s is below the fastest prefill ({fastest:.3g} s "
                f"for {lo:.0f} tokens): no candidate can meet it, every goodput will be 0")
    step = s.decode.t_decode if sc.sim.step is None else sc.sim.step.fastest(lo)
    if slo.tpot_p90 is not None and slo.tpot_p90 < step:
        what = (f"t_decode = {step:g} s" if sc.sim.step is None
                 else f"at batch 1 and {lo:.0f} tokens, {step:.3g} s")
        return (f"--slo-tpot: {slo.tpot_p90:g} s is below the decode step {what}: no candidate "
                "can meet it, every goodput will be 0")
    return None


@dataclass(frozen=True)
class Settings:
    slo: SLO
    seeds: tuple[int, ...] = (1, 2, 3)
    duration: float = 600.0  # simulated seconds per run
    steps: int = 7  # bisection steps: resolution Lambda_max / 2^steps


def candidate_scenario(sc: Scenario, s: Scored) -> Scenario:
    """The scenario the emulator runs for a scored candidate (AUTO_T already resolved)."""
    c = s.cand
    if not c.is_pair:
        return run_topology(sc, c.topology(sc.declared_topology))
    system = candidate_system(sc.system, c)
    t = s.t if math.isfinite(s.t) else system.lengths.support[1]
    out = replace(c.wired(sc), system=system, t=t, n_p=c.n_p, n_d=c.n_d,
                  name=f"{sc.name}:{c.label()}")
    check_knobs(out)
    return out


def quiet(sc: Scenario, duration: float) -> Scenario:
    """The scenario with no periodic samples within a run of `duration` (sample interval and
    window = the run). The SLO test reads whole-run totals and the TTFT/TPOT histograms; the
    samples feed only windows and time series (dashboard, drills), run as quiet timers that
    leave the order of the emulated events alone (core/loop.py: ties by creation order), so every
    figure the test reads is the same to the bit, at ~35-45% less CPU per probe (a sample per
    simulated second was as costly as the requests at these rates)."""
    every = max(duration, sc.sim.window, sc.sim.sample_interval)
    return replace(sc, sim=replace(sc.sim, sample_interval=every, window=every))


def run_topology(sc: Scenario, topo: Topology) -> Scenario:
    """The scenario the emulator runs for a topology: a threshold or best-bandwidth routing at
    the best threshold policy of its hardware; lp at the bound's."""
    from emulator.topology.bound import routing_bound
    from emulator.topology.policy import search_policy

    if topo.routing != "lp":
        point, _ = search_policy(topo, routing_bound(topo))
        regions = []
        links = []
        for r in topo.regions:
            s = point.settings[r.name]
            regions.append(replace(r, threshold=s.t, n_p=s.n_p, n_d=s.n_d))
        for k in topo.links:
            links.append(replace(k, long_share=point.settings[k.region].shares.get(k.site, 0.0)))
        topo = replace(topo, regions=tuple(regions), links=tuple(links))
    return replace(sc, declared_topology=topo, name=f"{sc.name}:{topo.routing}")


def probe(sc: Scenario, rate: float, seed: int, duration: float) -> dict:
    """One emulation at a (total) offered rate: the figures the SLO test reads, for the pair or
    per region."""
    from emulator.sim.engine import Emulation

    if sc.declared_topology is None:
        res = Emulation(quiet(sc, duration), seed=seed, rate=rate,
                        duration=duration).run().json  # measured figures: no model, no timing
        return {"rate": rate, "served_rate": res["served_rate"],
                "offered_rate": res["offered_rate"], "ttft_p90": res["ttft"]["p90"],
                "tpot_p90": (res.get("tpot") or {}).get("p90")}
    from emulator.sim.runtime.topology import topology_bound

    q = quiet(sc, duration)
    with Emulation(q, seed=seed, rate=rate, duration=duration, bound=topology_bound(q)) as emu:
        res = emu.run().json
    return {"regions": {name: {"offered": r["offered_rate"], "rejected": r["rejected"],
                               "growth": r["second_half"]["in_flight_growth"],
                               "ttft_p90": r["ttft"]["p90"]}
                        for name, r in res["regions"].items()}}


def ok(p: dict, slo: SLO) -> bool:
    """Whether one probe keeps up and meets the SLO (see the module's text)."""
    if "regions" in p:
        return all(r["rejected"] == 0 and r["growth"] <= (1 - KEEPS_UP) * r["offered"]
                   and slo.met(r["ttft_p90"], None) for r in p["regions"].values())
    keeps_up = p["offered_rate"] <= 0 or p["served_rate"] >= KEEPS_UP * p["offered_rate"]
    return keeps_up and slo.met(p["ttft_p90"], p["tpot_p90"])


def slo_goodput(base: Scenario, s: Scored, settings: Settings,
                beaten: Callable[[float], bool] | None = None) -> dict | None:
    """A scored candidate's SLO goodput: `bisect` between 0 and its ceiling (stage 1: the
    model's Lambda_max, or a topology's routing bound)."""
    return bisect(candidate_scenario(base, s), s.lambda_max, settings, beaten)


def bisect(sc: Scenario, hi0: float, settings: Settings,
           beaten: Callable[[float], bool] | None = None) -> dict | None:
    """Bisection per seed of `sc`'s offered rate between 0 and `hi0`.

    The seeds' bisections advance side by side: a probe depends only on its seed and rate, so
    the order changes no result. `beaten(bound)`: whether a goodput below `bound` can no longer
    matter (a finished candidate costing no more does better); after each probe it is asked
    with the mean of the seeds' current upper ends, above every goodput the bisection can
    still return (each seed ends below its upper end, and a floating mean is monotone), and
    the bisection stops with None when it holds."""
    n = len(settings.seeds)
    lo, hi = [0.0] * n, [hi0] * n
    runs = 0
    for _ in range(settings.steps):
        for i, seed in enumerate(settings.seeds):
            mid = 0.5 * (lo[i] + hi[i])
            runs += 1
            if ok(probe(sc, mid, seed, settings.duration), settings.slo):
                lo[i] = mid
            else:
                hi[i] = mid
                if beaten is not None and beaten(float(np.asarray(hi).mean())):
                    return None
    per_seed = lo
    arr = np.asarray(per_seed)
    mean = float(arr.mean())
    half = float(1.96 * arr.std(ddof=1) / math.sqrt(len(arr))) if len(arr) > 1 else 0.0
    return {"goodput": mean, "goodput_lo": max(mean - half, 0.0), "goodput_hi": mean + half,
            "per_seed": [float(x) for x in per_seed], "runs": runs,
            "utilization": mean / hi0 if hi0 > 0 else 0.0}


def scenario_from_record(base: Scenario, rec: dict) -> Scenario:
    """The scenario of one finished plan record (how the dashboard loads a candidate); a
    topology plan's shipped record is the preset itself."""
    if rec.get("key") == SHIPPED:
        return base
    cand = Candidate.of(rec["candidate"])
    if not cand.is_pair:
        out = run_topology(base, cand.topology(base.declared_topology))
        return replace(out, name=f"{base.name}:{rec['label']}")
    return candidate_scenario(base, Scored(cand, cand.t, rec["lambda_max"], (rec["binding"],),
                                           rec.get("cost_per_hour")))
