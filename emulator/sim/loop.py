"""A virtual-time asyncio event loop: the clock jumps to the next timer instead of sleeping.

The emulator reads time only from the loop: `loop.time()`, or `loop.now`, the same float as a
public read-only attribute (the hot path reads it without a call). It starts at 0 and moves
forward exactly to each timer's deadline, so a run is deterministic for a seed and
goes as fast as the CPU allows. It is a real `asyncio` loop: coroutines (`asyncio.sleep`,
futures, tasks) work, which the slow paths use (controllers, incidents), while the hot path
(arrivals, transfers, decode completions) schedules plain `call_at` callbacks.

How: `BaseEventLoop._run_once` asks its selector to wait `timeout` seconds for I/O before it runs
the timers that are due. Our selector has no I/O; `select(timeout)` advances the clock to the
earliest timer instead. The loop has no file descriptors, sockets or executors.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import selectors
from asyncio import events
from collections.abc import Callable
from typing import Any


class VirtualLoopStalled(RuntimeError):
    """The loop was asked to wait with nothing scheduled: in virtual time that never ends."""


class _VirtualSelector(selectors.BaseSelector):
    """No I/O: waiting `timeout` seconds means moving the clock to the next deadline."""

    def __init__(self, loop: VirtualTimeLoop):
        self._loop = loop

    def register(self, fileobj, events, data=None):
        raise NotImplementedError("the virtual-time loop has no I/O")

    def unregister(self, fileobj):
        raise NotImplementedError("the virtual-time loop has no I/O")

    def select(self, timeout: float | None = None) -> list:
        loop = self._loop
        if timeout is None:
            raise VirtualLoopStalled("virtual-time loop: nothing is scheduled, the wait never ends")
        if timeout > 0:
            # Land exactly on the earliest deadline (not on now + timeout, which rounds, nor in
            # steps of asyncio's one-day select cap). _run_once dropped cancelled heads already.
            sched = loop._scheduled
            target = sched[0].when() if sched else loop.now + timeout
            if target > loop.now:
                loop.now = target
                # _run_once then runs the timers due before now + resolution: keep that margin
                # a few ulps so a timer fires at its own deadline, at any clock magnitude.
                loop._clock_resolution = 4 * math.ulp(target)
        return []

    def get_map(self):
        return {}

    def close(self) -> None:
        pass


class _Timer(events.TimerHandle):
    """A timer ordered by (deadline, creation order). asyncio's heap orders by deadline only and
    heapq is not stable, so timers due at the same instant could run in an order that depends
    on what else sits in the heap (a progress bar's extra stop, say): ties go first-come."""

    __slots__ = ("_seq", "_counted")

    def __lt__(self, other: _Timer) -> bool:  # type: ignore[override]
        return self._when < other._when or (self._when == other._when and self._seq < other._seq)


class VirtualTimeLoop(asyncio.BaseEventLoop):
    """An asyncio event loop whose `time()` is virtual (seconds from 0); `now` is the same
    value as an attribute (read it, never assign it: only the loop moves its clock)."""

    def __init__(self, start: float = 0.0):
        super().__init__()
        self.now = float(start)
        self._clock_resolution = 4 * math.ulp(self.now)
        self._selector = _VirtualSelector(self)
        self.timer_events = 0  # timers scheduled and not cancelled: the run's event count
        self._seq = 0
        self._error: BaseException | None = None
        self.set_exception_handler(self._on_error)

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,
                context=None) -> asyncio.TimerHandle:
        """BaseEventLoop.call_at with first-come ties and without its debug-mode checks."""
        self.timer_events += 1
        timer = self.call_at_quiet(when, callback, *args, context=context)
        timer._counted = True
        return timer

    def call_at_quiet(self, when: float, callback: Callable[..., Any], *args: Any,
                      context=None) -> _Timer:
        """`call_at` for bookkeeping (sampling, stops) that is not an event of the emulated
        system: not counted in `timer_events`."""
        timer = _Timer(when, callback, args, self, context)
        self._seq += 1
        timer._seq = self._seq
        timer._counted = False
        heapq.heappush(self._scheduled, timer)
        timer._scheduled = True
        return timer

    def _timer_handle_cancelled(self, handle) -> None:
        if handle._scheduled and handle._counted:
            self.timer_events -= 1
        super()._timer_handle_cancelled(handle)

    def _on_error(self, loop, context: dict) -> None:
        """A callback that raises stops the run and the error surfaces from `run_until`:
        an emulator bug must not become a log line while the run goes on."""
        exc = context.get("exception")
        if exc is None:
            self.default_exception_handler(context)
            return
        if self._error is None:
            self._error = exc
        self.stop()

    def _process_events(self, event_list) -> None:
        pass

    def _write_to_self(self) -> None:
        pass  # nothing sleeps, so nothing needs waking

    def run_until(self, when: float) -> None:
        """Run every callback due at or before `when`, leaving the clock at `when`.

        Callable from a thread that already runs another loop (a test under pytest-asyncio, a
        UI thread): that loop is set aside for the duration, since this one never blocks."""
        if when < self.now:
            return
        outer = events._get_running_loop()
        if outer is not None:
            events._set_running_loop(None)
        try:
            stop = self.call_at_quiet(when, self.stop)
            try:
                self.run_forever()
            finally:
                stop.cancel()  # still scheduled when the run ended early (an error)
            if self._error is not None:
                err, self._error = self._error, None
                raise err
            if self.now < when:
                self.now = float(when)
        finally:
            if outer is not None:
                events._set_running_loop(outer)
