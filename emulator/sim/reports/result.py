"""A finished run: the `run --json` object; and the CSV time series, written as it runs.

Everything except `timing` is a function of the scenario, the arguments and the seed: the same
inputs give the same JSON, byte for byte. Steady-state figures (utilization, bottleneck, queue
growth) come from the run's second half so that the empty start does not dilute them.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Protocol, TextIO

from emulator.model import OperatingPoint, System, _num
from emulator.paradigm import Paradigm
from emulator.sim.arrivals.workload import Workload
from emulator.sim.books.accounting import Accounting
from emulator.sim.books.metrics import Latencies, TimeSeries, Totals, bottleneck, window
from emulator.sim.books.snapshot import LiveKnobs
from emulator.sim.books.timeline import Timeline
from emulator.sim.control.scheduler import Scheduler
from emulator.sim.reports.observe import Observer
from emulator.sim.reports.topology_report import marks, run_objects
from emulator.sim.routing.cache_runtime import CacheRuntime
from emulator.sim.runtime.prefill_backend import TorchService
from emulator.sim.stages.decode import DecodeStage
from emulator.sim.stages.link import Link
from emulator.sim.stages.prefill import PrefillStage


class _Named(Protocol):
    name: str
    system: System


class Finished(Protocol):
    """What a run's result reads from the engine."""

    scenario: _Named
    paradigm: Paradigm
    seed: int
    mode: str
    observer: Observer
    latencies: Latencies
    workload: Workload
    rerouted: int
    link: Link
    cache: CacheRuntime | None
    torch: TorchService | None
    scheduler: Scheduler | None
    timeline: Timeline

    @property
    def events(self) -> int: ...

    @property
    def stages(self) -> Mapping[str, PrefillStage | DecodeStage]: ...

    @property
    def knobs(self) -> LiveKnobs: ...

    def totals(self) -> Totals: ...

    def model_point(self, mode: str | None = None) -> OperatingPoint: ...


class RunResult:
    def __init__(self, emu: Finished, accounting: Accounting, halfway: Totals):
        self.accounting = accounting
        self.start = emu.observer.start
        self.end = end = emu.totals()
        self.halfway = halfway
        self.simulated_seconds = end.t - self.start.t
        self.events = emu.events
        whole = window(self.start, end)
        if end.t <= halfway.t:  # the run was already over: use all of it
            halfway = self.start
        late = window(halfway, end)
        self.bottleneck = bottleneck(halfway, end, late)
        if emu.topology is not None:
            self._model = {}
            self.json = self._topology_json(emu, accounting, whole, late)
            return
        self._knobs = knobs = emu.knobs
        self._system = emu.scenario.system
        self._model: dict | None = None
        stages = {}
        for i, (name, st) in enumerate(emu.stages.items()):
            accepting, draining = st.counts()
            busy, online, n_area = st.totals(end.t)
            stages[name] = {
                "instances": accepting, "draining": draining,
                "entered": st.entered, "completed": st.done, "queue": end.queue[i],
                "utilization": late.compute if name == "prfaas" else late.utilization[name],
                "occupancy": late.utilization[name],
                "served_rate": late.stage_rate[name],
                "offered_rate": (end.entered[i] - halfway.entered[i]) / late.seconds,
                "queue_growth": late.queue_growth[name],
                "mean_in_stage": n_area / self.simulated_seconds,
                "mean_time_in_stage": st.sojourn_sum / st.done if st.done else None,
                "mean_wait": st.wait_sum / st.started if st.started else None,
            }
            if name == "pd-d" and (steps := st.step_stats()) is not None:  # a stepped decode
                stages[name]["steps"] = steps
        self.json: dict = {
            "preset": emu.scenario.name,
            "paradigm": emu.paradigm,
            "seed": emu.seed,
            "model_mode": emu.mode,
            **self._totals(emu, accounting, whole, late),
            "link_utilization": whole.link,
            "stages": stages,
            "link": {
                "capacity_gbps": emu.link.capacity * 8e-9,
                "utilization": whole.link,
                "utilization_second_half": late.link,
                "saturated_fraction": whole.link_saturated,
                "gbps": (end.link_sent - self.start.link_sent) * 8e-9 / self.simulated_seconds,
                "flows_done": emu.link.flows_done,
            },
            "knobs": {**asdict(knobs), "bandwidth_gbps": knobs.bandwidth * 8e-9},
            "model": None,  # to_json(): the closed form at these knobs (~2 ms, unread by probes)
            "cache": emu.cache.to_json() if emu.cache is not None else None,
            "prefill_backend": emu.torch.to_json() if emu.torch is not None else "profile",
        }

    def _topology_json(self, emu, accounting: Accounting, whole, late) -> dict:
        """A topology run: the totals over every region, and its regions, sites and links."""
        rt = emu.topology
        objs = run_objects(rt, emu.start_marks, emu._half_marks, marks(rt, self.end.t))
        return {
            "preset": emu.scenario.name,
            "routing": rt.routing,
            "seed": emu.seed,
            **self._totals(emu, accounting, whole, late),
            "lost": accounting.lost,
            **objs,
            "cache": rt.cache.to_json() if rt.cache is not None else None,
            # the torch backend's record, when the preset runs one (profile-timed runs: none)
            **({"prefill_backend": emu.torch.to_json()} if emu.torch is not None else {}),
        }

    def _totals(self, emu, accounting: Accounting, whole, late) -> dict:
        """The keys a pair's and a topology's run object share: rates over every region's
        arrivals, latencies, books, what the scheduler decided (null when off), incidents."""
        lat = emu.latencies
        return {
            "simulated_seconds": self.simulated_seconds,
            "events": self.events,
            "offered_rate": whole.offered,
            "target_rate": math.fsum(wl.mean_rate for wl in emu.workloads),
            "served_rate": whole.served,
            "second_half": {"offered_rate": late.offered, "served_rate": late.served},
            "bottleneck": self.bottleneck,
            "ttft": Latencies.summary(lat.ttft),
            "tpot": Latencies.summary(lat.tpot),
            "e2e": Latencies.summary(lat.e2e),
            "slo": ({"ttft": _num(lat.slo_ttft), "tpot": _num(lat.slo_tpot),
                     "attainment": lat.attainment()} if lat.has_slo else None),
            "accounting": accounting.to_dict(),
            "rerouted": emu.rerouted,
            "scheduler": emu.scheduler.to_dict() if emu.scheduler is not None else None,
            "incidents": [{"start": s, "end": e, "label": lbl} for s, e, lbl
                          in emu.timeline.windows()],
        }

    def to_json(self, wall_seconds: float | None = None) -> dict:
        """The `run --json` object; `timing` from the caller's wall clock (the emulator has
        none)."""
        timing = {"wall_seconds": wall_seconds, "requests_per_wall_second": None,
                  "realtime_factor": None}
        if wall_seconds:
            timing["requests_per_wall_second"] = self.accounting.arrived / wall_seconds
            timing["realtime_factor"] = self.simulated_seconds / wall_seconds
        if "routing" in self.json:  # a topology: no single-pair model to sit beside it
            return {**self.json, "timing": timing}
        return {**self.json, "model": self.model(), "timing": timing}

    def model(self) -> dict:
        """The closed-form model's operating points (exact and paper) at the run's final knobs,
        computed on first use: `json` holds every measured figure without them."""
        if self._model is None:
            self._model = {m: self._knobs.model_point(self._system, m).to_dict()
                           for m in ("exact", "paper")}
        return self._model


class SeriesCsv:
    """The time series as CSV, a row per TimeSeries row as the run makes it: header first, so
    an interrupted run leaves a file that is valid up to its last row."""

    def __init__(self, fh: TextIO):
        self._out = csv.writer(fh)
        self._out.writerow(TimeSeries.COLUMNS)

    def row(self, row: tuple) -> None:
        self._out.writerow([f"{x:.6g}" if isinstance(x, float) else x for x in row])
