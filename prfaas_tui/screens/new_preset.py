"""The dashboard's `n` form: `prfaas-tui new` as a dialog. It calls the same builder
(prfaas_tui.preset_builder.write_preset), shows a refused value under the form and stays open,
and on success returns the written preset, loaded, for the dashboard to open. It never writes
over an existing file (as `new` without --force), lists the shipped cards, and keeps what was
typed for the next time it opens (`typed`, owned by the dashboard)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from emulator.cards import CardError, gpu, model_card
from emulator.files import unusable
from emulator.scenario import presets
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario
from emulator.traces import TraceError
from emulator.units import UnitError
from prfaas_tui.errors import UsageError
from prfaas_tui.preset_builder import NewSpec, uncalibrated_notes, write_preset
from prfaas_tui.screens.prompt import FIELD_KEYS, steady_input

# field id -> (label, default)
FIELDS = {
    "model": ("model (card name or config.json path)", "prfaas-case-study-1t"),
    "prefill_gpu": ("PrfaaS GPU card", "h200"),
    "local_gpu": ("local GPU card", "h20"),
    "parallelism": ("GPUs per instance", "8"),
    "prfaas_gpus": ("PrfaaS GPUs", "32"),
    "local_gpus": ("local GPUs", "64"),
    "bandwidth": ("link bandwidth", "100 Gbps"),
    "workload": ("lengths: lognormal:MU,SIGMA or a trace file", "lognormal:9.9,1.0"),
    "out": ("write the preset to", "new-preset.toml"),
}


def free_name(path: Path) -> Path:
    """`path`, or the first of STEM-2, STEM-3, ... beside it that does not exist yet."""
    stem, n, out = path.stem, 2, path
    while out.exists():
        out, n = path.with_name(f"{stem}-{n}{path.suffix}"), n + 1
    return out


class NewPresetScreen(ModalScreen[Scenario | None]):
    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="new-cancel")] + FIELD_KEYS

    def __init__(self, typed: dict[str, str] | None = None) -> None:
        super().__init__(classes="dialog")
        self.typed = {} if typed is None else typed  # field -> value, kept across openings

    def _initial(self, key: str, default: str) -> str:
        if key in self.typed:
            return self.typed[key]
        return str(free_name(Path(default))) if key == "out" else default

    def compose(self) -> ComposeResult:
        with Vertical(classes="frame"):
            yield Label("new preset from a model, GPU cards and a workload", id="title")
            for key, (label, default) in FIELDS.items():
                with Horizontal(classes="row"):
                    yield Label(f"{label:>44} ", classes="help")
                    yield steady_input(self, self._initial(key, default), id=f"new-{key}")
            yield Static(f"GPU cards: {', '.join(gpu.shipped())}\n"
                         f"model cards: {', '.join(model_card.shipped())}",
                         id="new-cards", classes="help")
            yield Static("Enter or Write: build, solve and open it (the optimum is its knobs)",
                         classes="help")
            yield Button("Write and open", id="new-write", variant="primary")
            yield Static("", id="error", classes="error")

    def _value(self, key: str) -> str:
        return self.query_one(f"#new-{key}", Input).value.strip()

    def _whole(self, key: str) -> int:
        try:
            return int(self._value(key))
        except ValueError:
            raise UsageError(f"{FIELDS[key][0]}: must be a whole number") from None

    def submit(self) -> None:
        work = self._value("workload")
        is_law = work.startswith("lognormal:")
        try:
            spec = NewSpec(model=self._value("model"), prefill_gpu=self._value("prefill_gpu"),
                           local_gpu=self._value("local_gpu"), parallelism=self._whole("parallelism"),
                           prfaas_gpus=self._whole("prfaas_gpus"), local_gpus=self._whole("local_gpus"),
                           bandwidth=self._value("bandwidth"), lengths=work if is_law else None,
                           trace=None if is_law else work)
            typed = self._value("out") or "new-preset.toml"
            if (why := unusable(typed)) is not None:  # exists() raises on a name too long
                raise UsageError(why)
            out = Path(typed).expanduser()
            if out.exists():
                raise UsageError(f"{out} exists: type another name (nothing is overwritten)")
            answer = write_preset(spec, out)  # refuses an existing file: nothing is overwritten
            sc = presets.load(out)
        except (CardError, UsageError, TraceError, PresetError, UnitError) as exc:
            self.query_one("#error", Static).update(Text(f"✗ {exc}"))
            return
        for note in [*uncalibrated_notes(answer), *answer["warnings"]]:  # as `new` prints them
            self.app.notify(note, severity="warning", timeout=10)
        self.dismiss(sc)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id and event.input.id.startswith("new-"):
            self.typed[event.input.id.removeprefix("new-")] = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.submit()

    def action_cancel(self) -> None:
        self.dismiss(None)
