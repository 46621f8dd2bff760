"""Batched prefill on an instance: steps packed up to a token budget, long prompts in chunks.

Engines (vLLM, SGLang, TensorRT-LLM) run prefill in steps. At each step boundary an instance
packs what it holds and then the stage's shared queue, first come first served, up to its token
budget; the prompt that does not fit is cut, and its next chunk leads the instance's next step.
A step's time is the profile's step cost for that mix (profiles.StepCost): the fixed part at the
step's token count, each chunk's own attention after its prefix, the overhead per step and per
request (a request pays its own with its first chunk). A full step of whole prompts costs the
sum of their T_prefill, which is how the model's capacity and the emulator's agree; a part-full
step costs more per token than a full one, as it does on an engine.

Each chunk's KV leaves as a paced flow produced over its step (layer-wise transfer), so a long
prompt's KV crosses the link chunk by chunk. As in the one-at-a-time path, an instance is held
until its KV has left: it starts its next step once the step's compute has ended and the step's
flows have all been sent (with ample bandwidth, the same instant). A request leaves the stage
when its last chunk's step has ended and its last byte has left, and reaches decode when all its
chunks have arrived.

An instance failure requeues every request of the step it was running, at the head of the queue
in their order, from their first token (their KV is lost with the instance); requests of earlier
steps that had left are not touched. One timer per step and one paced flow per chunk: no event
per token.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from emulator.sim.core.request import Request
from emulator.sim.stages.link import Flow

if TYPE_CHECKING:
    from emulator.sim.core.costs import StepCosts
    from emulator.sim.stages.stage import Worker as PrefillWorker  # the stage's PrefillWorker


class Transfer:
    """One request on a batched instance: its tokens, chunks and KV flows."""

    __slots__ = ("req", "w", "size", "todo", "done", "sent", "open", "wire", "unarrived",
                 "ended", "left", "dead")

    def __init__(self, req: Request, w: PrefillWorker, size: float):
        self.req = req
        self.w = w
        self.size = size  # KV bytes its flows carry in all
        self.todo = max(float(req.incr), 0.0)  # tokens to prefill (a cached prefix is not)
        self.done = 0.0  # tokens packed into steps so far
        self.sent = 0.0  # KV bytes given to flows so far
        self.open = 0  # its flows not sent yet
        self.wire = 0  # its earlier chunks' flows sent, still on the wire (link latency)
        self.unarrived = 0  # its flows not delivered yet
        self.ended = False  # its last chunk's step has ended
        self.left = False  # it left the stage (last step ended, last byte sent)
        self.dead = False  # requeued after a failure: its flows no longer count


# what one step holds: each request with the tokens of its chunk, its prefix and its flow
Entry = tuple[Transfer, float, float, Flow]


def step_seconds(sc: StepCosts, chunks: list[tuple[float, float]], new: int) -> float:
    """A step over `chunks` (tokens, prefix), `new` of them a request's first chunk."""
    mixer = sc.mixer
    total = sc.fixed(sum(c for c, _ in chunks)) + sc.per_step + sc.per_request * new
    for c, p in chunks:
        if c > 0:
            total += mixer(p + c) - (mixer(p) if p > 0 else 0.0)
    return total


class Stepping:
    """The batched half of PrefillStage (its `_step` is the profile's StepCosts)."""

    # -- requests ----------------------------------------------------------------------------
    def _submit_step(self, req: Request, now: float) -> None:
        self.queue.append(req)
        self.queued_work += req.service
        self.queued_kv += req.kv
        if self._free:
            self._resume(self.workers[heapq.heappop(self._free)], now)

    def _resume(self, w: PrefillWorker, now: float) -> None:
        """An idle instance looks for work: a step, or back to the free heap."""
        if self._pack(w, now):
            self.in_service += 1
            self._extra()
        elif w.accepting and w.machine.alive:
            heapq.heappush(self._free, w.idx)

    def _admit(self, w: PrefillWorker, req: Request, now: float) -> Transfer:
        self.queued_work -= req.service
        self.queued_kv -= req.kv
        if not self.queue:
            self.queued_work = self.queued_kv = 0.0
        self.started += 1
        self.wait_sum += now - req.t_enq
        size = req.kv
        if self.on_start is not None:
            size = self.on_start(w, req)
            w.end = None  # the hook's prefill-end timer: the request is not the instance's job
        self._on += 1
        return Transfer(req, w, size)

    def _pack(self, w: PrefillWorker, now: float) -> bool:
        """Pack and start `w`'s next step: the chunk it carries, then the queue (if it takes
        work), first come first served, up to the budget. False: nothing to run."""
        sc = self._step or self._stepped  # a switch to one-at-a-time: finish what it holds
        room = sc.budget
        batch: list[tuple[Transfer, float, float]] = []
        new = 0
        t = w.carry
        w.carry = None
        if t is not None:
            c = min(t.todo - t.done, room)
            room -= c
            batch.append((t, c, t.done))
            if t.done + c < t.todo:
                w.carry = t
        if w.carry is None and w.accepting and w.machine.alive and self._step is not None:
            queue = self.queue
            while room > 0 and queue:
                t = self._admit(w, queue.popleft(), now)
                new += 1
                c = min(t.todo, room)
                room -= c
                batch.append((t, c, 0.0))
                if c < t.todo:
                    w.carry = t
        if not batch:
            return False
        chunks = [(c, p) for _, c, p in batch]
        dur = step_seconds(sc, chunks, new)
        if self.on_step is not None:
            self.on_step(w, [(t.req, c, p) for t, c, p in batch])
        self.work_started += dur
        w.until = now + dur
        entries: list[Entry] = []
        for t, c, p in batch:
            t.done = p + c
            last = t.done >= t.todo
            size = t.size - t.sent if last else t.size * t.done / t.todo - t.sent
            t.sent += size
            t.open += 1
            t.unarrived += 1
            flow = self.link_for(t.req).open(size, dur, self._chunk_sent, self._chunk_arrived, t)
            entries.append((t, c, p, flow))
        w.batch = entries
        w.pending = 1 + len(entries)
        w.tick = self.loop.call_at(w.until, self._step_end, w)
        return True

    def _step_end(self, w: PrefillWorker) -> None:
        now = self.loop.now
        self._account(now)
        w.tick = None
        for t, _, _, _ in w.batch:
            if t.done >= t.todo:
                t.ended = True
                self._settle(t, now)
        self._release(w, now)

    def _chunk_sent(self, flow: Flow) -> None:
        now = self.loop.now
        self._account(now)
        t = flow.payload
        t.open -= 1
        if t.done < t.todo and self.link_for(t.req).latency > 0:
            t.wire += 1  # an earlier chunk on the wire: the link counts it, the stage does not
            self.early += 1
            self._extra()
            self._count(t.req, -1)
        self._settle(t, now)
        self._release(t.w, now)

    def _chunk_arrived(self, t: Transfer) -> None:
        self._account(self.loop.now)
        if t.wire:
            t.wire -= 1
            self.early -= 1
            self._extra()
            self._count(t.req, 1)
        if t.dead:
            return
        t.unarrived -= 1
        if t.left and t.unarrived == 0:
            self.deliver(t.req)

    def _settle(self, t: Transfer, now: float) -> None:
        """`t` leaves the stage once its last step has ended and its last byte has left."""
        if t.left or not t.ended or t.open:
            return
        t.left = True
        self._on -= 1
        self._extra()
        self._count(t.req, -1)
        self.done += 1
        self.sojourn_sum += now - t.req.t_enq
        if t.unarrived == 0:
            self.deliver(t.req)

    def _release(self, w: PrefillWorker, now: float) -> None:
        """One of the step's compute or flows finished; with all of them, the next step."""
        w.pending -= 1
        if w.pending:
            return
        w.batch = []
        if self._pack(w, now):
            self._extra()
            return
        self.in_service -= 1
        self._extra()
        if self._step is None:
            self._next(w, now)  # the stage serves one at a time now
        elif w.accepting and w.machine.alive:
            heapq.heappush(self._free, w.idx)
        else:
            self._idle(w)

    def _extra(self) -> None:
        self.extra = self._on - self.in_service - self.early

    def _count(self, req: Request, delta: int) -> None:
        """Hook: `req` counts `delta` more in the stage (it left, or a chunk is on the wire);
        a site books its requests per region."""

    # -- incidents ---------------------------------------------------------------------------
    def _fail_step(self, w: PrefillWorker, now: float) -> None:
        """The instance died mid-step: the step's requests start over at the head of the queue."""
        if not w.pending:
            return
        if w.tick is not None:
            w.tick.cancel()
            w.tick = None
        if w.until > now:
            self._work_cut += w.until - now
        back = []
        for t, _, _, flow in w.batch:
            self.link_for(t.req).cancel(flow)
            if t.left:
                continue
            t.dead = True
            back.append(t.req)
        for req in reversed(back):
            self.queue.appendleft(req)
            self.queued_work += req.service
            self.queued_kv += req.kv
        self._on -= len(back)
        w.batch = []
        w.carry = None
        w.pending = 0
        self.in_service -= 1
        self._extra()


StepHook = Callable[[Any, list[tuple[Request, float, float]]], None]
