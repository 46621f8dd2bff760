"""The main screen: knobs on the left, live charts in the middle, the model on the right.

It owns the operator's `Settings`, the model at them (`ModelView`) and the `Driver` of the
running emulation. Every change goes through `request`, which validates, recomputes the model
and forwards the change to the emulator in one step.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header

from emulator.model import OperatingPoint
from emulator.paradigm import Paradigm
from emulator.scenario.scenario import Scenario
from prfaas_tui.live import Driver, inject_incident, make_emulation, scorecard
from prfaas_tui.messages import EmulatorFailed, Tick, TickReady
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.widgets.controls import KNOB_BY_KEY, KNOBS, ControlPanel, Knob
from prfaas_tui.widgets.live_charts import LiveCharts
from prfaas_tui.widgets.model_panel import DecisionLog, ModelPanel, RouterPanel
from prfaas_tui.widgets.modelview import ModelView, Refused, Settings, paradigm_point, step_speed
from prfaas_tui.widgets.plots import CeilingsVsTChart, LambdaVsNpChart
from prfaas_tui.widgets.status import StatusLine
from prfaas_tui.widgets.timeline import DrillTimeline

if TYPE_CHECKING:
    from emulator.sim.drills import Drill
    from prfaas_tui.screens.plan import PlanChoice


class Dashboard(Screen):
    CSS_PATH = "dashboard.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (130, "-wide")]
    BINDINGS = [
        Binding("f1", "app.help", "Help", id="dashboard-help",  # first: always in the footer
                tooltip="Keys, knobs and the model's terms"),
        Binding("space", "pause", "Pause", id="pause",
                tooltip="Pause or resume the emulator's simulated clock"),
        Binding("full_stop", "step", "Step", id="step",
                tooltip="Pause and advance exactly one step of simulated time"),
        Binding("greater_than_sign", "speed(1)", "Faster", show=False, id="faster",
                tooltip="Run the simulated clock faster (1x .. 1000x, max)"),
        Binding("less_than_sign", "speed(-1)", "Slower", show=False, id="slower",
                tooltip="Run the simulated clock slower"),
        Binding("t", "edit('t')", "Set t", id="set-threshold",
                tooltip="Type an exact routing threshold t"),
        Binding("o", "apply_optimum", "Optimum", id="apply-optimum",
                tooltip="Apply the model's optimum t* and N_p*/N_d*"),
        Binding("m", "cycle_paradigm", "Paradigm", show=False, id="paradigm",
                tooltip="Switch PrfaaS-PD / homogeneous / naive"),
        Binding("p", "presets", "Presets", id="presets",
                tooltip="Load a shipped preset or a TOML file"),
        Binding("P", "plan", "Plan results", show=False, id="plan-results",
                tooltip="Open a plan's results (prfaas-tui plan) and run any candidate"),
        Binding("d", "drills", "Drills", id="drills",
                tooltip="Run an incident drill and get a scorecard"),
        Binding("i", "inject", "Incident", show=False, id="inject",
                tooltip="Inject an incident by hand"),
        Binding("c", "compare", "Compare", id="compare",
                tooltip="Compare paradigms on the same seeded workload"),
        Binding("v", "toggle_view", "View", show=False, id="view",
                tooltip="Narrow terminals: switch between live charts and the model"),
        Binding("ctrl+s", "save", "Save", show=False, id="save-preset",
                tooltip="Save the current scenario as a preset TOML"),
        Binding("e", "export", "Export", show=False, id="export-metrics",
                tooltip="Export the metrics history as CSV and JSON"),
        Binding("x", "screenshot", "SVG", show=False, id="screenshot",
                tooltip="Save an SVG screenshot of the dashboard"),
    ]

    def __init__(self, scenario: Scenario, *, live: bool = True, at: float | None = None,
                 speed: float = 20.0, seed: int | None = None, drill: Drill | None = None,
                 plan: str | None = None) -> None:
        super().__init__()
        self.drill = drill
        self.plan = plan  # the plan results file last opened (P shows it again)
        self.base = scenario  # what a plan candidate was built from, else the scenario itself
        self.split: tuple[int, int] | None = None  # a plan candidate's split, pinned at start
        self.scored = False  # the drill's scorecard has been shown
        self.live = live
        self.at = at
        self.seed = seed
        self.settings = Settings.initial(scenario, speed)
        self.view = ModelView.of(self.settings)
        self.tick: Tick | None = None
        self.step_seconds = 1.0
        self.generation = 0
        self.driver: Driver | None = None
        self._points: dict[Any, OperatingPoint] = {}

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="◆")
        with Horizontal(id="body"):
            with Vertical(id="side"):
                yield ControlPanel(self.settings, id="controls")
                yield RouterPanel(id="router")
                yield DrillTimeline(id="timeline")
                yield DecisionLog(id="decisions")
            yield LiveCharts(self.point_at, live=self.live, id="live")
            with Vertical(id="model"):
                yield ModelPanel(id="model-panel")
                with Container(id="fig5"):
                    yield LambdaVsNpChart(id="fig5a")
                    yield CeilingsVsTChart(id="fig5b")
        yield StatusLine(id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.app.sub_title = self.settings.scenario.name
        self.query_one(ControlPanel).focus()
        self.show_model()
        self.query_one(StatusLine).show(None)
        self.query_one(LiveCharts).ttft_slo = self.settings.scenario.sim.slo_ttft
        self._start_driver()
        if self.plan is not None:
            self.action_plan()

    def on_unmount(self) -> None:
        if self.driver is not None:
            self.driver.stop()

    # -- the emulator ------------------------------------------------------------------------------
    def _start_driver(self) -> None:
        gen = self.generation
        self.driver = Driver(
            self.settings, live=self.live, seed=self.seed, generation=gen,
            attach=self.drill.attach if self.drill else None,
            stop_at=self.drill.duration if self.drill else None,
            factory=partial(make_emulation, split=self.split),
            on_tick=lambda tick: self.post_message(TickReady(tick)),
            on_error=lambda text, fatal: self.post_message(EmulatorFailed(text, gen)))
        try:
            self.driver.start()
            if self.at:
                self.show_tick(self.driver.run_to(self.at))
            elif not self.live:
                self.show_tick(self.driver.current())
        except Exception as exc:
            self.query_one(StatusLine).show(None, f"emulator failed: {exc}")

    def load_scenario(self, scenario: Scenario, drill: Drill | None = None, *,
                      paradigm: str = "prfaas-pd", split: tuple[int, int] | None = None,
                      base: Scenario | None = None) -> None:
        """Replace the running scenario (or start a drill): new settings, new model, a fresh
        emulation. A plan candidate also brings its paradigm, its split (pinned: the
        homogeneous paradigm would otherwise start at its own best) and its plan's base."""
        settings = Settings.initial(scenario, self.settings.speed)
        if paradigm != settings.paradigm:
            settings = settings.apply(paradigm=paradigm)  # Refused: nothing replaced yet
        if self.driver is not None:
            self.driver.stop()
        self.drill, self.scored = drill, False
        self.base, self.split = base or scenario, split
        self.query_one(DrillTimeline).display = False
        self.generation += 1
        self.settings = settings
        self.view = ModelView.of(self.settings)
        self._points.clear()
        self.tick = None
        self.app.sub_title = scenario.name
        self.query_one(ControlPanel).reason = ""
        self.query_one(LiveCharts).ttft_slo = scenario.sim.slo_ttft
        self.show_model()
        self._start_driver()

    def on_tick_ready(self, message: TickReady) -> None:
        if message.tick.generation == self.generation:
            self.show_tick(message.tick)

    def on_emulator_failed(self, message: EmulatorFailed) -> None:
        if message.generation == self.generation:
            self.query_one(StatusLine).show(self.tick, message.text)
            self.notify(message.text, severity="error", timeout=8)

    def show_tick(self, tick: Tick | None) -> None:
        if tick is None:
            return
        self.tick = tick
        self.query_one(StatusLine).show(tick)
        self.query_one(RouterPanel).show(self.view, tick.snapshot)
        self.query_one(DecisionLog).show(tick.snapshot)
        self._adopt_scheduler_knobs(tick)
        self._follow_incidents(tick)
        self.query_one(LiveCharts).show(tick)

    def _follow_incidents(self, tick: Tick) -> None:
        """Play the incident timeline (a drill's, or incidents injected by hand); at a drill's
        end, pause and show its scorecard."""
        d, now, windows = self.drill, tick.snapshot.sim_time, tick.snapshot.incident_windows
        if d is None and not windows:
            return
        title = f"drill {d.name}" if d else "incidents"
        self.query_one(DrillTimeline).show(title, windows, now, d.duration if d else None)
        if d is not None and now >= d.duration and not self.scored and self.driver is not None:
            self.scored = True
            from prfaas_tui.screens.drills import ScorecardScreen

            if self.live:
                self.driver.pause(True)
            card = self.driver.call(partial(scorecard, d))
            self.app.push_screen(ScorecardScreen(d.name, card))

    def _adopt_scheduler_knobs(self, tick: Tick) -> None:
        """The scheduler (drills) moves t and the split inside the emulation: when no change
        of ours is in flight, the knobs and the model follow what it runs."""
        k = tick.snapshot.knobs
        sc = self.settings.scenario
        if (self.driver is None or tick.applied != self.driver.sent or k.paradigm != "prfaas-pd"
                or self.settings.paradigm != "prfaas-pd" or (k.t, k.n_p, k.n_d) == (sc.t, sc.n_p, sc.n_d)):
            return
        try:
            new = self.settings.apply(t=k.t, n_p=k.n_p, n_d=k.n_d)
        except Refused:
            return  # e.g. an instance lost for the moment: keep the operator's split
        self.driver.settings = self.settings = new
        self.view = ModelView.of(new)
        self.show_model()

    def run_drill(self, drill: Drill) -> None:
        self.load_scenario(drill.scenario, drill)
        self.notify(f"drill {drill.name}: {len(drill.timeline)} incidents over "
                    f"{drill.duration:g} simulated seconds")

    def inject(self, label: str) -> None:
        """Start a catalog incident by hand in whatever runs (or end the hand-made ones)."""
        if self.driver is not None:
            self.show_tick(self.driver.submit(lambda emu: inject_incident(emu, label)))

    def point_at(self, snap: Any) -> OperatingPoint:
        """The model at the knobs a snapshot ran with (cached: knobs change rarely)."""
        k = snap.knobs  # LiveKnobs: frozen, so it keys the cache
        if k not in self._points:
            try:
                s = self.settings.apply(t=k.t, n_p=k.n_p, n_d=k.n_d, n_prfaas=k.n_prfaas,
                                        bandwidth=k.bandwidth, paradigm=k.paradigm)
                self._points[k] = paradigm_point(s)
            except Refused:
                self._points[k] = self.view.point
        return self._points[k]

    # -- changes -----------------------------------------------------------------------------------
    def request(self, **changes: Any) -> bool:
        """Validate and apply setting changes; a refusal shows its reason and changes nothing."""
        controls = self.query_one(ControlPanel)
        try:
            new = self.settings.apply(**changes)
        except Refused as exc:
            controls.reason = str(exc)
            self.notify(str(exc), title="refused", severity="warning")
            return False
        controls.reason = ""
        self.settings = new
        self.view = ModelView.of(new)
        self.show_model()
        if self.driver is not None:
            self.show_tick(self.driver.apply(new))
        return True

    def show_model(self) -> None:
        self.query_one(ControlPanel).show_settings(self.settings)
        self.query_one(ModelPanel).show(self.view)
        self.query_one(RouterPanel).show(self.view, self.tick.snapshot if self.tick else None)
        key = (self.settings.scenario.knobs, id(self.settings.scenario.system.lengths))
        self.query_one(LambdaVsNpChart).set_data(self.view, key)  # Figure 5 ignores rate, speed
        self.query_one(CeilingsVsTChart).set_data(self.view, key)

    def on_control_panel_change(self, message: ControlPanel.Change) -> None:
        self.request(**message.changes)

    def on_control_panel_edit(self, message: ControlPanel.Edit) -> None:
        self.edit_knob(message.knob)

    def edit_knob(self, knob: Knob) -> None:
        def validate(text: str) -> str | None:
            try:
                self.settings.apply(**knob.parse(self.settings, text))
            except Refused as exc:
                return str(exc)
            return None

        def done(text: str | None) -> None:
            if text is not None:
                self.request(**knob.parse(self.settings, text))

        self.query_one(ControlPanel).select(knob.key)
        shown = knob.show(self.settings).split(" · ")[0]  # the part that parses back
        self.app.push_screen(ValuePrompt(f"{knob.label} = ?", shown, knob.hint,
                                         validate), done)

    # -- actions -----------------------------------------------------------------------------------
    def action_edit(self, key: str) -> None:
        self.edit_knob(KNOB_BY_KEY[key])

    def action_pause(self) -> None:
        if self.driver is not None:
            self.show_tick(self.driver.pause())

    def action_step(self) -> None:
        if self.driver is not None:
            self.show_tick(self.driver.step(self.step_seconds))

    def action_step_by(self) -> None:
        def done(text: str | None) -> None:
            if text is not None:
                self.step_seconds = float(text)
                self.action_step()
        self.app.push_screen(ValuePrompt("step by (simulated seconds)", f"{self.step_seconds:g}",
                                         "the emulator pauses, then advances exactly this much",
                                         _positive_seconds), done)

    def action_speed(self, d: int) -> None:
        self.request(speed=step_speed(self.settings.speed, d))

    def action_apply_optimum(self) -> None:
        b = self.view.optimum.best.knobs
        changes: dict[str, Any] = {"t": b.t, "n_p": b.n_p, "n_d": b.n_d}
        if self.settings.paradigm != "prfaas-pd":
            changes["paradigm"] = "prfaas-pd"
        if self.request(**changes):
            self.notify(f"applied the optimum: t* = {KNOBS[0].show(self.settings)}, "
                        f"N_p/N_d = {b.n_p}/{b.n_d}")

    def action_cycle_paradigm(self) -> None:
        i = tuple(Paradigm).index(self.settings.paradigm)
        for k in range(1, len(Paradigm)):
            if self.request(paradigm=tuple(Paradigm)[(i + k) % len(Paradigm)]):
                return

    def action_toggle_view(self) -> None:
        self.toggle_class("-show-model")

    def action_presets(self) -> None:
        from prfaas_tui.screens.presets import PresetPicker

        def done(sc: Scenario | None) -> None:
            if sc is not None:
                self.load_scenario(sc)
                self.notify(f"loaded {sc.name}")
        self.app.push_screen(PresetPicker(), done)

    def action_plan(self) -> None:
        from prfaas_tui.screens.plan import PlanScreen

        screen = PlanScreen(self.plan, running=self.base, running_name=self.settings.scenario.name)

        def done(choice: PlanChoice | None) -> None:
            if screen.plan is not None:
                self.plan = screen.plan.shown
            if choice is not None:
                self.load_scenario(choice.scenario, paradigm=choice.paradigm, split=choice.split,
                                   base=choice.base)
                rec = choice.record
                self.notify(f"loaded {rec['label']} from {self.plan}: SLO goodput "
                            f"{rec['goodput']:.3f} req/s (Λmax {rec['lambda_max']:.2f})")
        self.app.push_screen(screen, done)

    def action_drills(self) -> None:
        from prfaas_tui.screens.drills import pick_drill

        pick_drill(self)

    def action_inject(self) -> None:
        from prfaas_tui.screens.drills import inject_incident

        inject_incident(self)

    def action_compare(self) -> None:
        from prfaas_tui.screens.compare import CompareScreen

        self.app.push_screen(CompareScreen(self.settings, live=self.live, seed=self.seed,
                                           drill=self.drill))

    def action_save(self) -> None:
        from prfaas_tui.screens.files import save_preset_prompt

        save_preset_prompt(self)

    def action_export(self) -> None:
        from prfaas_tui.screens.files import export_prompt

        export_prompt(self)

    def action_screenshot(self) -> None:
        name = f"prfaas-{self.settings.scenario.name}.svg"
        path = self.app.save_screenshot(name, str(Path.cwd()))
        self.notify(f"saved {path}")


def _positive_seconds(text: str) -> str | None:
    try:
        x = float(text)
    except ValueError:
        return f"expected a number of seconds, got {text!r}"
    return None if x > 0 and math.isfinite(x) else "must be > 0"
