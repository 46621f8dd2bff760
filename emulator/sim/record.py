"""The drill recorder: what a scorecard needs beyond the run's totals, recorded on the
emulation's virtual clock from the moment `attach` returns it."""

from __future__ import annotations

import math
from collections import deque

from emulator.model import STAGES
from emulator.sim.engine import Emulation
from emulator.sim.request import Request
from emulator.sim.timeline import Active


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

    def _tick(self) -> None:
        emu = self.emu
        self._row()
        ttft = emu.latencies.recent(emu.now)[0][1]
        if not math.isnan(ttft) and not ttft <= self.peak_ttft_p90:
            self.peak_ttft_p90 = ttft
        for name, st in emu.stages.items():
            self.peak_queue[name] = max(self.peak_queue[name], len(st.queue))
        emu.loop.call_at_quiet(emu.now + self.interval, self._tick)

    def _incident(self, act: Active, started: bool) -> None:
        if started:
            self._depth += 1
            if self._depth == 1:
                self.episodes.append([self.emu.arrived + 1, None, None])
        else:
            self._depth -= 1
            if self._depth == 0:
                self.episodes[-1][1:] = [self.emu.arrived, self.emu.now]

    def _arrive(self, req: Request) -> None:
        if self._depth and self.arrivals_during < self.MAX_DURING:
            self.arrivals_during += 1
            self.open[req.rid] = req

    def _done(self, req: Request, now: float) -> None:
        if self.open.pop(req.rid, None) is not None:
            self.during.append(req.t_first - req.arrival)

    def open_waits(self) -> list[float]:
        """waits_during's part for the requests not finished yet."""
        now = self.emu.now
        return [(r.t_first if 0.0 < r.t_first <= now else now) - r.arrival
                for r in self.open.values()]

    def waits_during(self) -> list[float]:
        """The TTFT of every followed request that arrived during an incident: finished ones
        their own; unfinished ones (queued, in flight, refused) the wait to their first token,
        or, without one yet, until now. A lower bound that can never read better than the
        truth, however long the incident lasts."""
        return self.during + self.open_waits()
