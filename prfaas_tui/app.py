"""The Textual app: opens the dashboard on a preset with the emulator running.

`PrfaasApp(preset, live=False, at=SECONDS)` is the deterministic mode for snapshots and tests:
the emulator is not paced by the wall clock; it runs synchronously to `at` before the first
render and afterwards moves only when asked (step, changes).

`PrfaasApp(plan=FILE)` opens with a plan's results shown over the dashboard; without a preset it
starts on the plan's base preset (when that loads).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from emulator.scenario import presets
from emulator.scenario.scenario import Scenario
from emulator.units import format_duration
from prfaas_tui.errors import UsageError
from prfaas_tui.live import load_drill
from prfaas_tui.modelview import DEFAULT_SPEED
from prfaas_tui.widgets.live_charts import LiveCharts
from prfaas_tui.widgets.pictures_view import PicturesView

DEFAULT_PRESET = "paper-case-study"
DEFAULT_THEME = "textual-dark"
INPUT_HOLD_S = 0.1  # how long a busy emulator pauses after a keypress or click
SWITCH_INTERVAL_S = 0.001  # Python's default 5 ms makes each UI wake-up wait behind the emulator


class PrfaasApp(App):
    TITLE = "prfaas-tui"
    CSS_PATH = "app.tcss"
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help", show=False, id="help",
                tooltip="Keys, knobs and the model's terms"),
        Binding("q", "quit", "Quit", id="quit", tooltip="Quit prfaas-tui (during a drill it asks first)"),
    ]

    def __init__(self, preset: str | Scenario | None = None, *, live: bool = True,
                 at: float | None = None, speed: float = DEFAULT_SPEED, seed: int | None = None,
                 drill: str | None = None, plan: str | None = None,
                 theme: str = DEFAULT_THEME, export_dir: Path | None = None) -> None:
        super().__init__()
        from prfaas_tui.screens.plan import PlanError, open_plan

        # a broken preset, drill or plan fails here, before the terminal switches to the app
        # a drill plays on the preset the user named, never on another (PresetError: one line)
        self.drill = load_drill(drill, preset if isinstance(preset, str) else None) \
            if drill else None
        self.plan = open_plan(plan) if plan else None  # PlanError: one line
        self.topology_plan = None  # a topology plan's results (shown in the topology view)
        if self.plan is not None and self.plan.topology:
            self.topology_plan = plan
            if preset is None and drill is None:
                preset = self.plan.base()
            self.plan = None
        if self.drill is not None:
            self.scenario = self.drill.scenario
        elif isinstance(preset, Scenario):
            self.scenario = preset
        elif preset is None and self.plan is not None:
            try:
                self.scenario = self.plan.base()
            except PlanError:
                self.scenario = presets.load(DEFAULT_PRESET)
        else:
            self.scenario = presets.load(preset or DEFAULT_PRESET, topology=True)
        self.live, self.at, self.speed, self.seed = live, at, speed, seed
        self.theme = theme
        self.export_dir = export_dir  # None: metrics_export.default_export_dir()

    def screen_for(self, scenario: Scenario, *, drill=None, plan: str | None = None,
                   **kw) -> Screen:
        """The dashboard of a scenario (`kw`: live, at, speed, seed): a declared topology's
        opens with the topology plan given at start, if any, shown once."""
        from prfaas_tui.screens.dashboard import Dashboard

        if scenario.declared_topology is not None:
            plan, self.topology_plan = self.topology_plan, None  # opened once, at start
        return Dashboard(scenario, drill=drill, plan=plan, export_dir=self.export_dir, **kw)

    def on_mount(self) -> None:
        if self.live:  # hand the GIL to the UI sooner when the emulator thread is busy
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        # pushed rather than returned by get_default_screen, which skips the screen's CSS_PATH
        self.push_screen(self.screen_for(self.scenario, drill=self.drill,
                                         plan=self.plan.shown if self.plan else None,
                                         live=self.live, at=self.at, speed=self.speed,
                                         seed=self.seed))

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown) and not event.is_forwarded:
            now = time.perf_counter()
            for screen in self.screen_stack:  # input first: charts and emulator wait
                for charts in (*screen.query(LiveCharts), *screen.query(PicturesView)):
                    charts.last_input = now
                driver = getattr(screen, "driver", None)
                if driver is not None:
                    driver.hold(INPUT_HOLD_S)
        await super().on_event(event)

    async def _on_key(self, event: events.Key) -> None:
        """A key typed on the dashboard ahead of a screen it pushed (a picker, a prompt) goes
        to that screen, as the typist meant (the dashboard marks it: `typed_on`)."""
        typed_on = getattr(event, "typed_on", None)
        if typed_on is not None and typed_on is not self.screen and typed_on in self.screen_stack:
            event.prevent_default()  # App._on_key (bindings) runs after this one unless told
            (self.screen.focused or self.screen)._forward_event(
                events.Key(event.key, event.character))

    async def action_quit(self) -> None:
        """Quit; during a drill (not yet at its scorecard) ask first: its run is lost."""
        from prfaas_tui.screens.dashboard import Dashboard
        from prfaas_tui.screens.prompt import ConfirmScreen

        if isinstance(self.screen, ConfirmScreen):
            return
        dash = next((s for s in self.screen_stack if isinstance(s, Dashboard)), None)
        drill = dash.drill if dash is not None and not dash.scored else None
        if drill is None:
            self.exit()
            return
        tick = dash.tick
        at = f" at {format_duration(tick.snapshot.sim_time)}" if tick else ""
        self.push_screen(ConfirmScreen(f"Quit during drill {drill.name}?",
                                       f"the drill runs{at} of {format_duration(drill.duration)}"
                                       "; quitting ends it without a scorecard"),
                         lambda yes: self.exit() if yes else None)

    def action_help(self) -> None:
        from prfaas_tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every binding of the app and the dashboard, plus one command per knob and preset."""
        yield from super().get_system_commands(screen)
        from prfaas_tui.screens.dashboard import Dashboard
        from prfaas_tui.widgets.controls import shown

        dash = next((s for s in self.screen_stack if isinstance(s, Dashboard)), None)
        seen = {"Quit"}  # the palette has its own
        for node, keys in ((dash, dash.keys_here() if dash is not None else ()),
                           (self, self.BINDINGS)):
            for b in keys:
                if isinstance(b, Binding) and b.description not in seen:
                    seen.add(b.description)  # the key in the title: the palette teaches it
                    key = self.get_key_display(b)
                    yield SystemCommand(f"{b.description} [{key}]", b.tooltip or b.description,
                                        partial(node.run_action, b.action))
        if dash is None:
            return
        yield SystemCommand("Step by…", "Pause and advance a typed number of simulated seconds",
                            dash.action_step_by)
        if dash.mapped:  # one command per element of a topology, as per knob of the pair
            for kind, name in dash.order:
                yield SystemCommand(f"Set {kind} {name}…", f"the {kind}'s knobs (enter on the "
                                    "map)", partial(dash.edit, (kind, name)))
        else:
            for k in shown(dash.settings):
                yield SystemCommand(f"Set {k.label}…", k.hint, partial(dash.edit_knob, k))
        for name, desc, path in presets.list_presets():
            yield SystemCommand(f"Load preset {name}", desc,
                                lambda p=path: self._load_preset(dash, p))

    def _load_preset(self, dash, path: Path) -> None:
        """A palette pick: a preset that cannot load is a notice."""
        from emulator.scenario.reader import PresetError

        try:
            scenario = presets.load(path, topology=True)
        except PresetError as exc:
            self.notify(f"cannot load: {exc}", severity="error")
            return
        dash.load_scenario(scenario)


def run_app(preset: str | None = None, *, plan: str | None = None,
            drill: str | None = None, export_dir: str | None = None) -> int:
    """The `prfaas-tui` entry point without a subcommand (`preset` None: the default, or the
    plan's base preset)."""
    folder = Path(export_dir).expanduser() if export_dir else None
    if folder is not None and folder.exists() and not folder.is_dir():
        raise UsageError(f"--export-dir: not a folder: {folder}")
    PrfaasApp(preset, plan=plan, drill=drill, export_dir=folder).run()
    return 0
