"""The main screen: knobs on the left, live charts in the middle, the model on the right.

Its state is a `Session` (the operator's settings, the model at them, the running emulation);
the screen mirrors the session's model view and latest tick in two reactive attributes, and the
panels bind to them, so nothing on screen holds a copy of its own. Helper screens (pickers,
prompts) return their result through `dismiss`; the callbacks here act on it.
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Header

from emulator.effective import LiveState
from emulator.figure5 import effective_figure5
from emulator.files import unusable
from emulator.model import OperatingPoint
from emulator.paradigm import Paradigm
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario
from emulator.stability import served_note
from emulator.topology.spec import PAIR_LINK
from emulator.units import format_duration
from prfaas_tui.live import (
    Driver,
    Tick,
    hand_incident,
)
from prfaas_tui.messages import EmulatorFailed, TickReady
from prfaas_tui.metrics_export import default_export_dir, export_metrics
from prfaas_tui.modelview import ModelView, Refused, Settings, slo_target, step_speed
from prfaas_tui.screens import run_keys
from prfaas_tui.screens.compare import CompareScreen
from prfaas_tui.screens.discard import discard_run_then
from prfaas_tui.screens.drills import (
    DrillPicker,
    ScorecardScreen,
    drill_here,
)
from prfaas_tui.screens.element_knobs import edit_element
from prfaas_tui.screens.events import EventsScreen
from prfaas_tui.screens.new_preset import NewPresetScreen
from prfaas_tui.screens.presets import PresetPicker
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.session import Session
from prfaas_tui.throttle import Coalesced, Toasts
from prfaas_tui.topology_text import Element
from prfaas_tui.widgets.controls import KNOB_BY_KEY, KNOBS, ControlPanel, Knob, shown
from prfaas_tui.widgets.live_charts import LiveCharts
from prfaas_tui.widgets.model_panel import DecisionLog, ModelPanel, RouterPanel
from prfaas_tui.widgets.pictures_view import PicturesView
from prfaas_tui.widgets.plots import CeilingsVsTChart, Figure5Data, LambdaVsNpChart
from prfaas_tui.widgets.status import KeyFooter, StatusLine
from prfaas_tui.widgets.timeline import DrillTimeline
from prfaas_tui.widgets.topology import KNOB_ELEMENT, TopologyStrip

if TYPE_CHECKING:
    from emulator.scenario.drill import Drill
    from prfaas_tui.screens.plan import PlanChoice


TICK_REDRAW_HZ = 5  # panels redraw from emulator ticks at most this often (wall clock)
MODEL_AFTER_S = 1 / 60  # the model column redraws one frame after the echo of a key or tick
MODEL_OVERDUE_S = 0.5  # a redraw asked this long ago and not yet made is asked again


class Dashboard(Screen):
    CSS_PATH = "dashboard.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (130, "-wide")]
    BINDINGS = [
        Binding("question_mark,f1", "app.help", "Help", id="dashboard-help",  # first in the footer
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
        Binding("b", "edit_link", "Link", show=False, id="edit-link",
                tooltip="The link's bandwidth, loss= and connections= (the topology view's "
                        "link dialog)"),
        Binding("o", "apply_optimum", "Optimum", id="apply-optimum",
                tooltip="Apply the optimum t*, N_p*/N_d* of the live state (what is alive now)"),
        Binding("M", "toggle_mode", "Mode", show=False, id="model-mode",
                tooltip="exact or paper mode drives the model panel"),
        Binding("S", "toggle_scheduler", "Scheduler", show=False, id="scheduler",
                tooltip="Switch the scheduler off or on live"),
        Binding("U", "release_pins", "Unpin", show=False, id="release-pins",
                tooltip="Let the scheduler move t and the split you set by hand again"),
        Binding("O", "apply_slo_optimum", "SLO optimum", show=False, id="apply-slo-optimum",
                tooltip="Apply the (t, N_p/N_d) with the highest SLO-bound rate (P90 TTFT)"),
        Binding("m", "cycle_paradigm", "Paradigm", show=False, id="paradigm",
                tooltip="Switch PrfaaS-PD / homogeneous / naive"),
        Binding("p", "presets", "Presets", id="presets",
                tooltip="Load a shipped preset or a TOML file"),
        Binding("n", "new_preset", "New", show=False, id="new-preset",
                tooltip="Build a preset from a model, GPU cards and a workload (prfaas-tui new)"),
        Binding("P", "plan", "Plan results", show=False, id="plan-results",
                tooltip="Open a plan's results (prfaas-tui plan) and run any candidate"),
        Binding("d", "drills", "Drills", id="drills",
                tooltip="Run an incident drill and get a scorecard"),
        Binding("i", "inject", "Incident", show=False, id="inject",
                tooltip="Inject an incident by hand: its depth, duration, count (drill ranges)"),
        Binding("c", "compare", "Compare", id="compare",
                tooltip="Compare paradigms on the same seeded workload"),
        Binding("f", "fork", "Fork", show=False, id="fork",
                tooltip="What-if: fork the run (replayed to now), change the fork alone"),
        Binding("v", "toggle_view", "Model", id="view",  # in the footer below 130 columns
                tooltip="Narrow terminals: switch between live charts and the model"),
        Binding("g", "toggle_pictures", "Pictures: gauges, heat map, CDFs", show=False,
                id="pictures",
                tooltip="Pictures: gauges, Λmax heat map over (t, N_p), length and TTFT CDFs"),
        Binding("w", "chart_window", "Window", show=False, id="chart-window",
                tooltip="Charts: cycle the time window 1m / 5m / 30m / all"),
        Binding("y", "chart_scale", "Scale", show=False, id="chart-scale",
                tooltip="Charts: switch the y scale between auto (linear) and log"),
        *(Binding(str(n), f"chart_series({n})", f"Series {n}", show=False, id=f"chart-series-{n}",
                  tooltip=f"Charts: hide or show each chart's series {n} (numbered in the legends)")
          for n in range(1, 5)),
        Binding("ctrl+s", "save", "Save", show=False, id="save-preset",
                tooltip="Save the current scenario as a preset TOML"),
        Binding("e", "export", "Export", show=False, id="export-metrics",
                tooltip="Export the whole run's time series as CSV and JSON to a folder"),
        Binding("E", "events", "Events", show=False, id="events",
                tooltip="The run's knob changes, incidents and scheduler decisions: filter, export"),
        Binding("x", "screenshot", "SVG", show=False, id="screenshot",
                tooltip="Save an SVG screenshot of the dashboard"),
    ]


    # repaint=False: the bound panels redraw themselves; a repaint of the screen would redraw
    # every widget on it (a full-screen update, ~60 ms at 160x48) per tick and per key
    view: reactive[ModelView | None] = reactive(None, always_update=True, init=False,
                                                repaint=False)
    tick: reactive[Tick | None] = reactive(None, always_update=True, init=False, repaint=False)

    def __init__(self, scenario: Scenario, *, live: bool = True, at: float | None = None,
                 speed: float = 20.0, seed: int | None = None, drill: Drill | None = None,
                 plan: str | None = None, export_dir: Path | None = None) -> None:
        super().__init__()
        self.export_dir = export_dir or default_export_dir()  # where `e` and the events go
        self.session = Session(scenario, live=live, seed=seed, speed=speed, drill=drill,
                               post_tick=lambda tick: self.post_message(TickReady(tick)),
                               post_error=lambda text, gen: self.post_message(
                                   EmulatorFailed(text, gen)))
        self.plan = plan  # the plan results file last opened (P shows it again)
        self.scored = False  # the drill's scorecard has been shown
        self.live = live
        self.at = at
        self.step_seconds = 1.0
        self._figure_key: Any = None  # what Figure 5 was last drawn at
        self._redraw: Coalesced | None = None  # tick-driven redraws, throttled (on_mount)
        self._model_asked: float | None = None  # when a model-column redraw was asked
        self._panel_inputs: tuple[Any, Any, Any] = (None, None, None)  # what it last drew
        self._toasts: Toasts | None = None
        self._new_form: dict[str, str] = {}  # what was typed in the `n` form, kept for next time
        self.set_reactive(Dashboard.view, self.session.view)

    @property
    def settings(self) -> Settings:
        return self.session.settings

    @property
    def drill(self) -> Drill | None:
        return self.session.drill

    @property
    def driver(self) -> Driver | None:
        return self.session.driver

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="◆")
        yield TopologyStrip(id="topology")
        with Horizontal(id="body"):
            with Vertical(id="side"):
                yield ControlPanel(self.session, id="controls").data_bind(Dashboard.view)
                yield RouterPanel(self.session, id="router").data_bind(Dashboard.view, Dashboard.tick)
                yield DrillTimeline(id="timeline")
                yield DecisionLog(id="decisions").data_bind(Dashboard.tick)
            yield LiveCharts(self.session.point_at, live=self.live, id="live")
            with Vertical(id="model"):
                yield ModelPanel(self.session, id="model-panel")  # fed by _show_model
                with Container(id="fig5"):
                    yield LambdaVsNpChart(id="fig5a")
                    yield CeilingsVsTChart(id="fig5b")
            yield PicturesView(self.session, live=self.live, id="pictures")
        yield StatusLine(id="status")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        def spawn(coro: Any) -> Any:
            return self.run_worker(coro, name="throttle", group="throttle")
        self._redraw = Coalesced(self.sync, TICK_REDRAW_HZ, spawn=spawn)
        self._toasts = Toasts(lambda text, kw: super(Dashboard, self).notify(text, **kw),
                              spawn=spawn)
        self.app.sub_title = self.settings.scenario.name
        controls = self.query_one(ControlPanel)
        controls.focus()
        self.watch(controls, "cursor", lambda _: self.show_map(), init=False)
        self._show_model()
        self.query_one(StatusLine).show(None)
        self.query_one(LiveCharts).ttft_slo = self.settings.scenario.sim.slo_ttft
        self._start()
        if self.plan is not None:
            self.action_plan()

    def on_unmount(self) -> None:
        if self._redraw is not None:  # a redraw owed must not run on a screen taken down
            self._redraw.cancel()
        self.session.stop()

    def on_key(self, event: events.Key) -> None:
        """Mark where a key was typed: one typed ahead of a screen pushed from here (`i` then
        `/loss` at once) reaches the app after that screen is on top, which hands it on
        (PrfaasApp._on_key) rather than lose it."""
        event.typed_on = self  # type: ignore[attr-defined]

    @property
    def selected(self) -> Element | None:
        """The pair's element the knob cursor turns (its 1x1 topology's site, link or region;
        None on the run's own knobs: rate, paradigm, speed): the map marks it."""
        knobs = shown(self.settings)
        cursor = self.query_one(ControlPanel).cursor
        return KNOB_ELEMENT.get(knobs[cursor].key) if cursor < len(knobs) else None

    def show_map(self) -> None:
        self.query_one(TopologyStrip).show(self.session.effective, self.selected)

    # -- the session -------------------------------------------------------------------------------
    def _start(self) -> None:
        try:
            self.session.start(self.at)
        except Exception as exc:
            self.query_one(StatusLine).show(None, f"emulator failed: {exc}")
        self.sync()

    def sync(self) -> None:
        """Mirror the session's model view and tick (the watchers and bound panels redraw).
        Not once the screen is being taken down (app exit, a switch): Textual removes its
        widgets before its own unmount cancels the throttled redraw that may call this."""
        if self._pruning:
            return
        if self.view is not self.session.view:
            self.view = self.session.view
        if self.tick is not self.session.tick:
            self.tick = self.session.tick

    def watch_view(self, view: ModelView) -> None:
        self._model_later()

    def watch_tick(self, tick: Tick | None) -> None:
        if tick is None:
            return
        report = self.session.report
        self.query_one(StatusLine).show(tick, banner=report.banner if report else None,
                                        slo=slo_target(self.settings.scenario))
        self._follow_incidents(tick)
        charts = self.query_one(LiveCharts)
        live = self.session.effective
        charts.note = (served_note(report, live.point.lambda_max)
                       if report is not None and live is not None else None)
        charts.show(tick)
        # now, not later: tick redraws are already throttled, and every change the operator
        # makes comes back in a tick, so the last one of a burst is always drawn here even if
        # a deferred redraw (`_model_later`) was lost
        self._show_model()
        self.show_map()
        self.query_one(PicturesView).show()

    def _model_later(self) -> None:
        """The model column (panel and Figure 5) redraws just after the frame that answers a
        key or shows a tick: its recompute (TTFT, SLO-bound rate, the curves) is the costliest
        on screen, so the knob's echo does not wait for it. Not live (tests, snapshots): now.

        Neither of Textual's ways is safe here: an after-refresh callback runs on whichever
        screen is on top when it is handled and is dropped with it (a redraw asked as a prompt
        closed), and a one-shot `set_timer` whose task starts after its deadline never fires
        (a loaded machine). Either loss left `_model_asked` set and the panel stale for every
        later change. So: asyncio's own timer, which always fires, then this screen's queue;
        an ask still unanswered after MODEL_OVERDUE_S is made again, and every tick draws the
        column directly (`watch_tick`)."""
        if not self.live:
            self._show_model()
            return
        now = time.perf_counter()
        if self._model_asked is None or now - self._model_asked > MODEL_OVERDUE_S:
            self._model_asked = now  # an ask never answered stops coalescing after a while
            asyncio.get_running_loop().call_later(MODEL_AFTER_S, self.call_later,
                                                  self._show_model)

    def _show_model(self) -> None:
        """Give the model panel the current view and tick and redraw Figure 5, unless the
        column is hidden (a narrow terminal showing the charts: `v` shows it). Redrawn when
        any of its inputs is a new object: the view, the tick, or the session's effective
        view (`M` replaces only that one)."""
        self._model_asked = None
        if not self.query_one("#model").display:
            return
        panel = self.query_one(ModelPanel)
        inputs = (self.view, self.tick, self.session.effective)
        if any(a is not b for a, b in zip(inputs, self._panel_inputs, strict=True)):
            self._panel_inputs = inputs
            panel.set_reactive(ModelPanel.view, self.view)
            panel.set_reactive(ModelPanel.tick, self.tick)
            panel.watch_view()
        self.show_figures()

    def load_scenario(self, scenario: Scenario, drill: Drill | None = None, *,
                      paradigm: Paradigm = Paradigm.PRFAAS_PD, split: tuple[int, int] | None = None,
                      base: Scenario | None = None) -> None:
        """Replace the running scenario (or start a drill): new settings, new model, a fresh
        emulation. A plan candidate also brings its paradigm, its split (pinned: the
        homogeneous paradigm would otherwise start at its own best) and its plan's base.
        A topology (sites, regions, links) opens in the topology view instead."""
        if scenario.declared_topology is not None:
            self.app.switch_screen(self.app.screen_for(  # type: ignore[attr-defined]
                scenario, drill=drill, live=self.live, at=self.at, speed=self.settings.speed,
                seed=self.session.seed))
            return
        self.session.load(scenario, drill, paradigm=paradigm, split=split, base=base)
        self.scored = False
        self.query_one(DrillTimeline).display = False
        self.app.sub_title = scenario.name
        self.query_one(ControlPanel).reason = ""
        self.query_one(LiveCharts).ttft_slo = scenario.sim.slo_ttft
        self.sync()
        self._start()

    def on_tick_ready(self, message: TickReady) -> None:
        """Live, the panels follow ticks at most TICK_REDRAW_HZ times a second (a burst of
        ticks is one redraw of the latest); a key's own change redraws at once (`request`)."""
        if self.session.take(message.tick):
            if self.live and self._redraw is not None:
                self._redraw()
            else:
                self.sync()

    def notify(self, message: str, **kwargs: Any) -> None:  # type: ignore[override]
        """Toasts, rate-limited when live (`Toasts`: a burst shows its first and its latest)."""
        if self.live and self._toasts is not None:
            self._toasts(message, **kwargs)
        else:
            super().notify(message, **kwargs)

    def on_emulator_failed(self, message: EmulatorFailed) -> None:
        if message.generation == self.session.generation:
            self.query_one(StatusLine).show(self.tick, message.text)
            self.notify(message.text, severity="error", timeout=8)

    def _follow_incidents(self, tick: Tick) -> None:
        """Play the incident timeline (a drill's, or incidents injected by hand); at a drill's
        end, pause and show its scorecard."""
        d, now, windows = self.drill, tick.snapshot.sim_time, tick.snapshot.incident_windows
        if d is None and not windows:
            return
        title = f"drill {d.name}" if d else "incidents"
        self.query_one(DrillTimeline).show(title, windows, now, d.duration if d else None)
        if d is not None and now >= d.duration and not self.scored:
            self.scored = True
            self.app.push_screen(ScorecardScreen(d.name, self.session.scorecard(),
                                                 slo_target(self.settings.scenario)))

    def point_at(self, snap: Any) -> OperatingPoint:
        """The model at the knobs a snapshot ran with."""
        return self.session.point_at(snap)

    # -- changes -----------------------------------------------------------------------------------
    def request(self, **changes: Any) -> bool:
        """Validate and apply setting changes; a refusal shows its reason and changes nothing."""
        controls = self.query_one(ControlPanel)
        try:
            self.session.request(**changes)
        except Refused as exc:
            controls.reason = str(exc)
            self.notify(str(exc), title="refused", severity="warning")
            return False
        controls.reason = ""
        self.sync()
        return True

    def show_figures(self) -> None:
        """Figure 5 at the live state (alive instances, the link now, the live mix) in the
        driving mode; before the first tick at the settings. Rebuilt only when that changes."""
        live, sc, mode = self.session.effective, self.settings.scenario, self.session.mode
        state = live.state if live is not None else LiveState.healthy(sc.system, sc.knobs)
        key = (state, mode, id(self.session.system))
        if key == self._figure_key:
            return
        self._figure_key = key
        a, b = effective_figure5(self.session.system, state, mode)
        opt = live.optimum.get(mode) if live is not None else None
        data = Figure5Data(a, b, state.t, state.alive.pd_p,
                           opt.knobs.t if opt is not None else self.view.optimum.best.knobs.t)
        self.query_one(LambdaVsNpChart).set_data(data, key)
        self.query_one(CeilingsVsTChart).set_data(data, key)

    def on_control_panel_changed(self, message: ControlPanel.Changed) -> None:
        self.sync()

    def on_control_panel_edit(self, message: ControlPanel.Edit) -> None:
        self.edit_knob(message.knob)

    def edit_knob(self, knob: Knob) -> None:
        def validate(text: str) -> str | None:
            try:
                self.session.check(**knob.parse(self.settings, text))
            except Refused as exc:
                return str(exc)
            return None

        def done(text: str | None) -> None:
            if text is not None:
                self.request(**knob.parse(self.settings, text))

        self.query_one(ControlPanel).select(knob.key)
        shown = knob.show(self.settings).split(" · ")[0]  # the part that parses back
        if knob.key == "t":  # no separators; a fraction as it is (t may be 19353.6)
            shown = f"{self.settings.scenario.t:.10g}"
        self.app.push_screen(ValuePrompt(f"{knob.label} = ?", shown, knob.hint,
                                         validate), done)

    # -- actions -----------------------------------------------------------------------------------
    def action_edit(self, key: str) -> None:
        self.edit_knob(KNOB_BY_KEY[key])

    def action_edit_link(self) -> None:
        """The pair's link in the topology view's dialog (it is the 1x1 topology's link)."""
        edit_element(self, self.session, ("link", PAIR_LINK), self.sync)

    def action_pause(self) -> None:
        self.session.pause()
        self.sync()

    def action_step(self) -> None:
        self.session.step(self.step_seconds)
        self.sync()

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
        """The optimum of the live state (alive instances, the link now, the live mix) in the
        driving mode; before the first tick, or for another paradigm, the nominal one."""
        live = self.session.optimum_targets()
        if live is None:
            b = self.view.optimum.best.knobs
            live = (b.t, b.n_p, b.n_d)
        t, n_p, n_d = live
        changes: dict[str, Any] = {"t": t, "n_p": n_p, "n_d": n_d}
        if self.settings.paradigm != Paradigm.PRFAAS_PD:
            changes["paradigm"] = Paradigm.PRFAAS_PD
        if self.request(**changes):
            self.notify(f"applied the optimum of the live state: t* = "
                        f"{KNOBS[0].show(self.settings)}, N_p/N_d = {n_p}/{n_d}")

    def action_toggle_scheduler(self) -> None:
        run_keys.toggle_scheduler(self, self.session, self.sync)

    def action_release_pins(self) -> None:
        run_keys.release_pins(self, self.session, self.sync)

    def action_toggle_mode(self) -> None:
        mode = self.session.toggle_mode()
        self._show_model()
        self.query_one(PicturesView).show()
        self.notify(f"{mode} mode drives the model panel (the stability judgement stays exact, "
                    "the mode the emulator sustains)")

    def action_apply_slo_optimum(self) -> None:
        """The SLO optimum of the live state (as `o`); before the first tick, or for another
        paradigm, the nominal one."""
        live = self.session.slo_targets()
        if live is None:
            b = self.view.latency.slo_optimum
            if b is None:  # the settings' view searches PrfaaS-PD whatever the paradigm
                return
            live = (b.t, b.n_p, b.n_d)
        t, n_p, n_d = live
        changes: dict[str, Any] = {"t": t, "n_p": n_p, "n_d": n_d}
        if self.settings.paradigm != Paradigm.PRFAAS_PD:
            changes["paradigm"] = Paradigm.PRFAAS_PD
        if self.request(**changes):
            self.notify(f"applied the SLO optimum of the live state: t = "
                        f"{KNOBS[0].show(self.settings)}, N_p/N_d = {n_p}/{n_d}")

    def action_cycle_paradigm(self) -> None:
        i = tuple(Paradigm).index(self.settings.paradigm)
        for k in range(1, len(Paradigm)):
            if self.request(paradigm=tuple(Paradigm)[(i + k) % len(Paradigm)]):
                return

    def action_toggle_view(self) -> None:
        self.toggle_class("-show-model")
        self.call_after_refresh(self._show_model)  # once the new layout shows the column

    def action_toggle_pictures(self) -> None:
        """The pictures in place of the charts and the model (drawn only while shown)."""
        self.toggle_class("-pictures")
        pictures = self.query_one(PicturesView)
        pictures.display = self.has_class("-pictures")
        pictures.show(now=True)
        self.call_after_refresh(self._show_model)  # the model column, when it shows again
        if not pictures.display:  # a narrow screen hid the knobs with the pictures
            self.query_one(ControlPanel).focus()

    def action_chart_window(self) -> None:
        charts = self.query_one(LiveCharts)
        charts.control(charts.controls.next_window())

    def action_chart_scale(self) -> None:
        charts = self.query_one(LiveCharts)
        charts.control(charts.controls.toggle_log())

    def action_chart_series(self, n: int) -> None:
        charts = self.query_one(LiveCharts)
        charts.control(charts.controls.toggle(n))

    def action_presets(self) -> None:
        def load(sc: Scenario) -> None:
            self.load_scenario(sc)
            self.notify(f"loaded {sc.name}")

        def done(sc: Scenario | None) -> None:
            if sc is not None:
                self.discard_run_then(f"load {sc.name}", lambda: load(sc))
        self.app.push_screen(PresetPicker(), done)

    def action_new_preset(self) -> None:
        def done(sc: Scenario | None) -> None:
            if sc is not None:
                self.discard_run_then(f"open the new preset {sc.name}",
                                      lambda: self.load_scenario(sc))
        self.app.push_screen(NewPresetScreen(self._new_form), done)

    def discard_run_then(self, what: str, go: Any) -> None:
        discard_run_then(self, what, go)

    def action_plan(self) -> None:
        from prfaas_tui.screens.plan import PlanScreen  # the planner loads on first use

        screen = PlanScreen(self.plan, running=self.session.base,
                            running_name=self.settings.scenario.name)

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
        def done(name: str | None) -> None:
            if name:
                self.discard_run_then(f"start drill {name}", lambda: self.start_drill(name))
        self.app.push_screen(DrillPicker(self.settings.scenario), done)

    def start_drill(self, name: str) -> None:
        """Run the drill on the running scenario (its deployment at the current knobs; never
        the drill's own base preset) and follow it to its scorecard."""
        try:
            drill = drill_here(name, self.settings.scenario)
        except PresetError as exc:
            self.notify(f"cannot start drill {name}: {exc}", severity="error")
            return
        self.load_scenario(drill.scenario, drill)
        self.notify(f"drill {drill.name}: {len(drill.timeline)} incidents over "
                    f"{drill.duration:g} simulated seconds")

    def action_inject(self) -> None:
        """Pick an incident, then its parameters (IncidentForm), checked as a drill file's."""
        run_keys.inject(self, self.session, self.sync,
                        lambda kind, values: hand_incident(kind, values, self.settings))

    def action_compare(self) -> None:
        self.app.push_screen(CompareScreen(self.settings, live=self.live, seed=self.session.seed,
                                           drill=self.drill))

    def action_fork(self) -> None:
        """A what-if fork of the live run beside it (screens.fork); kept, the dashboard carries
        on with the fork's run, history and record."""
        from prfaas_tui.screens.fork import ForkScreen

        if self.driver is None or self.tick is None:
            self.notify("nothing runs to fork yet", severity="warning")
            return

        def done(kept: bool | None) -> None:
            if kept and self.drill is not None and screen.fork.origin.at < self.drill.duration:
                self.scored = False  # the run's end scored is not the kept fork's: score it
            self.sync()
            if kept:
                self.notify(f"kept the fork: the run goes on from it at "
                            f"{format_duration(self.tick.snapshot.sim_time)}")
            else:
                self.notify("fork dropped: the run goes on as it was")
        try:
            screen = ForkScreen(self.session, step_seconds=self.step_seconds)
        except RuntimeError as exc:  # the emulator thread has stopped: nothing runs to fork
            self.notify(f"cannot fork: {exc}", severity="error")
            return
        self.app.push_screen(screen, done)

    def action_save(self) -> None:
        run_keys.save_preset(self, self.settings.scenario, rate=self.settings.rate,
                             paradigm=self.settings.paradigm)

    def action_export(self) -> None:
        def done(text: str | None) -> None:
            if text is None:
                return
            self.export_dir = Path(text).expanduser()
            try:
                paths = export_metrics(self.session.record, self.view, self.export_dir,
                                       self.session.events())
            except OSError as exc:
                self.notify(f"not exported: {exc}", severity="error")
                return
            rec = self.session.record
            self.notify(f"exported {paths[0]} and its .json: {len(rec)} rows from 0 s"
                        + (f", every {rec.stride}th snapshot" if rec.stride > 1 else ""),
                        timeout=10)

        self.app.push_screen(ValuePrompt("export the run's time series to the folder",
                                         str(self.export_dir),
                                         "writes prfaas-SCENARIO-DATE-TIME.csv and .json, "
                                         "never over an earlier export", _parent_exists), done)

    def action_events(self) -> None:
        self.app.push_screen(EventsScreen(self.session.events, scenario=self.settings.scenario.name,
                                          export_dir=self.export_dir, live=self.live))

    def action_screenshot(self) -> None:
        at = self.tick.snapshot.sim_time if self.tick is not None else 0.0
        run_keys.screenshot(self, self.settings.scenario.name, at)


def _positive_seconds(text: str) -> str | None:
    try:
        x = float(text)
    except ValueError:
        return f"expected a number of seconds, got {text!r}"
    return None if x > 0 and math.isfinite(x) else "must be > 0"


def _parent_exists(text: str) -> str | None:
    """A folder that exists or can be made in one that does."""
    if (why := unusable(text)) is not None:
        return why
    p = Path(text).expanduser()
    if p.exists() and not p.is_dir():
        return f"not a folder: {p}"
    return None if p.parent.is_dir() else f"no such directory: {p.parent}"
