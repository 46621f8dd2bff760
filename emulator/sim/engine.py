"""The emulation: a scenario's clusters, link, router and workload wired on a virtual-time loop.

Request path: arrival -> router -> admission control -> PrfaaS or PD-P prefill (FIFO, the
instance held until the KV has left) -> cross-datacenter link or intra-cluster RDMA (pipelined
with prefill) -> PD-D decode queue -> continuous batching -> completion.

Live changes (threshold, split, PrfaaS instances, bandwidth, rate, paradigm) apply at the current
simulated time and lose nothing: instances that change role drain first. The methods meant for
the scheduler and incidents (issue 4) are here too: set_link_capacity, fail_instance,
restore_instance, set_rate_multiplier, set_length_distribution, plus `every` and `spawn` to
attach periodic controllers and coroutines to the virtual loop.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import replace

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.model import STAGES, Knobs, OperatingPoint, evaluate
from emulator.optimizer import homogeneous as homogeneous_point
from emulator.paradigm import Paradigm
from emulator.scenario.scenario import Scenario
from emulator.sim.accounting import Accounting
from emulator.sim.cache_runtime import CacheRuntime
from emulator.sim.costs import Costs
from emulator.sim.decode import DecodeStage
from emulator.sim.incidents import Active, Incident, Timeline
from emulator.sim.link import Link
from emulator.sim.loop import VirtualTimeLoop
from emulator.sim.metrics import Latencies, TimeSeries, Totals, bottleneck, window
from emulator.sim.pool import Pool
from emulator.sim.prefill import PrefillStage
from emulator.sim.prefill_backend import TorchService, start_hook
from emulator.sim.request import Request
from emulator.sim.router import PrefixLookup, Router
from emulator.sim.scheduler import Scheduler
from emulator.sim.sessions import generate_sessions, to_trace
from emulator.sim.snapshot import LinkSnap, LiveKnobs, Snapshot, StageSnap
from emulator.sim.workload import SyntheticSource, TraceSource, Workload
from emulator.traces import MOONCAKE_BLOCK_TOKENS, Trace, read_trace
from emulator.units import to_gbps


def check_split(n_p: int, n_d: int, pool: int, paradigm: str = "prfaas-pd") -> None:
    """ValueError with a one-line reason unless (n_p, n_d) fits a local pool of `pool`."""
    if isinstance(n_p, bool) or isinstance(n_d, bool) or int(n_p) != n_p or int(n_d) != n_d:
        raise ValueError(f"n_p and n_d must be whole numbers, got {n_p!r}, {n_d!r}")
    if n_p < 0:
        raise ValueError(f"n_p must be >= 0, got {n_p}")
    if n_d < 1:
        raise ValueError(f"n_d must be >= 1 (every request needs decode), got {n_d}")
    if n_p + n_d > pool:
        raise ValueError(f"n_p + n_d = {n_p + n_d} exceeds the local pool of {pool}")
    if paradigm == "naive-heterogeneous" and n_p > 0:
        raise ValueError("naive-heterogeneous prefills everything remotely: n_p must be 0")


class Emulation:
    """One run of a scenario. See docs/emulator-api.md for the contract."""

    def __init__(self, scenario: Scenario, *, seed: int | None = None,
                 rate: float | None = None, load: float | None = None,
                 duration: float | None = None, paradigm: str = "prfaas-pd",
                 trace: str | Trace | None = None, mode: str = "exact",
                 n_p: int | None = None, n_d: int | None = None,
                 cached_prefix: PrefixLookup | None = None):
        paradigm = Paradigm(paradigm)
        if rate is not None and load is not None:
            raise ValueError("give a rate or a load, not both")
        sim = scenario.sim
        system = scenario.system
        self.scenario = scenario
        self.mode = mode
        self.seed = sim.seed if seed is None else int(seed)
        self.duration = sim.duration if duration is None else float(duration)
        self.loop = loop = VirtualTimeLoop()
        self.t = float(scenario.t)
        self.bandwidth = float(system.bandwidth)
        self.link_factor = 1.0  # share of B_out the link delivers now (incidents)
        self.paradigm = paradigm
        self._n_prfaas = system.n_prfaas  # the PrfaaS size the non-homogeneous paradigms use
        self._split = (scenario.n_p, scenario.n_d)

        self.link = Link(loop, "link", self.bandwidth, burst=sim.link_burst,
                         peak_factor=max(1.0, sim.link_peak / self.bandwidth) if sim.link_peak
                         else 2.0,
                         latency=sim.link_latency)
        self.rdma = Link(loop, "rdma", scenario.rdma_bandwidth, latency=sim.rdma_latency)
        self.prfaas = PrefillStage(loop, "prfaas", Costs(system.prfaas), self.link, self._kv_in)
        self.pdp = PrefillStage(loop, "pd-p", Costs(system.local), self.rdma, self._kv_in)

        tr = self._trace(trace, sim)
        replay = tr is not None  # a replay runs to its last arrival by default
        if tr is None and sim.sessions is not None:  # a fifth stream: the first four unchanged
            rng = np.random.default_rng(np.random.SeedSequence(self.seed).spawn(5)[4])
            tr = to_trace(generate_sessions(sim.sessions, rng, duration=self.duration))
        dec = system.decode
        mean_out = float(np.mean(tr.output_lengths)) if tr is not None else dec.l_out
        self.pdd = DecodeStage(loop, dec.t_decode, dec.bs_max, sim.kv_budget, self._done,
                               mean_out, sim.step)
        self.stages = {"prfaas": self.prfaas, "pd-p": self.pdp, "pd-d": self.pdd}
        self.remote = Pool(loop, "prfaas", {"prfaas": self.prfaas}, reroute=self._reroute)
        self.local = Pool(loop, "local", {"pd-p": self.pdp, "pd-d": self.pdd},
                          conversion_delay=sim.conversion_delay, reroute=self._reroute)
        self.cache: CacheRuntime | None = None
        self.reverse_link: Link | None = None
        if sim.cache is not None:
            cached_prefix = self._attach_cache(sim, tr if replay else None, cached_prefix)
        self.router = Router(self.t, paradigm, cached_prefix)
        if self.cache is not None:
            self.cache.attach(self.router)
        self.torch = TorchService(sim.prefill, self.seed) if sim.prefill is not None else None
        for st in (self.prfaas, self.pdp):
            st.on_start = start_hook(st, self.torch, self.cache)
        self._apply_paradigm(paradigm, n_p, n_d, immediate=True)

        # counters (the in-flight term is counted from the structures, see `accounting`)
        self.arrived = 0
        self.completed = 0
        self.rejected: dict[str, int] = {}
        self.lost: dict[str, int] = {}
        self.rerouted = 0
        self.decisions: deque[str] = deque(maxlen=32)
        self.incidents: dict[str, float] = {}  # label -> since (issue 4's incidents)
        self.cache_flushes = 0
        self._done_hooks: list[Callable[[Request, float], None]] = []
        self._tasks: list[asyncio.Task] = []
        self._max_queue = sim.max_queue
        self._max_wait = sim.max_queue_seconds
        self._kv_bounded = sim.kv_budget is not None
        self._admission = sim.admission_bounded or self._kv_bounded

        # workload
        streams = [np.random.default_rng(s) for s in np.random.SeedSequence(self.seed).spawn(4)]
        if tr is not None:
            source: SyntheticSource | TraceSource = TraceSource(tr)
            native = source.native_rate / sim.replay_time_scale
        else:
            source = SyntheticSource(streams[:3], sim.arrival, sim.cv, system.lengths,
                                     dec.l_out, sim.output_lengths)
            native = None
        if rate is None:  # a load is relative to the model's Lambda_max in exact mode
            if load is not None:
                rate = load * self.model_point("exact").lambda_max
            elif native is not None:
                rate = native
            elif sim.rate is not None:
                rate = sim.rate
            else:
                rate = sim.load * self.model_point("exact").lambda_max
        if not (rate >= 0 and math.isfinite(rate)):
            raise ValueError(f"offered rate must be a finite number >= 0 req/s, got {rate!r}")
        if replay and duration is None and rate > 0:  # replay the whole trace (the
            # slack covers the rounding of summed gaps, so the last arrivals are in)
            span = tr.duration * source.native_rate / rate
            self.duration = max(span * (1 + 1e-9) + 1e-9, sim.sample_interval)
        if not self.duration > 0:
            raise ValueError(f"duration must be > 0 seconds, got {self.duration!r}")
        self.workload = Workload(loop, self._arrive, source, rate)
        self._rid = 0
        self.workload.start()
        if sim.arrival == "onoff" and tr is None:
            self.workload.start_bursts(streams[3], sim.on_mean, sim.off_mean, sim.off_level)

        # metrics
        self.latencies = Latencies(sim.window, sim.slo_ttft, sim.slo_tpot)
        self.start_totals = self.totals()
        self._samples: deque[Totals] = deque(
            [self.start_totals], maxlen=int(math.ceil(sim.window / sim.sample_interval)) + 1)
        self.series = TimeSeries(sim.timeseries_rows)
        self._sample_interval = sim.sample_interval
        self._marks_every = max(1, round(sim.window / 2 / sim.sample_interval))
        self._n_samples = 0
        self.latencies.mark(0.0)
        loop.call_at_quiet(sim.sample_interval, self._sample)

        # issue 4: the preset's incidents and scheduler (both public: UI, drills, scorecards)
        self.timeline = Timeline(self, sim.incidents)
        self.scheduler = Scheduler(self, sim.scheduler) if sim.scheduler.enabled else None

    def _attach_cache(self, sim, replayed: Trace | None,
                      hook: PrefixLookup | None) -> PrefixLookup:
        """Build the [cache]: a PrefixCache per cluster, and the reverse link (PD -> PrfaaS,
        the forward link's capacity at all times) that cache moves towards PrfaaS take."""
        if hook is not None:
            raise ValueError("give cached_prefix or a [cache] section, not both")
        if replayed is not None and replayed.hash_ids and sim.cache.block_tokens != \
                MOONCAKE_BLOCK_TOKENS:
            raise ValueError(f"the trace's hash_ids name {MOONCAKE_BLOCK_TOKENS}-token blocks: "
                             f"[cache] block_tokens must be {MOONCAKE_BLOCK_TOKENS}")
        self.reverse_link = Link(self.loop, "link-reverse", self.link.capacity,
                                 latency=sim.link_latency)
        self.link.mirror = self.reverse_link
        system = self.scenario.system
        self.cache = CacheRuntime(self.loop, sim.cache, {"prfaas": system.prfaas,
                                                         "pd": system.local},
                                  {"prfaas": self.link, "pd": self.reverse_link}, self.prfaas,
                                  self.note)
        return self.cache.lookup

    @staticmethod
    def _trace(trace: str | Trace | None, sim) -> Trace | None:
        if isinstance(trace, Trace):
            return trace
        path = trace if trace is not None else sim.replay
        return read_trace(path) if path is not None else None

    # -- the request path (hot) ------------------------------------------------------------
    def _arrive(self, length: float, out_len: int, hash_ids: list[int] | None) -> None:
        self._rid += 1
        self.arrived += 1
        req = Request(self._rid, self.loop._now, length, out_len, hash_ids)
        stage = self.prfaas if self.router.remote(req) else self.pdp
        if self._admission:
            reason = self._refuse(stage, req)
            if reason is not None:
                self.rejected[reason] = self.rejected.get(reason, 0) + 1
                return
        if self.cache is None:
            stage.submit(req)
        else:
            self.cache.enter(stage, req)

    def _refuse(self, stage: PrefillStage, req: Request) -> str | None:
        """Admission control: why this request is turned away, or None."""
        if self._kv_bounded and not self.pdd.fits(stage.costs.s_kv(req.length)):
            return "kv-exceeds-decode-budget"
        if self._max_queue is not None:
            if len(stage.queue) >= self._max_queue:
                return f"queue-full:{stage.name}"
            if len(self.pdd.queue) >= self._max_queue:
                return "queue-full:pd-d"
        if self._max_wait is not None:
            if stage.expected_wait() > self._max_wait:
                return f"queue-time:{stage.name}"
            if self.pdd.expected_wait() > self._max_wait:
                return "queue-time:pd-d"
        return None

    def _kv_in(self, req: Request) -> None:
        self.pdd.submit(req)

    def _done(self, req: Request, now: float) -> None:
        self.completed += 1
        self.latencies.record(req, now)
        for fn in self._done_hooks:
            fn(req, now)

    def _reroute(self, reqs: list[Request]) -> None:
        """Requests whose instance failed with their KV: prefill them again (no admission
        check: they were admitted once)."""
        for req in reqs:
            self.rerouted += 1
            stage = self.prfaas if self.router.remote(req) else self.pdp
            if self.cache is None:
                stage.submit(req)
            else:
                self.cache.enter(stage, req)

    # -- running ---------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.loop._now

    @property
    def events(self) -> int:
        return self.loop.timer_events

    def run_until(self, t: float) -> None:
        """Advance virtual time to t (as fast as the CPU allows)."""
        self.loop.run_until(t)

    def run(self, progress: Callable[[float, float], None] | None = None,
            slices: int = 100):
        """Run to `duration`, check the accounting (AccountingError), return a RunResult.
        `progress(now, duration)` is called `slices` times along the way when given."""
        from emulator.sim.result import RunResult

        end = self.duration
        mid = self.now + (end - self.now) / 2
        halfway: list[Totals] = []
        self.loop.call_at_quiet(mid, lambda: halfway.append(self.totals()))
        if progress is None:
            self.run_until(end)
        else:
            start = self.now
            for i in range(1, slices + 1):
                self.run_until(start + (end - start) * i / slices)
                progress(self.now, end)
        acc = self.accounting
        acc.check()
        return RunResult(self, acc, halfway[0] if halfway else self.start_totals)

    def close(self) -> None:
        """Cancel attached coroutines and close the loop."""
        for task in self._tasks:
            task.cancel()
        if self._tasks and not self.loop.is_closed():
            self.loop.run_until(self.now)  # let the cancellations run
        self._tasks.clear()
        if not self.loop.is_closed():
            self.loop.close()

    def __enter__(self) -> Emulation:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- controllers -----------------------------------------------------------------------
    def every(self, period: float, fn: Callable[[Emulation], None],
              start: float | None = None) -> None:
        """Call fn(emulation) every `period` simulated seconds (a periodic controller)."""
        if not period > 0:
            raise ValueError("period must be > 0 seconds")

        def tick() -> None:
            fn(self)
            self.loop.call_at(self.loop._now + period, tick)

        self.loop.call_at(self.now + period if start is None else start, tick)

    def spawn(self, coro: Coroutine) -> asyncio.Task:
        """Run a coroutine on the virtual loop (asyncio.sleep is simulated time there)."""
        task = self.loop.create_task(coro)
        self._tasks.append(task)
        return task

    def on_done(self, fn: Callable[[Request, float], None]) -> None:
        """Call fn(request, now) at every completion (scorecards' per-request views)."""
        self._done_hooks.append(fn)

    def note(self, text: str) -> None:
        """Record a decision (shown in snapshots)."""
        self.decisions.append(f"{self.now:9.1f}s {text}")

    # -- live changes ----------------------------------------------------------------------
    def set_threshold(self, t_tokens: float) -> None:
        if not (t_tokens >= 0 and math.isfinite(t_tokens)):
            raise ValueError(f"threshold must be a finite number of tokens >= 0, got {t_tokens!r}")
        self.t = float(t_tokens)
        if self.paradigm == "prfaas-pd":
            self.router.t = self.t
        self.note(f"threshold -> {self.t:.0f} tokens")

    def set_split(self, n_p: int, n_d: int) -> None:
        """Local prefill / decode instances; instances that change role drain first."""
        check_split(n_p, n_d, self.local.size, self.paradigm)
        self.local.set_counts({"pd-p": n_p, "pd-d": n_d})
        if self.paradigm == "prfaas-pd":
            self._split = (n_p, n_d)
        self.note(f"split -> N_p {n_p} / N_d {n_d}")

    def set_n_prfaas(self, n: int) -> None:
        if isinstance(n, bool) or int(n) != n or n < 0:
            raise ValueError(f"n_prfaas must be a whole number >= 0, got {n!r}")
        self._n_prfaas = int(n)
        if self.paradigm != "homogeneous":
            self._set_remote(self._n_prfaas)
        self.note(f"PrfaaS instances -> {n}")

    def _set_remote(self, n: int) -> None:
        self.remote.resize(max(self.remote.size, n))
        self.remote.set_counts({"prfaas": n})

    def set_bandwidth(self, bytes_per_second: float) -> None:
        """The configured B_out (a knob): the link runs at it from now on."""
        if not (bytes_per_second > 0 and math.isfinite(bytes_per_second)):
            raise ValueError(f"bandwidth must be > 0, got {bytes_per_second!r}")
        self.bandwidth = float(bytes_per_second)
        self.link.set_capacity(self.bandwidth * self.link_factor)
        self.note(f"bandwidth -> {to_gbps(bytes_per_second):.2f} Gbps")

    def set_link_capacity(self, bytes_per_second: float) -> None:
        """What the link delivers now, knob unchanged (brownout, outage = 0, recovery)."""
        self.link.set_capacity(bytes_per_second)

    def set_link_factor(self, factor: float) -> None:
        """The link delivers `factor` x B_out from now on, also across B_out changes (the
        incidents' composed link factor: brownout < 1, outage 0, recovery 1)."""
        if not (factor >= 0 and math.isfinite(factor)):
            raise ValueError(f"link factor must be a finite number >= 0, got {factor!r}")
        self.link_factor = float(factor)
        self.link.set_capacity(self.bandwidth * self.link_factor)

    def inject(self, incident: Incident) -> Active | None:
        """Start an incident now (or at its `at`): see emulator.sim.incidents."""
        return self.timeline.inject(incident)

    def flush_cache(self, cluster: str | None = None) -> int:
        """Empty the prefix cache of `cluster` ("prfaas" or "pd"; None: both): every prefix
        block and state snapshot goes, pinned transfer blocks stay. Counts the flush even
        without a [cache]. Returns how many caches were emptied."""
        self.cache_flushes += 1
        if self.cache is None:
            return 0
        blocks = self.cache.flush(cluster)
        self.note(f"prefix cache flushed ({cluster or 'both'}): {blocks} blocks")
        return 1 if cluster else len(self.cache.caches)

    def set_rate(self, req_per_s: float) -> None:
        self.workload.set_rate(req_per_s)
        self.note(f"offered rate -> {req_per_s:.3f} req/s")

    def set_rate_multiplier(self, m: float) -> None:
        """A surge (m > 1) or a lull on top of the offered rate."""
        self.workload.set_multiplier(m)

    def set_length_distribution(self, dist: LengthDistribution) -> None:
        """A length-mix shift: new requests draw from `dist`."""
        self.workload.set_lengths(dist)

    def set_paradigm(self, paradigm: str) -> None:
        paradigm = Paradigm(paradigm)
        self._apply_paradigm(paradigm, None, None, immediate=False)
        self.note(f"paradigm -> {paradigm}")

    def _apply_paradigm(self, paradigm: str, n_p: int | None, n_d: int | None,
                        immediate: bool) -> None:
        system = self.scenario.system
        if paradigm == "homogeneous":
            if system.homogeneous_pool <= 0:
                raise ValueError("the homogeneous paradigm needs a [homogeneous] section "
                                 "in the preset")
            pool = system.homogeneous_pool
            op = homogeneous_point(system, self.mode)
            split = (op.knobs.n_p, op.knobs.n_d)
            profile = system.homogeneous_profile or system.local
            n_prfaas = 0
        elif paradigm == "naive-heterogeneous":
            pool, split, profile = system.local_pool, (0, system.local_pool), system.local
            n_prfaas = self._n_prfaas
        else:
            pool, split, profile = system.local_pool, self._split, system.local
            n_prfaas = self._n_prfaas
        if n_p is not None or n_d is not None:
            split = (split[0] if n_p is None else n_p, split[1] if n_d is None else n_d)
        check_split(*split, pool, paradigm)
        self.paradigm = paradigm
        self.router.paradigm = paradigm
        self.router.t = self.t
        self.pdp.set_costs(Costs(profile))
        self.local.resize(max(len(self.local.machines), pool))
        self.local.size = pool
        self.local.set_counts({"pd-p": split[0], "pd-d": split[1]}, immediate=immediate)
        self.remote.resize(max(self.remote.size, n_prfaas))
        self.remote.set_counts({"prfaas": n_prfaas}, immediate=immediate)

    # -- incidents (issue 4 builds on these) -------------------------------------------------
    def _pool_of(self, stage: str) -> Pool:
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
        return self.remote if stage == "prfaas" else self.local

    def _machine_of(self, stage: str, idx: int) -> int:
        pool = self._pool_of(stage)
        mine = [m.idx for m in pool.machines if m.target == stage]
        if not 0 <= idx < len(mine):
            raise ValueError(f"{stage} has {len(mine)} instances, no instance {idx}")
        return mine[idx]

    def fail_instance(self, stage: str, idx: int) -> None:
        """Instance `idx` of `stage` (in index order) dies: a prefill restarts from the queue
        head, a decode batch goes back through the router (its KV is gone)."""
        self._pool_of(stage).fail(self._machine_of(stage, idx))
        self.note(f"{stage}[{idx}] failed")

    def restore_instance(self, stage: str, idx: int) -> None:
        self._pool_of(stage).restore(self._machine_of(stage, idx))
        self.note(f"{stage}[{idx}] restored")

    # -- state -------------------------------------------------------------------------------
    @property
    def knobs(self) -> LiveKnobs:
        """The configured knobs: instance targets, whether alive or not (see StageSnap)."""
        return LiveKnobs(t=self.t, n_p=self.local.count("pd-p"), n_d=self.local.count("pd-d"),
                         n_prfaas=self.remote.count("prfaas"), bandwidth=self.bandwidth,
                         paradigm=self.paradigm)

    def model_point(self, mode: str | None = None) -> OperatingPoint:
        """The closed-form model at the current knobs and paradigm."""
        system = self.scenario.system
        k = self.knobs
        knobs = Knobs(t=k.t, n_p=k.n_p, n_d=k.n_d, n_prfaas=k.n_prfaas, bandwidth=k.bandwidth)
        lo, hi = system.lengths.support
        profiles = None
        if self.paradigm == "homogeneous":
            prof = system.homogeneous_profile or system.local
            knobs = replace(knobs, t=hi, n_prfaas=0)
            profiles = (prof, prof)
        elif self.paradigm == "naive-heterogeneous":
            knobs = replace(knobs, t=max(lo - 1.0, 0.0))
        return evaluate(system, knobs, mode or self.mode, profiles=profiles)

    @property
    def in_flight(self) -> int:
        """Requests held anywhere: queues, instances, wires, batches (counted, not derived)."""
        n = (self.prfaas.holding + self.pdp.holding + self.pdd.holding
             + self.link.propagating_flows + self.rdma.propagating_flows)
        if self.cache is not None:  # cache moves and KV tails the transfer cache holds
            n += self.cache.holding + self.reverse_link.propagating_flows
        return n

    @property
    def accounting(self) -> Accounting:
        return Accounting(arrived=self.arrived, completed=self.completed,
                          in_flight=self.in_flight, rejected=dict(self.rejected),
                          lost=dict(self.lost))

    def totals(self) -> Totals:
        """Every cumulative counter and integral now (read-only)."""
        now = self.now
        stages = (self.prfaas, self.pdp, self.pdd)
        tot = [s.totals(now) for s in stages]
        sent, cap, sat = self.link.totals(now)
        return Totals(
            t=now, arrived=self.arrived, completed=self.completed,
            rejected=sum(self.rejected.values()),
            entered=tuple(s.entered for s in stages), done=tuple(s.done for s in stages),
            busy=tuple(x[0] for x in tot), online=tuple(x[1] for x in tot),
            queue=tuple(len(s.queue) for s in stages), compute=self.prfaas.work_started,
            link_sent=sent, link_cap=cap, link_sat=sat,
            link_in_flight=self.link.bytes_in_flight(now), in_flight=self.in_flight)

    def _sample(self) -> None:
        """Periodic bookkeeping on the virtual clock: windows, time series, histogram marks."""
        row = self.totals()
        self._samples.append(row)
        self.series.offer(row)
        self._n_samples += 1
        if self._n_samples % self._marks_every == 0:
            self.latencies.mark(row.t)
        self.loop.call_at_quiet(row.t + self._sample_interval, self._sample)

    def snapshot(self) -> Snapshot:
        now_tot = self.totals()
        base = self._samples[0]
        w = window(base, now_tot)
        ttft, tpot, slo = self.latencies.recent(now_tot.t)
        stages = {}
        for i, (name, st) in enumerate(self.stages.items()):
            accepting, draining = st.counts()
            util = w.compute if name == "prfaas" else w.utilization[name]
            stages[name] = StageSnap(instances=accepting, busy=st.in_service, utilization=util,
                                     queue=now_tot.queue[i], served_rate=w.stage_rate[name],
                                     draining=draining,
                                     failed=self._pool_of(name).failed(name))
        link = LinkSnap(capacity=self.link.capacity, utilization=w.link,
                        bytes_in_flight=now_tot.link_in_flight,
                        queued_bytes=self.link.queued_bytes(now_tot.t),
                        flows=len(self.link.flows))
        return Snapshot(
            sim_time=now_tot.t, knobs=self.knobs, offered_rate=w.offered, served_rate=w.served,
            arrived=self.arrived, completed=self.completed, in_flight=now_tot.in_flight,
            rejected=now_tot.rejected, lost=sum(self.lost.values()), stages=stages,
            link=link, ttft_p50=ttft[0], ttft_p90=ttft[1], ttft_p99=ttft[2], tpot_p50=tpot[0],
            slo_attainment=slo, bottleneck=bottleneck(base, now_tot, w),
            decisions=tuple(self.decisions), events=self.events,
            incidents=tuple(sorted(self.incidents)), target_rate=self.workload.rate,
            cache=self.cache.snapshot() if self.cache is not None else None,
            scheduler_changes=self.scheduler.changes if self.scheduler is not None else 0,
            incident_windows=tuple(self.timeline.windows()))
