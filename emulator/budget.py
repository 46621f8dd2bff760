"""Bounded work: estimate what a command will do before it runs, and refuse above a cap.

A request rate of 1e30, a duration of 1e12 h, a flap period of 1e-9 s or a planner range of
0:100000000 are each one line of valid-looking input that would run for hours and grow memory
without end. Every estimate here is a pure function of the parsed input (no emulator, no UI), in
float arithmetic that cannot overflow (inf and NaN count as over any cap), so the CLI, the
dashboard's live changes and the planner can all check the same numbers before any work starts.

The caps (`Caps`) and the flag that raises each:

    requests         simulated requests (a plan: over all its runs)    --max-requests
    events           periodic events per run: sampling ticks, incident --max-events
                     timers, scheduler re-solves (each weighs
                     SCHEDULER_TICK_EVENTS ticks)
    instances        instances in one pool (PrfaaS, local, homogeneous) --max-instances
    candidates       planner candidates                                 --max-candidates
    runs             planner emulation runs (survivors x seeds x        --max-runs
                     (bisection steps + 1))
    profile_tokens   prefill tokens a profile computes                  --max-profile-tokens
                     ((warmup + repeats) x sum of lengths)

Each command's defaults are in COMMAND_CAPS, sized so that a command at its caps finishes
within 10 s on a 2-core machine (see there for the measured rates). A refusal is a
`BudgetError`: one line `<flag or key>: <what> = <estimate>, over the cap of <cap>; lower it or
raise the cap with <flag> N`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from emulator.units import finite, shown


class BudgetError(ValueError):
    """A command whose estimated work is over a cap; str() is the one line to show."""


@dataclass(frozen=True)
class Caps:
    requests: float = 5_000_000
    events: float = 100_000_000
    instances: int = 10_000
    candidates: int = 100_000
    runs: int = 1_000_000
    profile_tokens: float = 100_000_000

    def raised(self, **caps: float | None) -> Caps:
        """These caps with some replaced (the `--max-*` flags; None keeps the default). Each
        must be a finite number > 0."""
        names = {f.name for f in fields(self)}
        new = {}
        for name, value in caps.items():
            if name not in names:
                raise KeyError(name)
            if value is None:
                continue
            if not (_finite(value) and value > 0):
                raise BudgetError(f"{FLAGS[name]}: expected a finite number > 0, found {value!r}")
            new[name] = value
        return Caps(**{n: new.get(n, getattr(self, n)) for n in names})


# Throughput measured on the paper preset (2-core container, 2026-12-01, one core each):
# ~31,000-36,800 simulated requests/s, ~56,000 sampling ticks/s (18 us each), a scheduler
# re-solve ~210 us (12 ticks), CLI start-up 0.7 s, dashboard start-up plus SVG render 1.3 s;
# a plan's estimate (its runs x Lambda_max x --duration, an upper bound: bisection runs below
# it) went at 35,000-73,000 estimated requests per second on 2 workers (the default plan,
# 271,000, in 3.7 s; --pool 4:12, 2.04M, in 59 s with other work on the machine). At its caps
# a command then needs at most: run/drill 0.7 + 150,000 x 32 us + 150,000 x 18 us = 8.2 s
# (measured 8.4 s); snapshot 1.3 + 100,000 x (32 + 18) us = 6.3 s (99,000 requests: 6.4 s);
# plan 300,000 / 35,000 = 8.6 s. The dashboard's live changes keep the generic caps: it is
# paced to the wall clock, so a long run is its point, not a hang.
CAPS = Caps()
RUN_CAPS = Caps(requests=150_000, events=150_000)
COMMAND_CAPS: dict[str, Caps] = {
    "run": RUN_CAPS,
    "drill": RUN_CAPS,  # --compare runs it twice: the estimate doubles
    "snapshot": Caps(requests=100_000, events=100_000),
    "plan": Caps(requests=300_000, runs=1_000),
    "solve": CAPS,  # instances only: the search walks every split of the pool
    "profile": CAPS,  # real torch prefills (see the README: not bounded to 10 s)
    "dashboard": CAPS,
}
SCHEDULER_TICK_EVENTS = 12  # a scheduler re-solve costs about 12 sampling ticks (measured)
# A request costs more when many KV flows share its link (the link re-shares its bandwidth over
# every open flow at each event): measured 1.2 ms per request with 3,000 prefill instances on
# one link against 32 us with a dozen, i.e. about 1/80 of a request per instance.
INSTANCES_PER_REQUEST = 80


def caps_for(command: str) -> Caps:
    """The default caps of a command (a key of COMMAND_CAPS)."""
    return COMMAND_CAPS[command]


FLAGS = {"requests": "--max-requests", "events": "--max-events",
         "instances": "--max-instances", "candidates": "--max-candidates",
         "runs": "--max-runs", "profile_tokens": "--max-profile-tokens"}
_WHAT = {"requests": "simulated requests", "events": "periodic events",
         "instances": "instances", "candidates": "planner candidates",
         "runs": "planner emulation runs", "profile_tokens": "prefill tokens to profile"}


def _finite(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and finite(x)


def _fmt(x: float) -> str:
    if _finite(x) and abs(x) < 1e15 and float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:.3g}" if not _finite(x) or abs(x) < 1e300 else shown(x)  # 10**400: no float


def _product(*xs: float) -> float:
    """x1 * x2 * ... in floats: inf (never an OverflowError) when it is astronomically large;
    NaN (a 0 x inf) reads as inf, i.e. over every cap."""
    p = 1.0
    for x in xs:
        p *= float(x)
    return math.inf if math.isnan(p) else p


def check(name: str, amount: float, source: str, caps: Caps = CAPS) -> float:
    """`amount` of cap `name` (a field of Caps) or BudgetError naming `source` (the flag or key
    that drives the estimate). Returns the amount."""
    cap = getattr(caps, name)
    if not (amount <= cap):  # NaN and inf fail too
        raise BudgetError(f"{source}: {_WHAT[name]} = {_fmt(amount)}, over the cap of {_fmt(cap)}; "
                          f"lower it or raise the cap with {FLAGS[name]} N")
    return amount


# -- estimates -----------------------------------------------------------------------------------
def run_requests(rate: float, duration: float) -> float:
    """Requests one run offers: rate (req/s) x duration (s)."""
    return _product(max(rate, 0.0), max(duration, 0.0))


def request_weight(instances: float) -> float:
    """What one request costs, in requests of a small deployment, when up to `instances`
    prefill instances share a link."""
    return 1.0 + max(instances, 0.0) / INSTANCES_PER_REQUEST


def periodic_events(duration: float, period: float) -> float:
    """Timer events of something that fires every `period` seconds for `duration` seconds."""
    if not period > 0:
        return math.inf
    return max(duration, 0.0) / period


def replay_span(trace_span: float, native_rate: float, rate: float) -> float:
    """Simulated seconds a replay covers when `rate` (req/s) replaces the trace's own rate:
    a load of 1e-9 stretches an hour of trace to a billion hours."""
    if not rate > 0:
        return math.inf
    return _product(trace_span, native_rate) / rate


def incident_events(kind: str, duration: float, params: Mapping[str, float]) -> float:
    """Timer events an incident schedules while it lasts `duration` seconds: a flap toggles
    twice per (down + up), a diurnal swing ticks every `step`; the rest start and stop once."""
    if kind == "flap":
        return 2 * periodic_events(duration, params.get("down", 0.0) + params.get("up", 0.0))
    if kind == "diurnal":
        return periodic_events(duration, params.get("step", 0.0))
    return 2.0


def int_range_size(lo: int, hi: int) -> int:
    """Values in the inclusive range lo:hi, computed without building it."""
    return max(hi - lo + 1, 0)


def _positives(xs: Sequence[int]) -> int:
    """How many values are > 0; O(1) for a range (a `--nprfaas 0:100000000` is never built)."""
    if isinstance(xs, range) and xs.step == 1:
        return len(range(max(xs.start, 1), xs.stop))
    return sum(1 for x in xs if x > 0)


def _splits(pools: Sequence[int]) -> int:
    """Sum of max(pool - 1, 0): the (n_p, n_d) splits with n_p, n_d >= 1; O(1) for a range."""
    if isinstance(pools, range) and pools.step == 1:
        lo, hi = max(pools.start, 2), pools.stop - 1  # pools below 2 have no split
        return (lo - 1 + hi - 1) * (hi - lo + 1) // 2 if hi >= lo else 0
    return sum(max(p - 1, 0) for p in pools)


def space_size(*, n_prfaas: Sequence[int], pools: Sequence[int],
               homogeneous_pools: Sequence[int], thresholds: int, bandwidths: int,
               paradigms: Iterable[str]) -> int:
    """Candidates `emulator.planner.space.Space.candidates()` would enumerate, counted without
    enumerating them (keep in step with Space.candidates). Ranges are counted in O(1)."""
    paradigms = set(paradigms)
    remote = _positives(n_prfaas)
    total = 0
    if "homogeneous" in paradigms:
        total += _splits(homogeneous_pools)
    if "prfaas-pd" in paradigms:
        total += remote * bandwidths * _splits(pools) * thresholds
    if "naive-heterogeneous" in paradigms:
        total += remote * bandwidths * len(pools)
    return total


def peak_rate(rate: float, factors: Iterable[float]) -> float:
    """The highest offered rate when surges may overlap: rate x every surge factor above 1
    (a surge of 1e6 turns a modest run into a billion requests)."""
    return _product(rate, *(f for f in factors if f > 1))


def plan_runs(candidates: int, seeds: int, steps: int, per_config: int | None = None,
              configs: int | None = None) -> float:
    """Emulation runs a plan may make: its survivors (at most per_config per hardware
    configuration when both are given, else every candidate) x seeds x (bisection steps + 1)."""
    survivors = candidates if per_config is None or configs is None \
        else min(candidates, per_config * configs)
    return _product(survivors, seeds, steps + 1)


def profile_tokens(lengths: Iterable[float], repeats: float, warmup: float) -> float:
    """Prefill tokens a profile computes: (warmup + repeats) x sum of the lengths."""
    return _product(max(repeats, 0) + max(warmup, 0), math.fsum(lengths))


# -- the checks a command makes (each names what it checks) ------------------------------------
def check_run(rate: float, duration: float, *, sample_interval: float = 1.0,
              periods: Mapping[str, float] | None = None,
              solves: Mapping[str, float] | None = None, copies: int = 1,
              instances: float = 0.0, rate_flag: str = "--rate",
              duration_flag: str = "--duration", caps: Caps = CAPS) -> float:
    """A run or drill: offered requests (weighed by the `instances` that may share a link),
    sampling ticks, every periodic timer (source -> period seconds) and every scheduler
    re-solve (source -> period, each SCHEDULER_TICK_EVENTS ticks), each alone and all together;
    `copies` runs of it (drill --compare). Returns the weighed requests."""
    more = f" (x {copies} runs)" if copies > 1 else ""
    weight = request_weight(instances)
    heavy = f" (x {weight:.3g}: {_fmt(instances)} instances share a link)" if weight >= 2 else ""
    n = check("requests", _product(run_requests(rate, duration), copies, weight),
              f"{rate_flag} x {duration_flag}{more}{heavy}", caps)
    timers = {f"{duration_flag} / emulator.sample_interval": periodic_events(duration,
                                                                             sample_interval)}
    timers |= {source: periodic_events(duration, period) for source, period in
               (periods or {}).items()}
    timers |= {source: _product(periodic_events(duration, period), SCHEDULER_TICK_EVENTS)
               for source, period in (solves or {}).items()}
    for source, events in timers.items():
        check("events", _product(events, copies), source + more, caps)
    check("events", _product(math.fsum(timers.values()), copies), "all timers together" + more,
          caps)
    return n


def check_incidents(incidents: Iterable[tuple[str, str, float, Mapping[str, float]]],
                    run_duration: float, caps: Caps = CAPS) -> float:
    """(source, kind, duration or inf, params) per incident: its timers over the part of the
    run it lasts. Returns the total events."""
    total = 0.0
    for source, kind, duration, params in incidents:
        lasts = min(duration, run_duration) if duration == duration else run_duration
        total += check("events", incident_events(kind, lasts, params), source, caps)
    return check("events", total, "incidents (all together)", caps)


def incident_params(incident: object) -> dict[str, float]:
    """The timer periods of an incident (emulator.scenario.incidents; read by attribute, so
    this module stays below the scenario layer): flap down/up, diurnal step."""
    return {k: float(v) for k in ("down", "up", "step")
            if isinstance(v := getattr(incident, k, None), int | float)
            and not isinstance(v, bool)}


def surge_factors(incidents: Iterable[object]) -> list[float]:
    """Every surge's factor and long factor (each multiplies the offered rate at most), and a
    diurnal-rate swing's peak (2 - low x the mean)."""
    out = [f for inc in incidents if getattr(inc, "kind", None) == "surge"
           for f in (getattr(inc, "factor", None), getattr(inc, "long_factor", None))
           if isinstance(f, int | float) and not isinstance(f, bool)]
    return out + [2.0 - float(inc.low) for inc in incidents
                  if getattr(inc, "kind", None) == "diurnal-rate"]


def check_hand_incident(incident: object, *, rate: float, run_duration: float,
                        caps: Caps = CAPS) -> None:
    """An incident started by hand in a running emulation, as a drill's incident is checked:
    its timers over the run (open-ended: the whole run) and, for a surge, the requests at the
    surged rate. Sources name the incident's own keys (e.g. `flap.down + up`)."""
    kind = getattr(incident, "kind", "")
    duration = getattr(incident, "duration", None)
    lasts = run_duration if duration is None else min(duration, run_duration)
    keys = {"flap": "down + up", "diurnal": "step"}
    check_incidents([(f"{kind}.{keys.get(kind, 'duration')}", kind, lasts,
                      incident_params(incident))], run_duration, caps)
    if factors := surge_factors([incident]):
        check("requests", run_requests(peak_rate(rate, factors), lasts),
              f"{kind}.{'long_factor' if getattr(incident, 'long_factor', None) else 'factor'}"
              f" x the rate x {_fmt(lasts)} s", caps)


def check_trace(n_requests: int, trace_span: float, rate: float | None,
                duration: float | None, *, sample_interval: float = 1.0,
                rate_flag: str = "--rate/--load", caps: Caps = CAPS) -> float:
    """A replay: requests replayed (the trace's, or rate x duration when a duration cuts it) and
    the simulated span (ticks of the sampler). Returns the simulated seconds."""
    native = n_requests / trace_span if trace_span > 0 else math.inf
    span = trace_span if rate is None else replay_span(trace_span, native, rate)
    if duration is not None:
        span = min(span, duration)
    requests = n_requests if rate is None else min(run_requests(rate, span), float(n_requests))
    check("requests", requests, "--trace", caps)
    check("events", periodic_events(span, sample_interval),
          f"{rate_flag} (the replay spans {_fmt(span)} s)", caps)
    return span


def check_instances(counts: Mapping[str, float], caps: Caps = CAPS) -> None:
    """Instances per pool (source key -> count), before any pool is built."""
    for source, n in counts.items():
        check("instances", n, source, caps)


def check_plan(*, candidates: int, seeds: int, steps: int, requests_per_run: float,
               per_config: int | None = None, configs: int | None = None,
               caps: Caps = CAPS) -> float:
    """A plan: the space, the emulation runs and their requests together. Returns the runs."""
    check("candidates", candidates,
          "--nprfaas x --pool x --homogeneous-pool x --t x --bandwidth x --paradigm", caps)
    runs = check("runs", plan_runs(candidates, seeds, steps, per_config, configs),
                 "--seeds x --steps x the surviving candidates", caps)
    check("requests", _product(runs, requests_per_run),
          "--duration x --seeds x --steps x the surviving candidates", caps)
    return runs


def check_profile(lengths: Iterable[float], repeats: float, warmup: float,
                  caps: Caps = CAPS) -> float:
    """A torch profile: the prefill tokens it computes. Returns them."""
    return check("profile_tokens", profile_tokens(list(lengths), repeats, warmup),
                 "--lengths x (--warmup + --repeats)", caps)
