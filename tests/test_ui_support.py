"""Helpers for the UI tests (no tests here): reading the screen as text, waiting on the app."""

from __future__ import annotations

import asyncio
import time
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


def dash(app: PrfaasApp) -> Dashboard:
    return next(s for s in app.screen_stack if isinstance(s, Dashboard))


async def wait_for(pilot, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the app run until predicate() holds (live runs post ticks from another thread)."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)
    await pilot.pause()


async def select_knob(pilot, key: str) -> None:
    """Move the knob cursor to `key` with the arrow keys, as a user would."""
    panel = pilot.app.screen.query_one(ControlPanel)
    panel.focus()
    target = next(i for i, k in enumerate(KNOBS) if k.key == key)
    while panel.cursor != target:
        await pilot.press("down" if panel.cursor < target else "up")


async def settle(pilot) -> None:
    await pilot.pause()
    await asyncio.sleep(0)
    await pilot.pause()
