"""Asking before a run is replaced: a preset load, a new preset or a drill throws the running
emulation away, so a run long enough to matter, or a drill not yet scored, asks first. The
pair's dashboard and the topology view ask the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen

from emulator.units import format_duration

DISCARD_AFTER_S = 600.0  # a run this long (simulated) is not replaced without asking


def discard_run_then(screen: Screen, what: str, go: Callable[[], Any], *,
                     export: str = "e (the time series) or E (the events)") -> None:
    """Replace the screen's running run with `go()`, asking first when it has run long enough
    to lose (DISCARD_AFTER_S simulated seconds) or is a drill not yet scored. `screen` has the
    dashboards' `tick`, `drill`, `scored` and `session`; `export`: the keys that save it."""
    from prfaas_tui.screens.prompt import ConfirmScreen

    tick = screen.tick  # type: ignore[attr-defined]
    ran = tick.snapshot.sim_time if tick is not None else 0.0
    running = screen.drill  # type: ignore[attr-defined]
    drill = running is not None and not screen.scored  # type: ignore[attr-defined]
    if ran < DISCARD_AFTER_S and not drill:
        go()
        return
    run = f"drill {running.name}" if drill else screen.session.scenario.name  # type: ignore[attr-defined]
    screen.app.push_screen(
        ConfirmScreen(f"Discard the running {run} and {what}?",
                      f"it has run {format_duration(ran)} of simulated time; export it first "
                      f"with {export}"),
        lambda yes: go() if yes else None)
