"""Pools of instances and their roles: the local PD cluster (each instance prefill, decode or
spare) and the PrfaaS cluster (prefill or spare).

A role change never loses work: the instance drains first (takes nothing new, finishes what it
holds), then waits `conversion_delay` seconds (reloading for its new role), then serves its new
stage. Asking again while it drains or converts just retargets it. Failure and recovery are per
instance and leave the roles alone; the displaced requests go back to the engine.
"""

from __future__ import annotations

from collections.abc import Callable

from emulator.sim.core.request import Request


class Machine:
    """One instance's hardware; it serves in at most one stage at a time."""

    __slots__ = ("idx", "alive", "role", "target", "workers", "converting")

    def __init__(self, idx: int):
        self.idx = idx
        self.alive = True
        self.role: str | None = None  # the stage it serves (or drains from)
        self.target: str | None = None  # the stage it should serve
        self.workers: dict = {}  # stage name -> its worker there
        self.converting = None  # timer while it reloads for `target`


class Pool:
    def __init__(self, loop, name: str, stages: dict, conversion_delay: float = 0.0,
                 reroute: Callable[[list[Request]], None] | None = None):
        self.loop = loop
        self.name = name
        self.stages = stages  # role name -> stage
        self.conversion_delay = conversion_delay
        self.reroute = reroute  # requests that lost their instance's state
        self.machines: list[Machine] = []
        self.size = 0  # machines in use (the pool may shrink: the rest stay spare)
        for stage in stages.values():
            stage.on_idle = self._idle

    def resize(self, size: int) -> None:
        while len(self.machines) < size:
            m = Machine(len(self.machines))
            for role, stage in self.stages.items():
                m.workers[role] = stage.add_worker(m)
            self.machines.append(m)
        self.size = size

    def set_counts(self, counts: dict[str, int], *, immediate: bool = False) -> None:
        """Give `counts[role]` machines to each role, moving as few as possible; the rest of the
        pool goes spare. `immediate` skips the conversion delay (the initial layout)."""
        unknown = set(counts) - set(self.stages)
        if unknown:
            raise ValueError(f"{self.name}: no stage {sorted(unknown)[0]!r}")
        if sum(counts.values()) > self.size or min(counts.values(), default=0) < 0:
            raise ValueError(f"{self.name}: {counts} does not fit a pool of {self.size}")
        want = dict(counts)
        plan: list[str | None] = [None] * len(self.machines)
        for m in self.machines[: self.size]:  # keep machines in the roles they are heading to
            if m.target is not None and want.get(m.target, 0) > 0:
                plan[m.idx] = m.target
                want[m.target] -= 1
        free = iter(sorted((m for m in self.machines[: self.size] if plan[m.idx] is None),
                           key=lambda m: (m.target is not None, m.idx)))  # spare ones first
        for role in self.stages:
            for _ in range(want.get(role, 0)):
                plan[next(free).idx] = role
        for m, target in zip(self.machines, plan, strict=True):
            if m.target != target or (immediate and m.role != target):
                self._retarget(m, target, immediate)

    def count(self, role: str) -> int:
        """Machines assigned to `role` (serving, draining into it, or converting to it)."""
        return sum(1 for m in self.machines if m.target == role)

    def failed(self, role: str) -> int:
        """Machines assigned to `role` that are down (an instance loss)."""
        return sum(1 for m in self.machines if m.target == role and not m.alive)

    # -- role changes ------------------------------------------------------------------------
    def _retarget(self, m: Machine, target: str | None, immediate: bool) -> None:
        m.target = target
        if m.role is not None:
            w = m.workers[m.role]
            stage = self.stages[m.role]
            if m.role == target:
                if not w.accepting:
                    stage.activate(w)  # it was draining away: keep it
            elif w.accepting:
                stage.drain(w)  # on_idle continues the change
            return
        if m.converting is not None:
            m.converting.cancel()
            m.converting = None
        self._convert(m, 0.0 if immediate else self.conversion_delay)

    def _idle(self, w) -> None:
        """A worker that was asked to leave its stage has nothing left to do."""
        m = w.machine
        if m.role is None or m.workers[m.role] is not w or w.accepting:
            return
        m.role = None
        self._convert(m, self.conversion_delay)

    def _convert(self, m: Machine, delay: float) -> None:
        if m.target is None:
            return
        if delay > 0:
            m.converting = self.loop.call_at(self.loop.now + delay, self._converted, m)
        else:
            self._converted(m)

    def _converted(self, m: Machine) -> None:
        m.converting = None
        if m.target is None:
            return
        m.role = m.target
        self.stages[m.role].activate(m.workers[m.role])

    # -- failures ----------------------------------------------------------------------------
    def fail(self, idx: int) -> None:
        m = self._machine(idx)
        if not m.alive:
            return
        m.alive = False
        displaced: list[Request] = []
        for role, w in m.workers.items():
            displaced += self.stages[role].fail(w)
        if displaced and self.reroute is not None:
            self.reroute(displaced)

    def restore(self, idx: int) -> None:
        m = self._machine(idx)
        if m.alive:
            return
        m.alive = True
        for role, w in m.workers.items():
            self.stages[role].restore(w)

    def _machine(self, idx: int) -> Machine:
        if not 0 <= idx < len(self.machines):
            raise ValueError(f"{self.name}: no instance {idx} (the pool has {len(self.machines)})")
        return self.machines[idx]
