"""Wall-clock rate limits on the UI's own asyncio loop (redraws, toasts), with asyncio-throttle.

`Coalesced(fn, rate, period)` calls `fn()` at most `rate` times per `period` wall seconds however
often it is asked: asks that arrive while the throttle is shut merge into one call, made when it
opens, and `fn` reads the state then, so the latest state is what is drawn. A burst of emulator
ticks costs one redraw, and a key press never queues behind a backlog of them.

This is the UI's clock only. The emulator's rate limits (the link, the pacer) are token buckets
on its virtual clock: asyncio-throttle counts calls in a sliding window of `time.monotonic()`,
which can neither meter bytes nor follow a simulated clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from asyncio_throttle import Throttler

Spawn = Callable[[Coroutine[Any, Any, None]], Any]


class Coalesced:
    """See the module docstring. `spawn` starts the drain coroutine (default: a task on the
    running loop; a Textual widget passes its `run_worker`, so an error in `fn` reaches the
    app). `calls` counts the calls made."""

    def __init__(self, fn: Callable[[], None], rate: int, period: float = 1.0, *,
                 spawn: Spawn | None = None) -> None:
        # poll at a tenth of the spacing (asyncio-throttle's default 10 ms would wake the
        # loop 100 times a second while a burst waits)
        self.throttler = Throttler(rate_limit=rate, period=period,
                                   retry_interval=period / rate / 10)
        self.fn = fn
        self.calls = 0
        self._spawn = spawn or (lambda coro: asyncio.get_running_loop().create_task(coro))
        self._asked = False
        self._draining = False
        self._task: Any = None  # what spawn returned (a task, a worker)

    @property
    def pending(self) -> bool:
        """Asked for, not yet called (the throttle is shut)."""
        return self._asked

    def __call__(self) -> None:
        self._asked = True
        if not self._draining:
            self._draining = True
            self._task = self._spawn(self._drain())

    def cancel(self) -> None:
        """Drop what is pending (the drain waiting for the throttle stops)."""
        self._asked = False
        if self._task is not None and self._draining:
            self._task.cancel()

    async def _drain(self) -> None:
        try:
            while self._asked:
                await self.throttler.acquire()
                self._asked = False
                self.calls += 1
                self.fn()
        finally:
            self._draining = False


class Toasts:
    """Toasts through a `Coalesced` gate: a burst of them (a held key refused over and over)
    shows the first ones and then the latest, at most `rate` per `period` seconds, never a
    stack covering the dashboard. `show(text, kwargs)` is what really shows one."""

    def __init__(self, show: Callable[[str, dict[str, Any]], None], rate: int = 3,
                 period: float = 2.0, *, spawn: Spawn | None = None) -> None:
        self._show = show
        self._latest: tuple[str, dict[str, Any]] | None = None
        self.gate = Coalesced(self._flush, rate, period, spawn=spawn)

    def __call__(self, text: str, **kwargs: Any) -> None:
        self._latest = (text, kwargs)
        self.gate()

    def _flush(self) -> None:
        if self._latest is not None:
            text, kwargs = self._latest
            self._latest = None
            self._show(text, kwargs)
