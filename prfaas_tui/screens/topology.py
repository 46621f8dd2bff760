"""The topology view: the dashboard of a preset with more than one site or region.

The map (sites and regions as boxes, links as lines; a sites x regions matrix below 120
columns), the selected element's figures and the model at the live state, a status line and
the keys. Arrow keys walk the elements (sites, then regions, then links); `enter` opens the
selected element's knobs, checked as the pair's knobs are (a refusal stays in the dialog):
a region's t, N_p/N_d and routing policy, a site's instances, a link's bandwidth; `t`, as on
the pair, opens the selected region's (or the selected link's region's). `o` applies the best
threshold policy at the live state, `O` the routing bound's split with `lp` routing. A drill
(`d`) runs in the view under the pair's incident timeline and ends with a scorecard per
region; `p` loads another preset (a single pair opens its dashboard). Every knob change is a
logged change, as the pair's: `E` lists them with the incidents, `f` forks the run (replayed to
now, checked identical) to try a change beside it, `c` runs the routing policies side by side
on the same seeded workload. `S`/`U` (scheduler, pins), `i` (an incident, aimed at the selected
element), `ctrl+s` (save at the knobs now) and `x` (SVG) run the pair's code (screens.run_keys).

The state is a `Session`, as the pair's dashboard's; the screen draws what its latest tick and
model say.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Header, Label, Static

from emulator.scenario.knobs import KnobError
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario
from emulator.units import format_duration, format_tokens
from prfaas_tui.live import Tick
from prfaas_tui.messages import EmulatorFailed, TickReady
from prfaas_tui.metrics_export import default_export_dir
from prfaas_tui.modelview import Refused, step_speed
from prfaas_tui.screens import run_keys
from prfaas_tui.screens.discard import discard_run_then
from prfaas_tui.screens.drills import DrillPicker, drill_here
from prfaas_tui.screens.element_knobs import change_element, edit_element, knob_prompt, parse_knobs
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.session import Session
from prfaas_tui.topology_text import Element, Figures, elements, step_element
from prfaas_tui.widgets.status import KeyFooter, clock
from prfaas_tui.widgets.timeline import DrillTimeline
from prfaas_tui.widgets.topology_map import (
    SelectionChart,
    TopologyDetail,
    TopologyMap,
    detail_lines,
    selection_series,
)

if TYPE_CHECKING:
    from emulator.scenario.drill import Drill


TOPOLOGY_KNOBS = (
    ("rate", "r: the total offered rate in req/s; each region is offered its share"),
    ("region", "t N_p/N_d routing, any part: 32K 4/4 best-bandwidth (threshold, lp, "
               "best-bandwidth, best-cache with a [cache] and sessions); N_p + N_d within its "
               "pool, N_d >= 1"),
    ("site", "its PrfaaS prefill instances"),
    ("link", "its bandwidth knob in Gbps or with a unit; an incident keeps taking its share"),
)
TOPOLOGY_TERMS = (
    ("capacity now", "what a link may carry now: its bandwidth x the share incidents leave, "
                     "within its site's egress (water-filled over its busy links)"),
    ("utilization", "a link's bytes over the window / its bandwidth knob; a site's prefill "
                    "work / its instance-seconds"),
    ("q", "a link's KV transfers in flight; a site's or region's queued requests"),
    ("Λ policy", "the largest total rate the threshold policy sustains at the live state"),
    ("bound", "the routing bound: the best any routing could do at the live capacities "
              "(HiGHS MILP over length bins, sites and links)"),
    ("binds", "reversed on the map: the first binding row of the running policy's model"),
    ("+1 Gbps here", "the bound's shadow price per Gbps of the bandwidth knob (per instance "
                     "for sites and regions): exact for small changes at the bound's split"),
    ("re-solved", "the bound solved again with the knob raised by a step: what the change "
                  "does, also past the point where the price stops holding"),
    ("lost", "requests that vanished: must read 0 (accounting check, per region)"),
)


EXPORT_KEYS = "E (the events)"  # what saves a run here before it is replaced


class TopologyScreen(Screen):
    DEFAULT_CSS = """
    TopologyScreen #topo-body { height: 1fr; }
    TopologyScreen #topo-status { height: 1; padding: 0 1; background: $panel; }
    """
    BINDINGS = [
        Binding("question_mark,f1", "app.help", "Help", id="topology-help",
                tooltip="Keys, knobs and the model's terms"),
        Binding("up,left", "select(-1)", "Prev", show=False, id="topology-prev",
                tooltip="Select the previous site, region or link"),
        Binding("down,right", "select(1)", "Next", show=False, id="topology-next",
                tooltip="Select the next site, region or link"),
        Binding("enter", "knobs", "Knobs", id="topology-knobs",
                tooltip="The selected element's knobs (region: t, N_p/N_d, routing; site: "
                        "instances; link: bandwidth)"),
        Binding("t", "region_knobs", "Set t", show=False, id="topology-set-threshold",
                tooltip="The selected region's t, N_p/N_d and routing (a link selected: its "
                        "region's), as the pair's t"),
        Binding("space", "pause", "Pause", id="topology-pause",
                tooltip="Pause or resume the simulated clock"),
        Binding("full_stop", "step", "Step", id="topology-step",
                tooltip="Pause and advance one simulated second"),
        Binding("greater_than_sign", "speed(1)", "Faster", show=False, id="topology-faster"),
        Binding("less_than_sign", "speed(-1)", "Slower", show=False, id="topology-slower"),
        Binding("r", "rate", "Rate", show=False, id="topology-rate",
                tooltip="Set the total offered rate, req/s (each region gets its share)"),
        Binding("o", "policy_optimum", "Optimum", id="topology-optimum",
                tooltip="Apply the best threshold policy of the live state (t, N_p/N_d)"),
        Binding("O", "bound_optimum", "Bound", id="topology-bound",
                tooltip="Apply the routing bound's split of the live state, with lp routing"),
        Binding("p", "presets", "Presets", show=False, id="topology-presets",
                tooltip="Load a shipped preset or a TOML file (a single pair opens its "
                        "dashboard)"),
        Binding("d", "drills", "Drills", id="topology-drills",
                tooltip="Run a drill in the topology view; a scorecard per region at its end"),
        Binding("w", "chart_window", "Window", show=False, id="topology-chart-window",
                tooltip="Chart: cycle the time window 1m / 5m / 30m / all"),
        Binding("y", "chart_scale", "Scale", show=False, id="topology-chart-scale",
                tooltip="Chart: switch the y scale between auto (linear) and log"),
        *(Binding(str(n), f"chart_series({n})", f"Series {n}", show=False,
                  id=f"topology-chart-series-{n}",
                  tooltip=f"Chart: hide or show the selected element's series {n} (the title "
                          "names them in order)") for n in (1, 2)),
        Binding("f", "fork", "Fork", show=False, id="topology-fork",
                tooltip="What-if: fork the run (replayed to now), change the fork alone"),
        Binding("E", "events", "Events", show=False, id="topology-events",
                tooltip="The run's knob changes, incidents and scheduler decisions: filter, export"),
        Binding("c", "compare", "Compare", show=False, id="topology-compare",
                tooltip="Compare the routing policies on the same seeded workload"),
        Binding("S", "toggle_scheduler", "Scheduler", show=False, id="topology-scheduler",
                tooltip="Switch the scheduler on or off live (where the scenario has one)"),
        Binding("U", "release_pins", "Unpin", show=False, id="topology-release-pins",
                tooltip="Release the knobs set by hand: the scheduler may move them again"),
        Binding("i", "inject", "Incident", show=False, id="topology-inject",
                tooltip="Inject an incident now, aimed at the selected link, site or region; "
                        "or end one"),
        Binding("ctrl+s", "save", "Save", show=False, id="topology-save-preset",
                tooltip="Save the topology at its knobs now as a preset TOML that loads back"),
        Binding("x", "screenshot", "SVG", show=False, id="topology-screenshot",
                tooltip="Save an SVG screenshot of the view"),
        Binding("P", "plan", "Plan", show=False, id="topology-plan",
                tooltip="Open a topology plan's results (prfaas-tui plan --out FILE) and "
                        "view any candidate"),
    ]

    def __init__(self, scenario: Scenario, *, live: bool = True, at: float | None = None,
                 speed: float = 20.0, seed: int | None = None, drill: Drill | None = None,
                 plan: str | None = None, export_dir: Path | None = None) -> None:
        super().__init__()
        self.plan = plan  # a topology plan's results file, shown at mount
        self.live, self.at = live, at
        self.export_dir = export_dir or default_export_dir()  # where the events export goes
        self.session = Session(
            scenario, live=live, seed=seed, speed=speed, drill=drill,
            post_tick=lambda tick: self.post_message(TickReady(tick)),
            post_error=lambda text, gen: self.post_message(EmulatorFailed(text, gen)))
        self.order: list[Element] = elements(scenario.declared_topology)
        self.selected: Element | None = self.order[0] if self.order else None
        self.scored = False
        self.note = ""

    @property
    def driver(self) -> Any:  # the app holds a busy emulator while a key is answered
        return self.session.driver

    @property
    def drill(self) -> Drill | None:
        return self.session.drill

    @property
    def tick(self) -> Tick | None:
        return self.session.tick

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="◆")
        with Vertical(id="topo-body"):
            yield TopologyMap(id="topology-map")
            yield TopologyDetail(id="topology-detail")
            yield DrillTimeline(id="timeline")
            yield SelectionChart(id="topology-chart")
        yield Static(id="topo-status")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.app.sub_title = f"{self.session.scenario.name} · topology"
        try:
            self.session.start(self.at)
        except Exception as exc:  # the construction's error, one line
            self.note = f"emulator failed: {exc}"
        self.redraw()
        if self.plan is not None:
            self.open_plan(self.plan)

    def on_unmount(self) -> None:
        self.session.stop()

    def on_resize(self) -> None:
        """The layout depends on the width (map or matrix): draw again once it is known."""
        self.call_after_refresh(self.redraw)

    # -- drawing -------------------------------------------------------------------------------
    def figures(self) -> Figures | None:
        s = self.session
        if s.objects is None:
            return None
        gain = s.step_gain(*self.selected) if self.selected is not None else None
        assert s.topology is not None
        return Figures(s.topology, s.objects, s.model, gain)

    def redraw(self) -> None:
        fig = self.figures()
        self.query_one(TopologyMap).show(fig, self.selected)
        self.query_one(TopologyDetail).show(fig, self.selected)
        self.query_one("#topo-status", Static).update(self.status_text())
        chart = self.query_one(SelectionChart)
        detail_rows = 2 + len(detail_lines(fig, self.selected)) if fig and self.selected else 0
        room = self.size.height - 3 - self.query_one(TopologyMap).rows - detail_rows
        timeline = self.query_one(DrillTimeline)
        if self.tick is not None:
            self._show_timeline(self.tick)
        if timeline.display:  # whole or not at all, where the chart keeps its room
            rows = str(timeline.content).count("\n") + 1
            chart_fits = room >= SelectionChart.MIN_ROWS
            timeline.display = room - rows >= (SelectionChart.MIN_ROWS if chart_fits else 0)
            room -= rows if timeline.display else 0
        chart.display = room >= SelectionChart.MIN_ROWS  # the map and the detail come first
        if chart.display and self.tick is not None and self.selected is not None:
            xs, series = selection_series(self.tick.history, self.selected)
            chart.set_data((self.selected, xs, series),
                           (self.selected, self.tick.snapshot.sim_time, self.tick.generation))
        if self.tick is not None:
            self._follow_drill(self.tick)

    def status_text(self) -> Text:
        tick = self.tick
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

    def on_tick_ready(self, message: TickReady) -> None:
        if self.session.take(message.tick):
            self.redraw()

    def on_emulator_failed(self, message: EmulatorFailed) -> None:
        if message.generation == self.session.generation:
            self.note = message.text
            self.notify(message.text, severity="error", timeout=8)
            self.redraw()

    def _show_timeline(self, tick: Tick) -> None:
        """The pair's incident timeline: a drill's incidents or the ones injected by hand."""
        d, windows = self.drill, tick.snapshot.incident_windows
        timeline = self.query_one(DrillTimeline)
        if d is None and not windows:
            timeline.display = False
            return
        timeline.show(f"drill {d.name}" if d else "incidents", windows, tick.snapshot.sim_time,
                      d.duration if d else None)

    def _follow_drill(self, tick: Tick) -> None:
        d = self.drill
        if d is not None and tick.snapshot.sim_time >= d.duration and not self.scored:
            self.scored = True
            self.app.push_screen(TopologyScorecard(d.name, self.session.scorecard()))

    # -- selection and knobs ---------------------------------------------------------------------
    def action_select(self, step: int) -> None:
        self.selected = step_element(self.order, self.selected, step)
        self.redraw()

    def select(self, kind: str, name: str) -> None:
        self.selected = (kind, name)
        self.redraw()

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
        if self.selected is not None and self.session.driver is not None:
            edit_element(self, self.session, self.selected, self.redraw)

    def edit(self, element: Element) -> None:
        """Select the element and open its knobs (the palette's "Set ELEMENT…")."""
        if element in self.order:
            self.select(*element)
            self.action_knobs()

    def action_region_knobs(self) -> None:
        """The pair's `t` on a topology: the knobs of the selected region, or of the region
        the selected link leads to."""
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

    def change(self, kind: str, name: str, **knobs: Any) -> bool:
        """Turn one element's knobs; a refusal is a notice and changes nothing."""
        if not change_element(self, self.session, kind, name, knobs):
            return False
        self.redraw()
        return True

    # -- actions --------------------------------------------------------------------------------
    def _chart(self, change: str, *args: int) -> None:
        chart = self.query_one(SelectionChart)
        chart.control(getattr(chart.controls, change)(*args))

    def action_chart_window(self) -> None:
        self._chart("next_window")

    def action_chart_scale(self) -> None:
        self._chart("toggle_log")

    def action_chart_series(self, n: int) -> None:
        self._chart("toggle", n)

    def action_pause(self) -> None:
        self.session.pause()
        self.redraw()

    def action_step(self) -> None:
        self.session.step(1.0)
        self.redraw()

    def action_speed(self, d: int) -> None:
        try:
            self.session.request(speed=step_speed(self.session.settings.speed, d))
        except Refused as exc:
            self.notify(str(exc), severity="warning")
        self.redraw()

    def action_events(self) -> None:
        from prfaas_tui.screens.events import EventsScreen

        self.app.push_screen(EventsScreen(self.session.events,
                                          scenario=self.session.scenario.name,
                                          export_dir=self.export_dir, live=self.live))

    def action_fork(self) -> None:
        """A what-if fork of the live run beside it (screens.fork); kept, the view carries
        on with the fork's run."""
        from prfaas_tui.screens.fork import ForkScreen

        if self.session.driver is None or self.tick is None:
            self.notify("nothing runs to fork yet", severity="warning")
            return

        def done(kept: bool | None) -> None:
            d = self.drill
            if kept and d is not None and screen.fork.origin.at < d.duration:
                self.scored = False  # the kept fork's end is still to score
            self.redraw()
            self.notify("kept the fork: the run goes on from it" if kept else
                        "fork dropped: the run goes on as it was")
        try:
            screen = ForkScreen(self.session)
        except RuntimeError as exc:  # the emulator thread has stopped
            self.notify(f"cannot fork: {exc}", severity="error")
            return
        self.app.push_screen(screen, done)

    def action_compare(self) -> None:
        from prfaas_tui.screens.compare import CompareScreen

        self.app.push_screen(CompareScreen(self.session.settings, live=self.live,
                                           seed=self.session.seed, drill=self.drill))

    def action_toggle_scheduler(self) -> None:
        run_keys.toggle_scheduler(self, self.session, self.redraw)

    def action_release_pins(self) -> None:
        run_keys.release_pins(self, self.session, self.redraw)

    def action_inject(self) -> None:
        """An incident by hand, aimed at the selected element, checked as a drill file's."""
        s = self.session
        if s.driver is None:
            self.notify("nothing runs to strike yet", severity="warning")
            return
        spec = s.running_spec()
        run_keys.inject(self, s, self.redraw, lambda kind, values: run_keys.topology_incident(
            kind, values, spec, rate=self.total_rate() or 0.0,
            duration=s.scenario.sim.duration), target=self.selected)

    def action_save(self) -> None:
        """The running topology at its element knobs now, as a preset that loads back."""
        if self.session.driver is None:
            self.notify("nothing runs to save yet", severity="warning")
            return
        s = self.session
        assert s.topology is not None
        policies = frozenset(s.region_policy(r.name) for r in s.topology.regions)
        run_keys.save_preset(self, run_keys.at_knobs(s.scenario, s.running_spec(), policies),
                             rate=self.total_rate(), paradigm=None)

    def total_rate(self) -> float | None:
        """The total offered rate now (the regions' shares summed); None before the first tick."""
        now = self.session.objects
        return sum(r["target_rate"] for r in now["regions"].values()) if now else None

    def action_screenshot(self) -> None:
        at = self.tick.snapshot.sim_time if self.tick is not None else 0.0
        run_keys.screenshot(self, self.session.scenario.name, at)

    def action_rate(self) -> None:
        """A prompt for the total offered rate, checked as typed (the rate knob's range and
        the dashboard's work caps)."""
        def check(text: str) -> str | None:
            try:
                self.session.topology_rate(text)
            except Refused as exc:
                return str(exc)
            return None

        def done(text: str | None) -> None:
            if not text:
                return
            try:
                self.session.request(rate=text)
            except Refused as exc:
                self.notify(str(exc), title="refused", severity="warning")
                return
            self.notify(f"offered rate -> {self.session.settings.rate:.3g} req/s in total")
            self.redraw()

        total = self.total_rate()
        self.app.push_screen(ValuePrompt("offered rate, req/s in total",
                                         f"{total:.4g}" if total else "",
                                         "each region is offered its share", check), done)

    def action_policy_optimum(self) -> None:
        try:
            got = self.session.apply_policy_optimum()
        except KnobError as exc:
            self.notify(str(exc), title="refused", severity="warning")
            return
        self.notify("applied the best threshold policy of the live state: " + "; ".join(
            f"{r} t {format_tokens(t)} {p}/{d}" for r, (t, p, d) in got.items()))
        self.redraw()

    def action_bound_optimum(self) -> None:
        try:
            got = self.session.apply_bound_optimum()
        except KnobError as exc:
            self.notify(str(exc), title="refused", severity="warning")
            return
        self.notify("applied the routing bound of the live state (lp routing): " + "; ".join(
            f"{r} {p}/{d}" for r, (p, d) in got.items()))
        self.redraw()

    def action_drills(self) -> None:
        def done(name: str | None) -> None:
            if name:
                discard_run_then(self, f"start drill {name}", lambda: self.start_drill(name),
                                 export=EXPORT_KEYS)
        self.app.push_screen(DrillPicker(self.session.scenario), done)

    def action_presets(self) -> None:
        """Another preset: a topology's runs here, a single pair's on the pair's dashboard."""
        from prfaas_tui.screens.presets import PresetPicker

        def go(sc: Scenario) -> None:
            if sc.declared_topology is None:
                self.app.switch_screen(self.app.screen_for(  # type: ignore[attr-defined]
                    sc, live=self.live, at=self.at, speed=self.session.settings.speed,
                    seed=self.session.seed))
            else:
                self.load(sc)
            self.app.notify(f"loaded {sc.name}")

        def done(sc: Scenario | None) -> None:
            if sc is not None:
                discard_run_then(self, f"load {sc.name}", lambda: go(sc), export=EXPORT_KEYS)
        self.app.push_screen(PresetPicker(), done)

    def start_drill(self, name: str) -> None:
        """Run the drill on the running topology (never the drill's own base preset) and
        follow it to a scorecard per region."""
        try:
            drill = drill_here(name, self.session.scenario)
        except PresetError as exc:
            self.notify(f"cannot start drill {name}: {exc}", severity="error")
            return
        self.load(drill.scenario, drill)
        self.notify(f"drill {drill.name}: {len(drill.timeline)} incidents over "
                    f"{format_duration(drill.duration)}")

    def action_plan(self) -> None:
        def done(text: str | None) -> None:
            if text:
                self.open_plan(text)
        self.app.push_screen(ValuePrompt("topology plan results file", self.plan or
                                         f"plan-{self.session.base_name}.json",
                                         "prfaas-tui plan --preset NAME --out FILE on a "
                                         "topology preset", None), done)

    def open_plan(self, path: str) -> None:
        """Show a topology plan's front; the chosen candidate replaces the running topology."""
        from prfaas_tui.screens.plan import PlanChoice, PlanError, PlanScreen, open_plan

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
            self.load(choice.scenario)
            self.notify(f"opened {rec['label']}: SLO goodput {rec['goodput']:.3f} req/s at "
                        f"{rec['cost_per_hour']:.2f}/h (bound {rec['bound']:.3f})")
        self.app.push_screen(PlanScreen(path, topology=True), chosen)

    def load(self, scenario: Scenario, drill: Drill | None = None) -> None:
        self.session.load(scenario, drill)
        self.scored = False
        self.order = elements(scenario.declared_topology)
        if self.selected not in self.order:
            self.selected = self.order[0] if self.order else None
        self.app.sub_title = f"{scenario.name} · topology"
        self.session.start(self.at if not self.live else None)
        self.redraw()


REGION_COLUMNS = (("lost", "lost"), ("slo_attainment", "SLO met"),
                  ("ttft_p90_during", "P90 during"), ("peak_ttft_p90", "peak P90"),
                  ("recovery_seconds", "recovered in"))


class TopologyScorecard(ModalScreen[None]):
    """A topology drill's scorecard: the totals' verdict and one row per region."""

    CSS_PATH = "dialogs.tcss"
    BINDINGS = [Binding("escape,enter,q", "dismiss(None)", "Close", id="topology-card-close")]

    def __init__(self, name: str, card: dict) -> None:
        super().__init__(classes="dialog")
        self.drill, self.card = name, card

    def compose(self) -> ComposeResult:
        table = Table(box=None, padding=(0, 2, 0, 0), header_style="bold")
        table.add_column("region")
        for _, label in REGION_COLUMNS:
            table.add_column(label, justify="right")
        for name, row in (self.card.get("regions") or {}).items():
            table.add_row(name, *(_card_value(k, row.get(k)) for k, _ in REGION_COLUMNS))
        passed = self.card.get("passed")
        head = f"scorecard · drill {self.drill}" + (
            "" if passed is None else "  PASSED" if passed else "  FAILED")
        with Vertical(classes="frame"):
            yield Label(Text(head, style="bold"))
            yield Static(table)
            yield Static(f"total lost {self.card.get('lost')} · P90 during incidents "
                         f"{_card_value('ttft_p90_during', self.card.get('ttft_p90_during'))}")
            yield Static("enter/esc: close (the emulator stays paused at the end)",
                         classes="help")


def _card_value(key: str, v: Any) -> str:
    if v is None:
        return "–"
    if key == "lost":
        return str(v)
    if key == "slo_attainment":
        return f"{v:.1%}"
    return f"{v:.2f} s"
