"""A network link carrying KV flows: processor sharing, token bucket, propagation delay and
layer-wise pipelining, as a fluid model driven by events at flow boundaries only.

Every flow has a size (bytes) and a production time: prefill produces its KV linearly over that
time and a flow never sends bytes not produced yet. So while prefill runs, a flow that keeps up
is capped at size / production time ("paced"); one that fell behind (the link was full) may run
faster until it catches up; after production ends it takes whatever the link gives it. The link
shares its capacity max-min fairly (water-filling) and recomputes the rates whenever a flow
starts or ends, catches up, the capacity changes or the token bucket empties.

Two modes keep the common case cheap. While every flow is paced and their rates fit the nominal
capacity, nothing competes: each flow ends exactly when its prefill does and gets its own timer
(O(1) per flow, no rate recomputation). Otherwise the link runs one timer for its next event and
recomputes the rates on each. It keeps its paced flows and its greedy ones (all at one fair
share, the link's) in two lists ordered by production rate: water-filling walks the paced list
in order, and of the greedy flows only those slower than the share (which may catch up with
their production) need a look of their own to find the next event; the rest end first in the
order of their bytes left.

Token bucket: tokens accrue at the nominal rate up to `burst` bytes while the link sends less
than that; while tokens remain, a link with waiting bytes may run at `peak_factor` x nominal.
With burst = 0 (the default) the capacity is simply the nominal rate.

The last byte leaving frees the sender (`on_sent`: the PrfaaS transfer cache); the payload
reaches the other side `latency` seconds later (`on_delivered`).

A WAN link knows the path its bandwidth is the goodput of (emulator.topology.transport): its
line rate, round trip and TCP. Incidents change that path (a loss spike, a route flap): the link
then carries bandwidth x goodput(changed path) / goodput(path), times the other incidents'
factors, and delivers after the changed round trip; flows in flight share the new rate from that
moment. With a pool of warm connections (the transport's `connections`), a flow opened while
every pooled connection carries one waits a connection setup (HANDSHAKE_RTTS round trips) before
its first byte; the bytes its prefill produced meanwhile are then behind and catch up.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Callable, Hashable
from operator import attrgetter
from typing import Any

from emulator.topology.transport import (
    HANDSHAKE_RTTS,
    Goodput,
    PathChange,
    Transport,
    changed,
    path_goodput,
)
from emulator.units import format_bandwidth

INF = float("inf")
_REL = 1e-9  # a byte gap within this fraction of the flow's size counts as closed
_DT = 1e-9  # ... or one that the current rate closes within this many seconds


class Flow:
    """A paced flow sends at its production rate (`prod_rate`); a greedy one at its link's fair
    share (`Link.rate`)."""

    __slots__ = ("fid", "size", "start", "prod_end", "prod_rate", "sent", "paced",
                 "on_sent", "on_delivered", "payload", "timer")

    def produced(self, now: float) -> float:
        if now >= self.prod_end:
            return self.size
        return self.prod_rate * (now - self.start)


PEAK_FACTOR = 2.0  # burst rate / nominal capacity when no peak is configured


class Link:
    def __init__(self, loop, name: str, capacity: float, *, burst: float = 0.0,
                 peak: float | None = None, latency: float = 0.0, line: float | None = None,
                 transport: Transport | None = None):
        if not capacity >= 0:
            raise ValueError(f"{name}: capacity must be >= 0, got {capacity!r}")
        self.loop = loop
        self.name = name
        self.capacity = float(capacity)  # nominal rate, bytes per second (B_out)
        self.bandwidth = self.capacity  # its own rate, before the incidents' factors
        self.factors: dict[Hashable, float] = {}  # the incidents' shares of it, by key
        self.burst = float(burst)
        # the rate while tokens last, relative to the nominal capacity (kept across changes)
        self.peak_factor = max(1.0, peak / self.capacity) if peak and self.capacity else PEAK_FACTOR
        self.latency = float(latency)
        self.tokens = self.burst
        self.mirror: Link | None = None  # the reverse direction: follows every capacity change
        self.flows: dict[int, Flow] = {}  # every open flow, oldest first
        self._fid = 0
        self._fast = True  # every flow paced and within the nominal capacity
        # the general mode's split of `flows`, each ordered by (production rate, age): paced,
        # and greedy (every one at `_share`, bytes per second)
        self._paced: list[Flow] = []
        self._greedy: list[Flow] = []
        self._share = 0.0
        self.used = 0.0  # bytes per second leaving now
        self._t = loop.time()
        self._timer = None
        self._saturated = False  # full, with some flow wanting more than it gets
        # cumulative, read through `totals()` (integrals up to self._t)
        self._sent = 0.0
        self._cap_area = 0.0
        self._sat_time = 0.0
        self.flows_done = 0
        self.propagating = 0.0  # bytes sent and still on the wire
        self.propagating_flows = 0
        # the path the bandwidth is the goodput of, and the incidents' changes to it by key
        self.line = self.bandwidth if line is None else float(line)
        self.rtt = self.latency
        self.transport = transport
        self.path_changes: dict[Hashable, PathChange] = {}
        self._path_factor = 1.0
        # warm connections (None: no pool, no setup) and the flows waiting a connection setup
        self.pool = transport.connections if transport is not None else None
        self.pending: dict[int, Flow] = {}
        self.handshakes = 0
        # (loss, bytes/s): the lowest goodput an incident's loss left it while it keeps no
        # connections, so one TCP connection carried it all (the run's warnings say so)
        self.lone: tuple[float, float] | None = None

    @property
    def nominal(self) -> float:
        """What the link itself could carry now (its bandwidth x the incidents' factors)."""
        if self.path_changes:
            return self.bandwidth * math.prod(self.factors.values()) * self._path_factor
        return self.bandwidth * math.prod(self.factors.values())

    def path_goodput(self) -> Goodput:
        """The path's goodput now (under the incidents' changes) and what caps it: the rate
        `nominal` scales the bandwidth by, before the other incidents' factors."""
        return path_goodput(self.line, *changed(self.rtt, self.transport,
                                                list(self.path_changes.values())))

    def lone_warning(self, name: str) -> str | None:
        """The run's warning when an incident's loss fell on it while it keeps no connections
        (`lone`): one connection carried it, at this rate."""
        if self.lone is None:
            return None
        loss, rate = self.lone
        return (f"{name} has no connections: one TCP connection at loss {loss:g} carries "
                f"{format_bandwidth(rate)} (give the link `connections`)")

    def set_path_change(self, key: Hashable, change: PathChange | None) -> None:
        """`key`'s change to the path (None: gone). Sets the round trip and the goodput share
        `nominal` reads; the caller rebalances (the link's group sets its capacity)."""
        if change is None:
            self.path_changes.pop(key, None)
        else:
            self.path_changes[key] = change
        self._repath()
        if change is not None and (self.transport is None or self.transport.connections is None):
            g, (_, t) = self.path_goodput(), changed(self.rtt, self.transport,
                                                     list(self.path_changes.values()))
            if (t is not None and t.loss > 0 and g.bytes_per_s < self.line
                    and (self.lone is None or g.bytes_per_s < self.lone[1])):
                self.lone = (t.loss, g.bytes_per_s)

    def set_transport(self, line: float, transport: Transport | None) -> None:
        """A new TCP for the path (its knobs turned): the caller sets the bandwidth to its
        goodput and rebalances. Flows waiting a setup keep waiting; the pool is the new one."""
        self.line, self.transport = float(line), transport
        self.pool = transport.connections if transport is not None else None
        self._repath()

    def _repath(self) -> None:
        rtt, _ = changed(self.rtt, self.transport, list(self.path_changes.values()))
        base = path_goodput(self.line, self.rtt, self.transport).bytes_per_s
        self._path_factor = self.path_goodput().bytes_per_s / base if base > 0 else 1.0
        self.latency = rtt
        if self.mirror is not None:
            self.mirror.latency = rtt

    @property
    def group(self) -> Link:
        """What sets its capacity from the nominal rates (a site's egress shares its links')."""
        return self

    def rebalance(self) -> None:
        """Capacity = nominal (a link of its own)."""
        self.set_capacity(self.nominal)

    # -- flows -------------------------------------------------------------------------------
    def open(self, size: float, prod_time: float, on_sent: Callable[[Flow], Any],
             on_delivered: Callable[[Any], Any], payload: Any) -> Flow:
        """Start a flow of `size` bytes produced over `prod_time` seconds from now (0: all
        ready). `on_sent(flow)` runs when its last byte leaves, `on_delivered(payload)` when it
        arrives."""
        now = self.loop.now
        self._fid += 1
        f = Flow()
        f.fid = self._fid
        f.size = size
        f.start = now
        f.sent = 0.0
        f.on_sent = on_sent
        f.on_delivered = on_delivered
        f.payload = payload
        f.timer = None
        if prod_time > 0:
            f.prod_end = now + prod_time
            f.prod_rate = size / prod_time
            f.paced = True
        else:
            f.prod_end = now
            f.prod_rate = INF
            f.paced = False
        if self.pool is not None and self.latency > 0 and \
                len(self.flows) + len(self.pending) >= self.pool:
            self.handshakes += 1
            self.pending[f.fid] = f
            f.timer = self.loop.call_at(now + HANDSHAKE_RTTS * self.latency, self._admit, f)
            return f
        self._enter(f, now)
        return f

    def _admit(self, f: Flow) -> None:
        """A flow's connection is set up: it sends from now, behind its production."""
        del self.pending[f.fid]
        f.timer = None
        f.paced = False
        self._enter(f, self.loop.now)

    def _enter(self, f: Flow, now: float) -> None:
        self._account(now)
        self.flows[f.fid] = f
        if self._fast and f.paced and self.used + f.prod_rate <= self.capacity:
            self.used += f.prod_rate
            f.timer = self.loop.call_at(f.prod_end, self._paced_done, f)
        else:
            if self._fast:
                self._general(now)
            else:
                insort(self._paced if f.paced else self._greedy, f, key=_by_rate)
            self._reallocate(now)

    def cancel(self, f: Flow) -> float:
        """Abort a flow (its sender failed); returns the bytes it had sent."""
        now = self.loop.now
        if self.pending.pop(f.fid, None) is not None:
            f.timer.cancel()
            return 0.0
        if f.fid not in self.flows:
            return f.size
        self._account(now)
        del self.flows[f.fid]
        sent = f.produced(now) if f.paced else f.sent
        if self._fast:
            f.timer.cancel()
            self.used = self.used - f.prod_rate if self.flows else 0.0
        else:
            _drop(self._paced if f.paced else self._greedy, f)
            self._reallocate(now)
        return sent

    def set_capacity(self, capacity: float) -> None:
        """Change the nominal rate now (brownout, outage = 0, recovery); flows re-share."""
        if not capacity >= 0:
            raise ValueError(f"{self.name}: capacity must be >= 0, got {capacity!r}")
        if self.mirror is not None:
            self.mirror.set_capacity(capacity)
        now = self.loop.now
        self._account(now)
        self.capacity = float(capacity)
        if self._fast and self.used <= self.capacity:
            return
        self._general(now)
        self._reallocate(now)

    # -- metrics (read-only: a snapshot must not perturb the run's arithmetic) ---------------
    def totals(self, now: float) -> tuple[float, float, float]:
        """(bytes sent, nominal capacity x seconds, seconds saturated) since the start."""
        dt = now - self._t
        return (self._sent + self.used * dt, self._cap_area + self.capacity * dt,
                self._sat_time + (dt if self._saturated else 0.0))

    def rate(self, f: Flow) -> float:
        """The bytes per second an open flow sends now."""
        return f.prod_rate if self._fast or f.paced else self._share

    def _sent_now(self, f: Flow, now: float) -> float:
        if self._fast or f.paced:
            return f.produced(now)
        return min(f.sent + self._share * (now - self._t), f.produced(now))

    def bytes_in_flight(self, now: float) -> float:
        """KV not yet delivered: unsent bytes of open flows (and of those waiting a connection)
        plus bytes on the wire."""
        return (sum(f.size - self._sent_now(f, now) for f in self.flows.values())
                + sum(f.size for f in self.pending.values()) + self.propagating)

    def remaining(self, f: Flow) -> float:
        """Bytes of an open flow not sent yet (0 once it is done)."""
        if f.fid in self.pending:
            return f.size
        if f.fid not in self.flows:
            return 0.0
        return f.size - self._sent_now(f, self.loop.now)

    def queued_bytes(self, now: float) -> float:
        """Bytes produced but not sent: the backlog a full link builds (and the flows waiting a
        connection setup)."""
        waiting = sum(f.produced(now) for f in self.pending.values()) if self.pending else 0.0
        if self._fast:
            return waiting
        return waiting + sum(max(0.0, f.produced(now) - self._sent_now(f, now))
                             for f in self.flows.values())

    @property
    def saturated(self) -> bool:
        return self._saturated

    # -- internals ---------------------------------------------------------------------------
    def _account(self, now: float, flows: bool = True) -> None:
        """Integrals and token bucket up to `now`; with `flows`, every flow's bytes too (the
        timer walks the flows itself, see `_on_timer`)."""
        dt = now - self._t
        if dt <= 0:
            return
        used = self.used
        self._sent += used * dt
        self._cap_area += self.capacity * dt
        if self._saturated:
            self._sat_time += dt
        if self.burst:
            tok = self.tokens + (self.capacity - used) * dt
            self.tokens = self.burst if tok > self.burst else (tok if tok > self.burst * _REL else 0.0)
        if flows and not self._fast:
            inc = self._share * dt
            for f in self._greedy:
                s = f.sent + inc
                # f.produced(now), inlined: this loop runs over every greedy flow per event
                p = f.size if now >= f.prod_end else f.prod_rate * (now - f.start)
                f.sent = s if s < p else p
        self._t = now

    def _general(self, now: float) -> None:
        """Leave the fast mode: flows share one timer and get explicit rates."""
        if not self._fast:
            return
        self._fast = False
        paced, greedy = self._paced, self._greedy
        for f in self.flows.values():
            if f.timer is not None:
                f.timer.cancel()
                f.timer = None
            (paced if f.paced else greedy).append(f)
        paced.sort(key=_by_rate)
        greedy.sort(key=_by_rate)

    def _current_capacity(self) -> float:
        if self.burst and self.tokens > 0:
            return self.capacity * self.peak_factor
        return self.capacity

    def _reallocate(self, now: float) -> None:
        """Water-filling: paced flows get their production rate while it is below the fair
        share; everyone else splits what is left equally."""
        flows = self.flows
        if not flows:
            self.used = 0.0
            self._saturated = False
            self._fast = True
            self._set_timer(INF)
            return
        cap = self._current_capacity()
        paced = self._paced
        remaining = cap
        n = len(flows)
        for f in paced:  # slowest first
            rate = f.prod_rate
            if rate * n > remaining:
                break
            remaining -= rate
            n -= 1
        satisfied = len(flows) - n
        if n == 0 and cap - remaining <= self.capacity:
            # nothing competes: back to one timer per flow, each ending with its prefill
            self.used = cap - remaining
            self._saturated = False
            self._fast = True
            self._paced = []
            self._set_timer(INF)
            for f in paced:
                f.timer = self.loop.call_at(f.prod_end, self._paced_done, f)
            return
        share = remaining / n if n else 0.0
        self._share = share
        greedy = self._greedy
        if satisfied < len(paced):
            for f in paced[satisfied:]:
                f.sent = f.produced(now)
                f.paced = False
                insort(greedy, f, key=_by_rate)
            del paced[satisfied:]
        # the next event: a paced flow's end, or a greedy flow's end or catch-up
        t_next = min([f.prod_end for f in paced]) if paced else INF
        if share > 0 and greedy:
            slow = bisect_left(greedy, share, key=_prod_rate)
            for i in range(slow):  # slower than the share: it may catch up with production
                f = greedy[i]
                sent = f.sent
                t = now + (f.size - sent) / share
                end = f.prod_end
                if end > now:
                    # f.produced(now) inlined (now < prod_end here)
                    t_catch = now + (f.prod_rate * (now - f.start) - sent) / (share - f.prod_rate)
                    if t_catch < end:
                        t = t_catch
                if t < t_next:
                    t_next = t
            if slow < len(greedy):
                # the rest only end: the first is the one with the fewest bytes left (x / share
                # and now + y are monotone, so this is the min of their end times, exactly)
                t = now + min([f.size - f.sent for f in greedy[slow:]]) / share
                if t < t_next:
                    t_next = t
        self.used = cap - remaining + share * n
        self._saturated = n > 0
        if self.burst and self.tokens > 0 and self.used > self.capacity:
            t_empty = now + self.tokens / (self.used - self.capacity)
            if t_empty < t_next:
                t_next = t_empty
        self._set_timer(t_next)

    def _set_timer(self, when: float) -> None:
        timer = self._timer
        if timer is not None:
            if timer.when() == when:
                return
            timer.cancel()
            self._timer = None
        if when < INF:
            self._timer = self.loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        """The general mode's one timer (only it sets one): bring every flow's bytes up to
        now, as `_account` does, and in the same pass find the flows that are done or caught
        up with their production (one walk over the flows instead of two)."""
        now = self.loop.now
        self._timer = None
        dt = now - self._t
        self._account(now, flows=False)
        paced, greedy, flows = self._paced, self._greedy, self.flows
        done = [f for f in paced if now >= f.prod_end - _DT]
        if done:
            self._paced = paced = [f for f in paced if now < f.prod_end - _DT]
        share = self._share
        inc = share * dt
        tol = share * _DT
        left = []  # greedy flows done or caught up: out of the greedy list
        for f in greedy:
            size = f.size
            producing = now < f.prod_end
            p = f.prod_rate * (now - f.start) if producing else size  # f.produced(now)
            if dt > 0:
                s = f.sent + inc
                f.sent = sent = s if s < p else p
            else:
                sent = f.sent
            rem = size - sent
            if rem <= size * _REL or rem <= tol:
                done.append(f)
                left.append(f)
            elif producing:
                gap = p - sent
                if gap <= size * _REL or gap <= (share - f.prod_rate) * _DT:
                    f.sent = p
                    left.append(f)
                    f.paced = True
                    insort(paced, f, key=_by_rate)
        for f in left:
            _drop(greedy, f)
        if len(done) > 1:
            done.sort(key=_by_fid)  # finished oldest first, as they opened
        for f in done:
            del flows[f.fid]
            f.sent = f.size
        self._reallocate(now)
        for f in done:
            self._finish(f, now)

    def _paced_done(self, f: Flow) -> None:
        now = self.loop.now
        self._account(now)
        del self.flows[f.fid]
        f.timer = None
        f.sent = f.size
        self.used = self.used - f.prod_rate if self.flows else 0.0
        self._finish(f, now)

    def _finish(self, f: Flow, now: float) -> None:
        self.flows_done += 1
        f.on_sent(f)
        if self.latency > 0:
            self.propagating += f.size
            self.propagating_flows += 1
            self.loop.call_at(now + self.latency, self._deliver, f)
        else:
            f.on_delivered(f.payload)

    def _deliver(self, f: Flow) -> None:
        self.propagating_flows -= 1
        self.propagating = self.propagating - f.size if self.propagating_flows else 0.0
        f.on_delivered(f.payload)


_by_rate = attrgetter("prod_rate", "fid")  # water-filling order: slowest first, ties by age
_prod_rate = attrgetter("prod_rate")
_by_fid = attrgetter("fid")


def _drop(flows: list[Flow], f: Flow) -> None:
    """Take `f` out of a list ordered by `_by_rate`."""
    del flows[bisect_left(flows, (f.prod_rate, f.fid), key=_by_rate)]
