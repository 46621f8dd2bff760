"""A virtual-time asyncio event loop: the clock jumps to the next timer instead of sleeping.

The emulator reads time only from the loop: `loop.time()`, or `loop.now`, the same float as a
public read-only attribute (the hot path reads it without a call). It starts at 0 and moves
forward exactly to each timer's deadline, so a run is deterministic for a seed and
goes as fast as the CPU allows. It is a real `asyncio` loop: coroutines (`asyncio.sleep`,
futures, tasks) work, which the slow paths use (controllers, incidents), while the hot path
(arrivals, transfers, decode completions) schedules plain `call_at` callbacks.

How: `BaseEventLoop._run_once` asks its selector to wait `timeout` seconds for I/O before it runs
the timers that are due. Ours has no I/O: its `_run_once` (the same steps) advances the clock to
the earliest timer instead. The loop has no file descriptors, sockets or executors.
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
    """No I/O, so nothing to wait for: `VirtualTimeLoop._run_once` moves the clock to the
    earliest deadline itself and never calls `select`."""

    def __init__(self, loop: VirtualTimeLoop):
        self._loop = loop

    def register(self, fileobj, events, data=None):
        raise NotImplementedError("the virtual-time loop has no I/O")

    def unregister(self, fileobj):
        raise NotImplementedError("the virtual-time loop has no I/O")

    def select(self, timeout: float | None = None) -> list:
        return []

    def get_map(self):
        return {}

    def close(self) -> None:
        pass


# BaseEventLoop._run_once's rule for purging cancelled timers from the heap (memory only: the
# keys are distinct, so the pop order does not depend on the heap's layout).
_MIN_SCHEDULED = 100
_MAX_CANCELLED_SHARE = 0.5


class _Timer(events.TimerHandle):
    """A timer of the virtual loop. It sits in the loop's heap as `(deadline, creation order,
    timer)`: asyncio's heap orders by deadline only and heapq is not stable, so timers due at
    the same instant could run in an order that depends on what else sits in the heap (a
    progress bar's extra stop, say): ties go first-come. The tuple keys compare in C (a Python
    `__lt__` was ~5% of a planner probe). Built without `Handle.__init__`: no context copy
    (the emulator's callbacks use no context variables; one passed explicitly is kept) and no
    debug traceback."""

    __slots__ = ("_counted",)

    def _run(self) -> None:
        context = self._context
        try:
            if context is None:
                self._callback(*self._args)
            else:
                context.run(self._callback, *self._args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._report(exc)

    def _report(self, exc: BaseException) -> None:
        self._loop.call_exception_handler(
            {"message": f"Exception in callback {self._callback!r}", "exception": exc,
             "handle": self})


_new_timer = object.__new__
_heappush = heapq.heappush
_heappop = heapq.heappop


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
        timer = _new_timer(_Timer)
        timer._when = when
        timer._callback = callback
        timer._args = args
        timer._loop = self
        timer._context = context
        timer._cancelled = False
        timer._repr = None
        timer._source_traceback = None
        timer._counted = True
        self._seq = seq = self._seq + 1
        _heappush(self._scheduled, (when, seq, timer))
        timer._scheduled = True
        return timer

    def pending_timers(self) -> int:
        """Timers still to fire (cancelled ones excluded): a drained run leaves none behind,
        and a leak shows here first. The heap's layout is the loop's own business."""
        return sum(1 for _, _, timer in self._scheduled if not timer._cancelled)

    def call_at_quiet(self, when: float, callback: Callable[..., Any], *args: Any,
                      context=None) -> _Timer:
        """`call_at` for bookkeeping (sampling, stops) that is not an event of the emulated
        system: not counted in `timer_events`."""
        timer = self.call_at(when, callback, *args, context=context)
        timer._counted = False
        self.timer_events -= 1
        return timer

    @staticmethod
    def move_later(timer: asyncio.TimerHandle, when: float) -> None:
        """Let a scheduled timer of this loop fire at `when` (not before its deadline) instead:
        its heap entry is put back at `when` once it reaches the head, so a deadline that keeps
        moving later (a decode instance's next completion as requests join) costs a store per
        move and one re-push, not a cancel or an early callback and a new timer."""
        timer._when = when

    def call_again(self, timer: asyncio.TimerHandle, when: float) -> None:
        """Schedule a timer of this loop that has fired, with its callback and arguments, to
        fire again at `when`: an instance's one recurring timer costs a heap push per event,
        not a new handle."""
        self.timer_events += 1
        timer._when = when
        self._seq = seq = self._seq + 1
        _heappush(self._scheduled, (when, seq, timer))
        timer._scheduled = True

    def _timer_handle_cancelled(self, handle) -> None:
        if handle._scheduled:
            self._timer_cancelled_count += 1
            if handle._counted:
                self.timer_events -= 1

    def _run_once(self) -> None:
        """BaseEventLoop._run_once for the `(deadline, order, timer)` heap with the selector's
        clock jump inlined: the same steps in the same order (drop cancelled heads, move the
        clock to the earliest deadline unless callbacks are ready, move the due timers to the
        ready queue, run the callbacks that were ready at that point), repeated here until
        `stop()` (what `run_forever` does between its calls) to save a call per event."""
        ready = self._ready
        popleft, append = ready.popleft, ready.append
        while True:
            sched = self._scheduled
            cancelled = self._timer_cancelled_count  # > share x len > share x minimum first
            if (cancelled > _MIN_SCHEDULED * _MAX_CANCELLED_SHARE
                    and len(sched) > _MIN_SCHEDULED
                    and cancelled / len(sched) > _MAX_CANCELLED_SHARE):
                kept = []
                for entry in sched:
                    if entry[2]._cancelled:
                        entry[2]._scheduled = False
                    else:
                        kept.append(entry)
                heapq.heapify(kept)
                self._scheduled = sched = kept
                self._timer_cancelled_count = 0
            while sched:  # drop cancelled heads; a moved one goes back in at its deadline
                timer = sched[0][2]
                if timer._cancelled:
                    self._timer_cancelled_count -= 1
                    _heappop(sched)[2]._scheduled = False
                elif timer._when > sched[0][0]:
                    self._seq = seq = self._seq + 1
                    heapq.heapreplace(sched, (timer._when, seq, timer))
                else:
                    break
            now = self.now
            if not (ready or self._stopping):
                if not sched:
                    raise VirtualLoopStalled(
                        "virtual-time loop: nothing is scheduled, the wait never ends")
                target = sched[0][0]
                if target > now:
                    # Land exactly on the earliest deadline; then run the timers due before
                    # now + resolution: a margin of a few ulps so a timer fires at its own
                    # deadline, at any clock magnitude.
                    self.now = now = target
                    self._clock_resolution = 4 * math.ulp(target)
            end_time = now + self._clock_resolution
            if not ready and sched and sched[0][0] < end_time:
                timer = _heappop(sched)[2]  # the head: not cancelled
                timer._scheduled = False
                if not (sched and sched[0][0] < end_time):
                    # The one callback to run this pass (the usual case): run it without the
                    # round trip through the ready queue.
                    if timer._context is None:
                        try:
                            timer._callback(*timer._args)
                        except (SystemExit, KeyboardInterrupt):
                            raise
                        except BaseException as exc:
                            timer._report(exc)
                    else:
                        timer._run()
                    if self._stopping:
                        return
                    continue
                append(timer)
            while sched and sched[0][0] < end_time:
                when, _, timer = _heappop(sched)
                if timer._when > when:  # moved later (`move_later`)
                    self._seq = seq = self._seq + 1
                    _heappush(sched, (timer._when, seq, timer))
                    continue
                timer._scheduled = False
                append(timer)
            for _ in range(len(ready)):
                handle = popleft()
                if handle._cancelled:
                    continue
                if type(handle) is _Timer and handle._context is None:  # _Timer._run inlined
                    try:
                        handle._callback(*handle._args)
                    except (SystemExit, KeyboardInterrupt):
                        raise
                    except BaseException as exc:
                        handle._report(exc)
                else:
                    handle._run()
            if self._stopping:
                return

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
