"""Compare: the same seeded workload through two or three deployments, side by side.

PrfaaS-PD against homogeneous and naive on the same hardware; on a topology, its routing
policies (threshold, lp, best-bandwidth, and best-cache where the preset runs caches); during a
drill, the drill with its scheduler against the static baseline, each with its scorecard. Each variant gets its own
synchronous `Driver` (same seed, same offered rate), advanced in chunks to a fixed simulated
horizon: in a worker thread when live, before the first render when not (deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from emulator.paradigm import Paradigm
from emulator.units import format_duration
from prfaas_tui.live import HISTORY, Driver, Tick, attach_recorder
from prfaas_tui.messages import CompareProgress
from prfaas_tui.modelview import ModelView, Refused, Settings
from prfaas_tui.pictures import binding_stage
from prfaas_tui.timeaxis import DEFAULT_SPAN, TimeWindow, clip, covering_window, frame
from prfaas_tui.widgets.model_panel import STAGE_LABELS, num
from prfaas_tui.widgets.plots import Chart

if TYPE_CHECKING:
    from emulator.scenario.drills import Drill

HORIZON_S = 300.0
CHUNK_S = 20.0
SAMPLES = 20  # snapshots per chunk, fewer on a long horizon: the whole run fits the history


@dataclass(frozen=True)
class Variant:
    label: str
    settings: Settings
    view: ModelView | None = None  # the pair's model (None on a topology: no pair model)
    tick: Tick | None = None
    card: dict | None = None  # the drill's scorecard at the end of the horizon


def variant(label: str, settings: Settings) -> Variant:
    """A variant at these settings, with the pair's model where it is a single pair."""
    pair = settings.scenario.declared_topology is None
    return Variant(label, settings, ModelView.of(settings) if pair else None)


def paradigm_variants(settings: Settings) -> list[Variant]:
    """PrfaaS-PD at the current knobs against homogeneous and naive on the same hardware."""
    out = []
    for p in Paradigm:
        try:
            s = settings.apply(paradigm=p)
        except Refused:
            continue  # e.g. no homogeneous pool in this preset
        out.append(variant(p.label, s))
    return out


def routing_variants(settings: Settings) -> list[Variant]:
    """A topology under each routing policy it can run, every region alike."""
    from emulator.scenario.knobs import best_cache_problem
    from emulator.topology.spec import ROUTINGS

    sc = settings.scenario
    topo = sc.declared_topology
    assert topo is not None
    return [variant(r, replace(settings, scenario=replace(
                sc, declared_topology=replace(topo, routing=r))))
            for r in ROUTINGS if r != "best-cache" or best_cache_problem(sc.sim) is None]


def scheduler_variants(settings: Settings, drill: Drill) -> list[Variant]:
    """The drill as the operator runs it, with its scheduler on and off (static)."""
    return [variant(label, replace(settings, scenario=drill.with_scheduler(on)))
            for label, on in (("scheduler", True), ("static", False))]


class ServedChart(Chart):
    """Served throughput of every variant over simulated time, on a window that holds every
    incident so far (`timeaxis.covering_window`), shaded, with the changes of the first
    variant (the scheduler's, in a drill) marked."""

    COLORS = ("primary", "warning", "success")

    def draw(self, plt: Any, variants: tuple[Variant, ...]) -> None:
        self.title(plt, "served req/s, same seeded workload", "served req/s")
        ran = [v for v in variants if v.tick is not None]
        if not ran:
            return
        snap = ran[0].tick.snapshot
        window = covering_window(snap.incident_windows, snap.sim_time,
                                 min_span=min(DEFAULT_SPAN, snap.sim_time))
        window = TimeWindow(max(window.lo, ran[0].tick.history[0].sim_time), window.hi)
        top = 1e-3
        for v in ran:
            h = v.tick.history
            top = max(top, max((s.served_rate for s in h), default=0),
                      v.view.point.lambda_max if v.view is not None else 0.0)
        top *= 1.15
        self.time_axis(plt, frame(window, snap.incident_windows, snap.decisions), top)
        for v, col in zip(variants, self.COLORS, strict=False):
            if v.tick is None:
                continue
            h = v.tick.history
            x, y = clip(window, [s.sim_time for s in h], [s.served_rate for s in h])
            self.line(plt, x, y, col, v.label)


def compare_table(variants: tuple[Variant, ...]) -> Table:
    table = Table(box=None, padding=(0, 2, 0, 0), header_style="bold")
    table.add_column("")
    for v in variants:
        table.add_column(v.label, justify="right")

    def row(name: str, f) -> None:
        table.add_row(Text(name, style="dim"), *[f(v) for v in variants])

    def snap(f):
        return lambda v: "…" if v.tick is None else f(v.tick.snapshot)

    def knobs(v: Variant) -> str:
        assert v.view is not None
        k = v.view.point.knobs
        return f"{k.n_prfaas}/{k.n_p}/{k.n_d}"

    if all(v.view is not None for v in variants):
        row("N_prfaas / N_p / N_d", knobs)
        # in the preset's mode, as the model panel and `solve` show it by default
        mode = variants[0].settings.scenario.mode if variants else "exact"
        row(f"model Λmax req/s ({mode})", lambda v: f"{v.view.point.lambda_max:.2f}")
        row("model binds", lambda v: STAGE_LABELS[binding_stage(v.view.point)])
        row("offered req/s", lambda v: f"{v.settings.rate:.2f}")
    else:  # a topology (the columns are its routing policies): its regions' preset rates
        row("offered req/s", snap(lambda s: f"{s.offered_rate:.2f}"))
    row("simulated", snap(lambda s: format_duration(s.sim_time)))
    row("served req/s", snap(lambda s: f"{s.served_rate:.2f}"))
    row("completed", snap(lambda s: f"{s.completed:,}"))
    row("in flight", snap(lambda s: f"{s.in_flight:,}"))
    row("TTFT p50 / p90 s", snap(lambda s: f"{num(s.ttft_p50)} / {num(s.ttft_p90)}"))
    row("link utilization", snap(lambda s: f"{s.link.utilization:.0%}"))
    row("busiest (measured)",
        snap(lambda s: STAGE_LABELS.get(s.bottleneck, "-") if s.bottleneck else "-"))
    row("SLO attainment, last window", snap(lambda s: num(s.slo_attainment, "{:.0%}")))
    row("lost", snap(lambda s: str(s.lost)))
    if any(v.card for v in variants):
        from prfaas_tui.screens.drills import scorecard_rows

        cards = [{r[0]: r for r in scorecard_rows(v.card)} if v.card else {} for v in variants]
        for label in next(c for c in cards if c):
            def cell(c: dict, label: str = label) -> Text:
                if label not in c:
                    return Text("…")
                _, value, _, passed = c[label]
                return Text(value + ("" if passed is None else " ✓" if passed else " ✗"))
            table.add_row(Text(label, style="dim"), *[cell(c) for c in cards])
        table.add_row(Text("drill passed", style="dim"),
                      *["…" if not v.card else "yes" if v.card.get("passed") else "no"
                        for v in variants])
    return table


class CompareScreen(Screen):
    CSS_PATH = "compare.tcss"
    BINDINGS = [
        Binding("escape,c", "app.pop_screen", "Back", id="compare-back"),
        Binding("r", "rerun", "Run again", id="compare-rerun"),
    ]

    def __init__(self, settings: Settings, *, live: bool = True, seed: int | None = None,
                 drill: Drill | None = None, horizon: float | None = None) -> None:
        super().__init__()
        self.settings, self.live, self.seed, self.drill = settings, live, seed, drill
        self.horizon = horizon or (drill.duration if drill else HORIZON_S)
        self.topology = settings.scenario.declared_topology is not None
        self.variants = tuple(scheduler_variants(settings, drill) if drill
                              else routing_variants(settings) if self.topology
                              else paradigm_variants(settings))

    def compose(self) -> ComposeResult:
        with Vertical():
            what = f"drill {self.drill.name}" if self.drill else self.settings.scenario.name
            offered = ("the preset's rates offered to each" if self.topology
                       else f"{self.settings.rate:.2f} req/s offered to each")
            yield Static(f"compare · {what} · seed "
                         f"{self.seed if self.seed is not None else self.settings.scenario.sim.seed}"
                         f" · {offered} · {format_duration(self.horizon)} simulated", id="title")
            yield Static(compare_table(self.variants), id="table")
            yield ServedChart(id="served")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.action_rerun()

    def action_rerun(self) -> None:
        self.variants = tuple(Variant(v.label, v.settings, v.view) for v in self.variants)
        if self.live:
            self._run_threaded()
        else:
            self.show(self._run(lambda res, done: None))

    def _run(self, report, cancelled=lambda: False) -> tuple[Variant, ...]:
        """Advance every variant chunk by chunk; `report(results, done)` after each chunk."""
        attach = attach_recorder if self.drill else None
        drivers = [Driver(v.settings, live=False, seed=self.seed, attach=attach,
                          on_tick=lambda t: None, on_error=lambda text, fatal: None)
                   for v in self.variants]
        results = list(self.variants)
        samples = max(1, min(SAMPLES, int(HISTORY * CHUNK_S / self.horizon)))
        try:
            for d in drivers:
                d.start()
            t = 0.0
            while t < self.horizon and not cancelled():
                t = min(self.horizon, t + CHUNK_S)
                for i, d in enumerate(drivers):
                    results[i] = replace(results[i], tick=d.run_to(t, samples=samples))
                if t >= self.horizon and self.drill is not None:
                    results = [replace(v, card=d.scorecard(self.drill))
                               for v, d in zip(results, drivers, strict=True)]
                report(tuple(results), t >= self.horizon)
        finally:
            for d in drivers:
                d.stop()
        return tuple(results)

    @work(thread=True, exclusive=True, group="compare")
    def _run_threaded(self) -> None:
        worker = get_current_worker()
        self._run(lambda res, done: self.post_message(CompareProgress(res, done)),
                  lambda: worker.is_cancelled)

    def on_compare_progress(self, message: CompareProgress) -> None:
        self.show(message.results)

    def show(self, variants: tuple[Variant, ...]) -> None:
        self.variants = variants
        self.query_one("#table", Static).update(compare_table(variants))
        self.query_one(ServedChart).set_data(variants)
