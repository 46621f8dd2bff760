"""Prefill stages: remote PrfaaS and local PD-P, each a shared FIFO queue in front of instances
that serve one prefill at a time, or, with a batched profile, run steps up to a token budget
(emulator.sim.stages.steps).

An instance is held from the start of a prefill until the request's KV has left over its link
(the transfer cache is freed then), not merely until compute ends. With ample bandwidth the two
coincide (layer-wise pipelining); with scarce bandwidth the link paces the instances, which is
how the min() of Eq. 3 arises here rather than being assumed. Service time is the profile's
T_prefill of the incremental (uncached) length; the KV is S_kv of the whole prompt, which the
decode instance needs.

`on_start(worker, request) -> flow bytes`, when set, runs synchronously as a prefill starts
(so the virtual clock stays exact): a real torch prefill measures the service time there, and
the prefix cache sizes the flow and sets the worker's prefill-end timer (`worker.end`, which a
failure cancels). `detach` frees an instance before its KV has left, when the transfer cache
takes the tail over.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from emulator.sim.core.costs import Costs
from emulator.sim.core.request import Request
from emulator.sim.stages.link import Flow, Link
from emulator.sim.stages.stage import Stage, Worker
from emulator.sim.stages.steps import StepHook, Stepping


class PrefillWorker(Worker):
    __slots__ = ("job", "flow", "end", "until", "batch", "carry", "pending", "tick")

    def __init__(self, idx: int, machine):
        super().__init__(idx, machine)
        self.job: Request | None = None
        self.flow: Flow | None = None
        self.end = None  # prefill-end timer an `on_start` hook set (cancelled on failure)
        self.until = 0.0  # its current prefill's compute ends here (its KV may still be leaving)
        # batched: the step it runs, the request it cuts, the step's compute and flows not
        # finished yet, and the step's end timer
        self.batch: list = []
        self.carry = None
        self.pending = 0
        self.tick = None

    @property
    def busy(self) -> bool:
        return self.job is not None or self.pending > 0


class PrefillStage(Stepping, Stage):
    def __init__(self, loop, name: str, costs: Costs, link: Link,
                 deliver: Callable[[Request], None]):
        super().__init__(loop, name)
        self.set_costs(costs)
        self.link = link
        self.deliver = deliver  # the KV reached the decode side
        self._free: list[int] = []  # heap of idle, accepting, alive worker indices
        self.queued_work = 0.0  # prefill seconds waiting in the queue
        self.queued_kv = 0.0  # KV bytes waiting in the queue
        self.work_started = 0.0  # prefill seconds started (compute utilization)
        self._work_cut = 0.0  # ... of which a failure cut off before they ran
        self.on_start: Callable[[PrefillWorker, Request], float] | None = None
        self.on_step: StepHook | None = None  # sees each batched step's (request, chunk, prefix)
        self._on = 0  # batched: requests on the instances
        self.early = 0  # batched: earlier chunks' flows on the wire (the link counts them)

    def set_costs(self, costs: Costs) -> None:
        """A new profile for requests that join from now on (homogeneous paradigm switch)."""
        self.costs = costs
        self._t_prefill = costs.t_prefill
        self._s_kv = costs.s_kv
        self._step = costs.step
        if costs.step is not None:
            self._stepped = costs.step  # the last step cost, for steps still held after a switch

    # -- requests ----------------------------------------------------------------------------
    def submit(self, req: Request) -> None:
        now = self.loop.now
        self._account(now)
        req.stage = self.name
        service = self._t_prefill(req.incr)
        req.service = service if service > 0 else 0.0  # a fully cached prompt: no compute
        req.kv = self._s_kv(req.length)
        req.t_enq = now
        self.entered += 1
        if self._step is not None:
            self._submit_step(req, now)
        elif self._free:
            self._start(self.workers[heapq.heappop(self._free)], req, now)
        else:
            self.queue.append(req)
            self.queued_work += req.service
            self.queued_kv += req.kv

    def work_done(self, now: float) -> float:
        """Prefill seconds computed up to `now`: those started, less what the running prefills
        have still to go and what failures cut off. A window's compute utilization from it stays
        within 100% (from `work_started`, the first seconds of a run read 200-400%: a prefill
        counted whole as it starts). Read-only, O(instances): for snapshots. The single pair's
        books read `work_started` (locked bit-identical; over a run's halves the two differ only
        by the prefills running at the ends)."""
        left = 0.0
        for w in self.workers:
            if (w.job is not None or w.pending) and w.until > now:
                left += w.until - now
        return self.work_started - self._work_cut - left

    def expected_wait(self) -> float:
        """Seconds a request joining now would queue: queued compute over the instances, or
        queued KV over the link when that is slower; never, with no instance accepting (a
        site of 0 instances, or all lost: a policy must not send work there)."""
        if self.n_accepting == 0:
            return float("inf")
        if not self.queue:
            return 0.0
        wait = self.queued_work / self.n_accepting
        cap = self._kv_rate()
        return max(wait, self.queued_kv / cap) if cap > 0 else float("inf")

    def _kv_rate(self) -> float:
        return self.link.capacity  # queued KV leaves over the link (a site: its egress)

    def _start(self, w: PrefillWorker, req: Request, now: float) -> None:
        w.job = req
        req.worker = w
        self.in_service += 1
        self.started += 1
        self.wait_sum += now - req.t_enq
        size = req.kv if self.on_start is None else self.on_start(w, req)
        self.work_started += req.service
        w.until = now + req.service
        w.flow = self.link_for(req).open(size, req.service, self._sent, self.deliver, req)

    def link_for(self, req: Request) -> Link:
        """The link a request's KV leaves over (a site's stage: its region's)."""
        return self.link

    def _sent(self, flow: Flow) -> None:
        """The last KV byte left: the instance is free."""
        now = self.loop.now
        self._account(now)
        req = flow.payload
        w = req.worker
        req.worker = None
        w.job = None
        w.flow = None
        self.in_service -= 1
        self.done += 1
        self.sojourn_sum += now - req.t_enq
        self._next(w, now)

    def detach(self, w: PrefillWorker, on_sent: Callable[[Flow], Any]) -> Flow:
        """Free the instance now and leave its KV flow running on its own (the transfer cache
        holds the tail); `on_sent(flow)` replaces the release when the last byte leaves."""
        flow = w.flow
        flow.on_sent = on_sent
        self._sent(flow)
        return flow

    def _next(self, w: PrefillWorker, now: float) -> None:
        if self._step is not None:
            self._resume(w, now)
        elif w.accepting and w.machine.alive:
            if self.queue:
                req = self.queue.popleft()
                self.queued_work -= req.service
                self.queued_kv -= req.kv
                if not self.queue:
                    self.queued_work = self.queued_kv = 0.0
                self._start(w, req, now)
            else:
                heapq.heappush(self._free, w.idx)
        else:
            self._idle(w)

    # -- pool interface ----------------------------------------------------------------------
    def add_worker(self, machine) -> PrefillWorker:
        w = PrefillWorker(len(self.workers), machine)
        self.workers.append(w)
        return w

    def activate(self, w: PrefillWorker) -> None:
        w.accepting = True
        self._update(w)
        if not w.busy and w.machine.alive and w.idx not in self._free:
            self._next(w, self.loop.now)

    def drain(self, w: PrefillWorker) -> None:
        """Stop taking work; the pool hears `on_idle` once the current prefill has left."""
        w.accepting = False
        self._unfree(w)
        if not w.busy:
            self._idle(w)
        else:
            self._update(w)

    def fail(self, w: PrefillWorker) -> list[Request]:
        """The instance died: its prefill starts over at the head of the queue (the KV it had
        sent is lost with the transfer cache). Nothing is displaced out of the stage."""
        self._unfree(w)
        now = self.loop.now
        self._account(now)
        if w.end is not None:
            w.end.cancel()
            w.end = None
        self._fail_step(w, now)
        if w.job is not None:
            req = w.job
            if w.until > now:
                self._work_cut += w.until - now
            self.link_for(req).cancel(w.flow)
            w.job = w.flow = None
            req.worker = None
            self.in_service -= 1
            self.queue.appendleft(req)
            self.queued_work += req.service
            self.queued_kv += req.kv
        self._update(w)
        if not w.accepting:
            self._idle(w)
        return []

    def restore(self, w: PrefillWorker) -> None:
        self._update(w)
        if w.accepting and not w.busy and w.idx not in self._free:
            self._next(w, self.loop.now)

    def _unfree(self, w: PrefillWorker) -> None:
        if w.idx in self._free:
            self._free.remove(w.idx)
            heapq.heapify(self._free)
