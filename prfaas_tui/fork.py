"""What-if forks of a live run, without Textual.

A fork is a second `Session` on the parent's run: the same scenario and seed, built at the
settings the parent's emulation was built at, with the parent's change log (`live.Logged`:
knobs, incidents, pins, the scheduler switch, a topology element's knobs, each at the
simulated time it took effect) replayed unpaced to the parent's now. The emulation is
deterministic, so the replay is the parent's run again; that is checked, not assumed: every
snapshot of the parent's history (a topology's regions, sites and links too) and an even sample
of its whole-run record is compared with the fork's at the same simulated time (exactly: the
same `repr`, the same export row). At a change instant the parent may have
snapshotted before the change, after it, or between two changes made at that instant (keys
pressed while the clock stood still), so any of those states is accepted there.

Once ready the fork is led by the parent's clock (`Driver.follow`): it runs to each simulated
time the parent snapshots, so both share one time axis, and a change made to the fork goes to
the fork alone. Kept, the parent session carries on as the fork (`Session.adopt`); dropped, it
just stops.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prfaas_tui.live import Driver, Logged, Tick
from prfaas_tui.metrics_export import metric_row
from prfaas_tui.session import Session

VERIFY_ROWS = 256  # rows of the parent's whole-run record checked, evenly thinned


@dataclass(frozen=True)
class Origin:
    """The parent at the fork instant, read together on its emulator thread."""

    at: float  # the parent's simulated time
    log: tuple[Logged, ...]  # every change it took, in order
    history: tuple[Any, ...]  # its snapshots (the plots' history), oldest first
    rows: tuple[tuple[Any, ...], ...]  # its record's rows (thinned), values in column order

    @property
    def settings_changes(self) -> int:
        return sum(entry.change.kind == "settings" for entry in self.log)


@dataclass(frozen=True)
class Verdict:
    """How the replay compared with the parent's run."""

    at: float  # replayed to this simulated time
    checked: int  # parent snapshots and record rows compared
    mismatched: int
    first_mismatch: float | None  # the simulated time of the first that differed
    changes: int  # logged changes replayed
    wall_s: float  # wall seconds the replay took (build, run, checks)

    @property
    def ok(self) -> bool:
        return self.mismatched == 0 and self.checked > 0

    def text(self) -> str:
        from emulator.units import format_duration

        changes = f"{self.changes} change{'' if self.changes == 1 else 's'}"
        head = f"replayed {format_duration(self.at)} and {changes} in {self.wall_s:.2f} s"
        if self.ok:
            return f"{head}: {self.checked:,} of {self.checked:,} checks identical"
        if self.checked == 0:
            return f"{head}: nothing of the parent's to check against"
        return (f"{head}: {self.mismatched:,} of {self.checked:,} checks differ, first at "
                f"{format_duration(self.first_mismatch or 0.0)} (not the parent's run)")


    def short(self) -> str:
        """`text` for a narrow screen."""
        if self.ok:
            return f"{self.checked:,}/{self.checked:,} checks identical ({self.wall_s:.1f} s)"
        if self.checked == 0:
            return "nothing to check against"
        return f"{self.mismatched:,}/{self.checked:,} checks differ: not the run"


def origin_of(parent: Session) -> Origin:
    """Read the parent's time, log and history at one instant (between two of its slices),
    and its record as the UI has it (no later than that instant)."""
    assert parent.driver is not None
    at, log, history = parent.driver.origin()
    rows = [tuple(row.values()) for row in parent.record.dicts()]
    step = max(1, -(-len(rows) // VERIFY_ROWS))
    return Origin(at, log, history, tuple(rows[::step]))


class Fork:
    """A fork of `parent`'s running emulation; see the module docstring.

    `post_tick(tick)` and `post_error(text, generation)` are called on the fork's emulator thread
    (as a Session's); the first tick posted comes once the replay is done (`verdict` set)."""

    def __init__(self, parent: Session, *, post_tick: Callable[[Tick], None],
                 post_error: Callable[[str, int], None]) -> None:
        if parent.driver is None:
            raise ValueError("nothing runs to fork")
        self.parent = parent
        self.origin = origin_of(parent)
        self.verdict: Verdict | None = None
        self.session = parent.branch(post_tick=post_tick, post_error=post_error)
        self._initial = parent.driver.initial

    def start(self) -> None:
        """Build the emulation and replay (on its own thread when live: the first tick says it
        is ready; not live, done on return)."""
        self.session.start(initial=self._initial, prepare=self._replay, led=True,
                           sent=self.origin.settings_changes)

    @property
    def ready(self) -> bool:
        return self.verdict is not None

    def follow(self, tick: Tick | None) -> None:
        """Run the fork to the parent's snapshots after its own now (the parent's clock)."""
        s = self.session
        if tick is None or s.driver is None or s.tick is None:
            return
        now = s.tick.snapshot.sim_time
        times = [snap.sim_time for snap in tick.history if snap.sim_time > now]
        if times:
            s.take(s.driver.follow(times))

    def keep(self) -> None:
        """The parent carries on as the fork, on its own clock, paused as the parent was."""
        paused = self.parent.driver.paused if self.parent.driver is not None else False
        self.parent.adopt(self.session)
        assert self.parent.driver is not None
        self.parent.take(self.parent.driver.lead(paused))

    def drop(self) -> None:
        self.session.stop()

    # -- the fork's emulator thread ---------------------------------------------------------------
    def _replay(self, driver: Driver) -> None:
        t0 = time.perf_counter()
        o = self.origin
        expect: dict[float, list[tuple[str, Any]]] = defaultdict(list)
        for snap in o.history:
            expect[snap.sim_time].append(("snap", _printed(snap)))
        for row in o.rows:
            expect[row[0]].append(("row", row))  # sim_time is the first column
        changes: dict[float, list[Logged]] = defaultdict(list)
        for entry in o.log:
            changes[entry.at].append(entry)
        checked = bad = 0
        first: float | None = None
        for t in sorted(set(expect) | set(changes) | {o.at}):
            if t > driver.now:
                driver.run_until(t)
            wanted = expect.get(t, ())
            states = [driver.snapshot()] if wanted else []  # before, then after each change
            for entry in changes.get(t, ()):
                try:
                    driver.perform(entry.change)
                except Exception:  # the parent took it: a refusal here is a divergence
                    bad, first = bad + 1, t if first is None else first
                if wanted:
                    states.append(driver.snapshot())
            kept = None
            for kind, want in wanted:
                checked += 1
                sides = [s for s in states if self._print(kind, s) == want]
                if not sides:
                    bad, first = bad + 1, t if first is None else first
                elif kind == "snap" and kept is None:
                    kept = sides[0]
            if any(kind == "snap" for kind, _ in wanted):
                driver.keep(kept or states[-1])
        self.verdict = Verdict(o.at, checked, bad, first, len(o.log),
                               time.perf_counter() - t0)

    def _print(self, kind: str, snap: Any) -> Any:
        """What is compared with the parent's: the snapshot's repr (every field, floats
        exactly; a topology's also its regions', sites' and links' objects and live state), or
        the export row the parent's record kept."""
        if kind == "snap":
            return _printed(snap)
        return tuple(metric_row(snap, self.session.point_at(snap)).values())


def _printed(snap: Any) -> str:
    """A snapshot as compared: its repr, and a topology's objects (not in the repr)."""
    return repr(snap) if snap.topology is None else f"{snap!r} {snap.topology!r}"
