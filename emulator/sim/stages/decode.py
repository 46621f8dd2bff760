"""Decode (PD-D): continuous batching up to BS_max per instance, admission once the KV has
arrived, a KV memory budget per instance, a shared FIFO queue for requests waiting for a slot.

Events happen at request and batch boundaries, never per token. With the paper's constant step
time T_decode an instance steps on a fixed grid while its batch is not empty; a request joins at
the next step boundary and finishes exactly L_out steps later, so it needs one timer. With a step
profile (a + b * batch + c * context tokens) the step time changes with the batch: each instance
keeps one timer for its next batch change (a completion, or a boundary where waiting requests
join) and computes the time of k steps in closed form, since the context grows by the batch size
per step. A decode from the cards (emulator.scenario.decode.CardStep) is the same stroke: at each
batch change it gives the segment's (a + b * batch, c), the cards' step as a chord in context.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable
from operator import attrgetter

from emulator.scenario.decode import CardStep
from emulator.scenario.sim import StepProfile
from emulator.sim.core.request import Request
from emulator.sim.stages.stage import Stage, Worker

_STEP_TOL = 1e-6  # a time within this fraction of a step from a boundary is on it
_index = attrgetter("idx")
_ceil, _floor, _sqrt = math.ceil, math.floor, math.sqrt


def _finish_at(finish: deque, entry: tuple) -> None:
    """Put a request's (finish step, rid, request) in order: at the end when it finishes last,
    which is every request when the output length is fixed (a heap's pop cost more)."""
    if not finish or finish[-1] < entry:
        finish.append(entry)
    else:
        finish.insert(bisect.bisect(finish, entry), entry)


class DecodeWorker(Worker):
    __slots__ = ("n", "kv", "phase", "reqs", "seg_start", "first", "grow", "next_k", "batch",
                 "ctx", "finish", "pending", "timer", "k_total", "busy_from", "stepped")

    def __init__(self, idx: int, machine):
        super().__init__(idx, machine)
        self.n = 0  # requests holding a slot (in the batch or joining at the next boundary)
        self.kv = 0.0  # their KV bytes
        self.phase = 0.0  # constant mode: origin of the step grid
        self.reqs: dict[int, Request] = {}
        # step-profile mode
        self.seg_start = 0.0  # the batch last changed here...
        self.first = self.grow = 0.0  # ...its first step lasts `first`, each next `grow` more
        self.next_k: float = math.inf  # ...until this step (k_total): a completion or a refit
        self.k_total = 0  # ...after this many steps since the instance started
        self.batch = 0  # requests stepping now
        self.ctx = 0.0  # context tokens they hold at seg_start
        self.finish: deque = deque()  # (finish step, rid, request), in order (`_finish_at`)
        self.pending: list[Request] = []  # joining at the next boundary
        self.timer = None  # fires at the next batch change (a join moves it later)
        self.busy_from = 0.0  # it last started stepping here...
        self.stepped = 0.0  # ...after this many seconds of steps in earlier busy spells

    @property
    def busy(self) -> bool:
        return self.n > 0


class DecodeStage(Stage):
    def __init__(self, loop, t_decode: float, bs_max: int, kv_budget: float | None,
                 complete: Callable[[Request, float], None], mean_out: float,
                 step: StepProfile | CardStep | None = None):
        super().__init__(loop, "pd-d")
        self.t_decode = t_decode
        self.mean_out = mean_out
        self.bs_max = bs_max
        self.kv_budget = math.inf if kv_budget is None else kv_budget
        self.complete = complete  # (request, now): the last token is out
        self.step = step
        # by batch: the (a, c) of every segment of that batch (None: refit per segment); a list
        # as long as the largest batch an instance can hold
        self._lines: list[tuple[float, float] | None] = [None] * (bs_max + 1 if step else 0)
        # the steps and context tokens decoded by requests that left the batch (stepped modes;
        # with the instances' step counts and busy spells, the means `step_stats` reports)
        self._done_steps = 0
        self._done_context = 0.0
        self._accepting: list[DecodeWorker] = []  # accepting and up, by index
        # (load, index) of accepting instances, pushed at every load change: the least-loaded
        # pick is the first entry that still matches its worker (a min() over a region's 100+
        # instances per request cost more than the rest of the admission)
        self._loads: list[tuple[int, int]] = []
        self._admit = self._admit_constant if step is None else self._admit_stepped

    def _slots(self, w) -> int:
        return self.bs_max

    def _accepting_changed(self, w: DecodeWorker, accepting: bool) -> None:
        """Keep `_accepting` in index order (the least-loaded pick breaks ties by index)."""
        if accepting:
            bisect.insort(self._accepting, w, key=_index)
            self._load_changed(w)
        else:
            del self._accepting[bisect.bisect_left(self._accepting, w.idx, key=_index)]

    # -- requests ----------------------------------------------------------------------------
    def submit(self, req: Request) -> None:
        """The request's KV has arrived: take a slot now or wait in the queue."""
        now = self.loop.now
        self._account(now)
        self.entered += 1
        req.t_enq = now
        if not self.queue:
            w = self._pick(req.kv)
            if w is not None:
                self._admit(w, req, now)
                return
        self.queue.append(req)

    def fits(self, kv: float) -> bool:
        """Whether an instance could ever hold this much KV."""
        return kv <= self.kv_budget

    def expected_wait(self) -> float:
        """Seconds a request joining the queue now would wait for a slot (slot turnover)."""
        if not self.queue:
            return 0.0
        slots = len(self._accepting) * self.bs_max
        if slots == 0:
            return math.inf
        return len(self.queue) * self.t_decode * self.mean_out / slots

    def _pick(self, kv: float) -> DecodeWorker | None:
        """The least-loaded instance with a free slot and room for the KV (lowest index on
        ties)."""
        if not self._accepting:
            return None
        bs, budget = self.bs_max, self.kv_budget
        if budget == math.inf:  # slots only: the least loaded one decides (the heap's head)
            loads, workers = self._loads, self.workers
            while True:
                n, idx = loads[0]
                w = workers[idx]
                if w.n == n and w.counted[0]:
                    return w if n < bs else None
                heapq.heappop(loads)  # stale: the load changed or the worker left
        best = None
        for w in self._accepting:
            if w.n < bs and w.kv + kv <= budget and (best is None or w.n < best.n):
                best = w
        return best

    def _load_changed(self, w: DecodeWorker) -> None:
        """Record `w`'s load for `_pick`; the stale entries are dropped as they reach the head,
        and all of them once they outnumber the live ones 3 to 1 (the heap stays O(workers))."""
        loads = self._loads
        heapq.heappush(loads, (w.n, w.idx))
        if len(loads) > 4 * len(self._accepting) + 64:
            loads[:] = [(a.n, a.idx) for a in self._accepting]
            heapq.heapify(loads)

    def _take(self, w: DecodeWorker, req: Request) -> None:
        w.n += 1
        w.kv += req.kv
        w.reqs[req.rid] = req
        req.worker = w
        self.in_service += 1
        self._load_changed(w)

    def _admit_constant(self, w: DecodeWorker, req: Request, now: float) -> None:
        td = self.t_decode
        if w.n == 0:
            w.phase = boundary = now  # an idle instance starts stepping at once
        else:
            boundary = w.phase + math.ceil((now - w.phase) / td - _STEP_TOL) * td
            if boundary < now:
                boundary = now
        self._take(w, req)
        req.t_first = boundary + td
        req.timer = self.loop.call_at(boundary + req.out_len * td, self._done_constant, req)

    def _done_constant(self, req: Request) -> None:
        now = self.loop.now
        self._account(now)
        w = req.worker
        self._release(w, req)
        self.complete(req, now)
        self._after_release(w, now)

    def _release(self, w: DecodeWorker, req: Request) -> None:
        del w.reqs[req.rid]
        w.n -= 1
        w.kv = w.kv - req.kv if w.n else 0.0
        req.worker = None
        req.timer = None
        self.in_service -= 1
        self.done += 1
        self._load_changed(w)
        self.sojourn_sum += self.loop.now - req.t_enq

    def _after_release(self, w: DecodeWorker, now: float) -> None:
        queue = self.queue
        while queue:
            nxt = self._pick(queue[0].kv)
            if nxt is None:
                break
            self._admit(nxt, queue.popleft(), now)
        if not w.accepting and w.n == 0:
            self._idle(w)

    # -- step-profile mode -------------------------------------------------------------------
    def step_stats(self) -> dict | None:
        """Mean batch, step seconds and context per request over the steps run (stepped modes;
        None with the constant step or before any step). Counted per request as it leaves the
        batch, and per instance by its step count and busy spells, so a stroke of steps costs
        no bookkeeping: a request that joined at step j of its instance and decoded n steps
        held its prompt plus 0..n-1 tokens in them."""
        steps = sum(w.k_total for w in self.workers)
        if not steps:
            return None
        batch_steps, context, seconds = self._done_steps, self._done_context, 0.0
        for w in self.workers:
            seconds += w.stepped
            if w.batch:
                seconds += w.seg_start - w.busy_from
            for fk, _, req in w.finish:
                n = w.k_total - fk + req.out_len
                batch_steps += n
                context += n * (req.length + (n - 1) / 2)
        return {"steps": steps, "mean_batch": batch_steps / steps, "mean_step": seconds / steps,
                "mean_context": context / batch_steps}

    @staticmethod
    def _steps_by(elapsed: float, first: float, grow: float) -> int:
        """Whole steps finished `elapsed` seconds into a segment (k steps last
        k x first + grow x k(k - 1)/2, written out where it is used: it runs per event)."""
        if grow <= 0:
            return math.floor(elapsed / first + _STEP_TOL)
        # grow/2 k^2 + (first - grow/2) k - elapsed = 0
        b = first - grow / 2
        k = (-b + math.sqrt(b * b + 2 * grow * elapsed)) / grow
        return math.floor(k + _STEP_TOL)

    def _next_boundary(self, w: DecodeWorker, now: float) -> tuple[int, float]:
        """(steps into the segment, time) of its first step boundary at or after `now`."""
        first, grow, start = w.first, w.grow, w.seg_start
        k = self._steps_by(now - start, first, grow)
        t = start + (k * first + grow * k * (k - 1) / 2)
        if t < now - _STEP_TOL * first:
            k += 1
            t = start + (k * first + grow * k * (k - 1) / 2)
        return k, t

    def _admit_stepped(self, w: DecodeWorker, req: Request, now: float) -> None:
        """Join at the next step boundary. Without a completion or refit there the segment is
        re-based to it at once (its start may lie ahead of now) and no event is spent on the
        join; with one, the request waits in `pending` for that boundary's event. The common
        path (a re-based join, a batch whose chord is cached, a timer moved later) is written
        out, `_steps_by` and `_finish_at` included: it runs once per request."""
        self._take(w, req)
        batch, ctx, k_total, pending = w.batch, w.ctx, w.k_total, w.pending
        if batch == 0 and not pending:  # an idle instance starts stepping at once
            w.seg_start = w.busy_from = start = now
        elif now > (start := w.seg_start):  # else the segment starts ahead: join there
            first, grow = w.first, w.grow
            # the first boundary at or after now (within a millionth of a step): at or before
            # the one a constant first step gives, and the same one while the steps grow by
            # less than a step over the segment (the usual case; else solve the quadratic)
            k = _ceil((now - start) / first - _STEP_TOL)
            if grow * k > first:
                half = first - grow / 2
                k = _floor((-half + _sqrt(half * half + 2 * grow * (now - start))) / grow
                           + _STEP_TOL)
            t = start + (k * first + grow * (k * (k - 1) / 2))
            edge = now - _STEP_TOL * first
            while t < edge:
                k += 1
                t = start + (k * first + grow * (k * (k - 1) / 2))
            while k and t - (first + grow * (k - 1)) >= edge:
                k -= 1
                t = start + (k * first + grow * (k * (k - 1) / 2))
            if pending or w.next_k <= k_total + k:
                # the boundary's event takes it in: the timer is due there already (the first
                # boundary from now is the first joiner's, or the next completion's)
                pending.append(req)
                if w.timer is None:
                    self._schedule(w)
                return
            if k:
                w.k_total = k_total = k_total + k
                ctx += k * batch
            w.seg_start = start = t if t > now else now
        w.batch = batch = batch + 1
        w.ctx = ctx = ctx + req.length
        finish = w.finish
        entry = (k_total + req.out_len, req.rid, req)
        if not finish or finish[-1] < entry:
            finish.append(entry)
        else:
            finish.insert(bisect.bisect(finish, entry), entry)
        line = self._lines[batch]
        if line is None or pending:
            self._refit(w)
            req.t_first = start + w.first
            self._schedule(w)
            return
        a, c = line
        w.first = first = a + c * ctx
        w.grow = grow = c * batch
        w.next_k = next_k = finish[0][0]
        req.t_first = start + first
        k = next_k - k_total
        when = start + (k * first + grow * k * (k - 1) / 2)
        timer = w.timer
        if timer is None or timer._when > when:
            self._schedule(w)
        else:  # the join moved the next change later: `loop.move_later`, written out
            timer._when = when

    def _refit(self, w: DecodeWorker) -> None:
        """The segment starting now (the batch just changed): its step's coefficients, its
        first step and growth per step, and the step of its next event (a completion, or the
        end of a card step's chord)."""
        batch = w.batch
        if batch == 0:
            w.ctx = 0.0
            w.next_k = math.inf
            return
        next_k = w.finish[0][0]
        line = self._lines[batch]
        if line is None:
            steps = next_k - w.k_total
            a, c, valid = self.step.coefficients(batch, w.ctx, steps)
            if valid < steps:
                next_k = w.k_total + valid
            elif valid == math.inf:  # the same (a, c) for every segment of this batch
                self._lines[batch] = (a, c)
        else:
            a, c = line
        w.first, w.grow = a + c * w.ctx, c * batch
        w.next_k = next_k

    def _boundary(self, w: DecodeWorker) -> None:
        """At a step boundary (step next_k: a completion or a chord's end, where requests waiting
        to join are let in too): count the steps, let finished requests go, let waiting ones in,
        start a new segment. `_refit` and `_schedule` are written out for the common case (a
        cached chord, nobody queued for a slot): it runs per request."""
        loop = self.loop
        now = loop.now
        fired = w.timer
        if now < fired._when:  # moved later once it was already due to run now: wait for it
            loop.call_again(fired, fired._when)
            return
        self._account(now)
        w.timer = None
        joined = w.pending
        batch = w.batch
        ctx = w.ctx
        k_total = w.k_total
        if batch:  # the timer was for step next_k: waiting requests join there too
            k = w.next_k - k_total
            if k:
                w.k_total = k_total = k_total + k
                ctx += k * batch
        finish = w.finish
        req = finish.popleft()[2] if finish and finish[0][0] <= k_total else None
        if req is not None:
            out, length = req.out_len, req.length
            batch -= 1
            ctx -= length + out
            steps, context = out, out * (length + (out - 1) / 2)
            done = None
            while finish and finish[0][0] <= k_total:  # more than one finishes here
                if done is None:
                    done = [req]
                req = finish.popleft()[2]
                out, length = req.out_len, req.length
                batch -= 1
                ctx -= length + out
                steps += out
                context += out * (length + (out - 1) / 2)
                done.append(req)
            self._done_steps += steps
            self._done_context += context
        w.seg_start = now
        if joined:
            w.pending = []
            for one in joined:
                batch += 1
                ctx += one.length
                _finish_at(finish, (k_total + one.out_len, one.rid, one))
        elif req is not None and not batch:  # the last one left: its busy spell ends here
            w.stepped += now - w.busy_from
        w.batch, w.ctx = batch, ctx
        line = self._lines[batch]  # None for an empty batch
        if line is None:
            self._refit(w)
        else:
            a, c = line
            w.first = first = a + c * ctx
            w.grow = grow = c * batch
            w.next_k = next_k = finish[0][0]
        if joined:
            for one in joined:
                one.t_first = now + w.first
        if req is not None:
            if done is None:
                self._release(w, req)
                self.complete(req, now)
            else:
                for req in done:
                    self._release(w, req)
                    self.complete(req, now)
            if self.queue or not w.accepting:
                # before the timer: a queued request joining `w` now would move it again
                self._after_release(w, now)
                line = None
        if line is not None:  # the segment stands as fitted above
            k = next_k - k_total
            when = now + (k * first + grow * k * (k - 1) / 2)
            loop.call_again(fired, when)
            w.timer = fired
        elif w.timer is None and w.batch and not w.pending:
            k = w.next_k - w.k_total
            when = w.seg_start + (k * w.first + w.grow * k * (k - 1) / 2)
            loop.call_again(fired, when)
            w.timer = fired
        else:
            self._schedule(w)

    def _schedule(self, w: DecodeWorker) -> None:
        """One timer per instance, due at its next completion (or the end of its chord, where a
        card step refits), or the next boundary if some request waits to join."""
        when = math.inf
        if w.batch:
            k = w.next_k - w.k_total
            when = w.seg_start + (k * w.first + w.grow * k * (k - 1) / 2)
            if w.pending:
                now = self.loop.now
                t = self._next_boundary(w, now)[1]
                when = min(when, t if t > now else now)
        elif w.pending:
            when = self.loop.now
        timer = w.timer
        if timer is not None:
            # One due no later is moved (a join moves the next completion later, and a
            # cancelled timer and a new one cost more than a move)
            if timer._when <= when < math.inf:
                self.loop.move_later(timer, when)
                return
            timer.cancel()
            w.timer = None
        if when < math.inf:
            w.timer = self.loop.call_at(when, self._boundary, w)

    def retime(self, bs_max: int, t_decode: float, step: CardStep) -> None:
        """A decode from the cards under another TPOT SLO: new joins obey `bs_max` (a batch
        above it drains as its requests finish) and waiting requests take the slots a larger
        one opens; the step is physics and unchanged."""
        self.bs_max, self.t_decode, self.step = bs_max, t_decode, step
        self._lines += [None] * (bs_max + 1 - len(self._lines))
        now = self.loop.now
        self._account(now)
        queue = self.queue
        while queue and (w := self._pick(queue[0].kv)) is not None:
            self._admit(w, queue.popleft(), now)

    # -- pool interface ----------------------------------------------------------------------
    def add_worker(self, machine) -> DecodeWorker:
        w = DecodeWorker(len(self.workers), machine)
        self.workers.append(w)
        return w

    def activate(self, w: DecodeWorker) -> None:
        w.accepting = True
        self._update(w)
        self._after_release(w, self.loop.now)

    def drain(self, w: DecodeWorker) -> None:
        """Stop admitting; the pool hears `on_idle` once the batch has finished."""
        w.accepting = False
        if w.n == 0:
            self._idle(w)
        else:
            self._update(w)

    def fail(self, w: DecodeWorker) -> list[Request]:
        """The instance died with its batch: those requests lost their KV and must be
        prefilled again; they are handed back (in admission order) for re-routing."""
        now = self.loop.now
        self._account(now)
        lost = list(w.reqs.values())
        for req in lost:
            if req.timer is not None:
                req.timer.cancel()
            req.timer = None
            req.worker = None
        self.in_service -= len(lost)
        for fk, _, req in w.finish:  # the steps they decoded count, as for those that finished
            n = w.k_total - fk + req.out_len
            self._done_steps += n
            self._done_context += n * (req.length + (n - 1) / 2)
        if w.batch:
            w.stepped += w.seg_start - w.busy_from
        w.reqs.clear()
        w.n, w.kv, w.batch, w.ctx = 0, 0.0, 0, 0.0
        self._load_changed(w)
        w.finish, w.pending = deque(), []
        if w.timer is not None:
            w.timer.cancel()
            w.timer = None
        self._update(w)
        if not w.accepting:
            self._idle(w)
        return lost

    def restore(self, w: DecodeWorker) -> None:
        self._update(w)
        if w.accepting:
            self._after_release(w, self.loop.now)
