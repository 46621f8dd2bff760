"""Text panels about the model and the router: what Eqs. 1-8 say at the current knobs, and what
the emulator's router is doing with them."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from emulator.effective import EffectiveView, targets_for
from emulator.paradigm import Paradigm, Stage
from emulator.scenario.decode import CardStep
from emulator.topology.load import NO_LOCAL_PREFILL
from emulator.units import format_duration, format_tokens, to_gbps
from prfaas_tui.live import Tick
from prfaas_tui.modelview import LatencyView, ModelView, live_latency
from prfaas_tui.pictures import binding_stage
from prfaas_tui.widgets.theme import SizedStatic, color

STAGE_LABELS = {"prfaas": "PrfaaS", "pd-p": "PD-P", "pd-d": "PD-D", "link": "link"}


def _wire(sc: Any) -> str:
    """The pair's link against its lease where its TCP caps it below the line rate
    (" · goodput of 100 Gbps line, loss-capped"; "" otherwise)."""
    if sc.transport is None or sc.line_bandwidth is None:
        return ""
    g = sc.topology.links[0].goodput
    return "" if g.cap == "line" else \
        f" · goodput of {to_gbps(sc.line_bandwidth):.4g} Gbps line, {g.cap}-capped"


def num(x: float | None, fmt: str = "{:.2f}") -> str:
    """A number for display: unbounded or undefined values as a dash."""
    return "-" if x is None or not math.isfinite(x) else fmt.format(x)


class ModelPanel(Static):
    """Theta and the three ceilings at the live state (binding marked) in the driving mode,
    the other mode beside it and the nominal deployment where it differs; Lambda_max, egress,
    Eq. 7/8 residuals, the predicted TTFT and SLO-bound rate (emulator/latency.py, at the
    live state like Lambda_max), and the two optima of the live state (Lambda_max, SLO) with
    the keys that apply them. Before the first tick: the model at the settings."""

    DEFAULT_CSS = "ModelPanel { height: 14; padding: 0 1; }"  # fixed: updates skip layout

    view: reactive[ModelView | None] = reactive(None, repaint=False)  # bound to the screen's
    tick: reactive[Tick | None] = reactive(None, repaint=False)  # bound to the screen's

    def __init__(self, session: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session = session  # prfaas_tui.session.Session: its effective view and mode

    def watch_view(self) -> None:
        if self.view is None:
            return
        live = getattr(self.session, "effective", None)
        body = (self._render_live(self.view, live) if live is not None
                else self._render_view(self.view))
        self.update(body, layout=False)

    def watch_tick(self) -> None:
        self.watch_view()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _: self.watch_view())

    def _render_live(self, v: ModelView, live: EffectiveView) -> Group:
        """The effective model: what the deployment sustains now, whoever broke or set it."""
        mode = live.driving
        other = next((m for m in live.effective if m != mode), None)
        op, nom, state = live.effective[mode], live.nominal[mode], live.state
        s = v.settings
        hot, dim = f"bold {color(self, 'text-error')}", "dim"
        warn, good = color(self, "text-warning"), color(self, "text-success")
        head = Text.assemble((s.paradigm.label, "bold"), (" · live · ", dim), (mode, "bold"),
                             (f" drives ([M] {other})" if other else " drives", dim))
        table = Table(box=None, padding=(0, 1), pad_edge=False, expand=False, show_edge=False)
        cols = [("stage", "left"), ("Θ", "right"), (mode, "right")]
        if other:
            cols.append((other, "right"))
        if live.degraded:
            cols.append(("nominal", "right"))
        cols.append(("", "left"))
        for col, j in cols:
            table.add_column(col, justify=j, header_style=dim)  # type: ignore[arg-type]
        theta = {"prfaas": op.theta_prfaas, "pd-p": op.theta_pdp, "pd-d": op.theta_pdd}
        for st in ("prfaas", "pd-p", "pd-d"):
            binds = st == op.binding
            row: list[Any] = [Text(STAGE_LABELS[st], style="bold" if binds else ""),
                              num(theta[st]),
                              Text(num(op.ceilings[st]), style=hot if binds else "")]
            if other:
                row.append(Text(num(live.effective[other].ceilings[st]), style=dim))
            if live.degraded:
                row.append(Text(num(nom.ceilings[st]), style=dim))
            row.append(Text(_binds_note(op), style=hot) if binds else Text(""))
            table.add_row(*row)
        lines: list[Any] = [head, table]
        load = s.rate / op.lambda_max if op.lambda_max > 0 else math.inf
        # the mode beside the number; degraded, the nominal figure takes the other mode's room
        # (its ceilings are the table's column): the line must not wrap in the fixed panel
        lam = Text.assemble(("Λmax ", "bold"), (f"{op.lambda_max:.2f}", "bold"), f" {mode}")
        if other and not live.degraded:
            lam.append(f" ({other} {live.effective[other].lambda_max:.2f})", style=dim)
        if live.degraded:
            lam.append(f" of {nom.lambda_max:.2f}", style=warn)
        lam.append(f" · offered {load:.0%}", style=hot if load > 1 else dim)
        lines.append(lam)
        if (dec := decode_line(v.scenario)) is not None:
            lines.append(Text(dec, style=dim, no_wrap=True, overflow="ellipsis"))
        # the link's line first and whole: the binding ceiling moves with it, and a joined
        # line ("PD-D 4 of 4 alive (1 draining) · link 6.0 of…") cut it off at 160 columns
        found = [d for d in live.differences if d.what != "lambda"]
        diffs = [d.text for d in sorted(found, key=lambda d: d.what != "link")]
        if len(diffs) > 2:  # the panel's height is fixed: at most two lines of them
            diffs = [diffs[0], " · ".join(diffs[1:])]
        for line in diffs or ["nothing down: effective = nominal"]:
            lines.append(Text(line, style=warn if diffs else dim, no_wrap=True,
                              overflow="ellipsis"))
        if op.p > 0:
            # one line (p and l_long are PrfaaS's traffic, the term its Eq. 3 term): the
            # panel's height is fixed, and a wrap would push its last line off
            lines.append(Text(f"p {op.p:.1%} · l_long {format_tokens(op.l_long)} · "
                              f"{op.prfaas_term}-bound", style=dim, no_wrap=True,
                              overflow="ellipsis"))
            cap = state.link_capacity
            util = op.egress() / cap if cap > 0 else math.inf
            lines.append(Text(f"egress {to_gbps(op.egress()):.1f} of {to_gbps(cap):.4g} Gbps "
                              f"({num(util, '{:.0%}')})"
                              + (f" · B_out {to_gbps(state.bandwidth):.4g}"
                                 if cap != state.bandwidth else "") + _wire(v.scenario),
                              no_wrap=True, overflow="ellipsis"))
        else:
            lines.append(Text("p 0: nothing crosses the link", style=dim))
        lt = live_latency(s, live)
        lines += self._residuals_and_latency(v, op, lt, hot, dim)
        best = live.optimum.get(mode)
        if best is not None:
            t, n_p, n_d = targets_for(best, state)
            applied = (n_p, n_d) == (state.n_p, state.n_d) and abs(t - state.t) < 0.5
            idle = s.scenario.system.local_pool - n_p - n_d  # more would not raise Λ*
            opt = Text.assemble(("optimum now ", "bold"),
                                f"t* {format_tokens(t)} · N_p/N_d {n_p}/{n_d}"
                                + (f" ({idle} idle)" if idle > 0 else "")
                                + f" · Λ* {best.lambda_max:.2f}\n")
            opt.append("✓ applied" if applied else "[o] apply it",
                       style=good if applied else "bold")
            if (so := lt.slo_optimum) is not None:
                t, n_p, n_d = targets_for(so, state)
                opt.append(f"  SLO {format_tokens(t)} · {n_p}/{n_d} · {so.rate:.2f}/s ",
                           style=dim)
                opt.append("[O]", style="bold")
            lines.append(opt)
            if n_p == 0:
                lines.append(Text(f"⚠ {NO_LOCAL_PREFILL}", style=warn))
        return Group(*lines)

    @staticmethod
    def _residuals_and_latency(v: ModelView, op: Any, lt: LatencyView, hot: str,
                               dim: str) -> list[Text]:
        """Eqs. 7-8 residuals, the paradigm note and the predicted TTFT / SLO-bound rate `lt`
        (of the live state or of the settings), shared by the live and the settings view."""
        s = v.settings
        lines = [Text(f"Eq.7 {num(op.eq7_residual, '{:+.3f}')}   "
                      f"Eq.8 {num(op.eq8_residual, '{:+.3f}')}")]
        if not s.paradigm.threshold_routing:
            lines.append(Text("t, N_p, N_d do not apply to this paradigm", style=dim))
        # One line that fits the 46-column panel and never wraps mid-phrase (the panel's height
        # is fixed: a second line pushed the SLO optimum off it during an incident).
        slo = (f"SLO≤{lt.target:g}s {lt.slo_rate:.2f}/s",
               hot if settings_over(s.rate, lt.slo_rate) else dim)
        if math.isfinite(lt.p90):
            line = Text.assemble(("TTFT ", "bold"), f"P50 {num(lt.p50)} · P90 {num(lt.p90)} s · ",
                                 slo)
        else:  # never a number or a dash for a queue that grows: say so, and why
            line = Text.assemble(("TTFT ", "bold"), ("∞ unstable: ", hot),
                                 (unstable_why(lt, s.rate, op.lambda_max), hot), " · ", slo)
        line.no_wrap, line.overflow = True, "ellipsis"
        lines.append(line)
        return lines

    def _render_view(self, v: ModelView) -> Group:
        op, sc, s = v.point, v.scenario, v.settings
        hot, dim = f"bold {color(self, 'text-error')}", "dim"
        good = color(self, "text-success")
        head = Text.assemble((s.paradigm.label, "bold"), (f" · {sc.mode} mode", dim))
        table = Table(box=None, padding=(0, 1), pad_edge=False, expand=False, show_edge=False)
        for col, j in (("stage", "left"), ("Θ req/s", "right"), ("ceiling", "right"), ("", "left")):
            table.add_column(col, justify=j, header_style=dim)  # type: ignore[arg-type]
        theta = {"prfaas": op.theta_prfaas, "pd-p": op.theta_pdp, "pd-d": op.theta_pdd}
        for st in ("prfaas", "pd-p", "pd-d"):
            binds = st == op.binding
            note = Text(_binds_note(op), style=hot) if binds else Text("")
            if st == "prfaas" and op.p > 0 and not (binds and binding_stage(op) == "link"):
                note.append(f" {op.prfaas_term}" + ("" if binds else "-bound"), style=dim)
            table.add_row(Text(STAGE_LABELS[st], style="bold" if binds else ""), num(theta[st]),
                          Text(num(op.ceilings[st]), style=hot if binds else ""), note)
        lines = [head, table]
        lam = Text.assemble(("Λmax ", "bold"), (f"{op.lambda_max:.2f}", "bold"),
                            f" req/s {sc.mode}  ",
                            (f"offered {s.rate:.2f} ({v.load:.0%})",
                             hot if v.load > 1 else dim))
        lines.append(lam)
        if (dec := decode_line(sc)) is not None:
            lines.append(Text(dec, style=dim, no_wrap=True, overflow="ellipsis"))
        if op.p > 0:
            lines.append(Text(f"p {op.p:.1%} · l_long {format_tokens(op.l_long)}"
                              f" · T {format_duration(op.t_long)}", style=dim, no_wrap=True,
                              overflow="ellipsis"))
            lines.append(Text(f"egress {to_gbps(op.egress()):.1f} of {to_gbps(op.knobs.bandwidth):.4g} "
                              f"Gbps ({num(op.link_utilization(), '{:.0%}')})" + _wire(sc),
                              no_wrap=True, overflow="ellipsis"))
        else:
            lines.append(Text("p 0: nothing crosses the link", style=dim))
        lt = v.latency
        lines += self._residuals_and_latency(v, op, lt, hot, dim)
        b = v.optimum.best
        idle = sc.system.local_pool - b.knobs.n_p - b.knobs.n_d
        opt = Text.assemble(("optimum ", "bold"),
                            f"t* {format_tokens(b.knobs.t)} · N_p*/N_d* {b.knobs.n_p}/{b.knobs.n_d}"
                            + (f" ({idle} idle)" if idle > 0 else "")
                            + f" · Λ* {b.lambda_max:.2f}\n")
        opt.append("✓ applied" if v.at_optimum else "[o] apply it",
                   style=good if v.at_optimum else "bold")
        if (so := lt.slo_optimum) is not None:
            opt.append(f"  SLO {format_tokens(so.t)} · {so.n_p}/{so.n_d} · {so.rate:.2f}/s ",
                       style=dim)
            opt.append("[O]", style="bold")
        lines.append(opt)
        if b.knobs.n_p == 0:
            lines.append(Text(f"⚠ {NO_LOCAL_PREFILL}", style=f"bold {color(self, 'text-warning')}"))
        return Group(*lines)


def decode_line(sc: Any) -> str | None:
    """A decode from the cards in one line: the step at BS_max, BS_max and the limit that binds
    (None for a preset with constants)."""
    step = sc.sim.step
    if not isinstance(step, CardStep) or step.limit is None:
        return None
    lim = step.limit
    why = (f"TPOT {format_duration(step.tpot)} binds, {lim.memory_batch} fit" if lim.binds == "tpot"
           else f"memory binds at {lim.memory_batch}")
    return (f"decode T_step {lim.step.step_s * 1e3:.2f} ms at BS_max {lim.batch} ({why}; "
            f"context {format_tokens(step.context)})")


def unstable_why(lt: LatencyView, rate: float, lambda_max: float) -> str:
    """Why the predicted TTFT is unbounded, in a few words: the offered rate against Λmax,
    else the path whose queue grows."""
    if lambda_max > 0 and rate >= lambda_max:
        return f"{rate / lambda_max:.0%} Λmax"
    paths = " and ".join(STAGE_LABELS.get(p, p) for p in lt.unstable) or "a"
    return f"{paths} queue grows"


def _binds_note(op: Any) -> str:
    """The binding row's mark, in the strip's words ("link binds"): the PrfaaS row binds
    through the link when its bandwidth term is the smaller (`binding_stage`). As short as
    "◀ binds": the panel's table must not wrap."""
    return "◀ link" if binding_stage(op) == "link" else "◀ binds"


def settings_over(rate: float, slo_rate: float) -> bool:
    """The offered rate is above what meets the SLO (highlighted like an overload)."""
    return rate > slo_rate


class RouterPanel(Static):
    """The emulator's router as it runs: its threshold, the share sent to PrfaaS (model, and
    routed: entering rates from the stability report, not served ones, which lag while a
    queue grows), the scheduler's badge and its last decision."""

    DEFAULT_CSS = """
    RouterPanel { height: 4; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    view: reactive[ModelView | None] = reactive(None, repaint=False)  # bound to the screen's
    tick: reactive[Tick | None] = reactive(None, repaint=False)  # bound to the screen's

    def __init__(self, session: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session = session  # prfaas_tui.session.Session: its stability report

    def watch_view(self) -> None:
        if self.view is not None:
            self.show(self.view, self.tick.snapshot if self.tick else None)

    def watch_tick(self) -> None:
        self.watch_view()

    def on_resize(self) -> None:
        self.watch_view()  # the router line's wording depends on the room

    def show(self, view: ModelView, snap: Any | None) -> None:
        dim = "dim"
        t = snap.knobs.t if snap is not None else view.scenario.t
        paradigm = Paradigm(snap.knobs.paradigm if snap is not None else view.settings.paradigm)
        out = Text(no_wrap=True, overflow="ellipsis")
        rule = f"L > {format_tokens(t)} → PrfaaS"
        room = self.content_size.width
        if not paradigm.threshold_routing or not room or room >= len("router " + rule):
            out.append("router ", style="bold")  # at 80 columns the rule alone, never cut
        if paradigm.threshold_routing:
            out.append(rule)
        else:
            where = "all → PrfaaS" if Stage.PRFAAS in paradigm.stages else "all local"
            out.append(f"{where} ({paradigm.label})")
        out.append(f"\nshare model {view.point.p:.0%}", style=dim)
        if snap is not None:
            report = getattr(self.session, "report", None)
            routed = report.routed_share if report is not None else None
            if routed is not None:  # what the router sent (served lags it when a queue grows)
                out.append(f" sent {routed:.0%}", style=dim)
            on = snap.scheduler_enabled
            if on is None:
                out.append("\nno scheduler", style=dim)
            else:
                out.append("\nscheduler ", style="bold")
                out.append("on" if on else "off", style=color(self, "text-success" if on
                                                             else "text-warning"))
                if snap.pinned:  # in place of the key hint: a 30-column left column cut it
                    out.append(f" · pin {'+'.join(snap.pinned)}",
                               style=color(self, "text-warning"))
                else:
                    out.append(" [S]", style=dim)
            last = snap.scheduler_last or (snap.decisions[-1] if snap.decisions else None)
            if last:
                out.append(f"\nlast {' '.join(last.split())}", style=dim)
        self.update(out, layout=False)


class DecisionLog(SizedStatic):
    """The recent decisions and notes of the emulation (scheduler, changes, incidents), newest
    last, each whole: wrapped to the column, as many of the newest as fit (one line each
    would leave a 30-column left column only "690.0s scheduler (short): …")."""

    DEFAULT_CSS = """
    DecisionLog { height: 1fr; padding: 0 1; color: $text-muted; }
    """

    tick: reactive[Tick | None] = reactive(None, repaint=False)  # bound to the screen's

    def watch_tick(self) -> None:
        if self.tick is not None:
            self.show(self.tick.snapshot)

    def show(self, snap: Any | None) -> None:
        self.remember(snap)
        decisions = snap.decisions if snap is not None else ()
        rows = max(self.size.height - 1, 1)
        width = max(self.size.width - 2, 8)  # less the padding
        shown: list[str] = []
        for d in reversed(decisions[-rows:]):  # the newest first, while they fit
            line = " ".join(d.split())
            rows -= len(Text(line).wrap(self.app.console, width))
            if rows < 0 and shown:
                break
            shown.append(line)
        body = "\n".join(reversed(shown)) or "no decisions yet"
        self.update(Text.assemble(("decisions\n", "bold"), body), layout=False)
