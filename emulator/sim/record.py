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
        self.during: list[float] = []  # TTFT of requests that arrived during an incident
        self.episodes: list[list] = []  # [first rid, last rid or None, end time or None]
        self._depth = 0
        self._row()
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

    def _done(self, req: Request, now: float) -> None:
        if self.episodes and len(self.during) < self.MAX_DURING:
            for first, last, _ in reversed(self.episodes):
                if req.rid >= first and (last is None or req.rid <= last):
                    self.during.append(req.t_first - req.arrival)
                    break
                if last is not None and req.rid > last:
                    break

    def arrived_during(self) -> int:
        return sum((self.emu.arrived if last is None else last) - first + 1
                   for first, last, _ in self.episodes)
