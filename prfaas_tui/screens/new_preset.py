"""The dashboard's `n` form: `prfaas-tui new` as a dialog. It calls the same builder
(prfaas_tui.preset_builder.write_preset), shows a refused value under the form and stays open,
and on success returns the written preset, loaded, for the dashboard to open."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from emulator.cards import CardError
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


class NewPresetScreen(ModalScreen[Scenario | None]):
    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="new-cancel")] + FIELD_KEYS

    def __init__(self) -> None:
        super().__init__(classes="dialog")

    def compose(self) -> ComposeResult:
        with Vertical(classes="frame"):
            yield Label("new preset from a model, GPU cards and a workload", id="title")
            for key, (label, default) in FIELDS.items():
                with Horizontal(classes="row"):
                    yield Label(f"{label:>44} ", classes="help")
                    yield steady_input(self, default, id=f"new-{key}")
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
            out = Path(self._value("out") or "new-preset.toml")
            answer = write_preset(spec, out, force=True)
            sc = presets.load(out)
        except (CardError, UsageError, TraceError, PresetError, UnitError) as exc:
            self.query_one("#error", Static).update(f"✗ {exc}")
            return
        for note in uncalibrated_notes(answer):
            self.app.notify(note, severity="warning", timeout=10)
        self.dismiss(sc)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.submit()

    def action_cancel(self) -> None:
        self.dismiss(None)
