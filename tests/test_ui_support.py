"""Helpers for the UI tests (no tests here): reading the screen as text, waiting on the app."""

from __future__ import annotations

from collections.abc import Callable

from prfaas_tui.app import PrfaasApp
from prfaas_tui.commands.snapshot import screen_rows
from prfaas_tui.screens.dashboard import Dashboard
from prfaas_tui.widgets.controls import KNOBS, ControlPanel


def screen_text(app: PrfaasApp) -> str:
    """What a user sees, as plain text rows."""
    return "\n".join(screen_rows(app.export_screenshot()).values())


def panel_text(app: PrfaasApp) -> str:
    """The knob panel as one line: the refusal reason wraps inside it."""
    return " ".join(app.screen.query_one(ControlPanel).render().plain.split())


def burst(app, *keys: str) -> None:
    """Keys as a terminal delivers them, all at once (tmux send-keys): none waits on another."""
    from textual import events

    for key in keys:
        char = {"space": " ", "slash": "/"}.get(key, key if len(key) == 1 else None)
        app._driver.send_message(events.Key(key, char))


def dash(app: PrfaasApp) -> Dashboard:
    return next(s for s in app.screen_stack if isinstance(s, Dashboard))


async def select_element(pilot, screen: Dashboard, element: tuple[str, str]) -> None:
    """Walk a topology's elements with the arrows until `element` is the selected one."""
    for _ in range(len(screen.order)):
        if screen.selected == element:
            break
        await pilot.press("down")
        await pilot.pause()
    assert screen.selected == element


def sim_time(app: PrfaasApp) -> float | None:
    """The simulated time of the dashboard's latest tick (None before the first)."""
    tick = dash(app).tick
    return tick.snapshot.sim_time if tick else None


async def wait_for(pilot, predicate: Callable[[], bool], within_sim: float = 120.0) -> None:
    """Let the app run until predicate() holds (live runs post ticks from another thread).

    Gives up once the emulator has run `within_sim` simulated seconds without it: the wall
    clock never decides, so a loaded machine only makes the wait longer (pytest-timeout ends
    a wait on an emulator that stopped)."""
    start = sim_time(pilot.app)
    while not predicate():
        now = sim_time(pilot.app)
        start = now if start is None else start
        if now is not None and now - start > within_sim:
            raise AssertionError(f"{within_sim:g} simulated seconds passed without it")
        await pilot.pause(0.02)
    await pilot.pause()


async def select_knob(pilot, key: str) -> None:
    """Move the knob cursor to `key` with the arrow keys, as a user would."""
    panel = pilot.app.screen.query_one(ControlPanel)
    panel.focus()
    target = next(i for i, k in enumerate(KNOBS) if k.key == key)
    while panel.cursor != target:
        await pilot.press("down" if panel.cursor < target else "up")


async def type_value(pilot, text: str) -> None:
    """Replace the open dialog's value with `text` and press enter."""
    for _ in range(30):
        await pilot.press("backspace")
    for ch in text:
        await pilot.press(ch)
    await pilot.press("enter")
    await pilot.pause()
