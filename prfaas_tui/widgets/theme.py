"""Colors from the running Textual theme, so text and plots stay readable in light and dark;
and `SizedStatic`, for text panels whose content depends on their width or height."""

from __future__ import annotations

from textual.color import Color
from textual.dom import DOMNode
from textual.widgets import Static

SERIES = ("primary", "warning", "success", "error", "secondary", "accent")


def color(node: DOMNode, name: str) -> str:
    """A theme variable ('text-error', 'primary', ...) as '#rrggbb' for Rich styles."""
    return node.app.theme_variables.get(name, "#888888")


def rgb(node: DOMNode, name: str) -> tuple[int, int, int]:
    """A theme variable as an (r, g, b) tuple, the form plotext takes."""
    return Color.parse(color(node, name)).rgb


class SizedStatic(Static):
    """A Static whose content depends on its size (bars, what fits): `show(*args)` is run again
    with the same arguments whenever the widget is resized. Subclasses call `remember(args)`."""

    _shown: tuple | None = None

    def remember(self, *args: object) -> None:
        self._shown = args

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show(*self._shown)  # type: ignore[attr-defined]
