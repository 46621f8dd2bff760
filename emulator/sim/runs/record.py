"""The drill recorder: what a scorecard needs beyond the run's totals, recorded on the
emulation's virtual clock from the moment `attach` returns it."""

from __future__ import annotations

import math
from collections import deque

from emulator.model import STAGES
from emulator.sim.books.timeline import Active
from emulator.sim.core.request import Request
from emulator.sim.engine import Emulation


def attach(emu: Emulation) -> Recorder:
    """Start recording `emu` for its scorecard (incidents already running count from now)."""
    return Recorder(emu)


class Recorder:
    """What a scorecard needs beyond the run's totals, in bounded memory: arrivals and
    completions every `interval` s (for recovery), peak windowed TTFT P90 and queues, and the
    TTFT of each request that arrived while an incident was active."""

    MAX_ROWS = 100_000
    MAX_DURING = 200_000

    def __init__(self, emu: Emulation, interval: float = 5.0):
        self.emu = emu
        self.interval = interval
        self.rows: deque[tuple[float, int, int, int]] = deque(maxlen=self.MAX_ROWS)
        self.peak_ttft_p90 = math.nan
        self.peak_queue = dict.fromkeys(STAGES, 0)
        self.during: list[float] = []  # TTFT of finished requests that arrived during an incident
        self.open: dict[int, Request] = {}  # arrived during an incident, not finished yet
        self.arrivals_during = 0  # requests followed: len(during) + len(open)
        self.episodes: list[list] = []  # [first rid, last rid or None, end time or None]
        self._depth = 0
        # a topology's regions: rows (time, arrived, completed, rejected), the TTFT of their
        # requests that arrived during an episode (by arrival time: request ids interleave
        # across regions), their peak windowed TTFT P90, and the arrivals per episode
        self.regional = emu.topology is not None
        self.region_rows: dict[str, deque] = {n: deque(maxlen=self.MAX_ROWS)
                                              for n in emu.regions} if self.regional else {}
        self.region_during: dict[str, list[float]] = {n: [] for n in self.region_rows}
        self.region_peak: dict[str, float] = dict.fromkeys(self.region_rows, math.nan)
        # [start, end or None, {region: arrived at start}, {region: arrived at end}]
        self.spans: list[list] = []
        self._row()
        emu.on_arrive(self._arrive)
        emu.on_done(self._done)
        emu.timeline.listen(self._incident)
        for act in emu.timeline.active:  # already running when attached
            self._incident(act, True)
        emu.loop.call_at_quiet(emu.now + interval, self._tick)

    def _row(self) -> None:
        emu = self.emu
        self.rows.append((emu.now, emu.arrived, emu.completed, sum(emu.rejected.values())))
        for name, rows in self.region_rows.items():
            r = emu.regions[name]
            rows.append((emu.now, r.arrived, r.completed, r.rejected_total))

    def _tick(self) -> None:
        emu = self.emu
        self._row()
        ttft = emu.latencies.recent(emu.now)[0][1]
        if not math.isnan(ttft) and not ttft <= self.peak_ttft_p90:
            self.peak_ttft_p90 = ttft
        for name, q in emu.stage_queues().items():
            self.peak_queue[name] = max(self.peak_queue[name], q)
        for name in self.region_peak:
            p90 = emu.regions[name].latencies.recent(emu.now)[0][1]
            if not math.isnan(p90) and not p90 <= self.region_peak[name]:
                self.region_peak[name] = p90
        emu.loop.call_at_quiet(emu.now + self.interval, self._tick)

    def _incident(self, act: Active, started: bool) -> None:
        emu = self.emu
        if started:
            self._depth += 1
            if self._depth == 1:
                self.episodes.append([emu.arrived + 1, None, None])
                if self.regional:
                    self.spans.append([emu.now, None, {n: r.arrived
                                                        for n, r in emu.regions.items()}, {}])
        else:
            self._depth -= 1
            if self._depth == 0:
                self.episodes[-1][1:] = [emu.arrived, emu.now]
                if self.regional:
                    self.spans[-1][1] = emu.now
                    self.spans[-1][3] = {n: r.arrived for n, r in emu.regions.items()}

    def _arrive(self, req: Request) -> None:
        if self._depth and self.arrivals_during < self.MAX_DURING:
            self.arrivals_during += 1
            self.open[req.rid] = req

    def _done(self, req: Request, now: float) -> None:
        if self.open.pop(req.rid, None) is not None:
            ttft = req.t_first - req.arrival
            self.during.append(ttft)
            if self.regional:  # a topology's requests carry their region (req.dest)
                self.region_during[req.dest.name].append(ttft)

    def _open(self, region: str | None) -> list[Request]:
        return [r for r in self.open.values() if region is None or r.dest.name == region]

    def open_waits(self, region: str | None = None) -> list[float]:
        """waits_during's part for the requests not finished yet (of one region, or all)."""
        now = self.emu.now
        return [(r.t_first if 0.0 < r.t_first <= now else now) - r.arrival
                for r in self._open(region)]

    def unfinished_during(self, region: str | None = None) -> int:
        """Followed requests not finished yet (of one region, or all)."""
        return len(self._open(region))

    def waits_during(self, region: str | None = None) -> list[float]:
        """The TTFT of every followed request that arrived during an incident (of one region,
        or all): finished ones their own; unfinished ones (queued, in flight, refused) the wait
        to their first token, or, without one yet, until now. A lower bound that can never read
        better than the truth, however long the incident lasts."""
        own = self.during if region is None else self.region_during[region]
        return own + self.open_waits(region)
