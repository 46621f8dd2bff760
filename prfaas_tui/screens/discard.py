"""Asking before a run is replaced: a preset load, a new preset or a drill throws the running
emulation away, so a run long enough to matter, or a drill not yet scored, asks first. The
pair's dashboard and the topology view ask the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App

from emulator.units import format_duration

if TYPE_CHECKING:
    from emulator.scenario.drill import Drill
    from prfaas_tui.live import Tick
    from prfaas_tui.session import Session

DISCARD_AFTER_S = 600.0  # a run this long (simulated) is not replaced without asking


class RunScreen(Protocol):
    """What the check reads of a screen that shows a run (the dashboard, the topology view)."""

    @property
    def app(self) -> App[Any]: ...
    @property
    def tick(self) -> Tick | None: ...
    @property
    def drill(self) -> Drill | None: ...
    scored: bool
    session: Session


def discard_run_then(screen: RunScreen, what: str, go: Callable[[], Any], *,
                     export: str = "e (the time series) or E (the events)") -> None:
    """Replace the screen's running run with `go()`, asking first when it has run long enough
    to lose (DISCARD_AFTER_S simulated seconds) or is a drill not yet scored. `export`: the
    keys that save the run first."""
    from prfaas_tui.screens.prompt import ConfirmScreen

    tick, running = screen.tick, screen.drill
    ran = tick.snapshot.sim_time if tick is not None else 0.0
    drill = running is not None and not screen.scored
    if ran < DISCARD_AFTER_S and not drill:
        go()
        return
    run = f"drill {running.name}" if running is not None and drill else \
        screen.session.scenario.name
    screen.app.push_screen(
        ConfirmScreen(f"Discard the running {run} and {what}?",
                      f"it has run {format_duration(ran)} of simulated time; export it first "
                      f"with {export}"),
        lambda yes: go() if yes else None)
