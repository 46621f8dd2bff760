"""Soak under incidents (issue 11): random incident timelines on the shipped presets, each
checking the accounting (arrived = completed + in flight + rejected, nothing lost) at every
step and, after the incidents end and the knobs return, that every request drains and no timer
is left behind; then a simulated week at 3 x Lambda_max with admission control, checking that
peak memory stays flat day over day.

    python benchmarks/soak.py [--timelines 1000] [--seed 0] [--week-days 7] [--week-preset toy]
                              [--skip-week | --week-only]

Every emulator call goes through benchmarks/soak_api.py. tests/test_soak_incidents.py runs a
short version in the default suite.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import random
import resource
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import soak_api as api  # noqa: E402

DRAIN_STEP = 900.0  # seconds of simulated time per drain step
DRAIN_MAX = 12 * 3600.0  # a timeline that does not drain within this is a failure
IDLE_TIMERS = 16  # timers an idle emulation may hold (sampling, scheduler loops, the workload)


@dataclass(frozen=True)
class Action:
    at: float
    op: str  # "inject", "end", "knob"
    args: tuple


@dataclass(frozen=True)
class Spec:
    seed: int
    preset: str
    scheduler: bool
    max_queue: int | None
    load: float
    duration: float
    actions: tuple[Action, ...]


@dataclass
class Outcome:
    spec: Spec
    arrived: int = 0
    completed: int = 0
    rejected: int = 0
    lost: int = 0
    refused: list[str] = field(default_factory=list)  # live changes the engine refused
    drained_at: float | None = None
    max_timers: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _incident(rng: random.Random, base: dict, duration: float) -> tuple[str, dict]:
    kind = rng.choice(api.KINDS)
    kw: dict = {}
    if kind == "brownout":
        kw["factor"] = rng.choice([0.0, 0.01, rng.uniform(0.05, 0.95), 1.0])
    elif kind == "flap":
        kw["down"], kw["up"] = rng.uniform(0.5, 60), rng.uniform(0.5, 120)
    elif kind == "diurnal":
        kw["low"] = rng.uniform(0.0, 0.9)
        kw["period"] = rng.uniform(30, 2 * duration)
        kw["step"] = rng.uniform(1, 60)
    elif kind == "instance-loss":
        stage = rng.choice(api.STAGES)
        have = {"prfaas": base["n_prfaas"], "pd-p": base["n_p"], "pd-d": base["n_d"]}[stage]
        kw["stage"], kw["count"] = stage, rng.randint(1, max(1, have + 1))
    elif kind == "surge":
        if rng.random() < 0.5:
            kw["factor"] = rng.choice([0.0, rng.uniform(0.1, 4.0)])
        else:
            kw["long_factor"] = rng.uniform(0.2, 5.0)
            if rng.random() < 0.5:
                kw["cut"] = rng.uniform(512, 64_000)
    elif kind == "length-shift":
        kw["long_factor"] = rng.uniform(0.2, 5.0)
    elif kind == "loss-spike":
        if rng.random() < 0.5:
            kw["factor"] = rng.uniform(0.1, 100.0)
        else:
            kw["loss"] = rng.choice([0.0, 1e-5, 1e-3, rng.uniform(0.0, 0.5)])
    elif kind == "rtt-change":
        if rng.random() < 0.5:
            kw["factor"] = rng.uniform(0.1, 10.0)
        else:
            kw["rtt"] = rng.choice([0.0, rng.uniform(0.001, 0.2)])
    elif kind == "cache-flush":
        kw["cluster"] = rng.choice([None, "prfaas", "pd"])
    return kind, kw


def _knob(rng: random.Random, base: dict) -> tuple[str, object]:
    names = ["t", "split", "n_prfaas", "bandwidth", "rate"] + (["paradigm"] if base["homogeneous"]
                                                              else [])
    name = rng.choice(names)
    if name == "t":
        return name, rng.choice([0.0, rng.uniform(0, 3 * base["t"]), base["t"]])
    if name == "split":
        n_d = rng.randint(1, base["pool"])
        return name, (rng.randint(0, base["pool"] - n_d), n_d)
    if name == "n_prfaas":
        return name, rng.randint(0, base["n_prfaas"] + 2)
    if name == "bandwidth":
        return name, base["bandwidth"] * rng.uniform(0.05, 3.0)
    if name == "rate":
        return name, rng.uniform(0.0, 2.5)  # x Lambda_max, resolved at run time
    return name, rng.choice(["prfaas-pd", "homogeneous", "naive-heterogeneous"])


def random_spec(seed: int, *, max_duration: float = 1800.0) -> Spec:
    """One random timeline: a preset, scheduler on or off, optional admission control, a load,
    and 2-12 actions (incidents of every kind, overlapping, open-ended ones ended later, live
    knob changes) at random times."""
    rng = random.Random(seed)
    preset = api.PRESETS[seed % len(api.PRESETS)]
    sc = api.scenario(preset, scheduler=False)
    base = api.base_knobs(sc)
    duration = rng.uniform(max_duration / 4, max_duration)
    actions: list[Action] = []
    open_labels = 0
    for _ in range(rng.randint(2, 12)):
        at = rng.uniform(0, duration)
        r = rng.random()
        if r < 0.6:
            kind, kw = _incident(rng, base, duration)
            length = None if rng.random() < 0.25 else rng.uniform(1, duration / 2)
            open_labels += length is None
            actions.append(Action(at, "inject", (kind, kw, length)))
        elif r < 0.7 and open_labels:
            actions.append(Action(at, "end", (rng.randrange(1 << 30),)))
        else:
            actions.append(Action(at, "knob", _knob(rng, base)))
    actions.sort(key=lambda a: a.at)
    return Spec(seed, preset, rng.random() < 0.5, rng.choice([None, None, 20, 200]),
                rng.uniform(0.2, 1.5), duration, tuple(actions))


def run_spec(spec: Spec) -> Outcome:
    """Run one timeline, checking the accounting after every action; then end the incidents,
    restore the knobs, stop the traffic and check that everything drains."""
    out = Outcome(spec)
    sc = api.scenario(spec.preset, scheduler=spec.scheduler, max_queue=spec.max_queue)
    base = api.base_knobs(sc)
    emu = api.start(sc, seed=spec.seed, load=spec.load, duration=spec.duration + DRAIN_MAX)
    lam = api.lambda_max(emu)
    requeue = base["n_prfaas"] + 2 + base["pool"] * (1 + api.decode_slots(sc))

    def check(where: str) -> None:
        acc = api.accounting(emu)
        out.max_timers = max(out.max_timers, api.pending_timers(emu))
        if not acc.balanced:
            out.problems.append(f"{where}: accounting broken {acc.to_dict()}")
        if acc.lost:
            out.problems.append(f"{where}: lost {acc.lost}")
        # max_queue bounds admission; work handed back by lost instances (a prefill restarts,
        # a decode batch is prefilled again) may queue above it, never more than that
        if spec.max_queue is not None and max(api.queues(emu)) > spec.max_queue + requeue:
            out.problems.append(f"{where}: queue {api.queues(emu)} over max_queue + {requeue}")

    try:
        for a in spec.actions:
            api.run_until(emu, a.at)
            if a.op == "inject":
                kind, kw, length = a.args
                try:
                    api.inject(emu, api.incident(kind, duration=length, **kw))
                except ValueError as exc:  # refused at injection (a surge cut beyond the lengths)
                    out.refused.append(f"{kind}: {exc}")
                    if "\n" in str(exc) or not str(exc):
                        out.problems.append(f"{kind}: refusal not one line: {exc!r}")
            elif a.op == "end":
                labels = api.active_labels(emu)
                if labels:
                    api.end_incident(emu, labels[a.args[0] % len(labels)])
            else:
                name, value = a.args
                try:
                    api.set_knob(emu, name, value * lam if name == "rate" else value)
                except ValueError as exc:  # a refused live change must say why in one line
                    out.refused.append(f"{name}: {exc}")
                    if "\n" in str(exc) or not str(exc):
                        out.problems.append(f"{name}={value!r}: refusal not one line: {exc!r}")
            check(f"t={a.at:.1f} {a.op} {a.args}")
        api.run_until(emu, spec.duration)
        check("end")
        for label in api.active_labels(emu):
            api.end_incident(emu, label)
        for name, value in (("paradigm", "prfaas-pd"), ("split", (base["n_p"], base["n_d"])),
                            ("n_prfaas", base["n_prfaas"]), ("bandwidth", base["bandwidth"]),
                            ("t", base["t"]), ("rate", 0.0)):
            api.set_knob(emu, name, value)
        t = api.now(emu)
        while api.accounting(emu).in_flight and api.now(emu) < spec.duration + DRAIN_MAX:
            t += DRAIN_STEP
            api.run_until(emu, t)
        check("drained")
        acc = api.accounting(emu)
        if acc.in_flight:
            out.problems.append(f"{acc.in_flight} requests still in flight after "
                                f"{DRAIN_MAX / 3600:g} h without traffic")
        else:
            out.drained_at = api.now(emu)
        if api.active_labels(emu):
            out.problems.append(f"incidents still active: {api.active_labels(emu)}")
        idle = api.pending_timers(emu)
        if idle > IDLE_TIMERS:
            out.problems.append(f"{idle} timers pending on an idle emulation (a leak)")
        out.arrived, out.completed = acc.arrived, acc.completed
        out.rejected, out.lost = acc.rejected_total, acc.lost
    except Exception as exc:  # noqa: BLE001 (a crash is a finding, reported with the spec)
        out.problems.append(f"crashed: {type(exc).__name__}: {exc}")
    finally:
        emu.close()
    return out


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB (Linux /proc; peak from getrusage)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 1024, peak
    except OSError:
        pass
    return peak, peak


def week(days: int = 7, load: float = 3.0, preset: str = "toy",
         max_queue: int = 20, seed: int = 1) -> dict:
    """A simulated week at `load` x Lambda_max with admission control and the scheduler on;
    resident memory at the end of every simulated day, which must stay flat (RSS, not
    tracemalloc: tracing would double a run that is already minutes long)."""
    sc = api.scenario(preset, scheduler=True, max_queue=max_queue)
    t0 = time.perf_counter()
    rss, peaks = [], []
    emu = api.start(sc, seed=seed, load=load, duration=days * 86400.0)
    try:
        for d in range(1, days + 1):
            api.run_until(emu, d * 86400.0)
            cur, peak = _rss_mb()
            rss.append(round(cur, 1))
            peaks.append(round(peak, 1))
            print(f"day {d}: {api.accounting(emu).to_dict()} rss {cur:.1f} MB", flush=True)
        acc = api.accounting(emu)
    finally:
        emu.close()
    return {"days": days, "preset": preset, "load": load, "max_queue": max_queue,
            "arrived": acc.arrived, "completed": acc.completed, "rejected": acc.rejected_total,
            "lost": acc.lost, "in_flight": acc.in_flight, "balanced": acc.balanced,
            "rss_mb_per_day": rss, "peak_rss_mb_per_day": peaks,
            "wall_s": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timelines", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0, help="first timeline seed")
    ap.add_argument("--max-duration", type=float, default=1800.0,
                    help="longest timeline, simulated seconds (default 1800)")
    ap.add_argument("--week-days", type=int, default=7)
    ap.add_argument("--skip-week", action="store_true")
    ap.add_argument("--week-only", action="store_true")
    ap.add_argument("--week-preset", default="toy", help="preset of the week (default toy)")
    ap.add_argument("--record", action="store_true",
                    help="write the table as `soak` into benchmarks/results.json")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    tracemalloc.start()
    totals = {"arrived": 0, "completed": 0, "rejected": 0, "lost": 0, "refused": 0}
    kinds: dict[str, int] = {}
    reasons: dict[str, int] = {}
    failed = []
    for i in range(args.seed, args.seed + (0 if args.week_only else args.timelines)):
        spec = random_spec(i, max_duration=args.max_duration)
        for a in spec.actions:
            if a.op == "inject":
                kinds[a.args[0]] = kinds.get(a.args[0], 0) + 1
        o = run_spec(spec)
        for k in ("arrived", "completed", "rejected", "lost"):
            totals[k] += getattr(o, k)
        totals["refused"] += len(o.refused)
        for r in o.refused:
            key = r.split(":")[0] + ": " + r.split(": ", 2)[-1][:40]
            reasons[key] = reasons.get(key, 0) + 1
        if not o.ok:
            failed.append(o)
            print(f"FAIL seed {i} ({spec.preset}): {o.problems[:3]}", flush=True)
        if (i - args.seed + 1) % 100 == 0:
            print(f"{i - args.seed + 1} timelines, {time.perf_counter() - t0:.0f} s", flush=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    wall = time.perf_counter() - t0
    n = 0 if args.week_only else args.timelines
    print(f"timelines {n} (failed {len(failed)}); requests arrived {totals['arrived']:,}, "
          f"completed {totals['completed']:,}, rejected {totals['rejected']:,}, lost "
          f"{totals['lost']}; refused live changes {totals['refused']}; incidents by kind "
          f"{dict(sorted(kinds.items()))}; peak Python memory {peak / 2**20:.1f} MB; wall {wall:.0f} s")
    if reasons:
        print("refused:", dict(sorted(reasons.items(), key=lambda kv: -kv[1])[:12]))
    rows = []
    if n:
        rows.append([f"random incident timelines (up to {args.max_duration:g} simulated s each, "
                     "3 presets)", f"{n:,} ({len(failed)} failed; {sum(kinds.values()):,} "
                     f"incidents of {len(kinds)} kinds)", f"{totals['arrived']:,}",
                     f"{totals['completed']:,}", f"{totals['rejected']:,}", str(totals["lost"]),
                     f"{peak / 2**20:.1f} MB Python (tracemalloc, whole run)", f"{wall:,.0f} s"])
    if not args.skip_week:
        w = week(args.week_days, preset=args.week_preset)
        print(f"week: {w}")
        flat = max(w["peak_rss_mb_per_day"]) <= 1.10 * w["peak_rss_mb_per_day"][0]
        if not (w["balanced"] and not w["lost"] and flat):
            failed.append("week")
            print("FAIL week: accounting, loss or memory growth", flush=True)
        rows.append([f"{w['days']} simulated days, {w['preset']} at {w['load']:g} x Λmax, "
                     f"`max_queue = {w['max_queue']}`, scheduler on", "1", f"{w['arrived']:,}",
                     f"{w['completed']:,}", f"{w['rejected']:,}", str(w["lost"]),
                     f"RSS {w['rss_mb_per_day'][0]} MB after day 1, {w['rss_mb_per_day'][-1]} MB "
                     f"after day {w['days']}", f"{w['wall_s']:,.0f} s"])
    if rows and args.record:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from results import record
        record("soak", source="python benchmarks/soak.py " + " ".join(argv or sys.argv[1:]),
               columns=["run", "timelines", "requests arrived", "completed", "rejected", "lost",
                        "peak memory", "wall"], rows=rows)
    print(f"machine: {platform.machine()} {platform.processor() or ''} python "
          f"{platform.python_version()}; date {_dt.date.today().isoformat()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
