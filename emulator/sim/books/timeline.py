"""The incidents of one running emulation: scripted ones scheduled at construction, injected
ones started live, each with its window (start, end, label) kept for scorecards and the UI's
timeline view. What an incident does is its own (emulator.scenario.incidents); the engine's
fault API composes the effects of the active ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from emulator.scenario.incidents import Cancellable, Faults, Incident


class Timer(Cancellable, Protocol):
    def when(self) -> float: ...


class Host(Faults, Protocol):
    """The fault API plus what the timeline itself needs from the engine."""

    def call_at(self, when: float, fn: Callable[..., Any], *args: Any) -> Timer: ...

    @property
    def lengths_fixed(self) -> bool:
        """Whether the requests' lengths come from a trace (no length-mix shift possible)."""

    def note(self, text: str) -> None: ...


class Active:
    """One started incident: its label, its timers and what it changed. Also the key of its
    contributions in the fault API."""

    def __init__(self, timeline: Timeline, incident: Incident, label: str, window: list):
        self.timeline = timeline
        self.incident = incident
        self.label = label
        self.window = window  # [start, end or None, label], shared with Timeline.planned
        self.start = window[0]
        self.timer: Cancellable | None = None  # flap / diurnal ticks
        self.stop_timer: Timer | None = None
        self.machines: list[int] = []  # instance loss: the instances it failed
        self.over = False

    @property
    def manual(self) -> bool:
        """Started by hand (no scripted time)."""
        return self.incident.at is None

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def end(self) -> None:
        """End it now (hand-made incidents; scripted ones end on their own)."""
        self.timeline.finish(self)


class Timeline:
    """See the module docstring."""

    def __init__(self, host: Host, scripted: tuple[Incident, ...] = ()):
        self.host = host
        self.active: list[Active] = []
        self.since: dict[str, float] = {}  # label of each active incident -> its start
        self.planned: list[list] = []  # [start, end or None, label] per incident
        self._listeners: list[Callable[[Active, bool], None]] = []
        for inc in scripted:
            self.inject(inc)

    def inject(self, incident: Incident) -> Active | None:
        """Start `incident` at max(now, incident.at) for `incident.duration` seconds (None:
        until `Active.end()`). Returns the handle once started, None if it starts later."""
        host = self.host
        if not isinstance(incident, Incident):
            raise TypeError(f"not an incident: {incident!r}")
        if incident.changes_lengths and host.lengths_fixed:
            raise ValueError(f"{incident.kind}: a replayed trace brings its own lengths")
        now = host.now
        at = now if incident.at is None else max(now, incident.at)
        window = [at, None if incident.duration is None else at + incident.duration,
                  incident.label]
        self.planned.append(window)
        if at > now:
            host.call_at(at, self._start, incident, window)
            return None
        return self._start(incident, window)

    def listen(self, fn: Callable[[Active, bool], None]) -> None:
        """Call fn(active, started) whenever a lasting incident (not an instant one) starts or
        ends."""
        self._listeners.append(fn)

    def end(self, label: str) -> None:
        """End the active incident with this label (KeyError if none)."""
        for act in self.active:
            if act.label == label:
                self.finish(act)
                return
        raise KeyError(label)

    def end_manual(self) -> int:
        """End every active incident started by hand; returns how many."""
        manual = [a for a in self.active if a.manual]
        for act in manual:
            self.finish(act)
        return len(manual)

    def windows(self) -> list[tuple[float, float | None, str]]:
        """(start, end, label) of every incident planned so far (end None: open): the UI's
        timeline."""
        return [(s, e, lbl) for s, e, lbl in self.planned]

    # -- lifecycle ---------------------------------------------------------------------------
    def _start(self, incident: Incident, window: list) -> Active:
        host = self.host
        at = window[0]
        label = incident.label
        n = 2
        while label in self.since:
            label, n = f"{incident.label} #{n}", n + 1
        window[2] = label
        act = Active(self, incident, label, window)
        incident.start(host, act)
        if incident.instant:
            window[1], act.over = at, True
            host.note(f"incident: {label}")
            return act
        self.active.append(act)
        self.since[label] = at
        host.note(f"incident: {label}")
        if incident.duration is not None:
            act.stop_timer = host.call_at(at + incident.duration, self.finish, act)
        for fn in self._listeners:
            fn(act, True)
        return act

    def finish(self, act: Active) -> None:
        if act.over:
            return
        host = self.host
        act.over = True
        if act.stop_timer is not None and host.now < act.stop_timer.when():
            act.stop_timer.cancel()
        act.incident.stop(host, act)
        act.window[1] = host.now
        self.active.remove(act)
        self.since.pop(act.label, None)
        host.note(f"incident over: {act.label}")
        for fn in self._listeners:
            fn(act, False)
