"""The commands' rich console, made in one place.

Why: rich wraps every line at the terminal's width, and at 80 columns when output is piped, so a
preset path or a model name printed to a file or a pager broke mid-word ("kimi-lin / ear").
Piped output keeps its lines whole unless COLUMNS names a width to keep to, and its tables get
the room they need (up to PIPED_WIDTH columns) instead of 80, where they cut names to
"naive-heter…"; a terminal still wraps at its width."""

from __future__ import annotations

import copy
import os
import sys

from rich.console import Console
from rich.table import Table


class _Console(Console):
    """Prints a table's title and caption as lines of their own: rich wraps them to the
    table's width, which cuts a narrow table's caption mid-word ("prefill_ / batch.py")."""

    def print(self, *objects, **kwargs) -> None:  # type: ignore[override]
        if len(objects) == 1 and isinstance(t := objects[0], Table) and (t.title or t.caption):
            title, caption = t.title, t.caption
            t = copy.copy(t)
            t.title = t.caption = None
            if title:
                super().print(title, style="table.title", highlight=False)
            super().print(t, **kwargs)
            if caption:
                super().print(caption, style="table.caption", highlight=False)
            return
        super().print(*objects, **kwargs)


PIPED_WIDTH = 160  # a piped table's widest layout (rich sizes a table to its content below it)


def make_console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr) that soft-wraps unless it writes to a terminal or the
    environment's COLUMNS asks for a width."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        tty = False
    soft = not tty and not os.environ.get("COLUMNS")
    return _Console(stderr=stderr, soft_wrap=soft, width=PIPED_WIDTH if soft else None)
