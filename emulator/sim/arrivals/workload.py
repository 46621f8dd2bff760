"""Arrivals: Poisson, Gamma (given CV), on/off bursts and trace replay, at a rate that may
change while the run goes on.

Every process is written in operational time: the sources hand out gaps of mean 1 and the
workload divides them by the current rate. A rate change rescales the gap still to go (exact for
Poisson by memorylessness, a time change for the others), so a surge or a new offered rate takes
effect at once and a trace replays faster or slower without re-reading it. Random draws come
from seeded numpy Generators, one stream per purpose, in chunks (one numpy call per few thousand
requests); a new length distribution redraws only the length stream.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.traces import Trace

CHUNK = 4096


class _Stream:
    """Values drawn `CHUNK` at a time, handed out one by one as Python scalars."""

    __slots__ = ("draw", "buf", "i", "n")

    def __init__(self, draw: Callable[[], list]):
        self.draw = draw
        self.buf: list = []
        self.i = 0
        self.n = 0  # len(buf)

    def next(self):
        i = self.i
        if i >= self.n:
            self.buf = buf = self.draw()
            self.n = len(buf)
            self.i = i = 0
            if not buf:
                return None
        self.i = i + 1
        return self.buf[i]

    def redraw(self, draw: Callable[[], list]) -> None:
        self.draw = draw
        self.buf = []
        self.i = 0
        self.n = 0


class SyntheticSource:
    """Gaps from a renewal process of mean 1; lengths and output lengths from distributions."""

    def __init__(self, rngs: list[np.random.Generator], kind: str, cv: float,
                 lengths: LengthDistribution, l_out: float,
                 out_lengths: LengthDistribution | None):
        g_rng, self._l_rng, o_rng = rngs
        if kind == "gamma":
            shape = 1.0 / (cv * cv)
            self.gaps = _Stream(lambda: g_rng.gamma(shape, 1.0 / shape, CHUNK).tolist())
        else:  # poisson, and onoff (Poisson within each phase)
            self.gaps = _Stream(lambda: g_rng.standard_exponential(CHUNK).tolist())
        self.lengths = _Stream(self._length_draw(lengths))
        if out_lengths is None:
            fixed = max(1, round(l_out))
            self.outs = _Stream(lambda: [fixed] * CHUNK)
        else:
            self.outs = _Stream(lambda: np.maximum(1, np.rint(out_lengths.sample(o_rng, CHUNK)))
                                .astype(np.int64).tolist())

    def _length_draw(self, dist: LengthDistribution) -> Callable[[], list]:
        rng = self._l_rng
        return lambda: np.asarray(dist.sample(rng, CHUNK), dtype=float).tolist()

    def next_request(self) -> tuple[float, int, None]:
        return self.lengths.next(), self.outs.next(), None

    def set_lengths(self, dist: LengthDistribution) -> None:
        self.lengths.redraw(self._length_draw(dist))


class TraceSource:
    """A trace's requests in order; gaps normalized by its own mean rate."""

    def __init__(self, trace: Trace):
        n = len(trace)
        span = trace.duration
        self.native_rate = (n - 1) / span if n > 1 and span > 0 else 1.0
        gaps = np.diff(trace.arrivals, prepend=trace.arrivals[0]) * self.native_rate
        self.gaps = _Stream(_once(gaps.tolist()))
        self._lengths = trace.input_lengths.astype(float).tolist()
        self._outs = np.maximum(trace.output_lengths, 1).tolist()
        self._hashes = trace.hash_ids
        self._i = 0

    def next_request(self) -> tuple[float, int, list[int] | None]:
        i = self._i
        self._i = i + 1
        return self._lengths[i], self._outs[i], (self._hashes[i] if self._hashes else None)

    def set_lengths(self, dist: LengthDistribution) -> None:
        raise ValueError("a replayed trace brings its own lengths")


def _once(values: list) -> Callable[[], list]:
    box = [values]

    def draw() -> list:
        out, box[0] = box[0], []
        return out

    return draw


class Workload:
    """Schedules arrivals on the loop and hands each to `emit(length, out_len, hash_ids)`."""

    def __init__(self, loop, emit: Callable[[float, int, list[int] | None], None],
                 source: SyntheticSource | TraceSource, rate: float):
        self.loop = loop
        self.emit = emit
        self.source = source
        self.base_rate = float(rate)  # req/s asked for (set_rate)
        self.multiplier = 1.0  # surges (set_multiplier)
        self.level = 1.0  # on/off phase factor
        self._rate = self.base_rate
        self._timer = None
        self._gap_left = 0.0  # operational time to the next arrival while the rate is 0
        self._paused = False
        # counted as generated: past `limit` no arrival is emitted and `capped_at` says when
        # (a very bursty process can offer far more than rate x duration predicts)
        self.limit = math.inf
        self.emitted = 0
        self.capped_at: float | None = None
        self.on_cap: Callable[[], None] | None = None  # called once, when the cap is reached
        self._expected = 0.0  # arrivals the rate asked for, integrated up to _since
        self._since = loop.now

    @property
    def rate(self) -> float:
        """The offered rate right now (req/s), on/off phase included."""
        return self._rate

    @property
    def mean_rate(self) -> float:
        """The offered rate averaged over on/off phases (req/s)."""
        return self.base_rate * self.multiplier

    def expected(self) -> float:
        """Arrivals the offered rate asks for up to now (the integral of the rate over time,
        on/off phases and surges included): what the arrivals are compared with."""
        return self._expected + self._rate * (self.loop.now - self._since)

    def start(self) -> None:
        gap = self.source.gaps.next()
        if gap is None:
            return
        self._arm(self.loop.now, gap)

    def _arm(self, now: float, gap: float) -> None:
        if self._rate > 0:
            self._timer = self.loop.call_at(now + gap / self._rate, self._fire)
            self._paused = False
        else:  # no arrivals at rate 0: hold the gap still to go
            self._timer = None
            self._gap_left = gap
            self._paused = True

    def _fire(self) -> None:
        if self.emitted >= self.limit:
            self.capped_at = self.loop.now
            self._timer = None
            if self.on_cap is not None:
                self.on_cap()
            return
        src = self.source
        length, out, hashes = src.next_request()
        self.emitted += 1
        self.emit(length, out, hashes)
        gap = src.gaps.next()
        if gap is None:
            self._timer = None
        elif self._rate > 0:
            self._timer = self.loop.call_at(self.loop.now + gap / self._rate, self._fire)
        else:
            self._arm(self.loop.now, gap)

    def _retime(self) -> None:
        """Apply a new effective rate to the arrival still to come."""
        rate = self.base_rate * self.multiplier * self.level
        if rate == self._rate:
            return
        now = self.loop.now
        self._expected += self._rate * (now - self._since)
        self._since = now
        if self._timer is not None:
            left = (self._timer.when() - now) * self._rate
            self._timer.cancel()
        elif self._paused:
            left = self._gap_left
        else:  # not started yet, or the trace is over
            self._rate = rate
            return
        self._rate = rate
        self._arm(now, max(left, 0.0))

    def set_rate(self, rate: float) -> None:
        if not rate >= 0:
            raise ValueError(f"rate must be >= 0 req/s, got {rate!r}")
        self.base_rate = float(rate)
        self._retime()

    def set_multiplier(self, m: float) -> None:
        if not m >= 0:
            raise ValueError(f"rate multiplier must be >= 0, got {m!r}")
        self.multiplier = float(m)
        self._retime()

    def set_lengths(self, dist: LengthDistribution) -> None:
        self.source.set_lengths(dist)

    # -- on/off bursts --------------------------------------------------------------------
    def start_bursts(self, rng: np.random.Generator, on_mean: float, off_mean: float,
                     off_level: float) -> None:
        """Alternate on and off periods of exponential length; the on rate is raised so that
        the long-run mean stays `mean_rate`."""
        on_level = (on_mean + off_mean) / (on_mean + off_level * off_mean)
        durations = _Stream(lambda: rng.standard_exponential(256).tolist())
        on = rng.random() < on_mean / (on_mean + off_mean)

        def switch(on: bool) -> None:
            self.level = on_level if on else off_level * on_level
            self._retime()
            mean = on_mean if on else off_mean
            self.loop.call_at(self.loop.now + mean * durations.next(), switch, not on)

        switch(on)
