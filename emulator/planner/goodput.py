"""Stage 2 of the planner: SLO goodput by emulation, for a pair or a topology candidate.

SLO goodput is the highest offered rate at which P90 TTFT (and P90 TPOT, when set) stay within
the SLO and the deployment keeps up. It is found by bisection on the rate between 0 and the
candidate's ceiling (stage 1), separately for each seed; the spread across seeds is the
confidence band. Every run is an independent virtual-time emulation, so a candidate's result
depends only on its inputs — the same whichever worker, process or machine computes it.

Keeping up is judged on what a run can show within its duration. A single pair finishes >= 95%
of its *due* requests: those that arrived early enough to finish, arrival + the TTFT target (at
most a tenth of the run) + their output tokens x the decode step (the TPOT target when set) <=
the run's end. Requests
still decoding when the run ends are not held against it, so the verdict does not depend on how
the last decode tail falls against the end, and a rate's pass or fail does not flip with the
rate. A deployment that falls behind leaves its due requests queued (and its P90 TTFT climbs).
On a topology every region rejects nothing and, over the run's second half, what it holds in
flight grows by less than 5% of its offered rate (served = offered in steady state, whatever
the decode tail a run ends with), and meets the TTFT target (and the TPOT target, when set,
with its own P90 TPOT: each region decodes on its own hardware). A topology candidate runs the best threshold policy
of its hardware (`run_topology`); an `lp` one the routing bound's split and per-bin routing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.model import DecodeSpec
from emulator.planner.prune import Scored, candidate_system
from emulator.planner.space import Candidate
from emulator.scenario.scenario import Scenario, check_knobs
from emulator.topology.spec import Topology

KEEPS_UP = 0.95
RULE = "due-95"  # the keeps-up rule's name, kept in a results file: no resume across rules
SHIPPED = "shipped"  # a topology plan's baseline record: the preset as written


@dataclass(frozen=True)
class SLO:
    ttft_p90: float  # seconds
    tpot_p90: float | None = None  # seconds per output token

    def met(self, ttft_p90: float | None, tpot_p90: float | None) -> bool:
        if ttft_p90 is None or not ttft_p90 <= self.ttft_p90:
            return False
        return self.tpot_p90 is None or (tpot_p90 is not None and tpot_p90 <= self.tpot_p90)


WAIT_CAP = 0.1  # a due request's allowance for its TTFT: the target, at most this share of a run
JUDGED = 0.75  # the least share of a run's arrivals that must be due for its verdict to count


def too_short(sc: Scenario, duration: float) -> str | None:
    """Why a run of `duration` seconds judges too little of its traffic, or None. Only the
    requests due by the end count (see the module's text); a request takes at least
    l_out x t_decode to decode, so under JUDGED of a run's arrivals can be due when the run is
    shorter than that / (1 - JUDGED), and a deployment falling behind has too little time to
    show it."""
    dec = sc.system.decode
    latency = dec.l_out * dec.t_decode  # a lower bound of any request's time in the system
    need = latency / (1 - JUDGED)
    if duration >= need:
        return None
    share = 1 - latency / duration
    judged = (f"judges at most the {share:.0%} of its requests that arrive early enough to "
              f"finish (a request decodes for {latency:.3g} s)" if share > 0 else
              f"can judge none of its requests (a request decodes for {latency:.3g} s, longer "
              "than the run)")
    return (f"a run of {duration:g} s {judged}: goodputs will be noisy or 0; use "
            f"--duration of at least {math.ceil(need)} s")


def unmeetable(sc: Scenario, slo: SLO) -> str | None:
    """Why no candidate can meet `slo`'s TTFT target whatever its size, or None: a target below
    the fastest prefill of the shortest request (a warning: the plan still runs)."""
    s = sc.system
    lo = s.lengths.support[0]
    profiles = [p for p in (s.prfaas, s.local, s.homogeneous_profile) if p is not None]
    fastest = min(float(p.t_prefill(max(lo, 1.0))) for p in profiles)
    if slo.ttft_p90 < fastest:
        return (f"--slo-ttft: {slo.ttft_p90:g} s is below the fastest prefill ({fastest:.3g} s "
                f"for {lo:.0f} tokens): no candidate can meet it, every goodput will be 0")
    return None


def region_decodes(sc: Scenario) -> list[tuple[str | None, DecodeSpec, object | None,
                                                 LengthDistribution]]:
    """Each region's decode as the emulator runs it: (its name, None for the pair's one; its
    Eq. 5 constants; its step, a stepped or card-derived decode, None: every step lasts
    t_decode; its lengths). A plan's candidates change sites, links and splits, never a
    region's decode, so these are every candidate's."""
    if sc.declared_topology is None:
        return [(None, sc.system.decode, sc.sim.step, sc.system.lengths)]
    return [(r.name, r.decode, r.step, r.lengths) for r in sc.declared_topology.regions]


def tpot_unmeetable(sc: Scenario, slo: SLO) -> str | None:
    """Why `slo`'s TPOT target is below a region's fastest decode step (every output token
    takes one step: t_decode, or a stepped decode's at batch 1 and the shortest request), or
    None. No candidate of any size can meet it there: the plan is refused, naming the region
    on a topology."""
    if slo.tpot_p90 is None:
        return None
    for name, dec, step, lengths in region_decodes(sc):
        lo = lengths.support[0]
        fastest = dec.t_decode if step is None else step.fastest(lo)
        if slo.tpot_p90 < fastest:
            what = (f"t_decode = {fastest:g} s" if step is None
                    else f"at batch 1 and {lo:.0f} tokens, {fastest:.3g} s")
            where = "" if name is None else f" of region {name}"
            return (f"--slo-tpot: {slo.tpot_p90:g} s is below the decode step{where} ({what}): "
                    "no candidate can meet it")
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


class _Due:
    """Counts a pair run's due requests (arrival + `ttft` + output tokens x `per_token` <= `end`)
    and how many of them finished."""

    def __init__(self, end: float, ttft: float, per_token: float):
        self.end, self.ttft, self.per_token = end, ttft, per_token
        self.due = self.finished = 0

    def is_due(self, req) -> bool:
        return req.arrival + self.ttft + req.out_len * self.per_token <= self.end

    def arrive(self, req) -> None:
        self.due += self.is_due(req)

    def done(self, req, now: float) -> None:
        self.finished += self.is_due(req)


def probe(sc: Scenario, rate: float, seed: int, duration: float, slo: SLO) -> dict:
    """One emulation at a (total) offered rate: the figures the SLO test reads, for the pair or
    per region."""
    from emulator.sim.engine import Emulation

    if sc.declared_topology is None:
        q = quiet(sc, duration)
        with Emulation(q, seed=seed, rate=rate, duration=duration) as emu:
            per_token = slo.tpot_p90 if slo.tpot_p90 is not None else sc.system.decode.t_decode
            due = _Due(emu.now + duration, min(slo.ttft_p90, WAIT_CAP * duration), per_token)
            emu.on_arrive(due.arrive)
            emu.on_done(due.done)
            res = emu.run().json  # measured figures: no model, no timing
        return {"rate": rate, "due": due.due, "finished": due.finished,
                "ttft_p90": res["ttft"]["p90"], "tpot_p90": (res.get("tpot") or {}).get("p90")}
    from emulator.sim.books.metrics import Latencies
    from emulator.sim.runtime.topology import topology_bound

    q = quiet(sc, duration)
    with Emulation(q, seed=seed, rate=rate, duration=duration, bound=topology_bound(q)) as emu:
        res = emu.run().json
        # each region's P90 TPOT, summarized as the pair's run summarizes its one region's
        tpot = {name: Latencies.summary(r.latencies.tpot)["p90"]
                for name, r in emu.regions.items()}
    return {"rate": rate,
            "regions": {name: {"offered": r["offered_rate"], "rejected": r["rejected"],
                               "growth": r["second_half"]["in_flight_growth"],
                               "ttft_p90": r["ttft"]["p90"], "tpot_p90": tpot[name]}
                        for name, r in res["regions"].items()}}


def _slo_miss(slo: SLO, ttft_p90: float | None, tpot_p90: float | None) -> str | None:
    if ttft_p90 is None:
        return "no request reached its first token"
    if not ttft_p90 <= slo.ttft_p90:
        return f"P90 TTFT {ttft_p90:.3g} s over the {slo.ttft_p90:g} s target"
    if slo.tpot_p90 is not None and (tpot_p90 is None or not tpot_p90 <= slo.tpot_p90):
        shown = "none" if tpot_p90 is None else f"{tpot_p90 * 1e3:.3g} ms"
        return f"P90 TPOT {shown} over the {slo.tpot_p90 * 1e3:.3g} ms target"
    return None


def why_not(p: dict, slo: SLO) -> str | None:
    """Why one probe does not keep up or meet the SLO (see the module's text); None when it
    does."""
    if "regions" in p:
        for name, r in p["regions"].items():
            if r["rejected"]:
                return f"region {name} rejected {r['rejected']} requests"
            if r["growth"] > (1 - KEEPS_UP) * r["offered"]:
                return (f"region {name} falls behind: in flight grows {r['growth']:.3g} req/s "
                        f"of {r['offered']:.3g} offered")
            if (miss := _slo_miss(slo, r["ttft_p90"], r.get("tpot_p90"))) is not None:
                return f"region {name}: {miss}"
        return None
    if p["due"] == 0:
        return "no request could finish within the run (--duration too short)"
    if p["finished"] < KEEPS_UP * p["due"]:
        return (f"falls behind: finished {p['finished'] / p['due']:.1%} of the {p['due']} "
                f"requests due by the end, under {KEEPS_UP:.0%}")
    return _slo_miss(slo, p["ttft_p90"], p["tpot_p90"])


def ok(p: dict, slo: SLO) -> bool:
    """Whether one probe keeps up and meets the SLO."""
    return why_not(p, slo) is None


def slo_goodput(base: Scenario, s: Scored, settings: Settings,
                beaten: Callable[[float], bool] | None = None) -> dict | None:
    """A scored candidate's SLO goodput: `bisect` between 0 and its ceiling (stage 1: the
    model's Lambda_max, or a topology's routing bound)."""
    return bisect(candidate_scenario(base, s), s.lambda_max, settings, beaten)


def bisect(sc: Scenario, hi0: float, settings: Settings,
           beaten: Callable[[float], bool] | None = None) -> dict | None:
    """Bisection per seed of `sc`'s offered rate between 0 and `hi0`; `fails_at` is the
    lowest rate a probe failed at and why (what limits the goodput; the reason a goodput is 0).

    The seeds' bisections advance side by side: a probe depends only on its seed and rate, so
    the order changes no result. `beaten(bound)`: whether a goodput below `bound` can no longer
    matter (a finished candidate costing no more does better); after each probe it is asked
    with the mean of the seeds' current upper ends, above every goodput the bisection can
    still return (each seed ends below its upper end, and a floating mean is monotone), and
    the bisection stops with None when it holds."""
    n = len(settings.seeds)
    lo, hi = [0.0] * n, [hi0] * n
    runs = 0
    fails: tuple[float, str] | None = None  # the lowest rate that failed, and why
    for _ in range(settings.steps):
        for i, seed in enumerate(settings.seeds):
            mid = 0.5 * (lo[i] + hi[i])
            runs += 1
            why = why_not(probe(sc, mid, seed, settings.duration, settings.slo), settings.slo)
            if why is None:
                lo[i] = mid
            else:
                hi[i] = mid
                if fails is None or mid < fails[0]:
                    fails = (mid, why)
                if beaten is not None and beaten(float(np.asarray(hi).mean())):
                    return None
    per_seed = lo
    arr = np.asarray(per_seed)
    mean = float(arr.mean())
    half = float(1.96 * arr.std(ddof=1) / math.sqrt(len(arr))) if len(arr) > 1 else 0.0
    return {"goodput": mean, "goodput_lo": max(mean - half, 0.0), "goodput_hi": mean + half,
            "per_seed": [float(x) for x in per_seed], "runs": runs,
            "utilization": mean / hi0 if hi0 > 0 else 0.0,
            "fails_at": None if fails is None else {"rate": fails[0], "why": fails[1]}}


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
