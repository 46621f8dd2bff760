"""What prefill and decode stages share: workers that a pool turns on, drains and fails, and
the time integrals behind utilization, queue depth and Little's law.

A stage is a shared FIFO queue in front of identical workers (the M/G/c reading of the model:
Theta = instances / mean service time); a worker takes the head of the queue when it frees.

The counts (accepting, online slots, draining) are kept incrementally: each worker remembers
what it contributes, and a change to one worker (taken on, drained, failed, restored, left
idle) moves the totals by its difference -- O(1), never a walk over all workers, so a pool of
100,000 instances starts and resizes in time linear in the instances that change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class Worker:
    """One instance serving one stage. `machine.alive` is shared by the machine's workers."""

    __slots__ = ("idx", "machine", "accepting", "counted")

    def __init__(self, idx: int, machine):
        self.idx = idx
        self.machine = machine
        self.accepting = False  # in its role and not draining
        self.counted = (False, False, False)  # what the stage's counts hold for it: _update

    @property
    def busy(self) -> bool:
        raise NotImplementedError


class Stage:
    name = ""

    def __init__(self, loop, name: str):
        self.loop = loop
        self.name = name
        self.queue: deque = deque()
        self.workers: list = []
        self.on_idle: Callable | None = None  # pool hook: a draining worker has no work left
        self.entered = 0  # requests that joined the stage
        self.done = 0  # requests that left it, served
        self.in_service = 0  # requests being served now (a batched prefill: instances stepping)
        self.extra = 0  # requests held beyond `in_service` (a batched prefill's steps hold many)
        self.n_online = 0  # service slots of workers that are up and in the stage
        self.n_accepting = 0  # workers that take new work
        self.n_draining = 0  # workers that left the stage but still hold work
        self._t = loop.time()
        self._busy_area = 0.0  # integral of in_service (slot-seconds)
        self._online_area = 0.0  # integral of n_online
        self._n_area = 0.0  # integral of requests in the stage (queue + service)
        self.sojourn_sum = 0.0  # seconds from joining to leaving, summed over `done`
        self.wait_sum = 0.0  # seconds queued before service, summed over `started`
        self.started = 0

    # -- time integrals ----------------------------------------------------------------------
    def _account(self, now: float) -> None:
        dt = now - self._t
        if dt > 0:
            busy = self.in_service
            self._busy_area += busy * dt
            self._online_area += self.n_online * dt
            self._n_area += (len(self.queue) + busy + self.extra) * dt
            self._t = now

    def totals(self, now: float) -> tuple[float, float, float]:
        """(busy slot-seconds, online slot-seconds, request-seconds in the stage) up to now,
        without touching the running sums (a snapshot must not perturb the run)."""
        dt = max(0.0, now - self._t)
        return (self._busy_area + self.in_service * dt, self._online_area + self.n_online * dt,
                self._n_area + (len(self.queue) + self.in_service + self.extra) * dt)

    @property
    def holding(self) -> int:
        """Requests in the stage (queued or in service): for the accounting check."""
        return len(self.queue) + self.in_service + self.extra

    def counts(self) -> tuple[int, int]:
        """(workers taking work, workers draining with work left)."""
        return self.n_accepting, self.n_draining

    # -- pool interface ----------------------------------------------------------------------
    def add_worker(self, machine) -> Worker:
        raise NotImplementedError

    def _slots(self, w) -> int:
        return 1

    def _update(self, w) -> None:
        """`w` may have changed (taken on or drained, failed or restored, left idle): move the
        counts by what it contributes now minus what it contributed. O(1)."""
        self._account(self.loop.now)
        up, accepting, busy = w.machine.alive, w.accepting, w.busy
        now = (up and accepting, up and (accepting or busy), not accepting and busy)
        was = w.counted
        if now == was:
            return
        w.counted = now
        if now[0] != was[0]:
            self.n_accepting += 1 if now[0] else -1
            self._accepting_changed(w, now[0])
        if now[1] != was[1]:
            self.n_online += self._slots(w) if now[1] else -self._slots(w)
        if now[2] != was[2]:
            self.n_draining += 1 if now[2] else -1

    def _accepting_changed(self, w, accepting: bool) -> None:
        """Hook: `w` started (True) or stopped taking work while up."""

    def _idle(self, w) -> None:
        """A worker that left the stage finished its last request."""
        self._update(w)
        if self.on_idle is not None:
            self.on_idle(w)
