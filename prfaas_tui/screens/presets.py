"""The preset picker: shipped presets, the user's own TOML files, or any path typed in.

A file that does not load keeps the picker open with the loader's one-line reason, so the
running scenario is only replaced by one that is known to work.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from emulator.scenario import presets
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario
from emulator.traces import TraceError
from emulator.units import UnitError
from prfaas_tui.screens.prompt import FIELD_KEYS, steady_input
from prfaas_tui.widgets.filter_list import FilterList, named_options


def user_presets(dirs: tuple[Path, ...] | None = None) -> list[tuple[str, str, Path]]:
    """TOML files that look like scenarios (they have a [deployment] table), in the current
    directory and ~/.config/prfaas-tui/presets unless told otherwise."""
    if dirs is None:
        dirs = (Path.cwd(), Path.home() / ".config" / "prfaas-tui" / "presets")
    shipped = {p.resolve() for *_, p in presets.list_presets()}
    out = []
    for d in dirs:
        for p in sorted(d.glob("*.toml")) if d.is_dir() else ():
            try:
                data = tomllib.loads(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if isinstance(data.get("deployment"), dict) and p.resolve() not in shipped:
                out.append((p.stem, str(data.get("description", "")), p))
    return out


def load_any(name_or_path: str | Path) -> Scenario:
    """presets.load with every expected failure as a PresetError (one line); a topology loads
    too (the dashboard draws its map)."""
    try:
        return presets.load(name_or_path, topology=True)
    except (TraceError, UnitError) as exc:
        raise PresetError(str(name_or_path), "", str(exc)) from None


class PresetPicker(ModalScreen[Scenario | None]):
    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="picker-cancel")] + FIELD_KEYS

    def compose(self) -> ComposeResult:
        sections = (("shipped", presets.list_presets()), ("yours", user_presets()))
        rows = named_options([(name, desc, str(path)) for _, found in sections
                              for name, desc, path in found])  # one name column for both
        options: list[Option] = []
        for title, found in sections:
            if found:
                options.append(Option(Text(title, style="bold"), disabled=True))
            options += rows[:len(found)]
            rows = rows[len(found):]
        with Vertical(classes="frame"):
            yield Label("Load a preset: it replaces the running scenario", classes="title")
            yield FilterList(options, list_id="presets", blink=getattr(self.app, "live", True))
            yield steady_input(self, placeholder="or type a path to a preset TOML and press enter",
                               id="path")
            yield Static("", id="error", classes="error")
            yield Static("enter: load · /: filter · tab: path · esc: cancel", classes="help")

    def __init__(self) -> None:
        super().__init__(classes="dialog")

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        ol.focus()
        ol.action_first()

    def on_key(self, event: events.Key) -> None:
        """Keys typed ahead reach the screen before its list has the focus: filter with them."""
        if self.focused is None and self.query_one(FilterList).take(event):
            event.stop()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._load(event.option.id or "")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self._load(event.value.strip())

    def _load(self, name_or_path: str) -> None:
        try:
            sc = load_any(Path(name_or_path).expanduser() if "/" in name_or_path else name_or_path)
        except PresetError as exc:
            self.query_one("#error", Static).update(Text(f"✗ {exc}"))
            return
        self.dismiss(sc)

    def action_cancel(self) -> None:
        self.dismiss(None)
