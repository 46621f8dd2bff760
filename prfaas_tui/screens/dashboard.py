"""The one dashboard: a map of the running scenario on top, the detail of what it runs below.

A single pair is its 1x1 topology: its map is one strip (site == link == region) and the detail
is the pair's panels (knobs on the left, live charts in the middle, the model on the right). A
declared topology (sites, regions, links) has its map of boxes and lines (a sites x regions
matrix below 120 columns) and the selected element's figures, the model at the live state and
its chart below. One key map serves both: the arrows walk the elements (on the pair the knob
panel's rows, each the site's, the link's or the region's), `enter` turns the selected one,
`f`, `E`, `d`, `c`, `P`, `o`/`O` and `?` work on either; a key that needs the pair's panels
(`M`, `m`, `v`, `g`, `e`) answers a topology with one line saying why.

Its state is a `Session` (the operator's settings, the model at them, the running emulation);
the screen mirrors the session's model view and latest tick in two reactive attributes, and the
panels bind to them, so nothing on screen holds a copy of its own. Helper screens (pickers,
prompts) return their result through `dismiss`; the callbacks here act on it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Header, Static

from emulator.effective import LiveState
from emulator.figure5 import effective_figure5
from emulator.files import unusable
from emulator.model import OperatingPoint
from emulator.paradigm import Paradigm
from emulator.scenario.knobs import KnobError
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario
from emulator.stability import served_note
from emulator.topology.spec import PAIR_LINK
from emulator.units import format_duration, format_tokens
from prfaas_tui.chart_controls import ChartControls
from prfaas_tui.live import (
    LIVE_KEY,
    Driver,
    Tick,
    hand_incident,
)
from prfaas_tui.messages import EmulatorFailed, TickReady
from prfaas_tui.metrics_export import default_export_dir, export_metrics
from prfaas_tui.modelview import ModelView, Refused, Settings, slo_target, step_speed
from prfaas_tui.pictures import Gauge, region_gauges
from prfaas_tui.screens import run_keys
from prfaas_tui.screens.compare import CompareScreen
from prfaas_tui.screens.discard import discard_run_then
from prfaas_tui.screens.drills import (
    DrillPicker,
    ScorecardScreen,
    TopologyScorecard,
    drill_here,
)
from prfaas_tui.screens.element_knobs import change_element, edit_element, knob_prompt, parse_knobs
from prfaas_tui.screens.events import EventsScreen
from prfaas_tui.screens.new_preset import NewPresetScreen
from prfaas_tui.screens.presets import PresetPicker
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.session import Session
from prfaas_tui.throttle import Coalesced, Toasts
from prfaas_tui.topology_text import Element, Figures, elements, step_element
from prfaas_tui.widgets.controls import KNOB_BY_KEY, KNOBS, ControlPanel, Knob, shown
from prfaas_tui.widgets.gauges import Gauges
from prfaas_tui.widgets.live_charts import LiveCharts
from prfaas_tui.widgets.model_panel import DecisionLog, ModelPanel, RouterPanel
from prfaas_tui.widgets.pictures_view import PicturesView
from prfaas_tui.widgets.plots import CeilingsVsTChart, Figure5Data, LambdaVsNpChart
from prfaas_tui.widgets.status import KeyFooter, StatusLine, clock
from prfaas_tui.widgets.timeline import DrillTimeline
from prfaas_tui.widgets.topology import KNOB_ELEMENT, TopologyStrip
from prfaas_tui.widgets.topology_map import (
    SelectionChart,
    TopologyDetail,
    TopologyMap,
    detail_lines,
    model_line,
    selection_series,
)

if TYPE_CHECKING:
    from emulator.scenario.drill import Drill
    from prfaas_tui.screens.plan import PlanChoice


TICK_REDRAW_HZ = 5  # panels redraw from emulator ticks at most this often (wall clock)
MODEL_AFTER_S = 1 / 60  # the model column redraws one frame after the echo of a key or tick
MODEL_OVERDUE_S = 0.5  # a redraw asked this long ago and not yet made is asked again
# the pair's elements in the order its strip draws them (and the arrows walk them)
PAIR_ELEMENTS: tuple[Element, ...] = tuple(dict.fromkeys(KNOB_ELEMENT.values()))
# the keys whose action differs with the scenario's shape: each runs on one shape only
PAIR_ACTIONS = frozenset({"apply_slo_optimum"})
MAP_ACTIONS = frozenset({"bound_optimum"})
# on the pair the knob panel's own rows say what the arrows and `enter` do (help, palette)
PAIR_UNLISTED = frozenset({"select-prev", "select-next", "element-knobs"})
# the keys of the pair's panels: on a topology, help lists them as one row (MAP_PAIR_KEYS)
MAP_UNLISTED = frozenset({"model-mode", "paradigm", "view", "pictures", "export-metrics",
                          "chart-series-3", "chart-series-4"})
MAP_PAIR_KEYS = ("M, m, v, g, e", "the pair's panels' keys (model mode, paradigm, charts or "
                 "model, pictures, time series export): here each says in one line why not")
MAP_SERIES = 2  # a topology element's chart draws two series (its title names them)
TWO_CHARTS_WIDTH = 120  # from here a region's throughput chart stands beside its TTFT one
OWN_STATES = 64  # live states whose regions' own Λ are kept (a drill passes through a few)
# what a key does on a topology's map, where the words differ from the pair's (by binding id)
MAP_WORDS = {
    "set-threshold": "The selected region's t, N_p/N_d and routing (a link selected: its "
                     "region's), as the pair's t",
    "edit-link": "The selected link's bandwidth, loss= and connections= (as enter on it)",
    "rate": "Set the total offered rate, req/s (each region gets its share)",
    "apply-optimum": "Apply the best threshold policy of the live state (t, N_p/N_d)",
    "scheduler": "Switch the scheduler on or off live (where the scenario has one)",
    "release-pins": "Release the knobs set by hand: the scheduler may move them again",
    "plan-results": "Open a topology plan's results (prfaas-tui plan --out FILE) and view any "
                    "candidate",
    "drills": "Run a drill on this topology; a scorecard per region at its end",
    "inject": "Inject an incident now, aimed at the selected link, site or region; or end one",
    "compare": "Compare the routing policies on the same seeded workload",
    "chart-window": "Chart: cycle the time window 1m / 5m / 30m / all",
    "chart-scale": "Chart: switch the y scale between auto (linear) and log",
    **{f"chart-series-{n}": f"Chart: hide or show the selected element's series {n} (the "
                            "title names them in order)" for n in range(1, MAP_SERIES + 1)},
    "save-preset": "Save the topology at its knobs now as a preset TOML that loads back",
    "screenshot": "Save an SVG screenshot of the view",
}
EXPORT_KEYS = {True: "E (the events)",  # what saves a run before it is replaced, by shape
               False: "e (the time series) or E (the events)"}


class Dashboard(Screen):
    CSS_PATH = "dashboard.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (130, "-wide")]
    BINDINGS = [
        Binding("question_mark,f1", "app.help", "Help", id="dashboard-help",  # first in the footer
                tooltip="Keys, knobs and the model's terms"),
        Binding("up,left", "select(-1)", "Prev", show=False, id="select-prev",
                tooltip="Select the previous site, region or link"),
        Binding("down,right", "select(1)", "Next", show=False, id="select-next",
                tooltip="Select the next site, region or link"),
        Binding("enter", "knobs", "Knobs", id="element-knobs",
                tooltip="The selected element's knobs (region: t, N_p/N_d, routing; site: "
                        "instances; link: bandwidth, loss, connections)"),
        Binding("space", "pause", "Pause", id="pause",
                tooltip="Pause or resume the emulator's simulated clock"),
        Binding("full_stop", "step", "Step", id="step",
                tooltip="Pause and advance exactly one step of simulated time"),
        Binding("greater_than_sign", "speed(1)", "Faster", show=False, id="faster",
                tooltip="Run the simulated clock faster (1x .. 1000x, max)"),
        Binding("less_than_sign", "speed(-1)", "Slower", show=False, id="slower",
                tooltip="Run the simulated clock slower"),
        Binding("t", "set_threshold", "Set t", id="set-threshold",
                tooltip="Type an exact routing threshold t"),
        Binding("b", "edit_link", "Link", show=False, id="edit-link",
                tooltip="The link's bandwidth, loss= and connections= (a topology's link "
                        "dialog)"),
        Binding("r", "rate", "Rate", show=False, id="rate",
                tooltip="Type the offered rate, req/s"),
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
        Binding("O", "bound_optimum", "Bound", id="apply-bound",
                tooltip="Apply the routing bound's split of the live state, with lp routing"),
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
        # the scenario's shape: a declared topology draws its map, a single pair its strip
        self.mapped = scenario.declared_topology is not None
        super().__init__(classes="-topology" if self.mapped else "-pair")
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
        self.note = ""  # a topology's status: the emulator's failure, if any
        self.order: list[Element] = \
            elements(scenario.declared_topology) if self.mapped else list(PAIR_ELEMENTS)
        self._selected: Element | None = self.order[0] if self.mapped and self.order else None
        self._own: dict[Any, dict[str, float]] = {}  # each region's own Λ by live state
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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A key with one meaning per shape (`O`) runs, and shows, on its shape only."""
        if action in PAIR_ACTIONS:
            return not self.mapped
        if action in MAP_ACTIONS:
            return self.mapped
        return True

    def keys_here(self) -> list[Binding]:
        """The bindings of this screen's shape, in its words (help and the palette list
        these)."""
        unlisted = MAP_UNLISTED if self.mapped else PAIR_UNLISTED
        out = []
        for b in self.BINDINGS:
            if not isinstance(b, Binding) or b.id in unlisted or \
                    self.check_action(b.action.split("(", 1)[0], ()) is False:
                continue
            out.append(replace(b, tooltip=MAP_WORDS.get(b.id or "", b.tooltip)) if self.mapped
                       else b)
        return out

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="◆")
        if self.mapped:  # the map, then the selected element's detail and chart
            with Vertical(id="topo-body"):
                yield TopologyMap(id="topology-map")
                yield TopologyDetail(id="topology-detail")
                yield Gauges(id="region-gauges")
                yield DrillTimeline(id="timeline")
                with Horizontal(id="topo-charts"):
                    yield SelectionChart(id="region-throughput")
                    yield SelectionChart(id="topology-chart")
            yield Static(id="topo-status")
            yield KeyFooter(compact=True)
            return
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
        self.app.sub_title = self._title(self.settings.scenario)
        if self.mapped:
            self._start()
            if self.plan is not None:
                self.open_plan(self.plan)
            return
        controls = self.query_one(ControlPanel)
        controls.focus()
        self.watch(controls, "cursor", lambda _: self.show_map(), init=False)
        self._show_model()
        self.query_one(StatusLine).show(None)
        self.query_one(LiveCharts).ttft_slo = self.settings.scenario.sim.slo_ttft
        self._start()
        if self.plan is not None:
            self.action_plan()

    def _title(self, scenario: Scenario) -> str:
        return f"{scenario.name} · topology" if self.mapped else scenario.name

    def on_unmount(self) -> None:
        if self._redraw is not None:  # a redraw owed must not run on a screen taken down
            self._redraw.cancel()
        self.session.stop()

    def on_resize(self) -> None:
        """A topology's map depends on the width (map or matrix): draw again once known."""
        if self.mapped:
            self.call_after_refresh(self.redraw)

    def on_key(self, event: events.Key) -> None:
        """Mark where a key was typed: one typed ahead of a screen pushed from here (`i` then
        `/loss` at once) reaches the app after that screen is on top, which hands it on
        (PrfaasApp._on_key) rather than lose it."""
        event.typed_on = self  # type: ignore[attr-defined]

    # -- the selection -------------------------------------------------------------------------
    @property
    def selected(self) -> Element | None:
        """The selected element, which the map marks. On the pair, the element the knob cursor
        turns (its 1x1 topology's site, link or region; None on the run's own knobs: rate,
        paradigm, speed)."""
        if self.mapped:
            return self._selected
        knobs = shown(self.settings)
        cursor = self.query_one(ControlPanel).cursor
        return KNOB_ELEMENT.get(knobs[cursor].key) if cursor < len(knobs) else None

    @selected.setter
    def selected(self, element: Element | None) -> None:
        if self.mapped:
            self._selected = element
            return
        key = next((k for k, e in KNOB_ELEMENT.items() if e == element), None)
        if key is not None:  # the pair: its first knob of that element
            self.query_one(ControlPanel).select(key)

    def select(self, kind: str, name: str) -> None:
        self.selected = (kind, name)
        self.show_map()

    def show_map(self) -> None:
        if self.mapped:
            self.redraw()
        else:
            self.query_one(TopologyStrip).show(self.session.effective, self.selected)

    def action_select(self, step: int) -> None:
        """The next element (the knob panel, which has the pair's arrows while focused, walks
        its knobs: these keys reach here when it is not)."""
        self.selected = step_element(self.order, self.selected, step)
        self.show_map()

    def knob_prompt(self) -> tuple[str, str, str] | None:
        """(title, current value, hint) of the selected element's knobs."""
        if self.selected is None or self.session.driver is None:
            return None
        return knob_prompt(self.session, self.selected)

    def parse_knobs(self, text: str) -> dict[str, Any]:
        """The selected element's knobs from the dialog's text (KnobError: one line)."""
        assert self.selected is not None
        return parse_knobs(*self.selected, text)

    def action_knobs(self) -> None:
        """`enter`: the selected element's knobs; the pair's knob panel takes `enter` for the
        selected knob's value (this runs when the panel is not focused)."""
        if not self.mapped:
            knobs = shown(self.settings)
            self.edit_knob(knobs[min(self.query_one(ControlPanel).cursor, len(knobs) - 1)])
            return
        if self.selected is not None and self.session.driver is not None:
            edit_element(self, self.session, self.selected, self.redraw)

    def edit(self, element: Element) -> None:
        """Select the element and open its knobs (the palette's "Set ELEMENT…")."""
        if element in self.order:
            self.select(*element)
            self.action_knobs()

    def change(self, kind: str, name: str, **knobs: Any) -> bool:
        """Turn one element's knobs; a refusal is a notice and changes nothing."""
        if not change_element(self, self.session, kind, name, knobs):
            return False
        self.show_now()
        return True

    # -- the session -------------------------------------------------------------------------------
    def _start(self) -> None:
        try:
            self.session.start(self.at)
        except Exception as exc:  # the construction's error, one line
            self.failed(f"emulator failed: {exc}")
        self.show_now()

    def failed(self, text: str) -> None:
        """Say on the status line what stopped the emulator."""
        if self.mapped:
            self.note = text
        else:
            self.query_one(StatusLine).show(self.tick, text)

    def show_now(self) -> None:
        """Draw what the session has now (after a key's change, without waiting for a tick)."""
        if self.mapped:
            self.redraw()
        else:
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

    def watch_view(self, view: ModelView | None) -> None:
        if not self.mapped:
            self._model_later()

    def watch_tick(self, tick: Tick | None) -> None:
        if tick is None or self.mapped:  # a topology's map and detail: `redraw`
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
        A scenario of the other shape (a topology here on the pair's panels, or a pair here on
        a topology's map) opens on a fresh dashboard, which lays out its panels."""
        if (scenario.declared_topology is not None) != self.mapped:
            self.app.switch_screen(self.app.screen_for(  # type: ignore[attr-defined]
                scenario, drill=drill, live=self.live, at=self.at, speed=self.settings.speed,
                seed=self.session.seed))
            return
        self.session.load(scenario, drill, paradigm=paradigm, split=split, base=base)
        self.scored = False
        self.app.sub_title = self._title(scenario)
        self.query_one(DrillTimeline).display = False
        if self.mapped:
            self.note = ""
            self.order = elements(scenario.declared_topology)
            if self._selected not in self.order:
                self._selected = self.order[0] if self.order else None
        else:
            self.query_one(ControlPanel).reason = ""
            self.query_one(LiveCharts).ttft_slo = scenario.sim.slo_ttft
            self.sync()
        self._start()

    def on_tick_ready(self, message: TickReady) -> None:
        """Live, the pair's panels follow ticks at most TICK_REDRAW_HZ times a second (a burst
        of ticks is one redraw of the latest); a key's own change redraws at once (`request`).
        A topology's map and detail redraw per tick."""
        if self.session.take(message.tick):
            if self.mapped:
                self.show_now()
            elif self.live and self._redraw is not None:
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
            self.failed(message.text)
            self.notify(message.text, severity="error", timeout=8)
            if self.mapped:
                self.redraw()

    def _follow_incidents(self, tick: Tick) -> None:
        """Play the incident timeline (a drill's, or incidents injected by hand); at a drill's
        end, pause and show its scorecard (a topology's: one row per region)."""
        d, now, windows = self.drill, tick.snapshot.sim_time, tick.snapshot.incident_windows
        timeline = self.query_one(DrillTimeline)
        if d is None and not windows:
            if self.mapped:
                timeline.display = False
            return
        title = f"drill {d.name}" if d else "incidents"
        timeline.show(title, windows, now, d.duration if d else None)
        if d is not None and now >= d.duration and not self.scored:
            self.scored = True
            card = self.session.scorecard()
            self.app.push_screen(TopologyScorecard(d.name, card) if self.mapped else
                                 ScorecardScreen(d.name, card, slo_target(self.settings.scenario)))

    def point_at(self, snap: Any) -> OperatingPoint:
        """The model at the knobs a snapshot ran with."""
        return self.session.point_at(snap)

    # -- a topology's map and detail ---------------------------------------------------------------
    def figures(self) -> Figures | None:
        s = self.session
        if s.objects is None:
            return None
        gain = s.step_gain(*self.selected) if self.selected is not None else None
        assert s.topology is not None
        return Figures(s.topology, s.objects, s.model, gain)

    def detail_rows(self, fig: Figures | None) -> int:
        """Lines the detail panel takes at this width (its border, the model line, the
        element's lines as they wrap)."""
        if fig is None or self.selected is None:
            return 0
        texts = [model_line(fig), *(x for x in detail_lines(fig, self.selected) if x)]
        width = max(self.size.width - 2, 1)  # its padding
        return 1 + sum(len(Text(x).wrap(self.app.console, width)) for x in texts)

    def region_gauges(self) -> tuple[Gauge, ...]:
        """The selected region's chain as the pair's gauges (its sites, links in, PD-P and
        PD-D, measured over the window); none for a site or a link, or before the first tick."""
        tick, el = self.session.tick, self.selected
        if tick is None or el is None or el[0] != "region" or not tick.snapshot.regions:
            return ()
        model = self.session.model
        return region_gauges(el[1], tick.snapshot.regions[el[1]],
                             model.policy_utilization if model is not None else None)

    def redraw(self) -> None:
        """The map, the selected element's detail, a region's gauges, the incident timeline
        and the element's chart: the map and the detail first, then the gauges where they fit
        (two a line without their notes where the full ones do not), the timeline whole or not
        at all, where the chart keeps its room."""
        if self._pruning:
            return
        self.sync()  # the screen's tick is the session's latest (forks, quit, discard read it)
        fig, tick = self.figures(), self.tick
        self.query_one(TopologyMap).show(fig, self.selected)
        self.query_one(TopologyDetail).show(fig, self.selected)
        self.query_one("#topo-status", Static).update(self.status_text())
        chart = self.query_one("#topology-chart", SelectionChart)
        room = self.size.height - 3 - self.query_one(TopologyMap).rows - self.detail_rows(fig)
        gauges, items = self.query_one("#region-gauges", Gauges), self.region_gauges()
        width = self.size.width
        compact = room < Gauges.rows(len(items), width, False)  # two a line, no notes
        rows = Gauges.rows(len(items), width, compact)
        gauges.display = bool(items) and room >= rows
        if gauges.display:
            gauges.show(items, compact)
            room -= rows
        timeline = self.query_one(DrillTimeline)
        if tick is not None:
            self._follow_incidents(tick)
        if timeline.display:
            rows = str(timeline.content).count("\n") + 1
            chart_fits = room >= SelectionChart.MIN_ROWS
            timeline.display = room - rows >= (SelectionChart.MIN_ROWS if chart_fits else 0)
            room -= rows if timeline.display else 0
        charts = self.query_one("#topo-charts")
        charts.display = chart.display = room >= SelectionChart.MIN_ROWS
        throughput = self.query_one("#region-throughput", SelectionChart)
        throughput.display = (charts.display and self.selected is not None
                              and self.selected[0] == "region" and width >= TWO_CHARTS_WIDTH)
        if chart.display and tick is not None and self.selected is not None:
            xs, series = selection_series(tick.history, self.selected)
            key = (self.selected, tick.snapshot.sim_time, tick.generation)
            chart.set_data((self.selected, xs, series), key)
            if throughput.display:
                el = ("throughput", self.selected[1])
                xs, series = selection_series(tick.history, el)
                series["own Λ"] = self.own_lambdas(tick.history, el[1])
                throughput.set_data((el, xs, series), key)

    def own_lambdas(self, history: tuple, region: str) -> list[float]:
        """The region's own Λ at each snapshot's live state (what its PD-P, PD-D and links
        carry of its traffic under the running policy: the detail's figure), one policy
        evaluation per state seen."""
        from emulator.topology.live import live_spec
        from emulator.topology.load import region_capacities

        topo = self.session.topology
        out = []
        for snap in history:
            state = (snap.topology or {}).get(LIVE_KEY)
            if state is None or topo is None:
                out.append(math.nan)
                continue
            if state not in self._own:
                if len(self._own) > OWN_STATES:
                    self._own.clear()
                self._own[state] = region_capacities(live_spec(topo, state))[1]
            out.append(self._own[state].get(region, math.nan))
        return out

    def status_text(self) -> Text:
        """A topology's status line: incidents, the clock and the request accounting."""
        tick = self.session.tick
        out = Text(no_wrap=True, overflow="ellipsis")
        if tick is None:
            out.append(self.note or "starting the emulator…")
            return out
        snap = tick.snapshot
        for inc in snap.incidents:
            out.append(f"{inc} · ", style="bold")
        out.append(f"sim {clock(snap.sim_time)}")
        out.append(" paused" if tick.paused else f" ×{tick.speed:g}")
        out.append(f" · lost {snap.lost}", style="bold" if snap.lost else "")
        out.append(f" · {snap.arrived} arrived = {snap.completed} done + {snap.in_flight} in "
                   f"flight + {snap.rejected} rejected")
        if self.note:
            out.append(f" · {self.note}")
        return out

    # -- changes -----------------------------------------------------------------------------------
    def request(self, **changes: Any) -> bool:
        """Validate and apply setting changes; a refusal shows its reason and changes nothing."""
        try:
            self.session.request(**changes)
        except Refused as exc:
            if not self.mapped:
                self.query_one(ControlPanel).reason = str(exc)
            self.notify(str(exc), title="refused", severity="warning")
            return False
        if not self.mapped:
            self.query_one(ControlPanel).reason = ""
        self.show_now()
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

    def pair_only(self, key: str, why: str) -> bool:
        """True on the pair; on a topology, one line saying why `key` does nothing here."""
        if self.mapped:
            self.notify(f"{key}: {why}", severity="warning")
        return not self.mapped

    # -- actions -----------------------------------------------------------------------------------
    def action_set_threshold(self) -> None:
        """`t`: the pair's threshold; on a topology the knobs of the selected region, or of
        the region the selected link leads to."""
        if not self.mapped:
            self.edit_knob(KNOB_BY_KEY["t"])
            return
        if self.selected is None or self.session.driver is None:
            return
        kind, name = self.selected
        if kind == "site":
            self.notify(f"site {name} has no t: select a region or a link (arrows)",
                        severity="warning")
            return
        region = ("region", name.split("->", 1)[1] if kind == "link" else name)
        self.selected = region
        self.redraw()
        edit_element(self, self.session, region, self.redraw)

    def action_edit_link(self) -> None:
        """The link's dialog: the pair's one link, or a topology's selected link."""
        if not self.mapped:
            edit_element(self, self.session, ("link", PAIR_LINK), self.sync)
        elif self.selected is not None and self.selected[0] == "link":
            self.action_knobs()
        else:
            self.notify("b turns the selected link: select one (arrows), then b or enter",
                        severity="warning")

    def action_rate(self) -> None:
        """A prompt for the offered rate (a topology's total), checked as typed (the rate
        knob's range and the dashboard's work caps)."""
        if not self.mapped:
            self.edit_knob(KNOB_BY_KEY["rate"])
            return

        def check(text: str) -> str | None:
            try:
                self.session.topology_rate(text)
            except Refused as exc:
                return str(exc)
            return None

        def done(text: str | None) -> None:
            if text and self.request(rate=text):
                self.notify(f"offered rate -> {self.session.settings.rate:.3g} req/s in total")

        total = self.total_rate()
        self.app.push_screen(ValuePrompt("offered rate, req/s in total",
                                         f"{total:.4g}" if total else "",
                                         "each region is offered its share", check), done)

    def total_rate(self) -> float | None:
        """A topology's total offered rate now (the regions' shares summed); None before the
        first tick."""
        now = self.session.objects
        return sum(r["target_rate"] for r in now["regions"].values()) if now else None

    def action_pause(self) -> None:
        self.session.pause()
        self.show_now()

    def action_step(self) -> None:
        self.session.step(self.step_seconds)
        self.show_now()

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
        driving mode; before the first tick, or for another paradigm, the nominal one. On a
        topology: every region to the best threshold policy at the live state."""
        if self.mapped:
            self._apply_regions(self.session.apply_policy_optimum, "the best threshold policy",
                                lambda r, v: f"{r} t {format_tokens(v[0])} {v[1]}/{v[2]}")
            return
        b = self.view.optimum.best.knobs
        self._apply_pair(self.session.optimum_targets() or (b.t, b.n_p, b.n_d), "the optimum",
                         "t*")

    def action_bound_optimum(self) -> None:
        """A topology's `O`: every region to the routing bound's split, with lp routing."""
        self._apply_regions(self.session.apply_bound_optimum, "the routing bound",
                            lambda r, v: f"{r} {v[0]}/{v[1]}", " (lp routing)")

    def action_apply_slo_optimum(self) -> None:
        """The pair's `O`: the SLO optimum of the live state (as `o`); before the first tick,
        or for another paradigm, the nominal one."""
        live = self.session.slo_targets()
        if live is None:
            b = self.view.latency.slo_optimum
            if b is None:  # the settings' view searches PrfaaS-PD whatever the paradigm
                return
            live = (b.t, b.n_p, b.n_d)
        self._apply_pair(live, "the SLO optimum", "t")

    def _apply_pair(self, targets: tuple[float, int, int], what: str, t_name: str) -> None:
        """The pair's t and split to `targets` (PrfaaS-PD, the paradigm they are for)."""
        t, n_p, n_d = targets
        changes: dict[str, Any] = {"t": t, "n_p": n_p, "n_d": n_d}
        if self.settings.paradigm != Paradigm.PRFAAS_PD:
            changes["paradigm"] = Paradigm.PRFAAS_PD
        if self.request(**changes):
            self.notify(f"applied {what} of the live state: {t_name} = "
                        f"{KNOBS[0].show(self.settings)}, N_p/N_d = {n_p}/{n_d}")

    def _apply_regions(self, apply: Callable[[], dict[str, Any]], what: str,
                       said: Callable[[str, Any], str], how: str = "") -> None:
        """Every region of a topology to an optimum of the live state; a refusal is a notice."""
        try:
            got = apply()
        except KnobError as exc:
            self.notify(str(exc), title="refused", severity="warning")
            return
        self.notify(f"applied {what} of the live state{how}: " + "; ".join(
            said(r, v) for r, v in got.items()))
        self.redraw()

    def action_toggle_scheduler(self) -> None:
        run_keys.toggle_scheduler(self, self.session, self.show_now)

    def action_release_pins(self) -> None:
        run_keys.release_pins(self, self.session, self.show_now)

    def action_toggle_mode(self) -> None:
        if not self.pair_only("M", "the exact/paper mode drives the pair's model panel; the "
                              "model at a topology's live state has one mode"):
            return
        mode = self.session.toggle_mode()
        self._show_model()
        self.query_one(PicturesView).show()
        self.notify(f"{mode} mode drives the model panel (the stability judgement stays exact, "
                    "the mode the emulator sustains)")

    def action_cycle_paradigm(self) -> None:
        if not self.pair_only("m", "a topology runs PrfaaS-PD in every region; its routing "
                              "policy is a region's knob (enter on a region)"):
            return
        i = tuple(Paradigm).index(self.settings.paradigm)
        for k in range(1, len(Paradigm)):
            if self.request(paradigm=tuple(Paradigm)[(i + k) % len(Paradigm)]):
                return

    def action_toggle_view(self) -> None:
        if not self.pair_only("v", "it switches the pair's live charts and model column; a "
                              "topology shows the selected element's detail and chart below "
                              "its map"):
            return
        self.toggle_class("-show-model")
        self.call_after_refresh(self._show_model)  # once the new layout shows the column

    def action_toggle_pictures(self) -> None:
        """The pictures in place of the charts and the model (drawn only while shown)."""
        if not self.pair_only("g", "the pictures (gauges, the Λmax heat map over (t, N_p), "
                              "CDFs) are the pair's model; select an element (arrows) for its "
                              "figures"):
            return
        self.toggle_class("-pictures")
        pictures = self.query_one(PicturesView)
        pictures.display = self.has_class("-pictures")
        pictures.show(now=True)
        self.call_after_refresh(self._show_model)  # the model column, when it shows again
        if not pictures.display:  # a narrow screen hid the knobs with the pictures
            self.query_one(ControlPanel).focus()

    def _chart(self) -> LiveCharts | SelectionChart:
        """The charts `w`, `y` and 1-4 control: the pair's live charts, a topology's chart of
        the selected element (a region's throughput chart follows it: `_control`)."""
        return self.query_one("#topology-chart", SelectionChart) if self.mapped else \
            self.query_one(LiveCharts)

    def _control(self, controls: ChartControls) -> None:
        self._chart().control(controls)
        if self.mapped:
            self.query_one("#region-throughput", SelectionChart).control(controls)

    def action_chart_window(self) -> None:
        self._control(self._chart().controls.next_window())

    def action_chart_scale(self) -> None:
        self._control(self._chart().controls.toggle_log())

    def action_chart_series(self, n: int) -> None:
        if self.mapped and n > MAP_SERIES:
            self.notify(f"{n}: the selected element's chart has series 1 and 2 (its title "
                        "names them)", severity="warning")
            return
        self._control(self._chart().controls.toggle(n))

    def action_presets(self) -> None:
        def load(sc: Scenario) -> None:
            self.load_scenario(sc)
            self.app.notify(f"loaded {sc.name}")

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
        discard_run_then(self, what, go, export=EXPORT_KEYS[self.mapped])

    def action_plan(self) -> None:
        """A plan's results: the pair's (prfaas-tui plan), or a topology plan's file."""
        if self.mapped:
            def typed(text: str | None) -> None:
                if text:
                    self.open_plan(text)
            self.app.push_screen(ValuePrompt("topology plan results file", self.plan or
                                             f"plan-{self.session.base_name}.json",
                                             "prfaas-tui plan --preset NAME --out FILE on a "
                                             "topology preset", None), typed)
            return
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

    def open_plan(self, path: str) -> None:
        """Show a topology plan's front; the chosen candidate replaces the running topology."""
        from prfaas_tui.screens.plan import PlanError, PlanScreen, open_plan

        try:
            plan = open_plan(path)
            if not plan.topology:
                raise PlanError(f"{path}: a single pair's plan: open it with  prfaas-tui "
                                f"--plan {path}")
        except PlanError as exc:
            self.notify(str(exc), title="plan", severity="error")
            return
        self.plan = path

        def chosen(choice: PlanChoice | None) -> None:
            if choice is None:
                return
            rec = choice.record
            self.load_scenario(choice.scenario)
            self.notify(f"opened {rec['label']}: SLO goodput {rec['goodput']:.3f} req/s at "
                        f"{rec['cost_per_hour']:.2f}/h (bound {rec['bound']:.3f})")
        self.app.push_screen(PlanScreen(path, topology=True), chosen)

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
                    f"{format_duration(drill.duration)}")

    def action_inject(self) -> None:
        """Pick an incident, then its parameters (IncidentForm), checked as a drill file's; on
        a topology aimed at the selected element."""
        s = self.session
        if not self.mapped:
            run_keys.inject(self, s, self.sync,
                            lambda kind, values: hand_incident(kind, values, self.settings))
            return
        if s.driver is None:
            self.notify("nothing runs to strike yet", severity="warning")
            return
        spec = s.running_spec()
        run_keys.inject(self, s, self.redraw, lambda kind, values: run_keys.topology_incident(
            kind, values, spec, rate=self.total_rate() or 0.0,
            duration=s.scenario.sim.duration), target=self.selected)

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
            self.show_now()
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
        """The scenario at its knobs now, as a preset that loads back (a topology: at its
        element knobs and routing policies)."""
        s = self.session
        if not self.mapped:
            run_keys.save_preset(self, self.settings.scenario, rate=self.settings.rate,
                                 paradigm=self.settings.paradigm)
            return
        if s.driver is None:
            self.notify("nothing runs to save yet", severity="warning")
            return
        assert s.topology is not None
        policies = frozenset(s.region_policy(r.name) for r in s.topology.regions)
        run_keys.save_preset(self, run_keys.at_knobs(s.scenario, s.running_spec(), policies),
                             rate=self.total_rate(), paradigm=None)

    def action_export(self) -> None:
        if not self.pair_only("e", "the time series export is the pair's (its model per "
                              "row); export a topology's run with E (the events)"):
            return

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
