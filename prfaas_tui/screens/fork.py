"""The fork view: a what-if copy of the live run beside the run itself (`f` on the dashboard).

The fork (`prfaas_tui.fork.Fork`) replays the run to now and then follows the run's clock, so
the two share one time axis: served rate (Λ), TTFT P90 and the queues drawn for both, with the
fork instant marked. The knobs on the left are the fork's; a change there goes to the fork
alone. On a topology the left side lists its regions, sites and links for both, and `e` turns
the selected element's knobs in the fork (↑↓ select). `enter` keeps the fork (the dashboard
carries on with it, its history and record), `esc` drops it (the run goes on untouched).
Space, `.` and the speed keys work the shared clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from emulator.model import STAGES
from emulator.paradigm import Paradigm
from emulator.units import format_duration, format_tokens, to_gbps
from prfaas_tui.fork import Fork
from prfaas_tui.live import LIVE_KEY, POLICIES_KEY, Tick
from prfaas_tui.messages import EmulatorFailed, TickReady
from prfaas_tui.modelview import Refused, step_speed
from prfaas_tui.screens.element_knobs import edit_element
from prfaas_tui.session import Session
from prfaas_tui.throttle import Coalesced
from prfaas_tui.timeaxis import DEFAULT_SPAN, TimeWindow, clip, frame
from prfaas_tui.topology_text import Element, elements, step_element
from prfaas_tui.widgets.controls import KNOB_BY_KEY, ControlPanel, speed_text
from prfaas_tui.widgets.model_panel import STAGE_LABELS, num
from prfaas_tui.widgets.plots import Chart
from prfaas_tui.widgets.theme import color

REDRAW_HZ = 5  # live, the view redraws from ticks at most this often (wall clock)
BEFORE_S = 60.0  # simulated seconds shown before the fork instant, at least
WIDE = 130  # columns from which the view has room for the long title and the key line
RUN, FORK = "primary", "warning"  # the two series' theme colours


class LeaderTick(Message):
    """A tick of the run being forked (its clock leads the fork); a queued older one is
    dropped."""

    def __init__(self, tick: Tick) -> None:
        super().__init__()
        self.tick = tick

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LeaderTick)


class ForkControls(ControlPanel, inherit_bindings=False):
    """The knob panel on the fork: the same knobs and steps; `enter` is the screen's (keep
    the fork), not "type a value" (`t` types t)."""

    BINDINGS = [b for b in ControlPanel.BINDINGS if b.id != "knob-edit"]
    HINT = "↑↓ knob  ←→ step  t: set t"  # `t` is both the key and the knob: said once


@dataclass(frozen=True)
class Pair:
    """What the charts draw: both histories, the fork instant, the TTFT SLO."""

    run: Sequence[Any]
    fork: Sequence[Any]
    at: float
    slo: float | None

    @property
    def window(self) -> TimeWindow:
        """From a little before the fork instant (at least DEFAULT_SPAN shown) to now."""
        now = max(h[-1].sim_time for h in (self.run, self.fork) if h)
        start = min(h[0].sim_time for h in (self.run, self.fork) if h)
        lo = min(now - DEFAULT_SPAN, self.at - max(BEFORE_S, 0.25 * (now - self.at)))
        return TimeWindow(max(start, lo, 0.0), now)


class PairChart(Chart):
    """One quantity of the run and of the fork over the shared window, the fork instant │."""

    def __init__(self, label: str, short: str, value: Callable[[Any], float], *,
                 slo: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label, self.short, self.value = label, short, value
        self.slo = slo  # draw the TTFT SLO as a line

    def draw(self, plt: Any, data: Pair) -> None:
        slo = data.slo if self.slo else None
        self.title(plt, self.label + (f" · SLO {slo:g} s ─" if slo is not None else ""),
                   self.short)
        if not data.run:
            return
        w = data.window
        last = data.run[-1]
        series = []  # the fork from its instant on: before it, it is the run (checked)
        for hist in (data.run, [s for s in data.fork if s.sim_time >= data.at]):
            x, y = clip(w, [s.sim_time for s in hist], [_finite(self.value(s)) for s in hist])
            series.append((x, y))
        ys = np.concatenate([y[np.isfinite(y)] for _, y in series])
        top = max(float(ys.max()) if ys.size else 0.0, slo or 0.0, 1e-3)
        top *= 1.15
        f = frame(w, last.incident_windows, ())
        self.time_axis(plt, f, top)
        plt.plot([data.at - w.hi] * 2, [0, top], marker="│", color=self.c("accent"))
        if slo is not None:
            plt.hline(slo, color=self.c("error"))
        for (x, y), col, label in zip(series, (RUN, FORK), ("run", "fork"), strict=True):
            self.line(plt, x, y, col, label)
        plt.ylim(0, top)


def _finite(x: float | None) -> float:
    return math.nan if x is None or not math.isfinite(x) else float(x)


def queued(s: Any) -> float:
    """Requests waiting in the three stages' queues."""
    return float(sum(s.stages[st].queue for st in STAGES))


def pair_table(run: Session, fork: Session, ready: bool,
               colors: tuple[str, str] = ("", ""), more: bool = False) -> Table:
    """The run and the fork side by side: the knobs each runs and what each measures now
    (headed in their series' `colors`); `more` rows where there is room."""
    table = Table(box=None, padding=(0, 1, 0, 0), header_style="bold", expand=True)
    table.add_column("", no_wrap=True)
    table.add_column(Text("run", style=colors[0]), justify="right", no_wrap=True)
    table.add_column(Text("fork", style=colors[1]), justify="right", no_wrap=True)

    def row(name: str, f: Callable[[Any], str] | None,
            knob: Callable[[Session], str] | None = None) -> None:
        cells = []
        for sess, live in ((run, True), (fork, ready)):
            snap = sess.tick.snapshot if sess.tick is not None and live else None
            cells.append(knob(sess) if knob else ("…" if snap is None else f(snap)))
        style = "bold" if cells[0] != cells[1] else ""
        table.add_row(Text(name, style="dim"), *(Text(c, style=style) for c in cells))

    sc = lambda s: s.settings.scenario  # noqa: E731
    row("t", None, lambda s: format_tokens(sc(s).t))
    row("N_p / N_d", None, lambda s: f"{sc(s).n_p} / {sc(s).n_d}")
    row("B_out Gbps", None, lambda s: f"{to_gbps(sc(s).system.bandwidth):.4g}")
    row("rate req/s", None, lambda s: f"{s.settings.rate:.3g}")
    row("served req/s", lambda s: f"{s.served_rate:.2f}")
    row("TTFT P90 s", lambda s: num(s.ttft_p90))
    for st in STAGES:
        row(f"queued {STAGE_LABELS[st]}", lambda s, st=st: f"{s.stages[st].queue:,}")
    if more:
        row("egress Gbps", lambda s: f"{to_gbps(s.link.capacity) * s.link.utilization:.1f}")
        row("SLO attainment", lambda s: num(s.slo_attainment, "{:.0%}"))
        row("completed", lambda s: f"{s.completed:,}")
        row("lost", lambda s: str(s.lost))
    return table


def topology_table(run: Session, fork: Session, ready: bool, selected: Element | None,
                   colors: tuple[str, str] = ("", "")) -> Table:
    """A topology's run and fork side by side: each region's t, split and routing, each
    site's instances, each link's bandwidth (the `selected` element marked), then what each
    measures now."""
    table = Table(box=None, padding=(0, 1, 0, 0), header_style="bold", expand=True)
    table.add_column("", no_wrap=True)
    table.add_column(Text("run", style=colors[0]), justify="right", no_wrap=True)
    table.add_column(Text("fork", style=colors[1]), justify="right", no_wrap=True)

    def row(name: str, f: Callable[[dict, Any], str], element: Element | None = None) -> None:
        cells = []
        for sess, live in ((run, True), (fork, ready)):
            objects, snap = sess.objects, sess.tick.snapshot if sess.tick else None
            cells.append("…" if not live or objects is None or snap is None
                         else f(objects, snap))
        style = "bold" if cells[0] != cells[1] else ""
        mark = "▸ " if element is not None and element == selected else "  "
        table.add_row(Text(mark + name, style="reverse" if mark.strip() else "dim"),
                      *(Text(c, style=style) for c in cells))

    topo = run.topology
    assert topo is not None
    for r in topo.regions:
        n = r.name
        row(f"{n} t", lambda o, s, n=n: format_tokens(
            next(x[1] for x in o[LIVE_KEY].regions if x[0] == n)), ("region", n))
        row(f"{n} N_p/N_d", lambda o, s, n=n: f"{o['regions'][n]['n_p']}/"
                                              f"{o['regions'][n]['n_d']}")
        row(f"{n} routing", lambda o, s, n=n: str(o[POLICIES_KEY][n]))
    for site in topo.sites:
        row(f"{site.name} instances", lambda o, s, n=site.name: str(o["sites"][n]["instances"]),
            ("site", site.name))
    for k in topo.links:
        name = f"{k.site}->{k.region}"
        row(f"{name} Gbps", lambda o, s, n=name: f"{o['links'][n]['bandwidth_gbps']:.4g}",
            ("link", name))
    row("served req/s", lambda o, s: f"{s.served_rate:.2f}")
    row("TTFT P90 s", lambda o, s: num(s.ttft_p90))
    row("queued", lambda o, s: f"{queued(s):,.0f}")
    row("lost", lambda o, s: str(s.lost))
    return table


class ForkScreen(Screen[bool]):
    """Returns True when the fork was kept (the run is now the fork), False when dropped."""

    CSS_PATH = "fork.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE, "-wide")]
    BINDINGS = [
        Binding("enter", "keep", "Keep fork", id="fork-keep",
                tooltip="Carry on with the fork: the dashboard continues from it"),
        Binding("escape", "drop", "Drop fork", id="fork-drop",
                tooltip="Drop the fork: the run goes on as it was"),
        Binding("space", "pause", "Pause", id="fork-pause",
                tooltip="Pause or resume the shared simulated clock"),
        Binding("full_stop", "step", "Step", id="fork-step",
                tooltip="Pause and advance both one step of simulated time"),
        Binding("greater_than_sign", "speed(1)", "Faster", show=False, id="fork-faster",
                tooltip="Run the shared simulated clock faster"),
        Binding("less_than_sign", "speed(-1)", "Slower", show=False, id="fork-slower",
                tooltip="Run the shared simulated clock slower"),
        Binding("t", "edit_t", "Set t", show=False, id="fork-set-t",
                tooltip="Type an exact routing threshold t for the fork"),
        Binding("o", "optimum", "Optimum", id="fork-optimum",
                tooltip="Apply the optimum t*, N_p*/N_d* of the fork's live state to the fork"),
        Binding("e", "edit_element", "Knobs", id="fork-element",
                tooltip="A topology: the selected region's, site's or link's knobs, in the "
                        "fork alone"),
        Binding("up", "select(-1)", "Prev", show=False, id="fork-prev",
                tooltip="A topology: select the previous site, region or link"),
        Binding("down", "select(1)", "Next", show=False, id="fork-next",
                tooltip="A topology: select the next site, region or link"),
    ]

    def __init__(self, run: Session, *, step_seconds: float = 1.0) -> None:
        super().__init__()
        self.run = run
        self.step_seconds = step_seconds
        self.fork = Fork(run, post_tick=lambda tick: self.post_message(TickReady(tick)),
                         post_error=lambda text, gen: self.post_message(
                             EmulatorFailed(text, gen)))
        self.leader: Tick | None = run.tick
        self.order: list[Element] = elements(run.topology) if run.topology else []
        self.selected: Element | None = self.order[0] if self.order else None
        self.kept = False
        self._unlisten: Callable[[], None] | None = None
        self._redraw: Coalesced | None = None
        self._failed: str | None = None

    @property
    def session(self) -> Session:
        return self.fork.session

    def compose(self) -> ComposeResult:
        yield Static(id="fork-title")
        with Horizontal(id="fork-body"):
            with Vertical(id="fork-side"):
                if self.run.topology is None:
                    yield ForkControls(self.session, id="fork-controls")
                yield Static(id="fork-table")
            with Vertical(id="fork-charts"):
                yield Static(id="fork-key")
                yield PairChart("served req/s (Λ)", "served req/s",
                                lambda s: s.served_rate, id="fork-served")
                yield PairChart("TTFT P90 s", "TTFT P90 s", lambda s: s.ttft_p90,
                                slo=True, id="fork-ttft")
                yield PairChart("queued requests (PrfaaS + PD-P + PD-D)", "queued",
                                queued, id="fork-queues")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._redraw = Coalesced(self.show, REDRAW_HZ, spawn=lambda coro: self.run_worker(
            coro, name="fork-throttle", group="fork-throttle"))
        for panel in self.query(ForkControls):
            panel.view = self.session.view
            panel.focus()
        if self.run.live:
            self._unlisten = self.run.listen(lambda tick: self.post_message(LeaderTick(tick)))
        try:
            self.fork.start()
        except Exception as exc:  # the emulation would not build: nothing to keep
            self._failed = f"the fork did not start: {exc}"
        self.show()

    def on_resize(self) -> None:
        self.show()  # the title's long or short form

    def on_unmount(self) -> None:
        if self._unlisten is not None:
            self._unlisten()
        if self._redraw is not None:
            self._redraw.cancel()
        if not self.kept:
            self.fork.drop()

    # -- ticks -----------------------------------------------------------------------------------
    def on_leader_tick(self, message: LeaderTick) -> None:
        self.leader = message.tick
        self.fork.follow(message.tick)
        self._later()

    def on_tick_ready(self, message: TickReady) -> None:
        first = self.session.tick is None
        if self.session.take(message.tick) and first:
            self.fork.follow(self.leader)  # the run moved on while the fork replayed
        self._later()

    def on_emulator_failed(self, message: EmulatorFailed) -> None:
        if message.generation == self.session.generation:
            self._failed = message.text
            self.show()

    def _later(self) -> None:
        if self.session.tick is None and self._failed is None:
            return  # replaying: the screen says so, and its CPU is the replay's
        if self.run.live and self._redraw is not None:
            self._redraw()
        else:
            self.show()

    def _follow(self) -> None:
        """Not live, the run's tick comes back from the call: the fork follows it now."""
        self.leader = self.run.tick
        if not self.run.live:
            self.fork.follow(self.leader)
        self.show()

    # -- drawing -----------------------------------------------------------------------------------
    def show(self) -> None:
        if self._pruning:  # being taken down: its widgets go first (see Dashboard.sync)
            return
        fork, ready = self.session, self.fork.ready and self.session.tick is not None
        self.query_one("#fork-title", Static).update(self._title(ready))
        self.query_one("#fork-key", Static).update(self._key())
        colors = (f"bold {color(self, RUN)}", f"bold {color(self, FORK)}")
        for panel in self.query(ForkControls):
            panel.view = fork.view
        table = (pair_table(self.run, fork, ready, colors, more=self.app.size.height >= 40)
                 if self.run.topology is None else
                 topology_table(self.run, fork, ready, self.selected, colors))
        self.query_one("#fork-table", Static).update(table)
        run_hist = self.leader.history if self.leader is not None else ()
        fork_hist = fork.tick.history if ready else ()
        data = Pair(run_hist, fork_hist, self.fork.origin.at,
                    self.run.settings.scenario.sim.slo_ttft)
        key = (id(run_hist[-1]) if run_hist else None, id(fork_hist[-1]) if fork_hist else None)
        for chart in self.query(PairChart):
            chart.set_data(data, key)

    def _title(self, ready: bool) -> Text:
        name = self.run.settings.scenario.name
        if self.run.drill is not None:
            name = f"drill {self.run.drill.name}"
        wide = self.app.size.width >= WIDE
        at = format_duration(self.fork.origin.at)
        out = Text(f"fork of {name} at {at}" if wide else f"fork at {at}", style="bold")
        v = self.fork.verdict
        error = f"bold {color(self, 'text-error')}"
        if self._failed:
            out.append(f" · {self._failed}", style=error)
        elif not ready:
            out.append(" · replaying the run to now…", style="dim")
        else:
            out.append(" · ")
            out.append(v.text() if wide else v.short(), style="dim" if v.ok else error)
        return out

    def _key(self) -> Text:
        out = Text()
        out.append("━━ run", style=f"bold {color(self, RUN)}")
        out.append("   ")
        out.append("━━ fork", style=f"bold {color(self, FORK)}")
        out.append("   │ fork instant", style=color(self, "accent"))
        return out

    # -- changes to the fork ---------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The pair's knob keys on a pair, the elements' on a topology."""
        if action in ("edit_element", "select"):
            return self.run.topology is not None
        if action == "edit_t":
            return self.run.topology is None
        return True

    def action_select(self, step: int) -> None:
        self.selected = step_element(self.order, self.selected, step)
        self.show()

    def action_edit_element(self) -> None:
        if self.selected is None or not self.fork.ready or self.session.driver is None:
            self.notify("the fork is still replaying the run", severity="warning")
            return
        edit_element(self, self.session, self.selected, self.show, whose="fork · ")

    def on_control_panel_changed(self, message: ControlPanel.Changed) -> None:
        self.show()

    def action_edit_t(self) -> None:
        from prfaas_tui.screens.prompt import ValuePrompt

        knob = KNOB_BY_KEY["t"]
        fork = self.session

        def validate(text: str) -> str | None:
            try:
                fork.check(**knob.parse(fork.settings, text))
            except Refused as exc:
                return str(exc)
            return None

        def done(text: str | None) -> None:
            if text is None:
                return
            try:
                fork.request(**knob.parse(fork.settings, text))
            except Refused as exc:
                self.query_one(ForkControls).reason = str(exc)
            self.show()

        self.query_one(ForkControls).select("t")
        self.app.push_screen(ValuePrompt("t = ? (the fork only)",
                                         f"{round(fork.settings.scenario.t)}", knob.hint,
                                         validate), done)

    def action_optimum(self) -> None:
        """The dashboard's `o`, on the fork: the optimum of its live state (what is alive in
        it now), as PrfaaS-PD."""
        fork = self.session
        if fork.topology is not None:
            self._topology_optimum()
            return
        targets = fork.optimum_targets() if self.fork.ready else None
        if targets is None:
            self.notify("no optimum of the fork's live state yet", severity="warning")
            return
        t, n_p, n_d = targets
        changes: dict[str, Any] = {"t": t, "n_p": n_p, "n_d": n_d}
        if fork.settings.paradigm != Paradigm.PRFAAS_PD:
            changes["paradigm"] = Paradigm.PRFAAS_PD
        try:
            fork.request(**changes)
        except Refused as exc:
            self.query_one(ForkControls).reason = str(exc)
            return
        self.show()
        self.notify(f"the fork runs the optimum of its live state: t* = "
                    f"{format_tokens(t)}, N_p/N_d = {n_p}/{n_d}")

    def _topology_optimum(self) -> None:
        """`o` on a topology's fork: the best threshold policy of the fork's live state."""
        from emulator.scenario.knobs import KnobError

        if not self.fork.ready:
            self.notify("the fork is still replaying the run", severity="warning")
            return
        try:
            got = self.session.apply_policy_optimum()
        except KnobError as exc:
            self.notify(str(exc), title="refused", severity="warning")
            return
        self.show()
        self.notify("the fork runs the best threshold policy of its live state: " + "; ".join(
            f"{r} t {format_tokens(t)} {p}/{d}" for r, (t, p, d) in got.items()))

    # -- the shared clock --------------------------------------------------------------------------
    def action_pause(self) -> None:
        self.run.pause()
        self._follow()

    def action_step(self) -> None:
        self.run.step(self.step_seconds)
        self._follow()

    def action_speed(self, d: int) -> None:
        try:
            self.run.request(speed=step_speed(self.run.settings.speed, d))
        except Refused as exc:
            self.notify(str(exc), severity="warning")
            return
        self.notify(f"the shared clock runs at {speed_text(self.run.settings.speed)}")

    # -- keep or drop ----------------------------------------------------------------------------
    def action_keep(self) -> None:
        if self._failed:
            self.notify("the fork failed: esc drops it", severity="warning")
            return
        if not (self.fork.ready and self.session.tick is not None):
            self.notify("the fork is still replaying the run", severity="warning")
            return
        self.fork.keep()
        self.kept = True
        self.dismiss(True)

    def action_drop(self) -> None:
        self.fork.drop()
        self.dismiss(False)

