"""Messages from the emulator thread to the UI.

`TickReady` coalesces (as Textualize's toolong does): when the UI falls behind, a newer tick
replaces the queued one, so a fast emulator can never flood the message queue or delay a key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message


@dataclass(frozen=True)
class Tick:
    """What the emulator looked like at one moment: immutable, safe to share across threads."""

    snapshot: Any  # emulator.sim.snapshot.Snapshot
    history: tuple[Any, ...]  # earlier snapshots, oldest first (ends with `snapshot`)
    paused: bool
    speed: float
    rtf: float | None  # simulated seconds per wall second; None when not paced by the wall clock
    generation: int = 0  # which emulation produced it (a preset load starts a new one)
    applied: int = 0  # how many of the UI's setting changes the emulation has taken so far


class TickReady(Message):
    """A new tick; a queued older one is dropped."""

    def __init__(self, tick: Tick) -> None:
        super().__init__()
        self.tick = tick

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TickReady)


class EmulatorFailed(Message):
    """The emulator thread stopped on an exception; `text` is one line for the user."""

    def __init__(self, text: str, generation: int = 0) -> None:
        super().__init__()
        self.text = text
        self.generation = generation


class CompareProgress(Message):
    """The compare runs advanced; coalesces like TickReady."""

    def __init__(self, results: tuple[Any, ...], done: bool) -> None:
        super().__init__()
        self.results = results
        self.done = done

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CompareProgress)
