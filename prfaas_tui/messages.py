"""Messages from the emulator thread to the UI.

`TickReady` coalesces (as Textualize's toolong does): when the UI falls behind, a newer tick
replaces the queued one, so a fast emulator can never flood the message queue or delay a key.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message

from prfaas_tui.live import Tick


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
