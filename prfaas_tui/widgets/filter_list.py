"""A picker's list with a filter: `/` opens an input above the list and what is typed narrows
it to the options whose text contains it (case-insensitive), so a long list of presets or
drills is a few keystrokes away. Typing on the list itself starts the filter too (so keys that
arrive before `/` has moved the focus are not lost). Enter in the filter picks the first match; down moves into the
list. The list posts the usual `OptionList.OptionSelected`, so a picker handles both alike."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from prfaas_tui.text_filter import matches


class NamedOption(Option):
    """A picker row: a bold name in a column `width` wide, then its description, which wraps
    under itself, never under the names (at 80 columns a wrapped description read as the next
    row's name). `text` is what the filter reads."""

    def __init__(self, name: str, description: str, width: int, id: str | None = None) -> None:
        grid = Table.grid(padding=(0, 2, 0, 0))
        grid.add_column(width=width, no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_row(Text(name, style="bold"), Text(description, style="dim"))
        super().__init__(grid, id=id)
        self.text = f"{name} {description}"


def named_options(rows: Sequence[tuple[str, str, str | None]]) -> list[Option]:
    """(name, description, id) rows as NamedOptions, the name column as wide as the longest
    name (a long one never runs into its description)."""
    width = max((len(name) for name, _, _ in rows), default=0)
    return [NamedOption(name, desc, width, id=id_) for name, desc, id_ in rows]


def _plain(option: Option) -> str:
    if isinstance(option, NamedOption):
        return option.text
    prompt = option.prompt
    return prompt.plain if isinstance(prompt, Text) else str(prompt)


def narrowed(options: Sequence[Option], text: str) -> list[Option]:
    """The options containing `text`; a disabled option is a group heading, kept while one of
    the options under it (up to the next heading) matches."""
    if not text.strip():
        return list(options)
    out: list[Option] = []
    heading: Option | None = None
    for opt in options:
        if opt.disabled:
            heading = opt
        elif matches(_plain(opt), text):
            if heading is not None:
                out.append(heading)
                heading = None
            out.append(opt)
    return out


class FilterList(Vertical):
    """See the module docstring. `options`: the full list (a disabled option is a heading)."""

    DEFAULT_CSS = """
    FilterList { height: auto; }
    FilterList > Input { display: none; }
    FilterList.-filtering > Input { display: block; }
    """  # its look (one line, no border) is in dialogs.tcss, which outranks Input's own
    BINDINGS = [Binding("slash", "filter", "Filter", id="picker-filter",
                        tooltip="In a picker (presets, drills, incidents): type to narrow it")]

    def __init__(self, options: Sequence[Option], *, list_id: str | None = None,
                 blink: bool = True) -> None:
        super().__init__()
        self.options, self.list_id, self.blink = list(options), list_id, blink

    def compose(self) -> ComposeResult:
        inp = Input(placeholder="filter: type to narrow · enter: first match · down: the list",
                    id="filter")
        inp.cursor_blink = self.blink
        yield inp
        yield OptionList(*self.options, id=self.list_id)

    @property
    def option_list(self) -> OptionList:
        return self.query_one(OptionList)

    def action_filter(self) -> None:
        self.add_class("-filtering")
        self.query_one(Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        ol = self.option_list
        ol.clear_options()
        # a `/` typed ahead of the focus lands in the filter itself: it reads as vi's search
        ol.add_options(narrowed(self.options, event.value.removeprefix("/")))
        ol.highlighted = self._first()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        ol = self.option_list
        if ol.highlighted is None:
            ol.highlighted = self._first()
        if ol.highlighted is not None:  # from the list's own loop: a message does not bubble
            ol.call_later(ol.action_select)  # past its sender, and here that would be us

    def on_key(self, event: events.Key) -> None:
        if self.query_one(Input).has_focus:
            if event.key == "down":
                event.stop()
                self.option_list.focus()
        elif self.take(event):
            event.stop()
            event.prevent_default()

    def take(self, event: events.Key) -> bool:
        """A key typed on the list, or on the picker before its focus settled: `/` opens the
        filter, a printable character goes into it. False: not a key for the filter."""
        inp = self.query_one(Input)
        if event.key == "slash" and not inp.has_focus:
            self.action_filter()
            return True
        if not (event.is_printable and event.character):
            return False
        self.add_class("-filtering")
        inp.insert_text_at_cursor(event.character)
        inp.focus()
        return True

    def _first(self) -> int | None:
        ol = self.option_list
        return next((i for i in range(ol.option_count) if not ol.get_option_at_index(i).disabled),
                    None)
