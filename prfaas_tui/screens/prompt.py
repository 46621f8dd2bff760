"""A one-line modal prompt that validates as you submit: the reason a value is refused shows
under the input and the prompt stays open, so typing an exact value never fails silently."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


def steady_input(node: DOMNode, value: str = "", **kw) -> Input:
    """An Input whose cursor does not blink when the app is not live (stable snapshots)."""
    inp = Input(value, **kw)
    inp.cursor_blink = getattr(node.app, "live", True)
    return inp


class ValuePrompt(ModalScreen[str | None]):
    """Returns the accepted text, or None when cancelled."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt-cancel")]

    def __init__(self, title: str, value: str = "", hint: str = "",
                 validate: Callable[[str], str | None] | None = None) -> None:
        super().__init__(classes="dialog")
        self._title, self._value, self._hint = title, value, hint
        self._validate = validate

    def compose(self) -> ComposeResult:
        with Vertical(classes="frame"):
            yield Label(self._title, id="title")
            yield steady_input(self, self._value, id="value", select_on_focus=True)
            yield Static(self._hint, classes="help")
            yield Static("", id="error", classes="error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        err = self._validate(text) if self._validate else None
        if err:
            self.query_one("#error", Static).update(f"✗ {err}")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question (quitting during a drill): y answers yes; n, esc answer no."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("y", "answer(True)", "Yes", id="confirm-yes"),
                Binding("n,escape", "answer(False)", "No", id="confirm-no")]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__(classes="dialog")
        self.question, self.detail = question, detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="frame"):
            yield Label(self.question, id="title")
            if self.detail:
                yield Static(self.detail, classes="help")
            yield Static("y: yes · n/esc: no", classes="help")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
