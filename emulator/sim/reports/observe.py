"""Observing a running emulation without perturbing it: cumulative totals, the requests in
flight (counted in every queue, instance, wire and batch), the accounting, periodic samples for
windows and the time series, and snapshots for the UI. Reads the engine through `Observed`."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol

from emulator.distributions import LengthDistribution
from emulator.sim.arrivals.workload import Workload
from emulator.sim.books.accounting import Accounting
from emulator.sim.books.metrics import Latencies, TimeSeries, Totals, bottleneck, window
from emulator.sim.books.snapshot import LinkSnap, LiveKnobs, Snapshot, StageSnap
from emulator.sim.books.timeline import Timeline
from emulator.sim.core.loop import VirtualTimeLoop
from emulator.sim.reports.topology_report import marks, objects, region_stages
from emulator.sim.routing.cache_runtime import CacheRuntime
from emulator.sim.stages.link import Link
from emulator.sim.stages.pool import Pool
from emulator.sim.stages.prefill import PrefillStage
from emulator.sim.stages.region import Region

NOTE_LOG = 10_000  # notes the engine keeps: the whole run's events, bounded (about 1 MB)
RECENT_NOTES = 32  # the newest of them each snapshot carries (the decision log, the status line)


def recent(notes: deque[str]) -> tuple[str, ...]:
    """The newest RECENT_NOTES notes, oldest first (O(RECENT_NOTES): a deque indexes its ends
    in constant time, and the log may hold NOTE_LOG)."""
    return tuple(notes[i] for i in range(-min(RECENT_NOTES, len(notes)), 0))


class Changes(Protocol):
    changes: int  # knob changes a controller applied
    enabled: bool
    pinned: set[str]
    last: Any  # its newest decision (None: none yet)


class Observed(Protocol):
    """What observation reads from the engine."""

    arrived: int
    completed: int
    rejected: dict[str, int]
    prfaas: PrefillStage  # the pair's: its PrfaaS stage, link and region, read directly
    link: Link
    region: Region
    regions: Mapping[str, Region]
    site_pools: Mapping[str, Pool]
    topology: Any  # the TopologyRuntime (None: the pair)
    cache: CacheRuntime | None
    reverse_link: Link | None
    latencies: Latencies
    decisions: deque[str]
    workload: Workload
    timeline: Timeline

    @property
    def lengths_now(self) -> LengthDistribution: ...

    @property
    def now(self) -> float: ...

    @property
    def events(self) -> int: ...

    @property
    def site_stages(self) -> list[PrefillStage]: ...

    @property
    def wan_links(self) -> list[Link]: ...

    @property
    def knobs(self) -> LiveKnobs: ...

    @property
    def scheduler(self) -> Changes | None: ...


class Observer:
    """Totals, accounting and snapshots of one emulation, and its periodic samples."""

    def __init__(self, emu: Observed, loop: VirtualTimeLoop, sample_interval: float,
                 window_seconds: float, timeseries_rows: int):
        self.emu = emu
        self.loop = loop
        self._pair = getattr(emu, "topology", None) is None
        self.start = self.totals()
        self._samples: deque[Totals] = deque(
            [self.start], maxlen=int(math.ceil(window_seconds / sample_interval)) + 1)
        self.series = TimeSeries(timeseries_rows, self.start)
        self._interval = sample_interval
        # a topology's per-region/site/link counters at each sample (its snapshots' windows)
        self._topo_marks: deque | None = None
        if getattr(emu, "topology", None) is not None:
            self._topo_marks = deque([marks(emu.topology, self.start.t)],
                                     maxlen=self._samples.maxlen)
        self._marks_every = max(1, round(window_seconds / 2 / sample_interval))
        self._n_samples = 0
        emu.latencies.mark(0.0)
        loop.call_at_quiet(sample_interval, self._sample)

    @property
    def in_flight(self) -> int:
        """Requests held anywhere: queues, instances, wires, batches (counted, not derived):
        every site's stage, every region's PD-P, PD-D and RDMA wire, every link's wire."""
        emu = self.emu
        if self._pair:  # the 1x1 case read directly: it runs at every sample
            r = emu.region
            n = (emu.prfaas.holding + r.pdp.holding + r.pdd.holding
                 + emu.link.propagating_flows + r.rdma.propagating_flows)
        else:
            n = sum(s.holding for s in emu.site_stages)
            for r in emu.regions.values():
                n += r.pdp.holding + r.pdd.holding + r.rdma.propagating_flows
            n += sum(lk.propagating_flows for lk in emu.wan_links)
            if (tc := emu.topology.cache) is not None:  # cache moves (sent and on the wire)
                n += sum(tc.held_by(r) for r in emu.regions.values())
        if emu.cache is not None:  # cache moves and KV tails the transfer cache holds
            n += emu.cache.holding + emu.reverse_link.propagating_flows
        return n

    @property
    def accounting(self) -> Accounting:
        emu = self.emu
        return Accounting(arrived=emu.arrived, completed=emu.completed,
                          in_flight=self.in_flight, rejected=dict(emu.rejected))

    def totals(self, wire: bool = True) -> Totals:
        """Every cumulative counter and integral now (read-only). Without `wire`, the bytes on
        the links (a walk over every flow, thousands in a topology) are nan: a sample no
        time-series row will read."""
        emu = self.emu
        now = emu.now
        if self._pair:  # the 1x1 case of the sums below, read directly (it runs every sample)
            r = emu.region
            stages = (emu.prfaas, r.pdp, r.pdd)
            tot = [s.totals(now) for s in stages]
            sent, cap, sat = emu.link.totals(now)
            return Totals(
                t=now, arrived=r.arrived, completed=r.completed,
                rejected=sum(r.rejected.values()),
                entered=tuple(s.entered for s in stages), done=tuple(s.done for s in stages),
                busy=tuple(x[0] for x in tot), online=tuple(x[1] for x in tot),
                queue=tuple(len(s.queue) for s in stages),
                compute=emu.prfaas.work_started,  # locked bit-identical: see PrefillStage.work_done
                link_sent=sent, link_cap=cap, link_sat=sat,
                link_in_flight=emu.link.bytes_in_flight(now) if wire else math.nan,
                in_flight=self.in_flight)
        regions = emu.regions.values()
        # per stage kind (PrfaaS, PD-P, PD-D): every site's or region's stage of that kind
        groups = (emu.site_stages, [r.pdp for r in regions], [r.pdd for r in regions])
        tot = [[s.totals(now) for s in g] for g in groups]
        links = emu.wan_links
        lt = [lk.totals(now) for lk in links]
        return Totals(
            t=now, arrived=emu.arrived, completed=emu.completed,
            rejected=sum(emu.rejected.values()),
            entered=tuple(sum(s.entered for s in g) for g in groups),
            done=tuple(sum(s.done for s in g) for g in groups),
            busy=tuple(sum(x[0] for x in t) for t in tot),
            online=tuple(sum(x[1] for x in t) for t in tot),
            queue=tuple(sum(len(s.queue) for s in g) for g in groups),
            compute=sum(s.work_done(now) for s in groups[0]),
            link_sent=sum(x[0] for x in lt), link_cap=sum(x[1] for x in lt),
            link_sat=sum(x[2] for x in lt) / len(lt) if lt else 0.0,  # mean saturated time
            link_in_flight=sum(lk.bytes_in_flight(now) for lk in links) if wire else math.nan,
            in_flight=self.in_flight)

    def _sample(self) -> None:
        """Periodic bookkeeping on the virtual clock: windows, time series, histogram marks."""
        row = self.totals(wire=self.series.writes_next)
        self._samples.append(row)
        if self._topo_marks is not None:
            self._topo_marks.append(marks(self.emu.topology, row.t))
        self.series.offer(row)
        self._n_samples += 1
        if self._n_samples % self._marks_every == 0:
            self.emu.latencies.mark(row.t)
        self.loop.call_at_quiet(row.t + self._interval, self._sample)

    def snapshot(self) -> Snapshot:
        emu = self.emu
        now_tot = self.totals()
        base = self._samples[0]
        w = window(base, now_tot)
        ttft, tpot, slo = emu.latencies.recent(now_tot.t)
        # per stage kind: every site's or region's stage of that kind, and their pools
        regions = emu.regions.values()
        sites = emu.site_pools.values()
        groups = {"prfaas": (emu.site_stages, sites),
                  "pd-p": ([r.pdp for r in regions], [r.local for r in regions]),
                  "pd-d": ([r.pdd for r in regions], [r.local for r in regions])}
        stages = {}
        for i, (name, (sts, pools)) in enumerate(groups.items()):
            counts = [st.counts() for st in sts]
            stages[name] = StageSnap(
                instances=sum(c[0] for c in counts), busy=sum(st.in_service for st in sts),
                utilization=w.compute if name == "prfaas" else w.utilization[name],
                queue=now_tot.queue[i], served_rate=w.stage_rate[name],
                draining=sum(c[1] for c in counts),
                failed=sum(p.failed(name) for p in pools))
        links = emu.wan_links
        link_snap = LinkSnap(capacity=sum(lk.capacity for lk in links), utilization=w.link,
                             bytes_in_flight=now_tot.link_in_flight,
                             queued_bytes=sum(lk.queued_bytes(now_tot.t) for lk in links),
                             flows=sum(len(lk.flows) for lk in links))
        common = dict(
            sim_time=now_tot.t, knobs=emu.knobs, offered_rate=w.offered, served_rate=w.served,
            arrived=emu.arrived, completed=emu.completed, in_flight=now_tot.in_flight,
            rejected=now_tot.rejected,
            lost=now_tot.arrived - now_tot.completed - now_tot.in_flight - now_tot.rejected,
            stages=stages, link=link_snap, ttft_p50=ttft[0], ttft_p90=ttft[1], ttft_p99=ttft[2],
            tpot_p50=tpot[0], slo_attainment=slo, ttft_cdf=emu.latencies.ttft_cdf(now_tot.t),
            bottleneck=bottleneck(base, now_tot, w),
            decisions=recent(emu.decisions), events=emu.events,
            incidents=tuple(sorted(emu.timeline.since)),
            incident_windows=tuple(emu.timeline.windows()))
        if self._topo_marks is not None:  # a topology: its regions, sites and links
            rt = emu.topology
            first, last = self._topo_marks[0], marks(rt, now_tot.t)
            return Snapshot(**common, target_rate=rt.rate,
                            topology=objects(rt, first, last, whole=False),
                            regions=region_stages(rt, first, last))
        scheduler = emu.scheduler
        return Snapshot(
            **common, target_rate=emu.workload.rate,
            cache=emu.cache.snapshot() if emu.cache is not None else None,
            scheduler_changes=scheduler.changes if scheduler is not None else 0,
            lengths=emu.lengths_now,
            scheduler_enabled=scheduler.enabled if scheduler is not None else None,
            scheduler_last=(" ".join(str(scheduler.last).split())
                            if scheduler is not None and scheduler.last else None),
            pinned=tuple(sorted(scheduler.pinned)) if scheduler is not None else ())
