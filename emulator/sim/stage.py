"""What prefill and decode stages share: workers that a pool turns on, drains and fails, and
the time integrals behind utilization, queue depth and Little's law.

A stage is a shared FIFO queue in front of identical workers (the M/G/c reading of the model:
Theta = instances / mean service time); a worker takes the head of the queue when it frees.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Worker:
    """One instance serving one stage. `machine.alive` is shared by the machine's workers."""

    __slots__ = ("idx", "machine", "accepting")

    def __init__(self, idx: int, machine):
        self.idx = idx
        self.machine = machine
        self.accepting = False  # in its role and not draining

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
        self.in_service = 0  # requests being served now
        self.n_online = 0  # service slots of workers that are up and in the stage
        self.n_accepting = 0  # workers that take new work
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
            self._busy_area += self.in_service * dt
            self._online_area += self.n_online * dt
            self._n_area += (len(self.queue) + self.in_service) * dt
            self._t = now

    def totals(self, now: float) -> tuple[float, float, float]:
        """(busy slot-seconds, online slot-seconds, request-seconds in the stage) up to now,
        without touching the running sums (a snapshot must not perturb the run)."""
        dt = max(0.0, now - self._t)
        return (self._busy_area + self.in_service * dt, self._online_area + self.n_online * dt,
                self._n_area + (len(self.queue) + self.in_service) * dt)

    @property
    def holding(self) -> int:
        """Requests in the stage (queued or in service): for the accounting check."""
        return len(self.queue) + self.in_service

    def counts(self) -> tuple[int, int]:
        """(workers taking work, workers draining with work left)."""
        draining = sum(1 for w in self.workers if not w.accepting and w.busy)
        return self.n_accepting, draining

    # -- pool interface ----------------------------------------------------------------------
    def add_worker(self, machine) -> Worker:
        raise NotImplementedError

    def _slots(self, w) -> int:
        return 1

    _deferred = False  # inside counted_once(): activations skip the recount

    @contextmanager
    def counted_once(self) -> Iterator[None]:
        """Recount once after a batch of activations instead of after each (the initial
        layout: start-up O(n) in instances, not O(n^2)). Only while the stage holds no request,
        so nothing reads the counts in between."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False
            self._recount()

    def _recount(self) -> None:
        if self._deferred:
            return
        now = self.loop.now
        self._account(now)
        up = [w for w in self.workers if w.machine.alive]
        self.n_accepting = sum(1 for w in up if w.accepting)
        self.n_online = sum(self._slots(w) for w in up if w.accepting or w.busy)

    def _idle(self, w) -> None:
        """A worker that left the stage finished its last request."""
        self._recount()
        if self.on_idle is not None:
            self.on_idle(w)
