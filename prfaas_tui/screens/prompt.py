"""A one-line modal prompt that validates as you submit: the reason a value is refused shows
under the input and the prompt stays open, so typing an exact value never fails silently."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

FIELD_KEYS = [Binding("tab", "app.focus_next", "Next field", show=False, priority=True),
              Binding("shift+tab", "app.focus_previous", "Previous field", show=False,
                      priority=True)]
"""Tab and shift+tab for a dialog of several fields, moving the focus the moment the key
arrives. Textual routes each key to the widget focused on arrival, but moves the focus for a
plain tab binding only once the tab has bubbled up from that widget: keys a terminal delivers
with the tab (`tmux send-keys Tab BSpace 3`) went partly to the old field, partly to the new.
A priority binding is run on arrival, so every later key finds the new field focused (and its
Focus, which selects the text, queued ahead of them)."""


class SteadyInput(Input):
    """An Input that runs its own key bindings (backspace, arrows, ctrl+k...) on arrival.
    Textual runs a widget's bindings only once the key has bubbled up to the app, a queue per
    ancestor later, while a printable key is inserted at once: in a burst (`BSpace 3` from a
    terminal or tmux) the 3 went in first and the backspace then deleted it."""

    async def _on_key(self, event: events.Key) -> None:
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()  # Input's own handler and the bubbling: done here
                return


def steady_input(node: DOMNode, value: str = "", **kw) -> Input:
    """A SteadyInput whose cursor does not blink when the app is not live (stable snapshots)."""
    inp = SteadyInput(value, **kw)
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
            yield Label(Text(self._title), id="title")  # text, not markup: "[loss=P]"
            yield steady_input(self, self._value, id="value", select_on_focus=True)
            yield Static(Text(self._hint), classes="help")
            yield Static("", id="error", classes="error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        err = self._validate(text) if self._validate else None
        if err:
            self.query_one("#error", Static).update(Text(f"✗ {err}"))
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
