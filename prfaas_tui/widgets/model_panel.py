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

from emulator.paradigm import Paradigm, Stage
from emulator.units import format_duration, format_tokens, to_gbps
from prfaas_tui.live import Tick
from prfaas_tui.modelview import ModelView
from prfaas_tui.widgets.theme import SizedStatic, color

STAGE_LABELS = {"prfaas": "PrfaaS", "pd-p": "PD-P", "pd-d": "PD-D", "link": "link"}


def num(x: float | None, fmt: str = "{:.2f}") -> str:
    """A number for display: unbounded or undefined values as a dash."""
    return "-" if x is None or not math.isfinite(x) else fmt.format(x)


class ModelPanel(Static):
    """Theta, the three ceilings (binding marked), Lambda_max, egress, Eq. 7/8 residuals, the
    predicted TTFT and SLO-bound rate (emulator/latency.py), and the two optima (Lambda_max and
    SLO) with the keys that apply them."""

    DEFAULT_CSS = "ModelPanel { height: 13; padding: 0 1; }"  # fixed: updates skip layout

    view: reactive[ModelView | None] = reactive(None, repaint=False)  # bound to the screen's

    def watch_view(self) -> None:
        if self.view is not None:
            self.update(self._render_view(self.view), layout=False)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _: self.watch_view())

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
            note = Text("◀ binds", style=hot) if binds else Text("")
            if st == "prfaas" and op.p > 0:
                note.append(f" {op.prfaas_term}" + ("" if binds else "-bound"), style=dim)
            table.add_row(Text(STAGE_LABELS[st], style="bold" if binds else ""), num(theta[st]),
                          Text(num(op.ceilings[st]), style=hot if binds else ""), note)
        lines = [head, table]
        lam = Text.assemble(("Λmax ", "bold"), (f"{op.lambda_max:.2f}", "bold"), " req/s  ",
                            (f"offered {s.rate:.2f} ({v.load:.0%})",
                             hot if v.load > 1 else dim))
        lines.append(lam)
        if op.p > 0:
            lines.append(Text(f"p {op.p:.1%}  l_long {format_tokens(op.l_long)}"
                              f"  T {format_duration(op.t_long)}", style=dim))
            lines.append(Text(f"egress {to_gbps(op.egress()):.1f} of {to_gbps(op.knobs.bandwidth):.4g} "
                              f"Gbps ({num(op.link_utilization(), '{:.0%}')})"))
        else:
            lines.append(Text("p 0: nothing crosses the link", style=dim))
        lines.append(Text(f"Eq.7 {num(op.eq7_residual, '{:+.3f}')}   "
                          f"Eq.8 {num(op.eq8_residual, '{:+.3f}')}"))
        if not s.paradigm.threshold_routing:
            lines.append(Text("t, N_p, N_d do not apply to this paradigm", style=dim))
        lt = v.latency
        lines.append(Text.assemble(("TTFT ", "bold"), f"P50 {num(lt.p50)} · P90 {num(lt.p90)} s  ",
                                   (f"P90≤{lt.target:g}s to {lt.slo_rate:.2f}/s",
                                    hot if settings_over(s.rate, lt.slo_rate) else dim)))
        b = v.optimum.best
        opt = Text.assemble(("optimum ", "bold"),
                            f"t* {format_tokens(b.knobs.t)} · N_p*/N_d* {b.knobs.n_p}/{b.knobs.n_d}"
                            f" · Λ* {b.lambda_max:.2f}\n")
        opt.append("✓ applied" if v.at_optimum else "[o] apply it",
                   style=good if v.at_optimum else "bold")
        so = lt.slo_optimum
        opt.append(f"  SLO {format_tokens(so.t)} · {so.n_p}/{so.n_d} · {so.rate:.2f}/s ", style=dim)
        opt.append("[O]", style="bold")
        lines.append(opt)
        return Group(*lines)


def settings_over(rate: float, slo_rate: float) -> bool:
    """The offered rate is above what meets the SLO (highlighted like an overload)."""
    return rate > slo_rate


class RouterPanel(Static):
    """The emulator's router as it runs: its threshold, the share sent to PrfaaS (model and
    live) and the scheduler's last decision."""

    DEFAULT_CSS = "RouterPanel { height: 3; padding: 0 1; }"

    view: reactive[ModelView | None] = reactive(None, repaint=False)  # bound to the screen's
    tick: reactive[Tick | None] = reactive(None, repaint=False)  # bound to the screen's

    def watch_view(self) -> None:
        if self.view is not None:
            self.show(self.view, self.tick.snapshot if self.tick else None)

    def watch_tick(self) -> None:
        self.watch_view()

    def show(self, view: ModelView, snap: Any | None) -> None:
        dim = "dim"
        t = snap.knobs.t if snap is not None else view.scenario.t
        paradigm = Paradigm(snap.knobs.paradigm if snap is not None else view.settings.paradigm)
        out = Text()
        out.append("router ", style="bold")
        if paradigm.threshold_routing:
            out.append(f"L > {format_tokens(t)} → PrfaaS")
        else:
            where = "all → PrfaaS" if Stage.PRFAAS in paradigm.stages else "all local"
            out.append(f"{where} ({paradigm.label})")
        out.append(f"\nshare model {view.point.p:.0%}", style=dim)
        if snap is not None:
            pf = snap.stages["prfaas"].served_rate
            total = pf + snap.stages["pd-p"].served_rate
            if total > 0:
                out.append(f" live {pf / total:.0%}", style=dim)
            if snap.decisions:
                out.append(f"\nlast {snap.decisions[-1]}", style=dim)
        self.update(out, layout=False)


class DecisionLog(SizedStatic):
    """The recent decisions and notes of the emulation (scheduler, changes, incidents), newest
    last, one line each."""

    DEFAULT_CSS = """
    DecisionLog { height: 1fr; padding: 0 1; color: $text-muted;
                  text-wrap: nowrap; text-overflow: ellipsis; }
    """

    tick: reactive[Tick | None] = reactive(None, repaint=False)  # bound to the screen's

    def watch_tick(self) -> None:
        if self.tick is not None:
            self.show(self.tick.snapshot)

    def show(self, snap: Any | None) -> None:
        self.remember(snap)
        decisions = snap.decisions if snap is not None else ()
        rows = max(self.size.height - 1, 1)
        body = "\n".join(" ".join(d.split()) for d in decisions[-rows:]) or "no decisions yet"
        self.update(Text.assemble(("decisions\n", "bold"), body), layout=False)
