"""The topology view's widgets: the map (boxes and lines, or the matrix on a narrow terminal)
and the detail panel of the selected element (its figures, the model at the live state, the
shadow prices). Both draw from one `Figures` (prfaas_tui.topology_text)."""

from __future__ import annotations

import math

import numpy as np
from rich.text import Text

from emulator.topology.live import element_of
from emulator.topology.load import OVERLOADED, state
from emulator.units import format_tokens
from prfaas_tui.chart_controls import ChartControls
from prfaas_tui.topology_text import (
    MAP_MIN_WIDTH,
    Element,
    Figures,
    draw_map,
    draw_matrix,
    gbps,
    pct,
    price,
    rate,
    secs,
)
from prfaas_tui.widgets.plots import Chart
from prfaas_tui.widgets.theme import SizedStatic, color


class TopologyMap(SizedStatic):
    DEFAULT_CSS = "TopologyMap { height: auto; padding: 0 1; }"
    rows = 1  # lines of the last drawing
    def show(self, fig: Figures | None, selected: Element | None) -> None:
        self.remember(fig, selected)
        if fig is None:
            self.update("topology: waiting for the emulator…", layout=False)
            return
        width = max(self.size.width - 2, 40)
        bind = color(self, "text-error")
        draw = draw_map if width >= MAP_MIN_WIDTH else draw_matrix
        text = draw(fig, width, selected, bind)
        self.rows = text.plain.count("\n") + 1
        self.update(text)


def model_line(fig: Figures) -> str:
    """Λ of the running policy and of the routing bound at the live state, and what binds."""
    m = fig.model
    if m is None:
        return "model: waiting for the first tick"
    gap = (m.bound_lambda - m.policy_lambda) / m.bound_lambda if m.bound_lambda > 0 else 0.0
    line = (f"Λ running policy {rate(m.policy_lambda)} · bound {rate(m.bound_lambda)} · its gap "
            f"{pct(gap)} · binds {', '.join(m.policy_binding) or 'nothing'}")
    over = [r.name for r in fig.topo.regions if fig.region_state(r.name)[1] is not None]
    offered = sum(fig.region(r.name)["target_rate"] for r in fig.topo.regions)
    if over or state(offered, m.policy_lambda) is not None:  # first: the line may be cut
        return f"{OVERLOADED}" + (f" in {', '.join(over)}" if over else "") + " · " + line
    return line


def detail_lines(fig: Figures, el: Element, routing_now: str | None = None) -> list[str]:
    """The selected element's figures and prices, in words."""
    kind, name = el
    if kind == "link":
        k, spec = fig.link(name), fig.topo.link(*name.split("->", 1))
        return [f"link {name}",
                f"capacity now {gbps(k['capacity_gbps'])} (bandwidth knob "
                f"{gbps(k['bandwidth_gbps'])}) · carrying {gbps(k['gbps'])} · "
                f"utilization {pct(k['utilization'])}",
                f"queue {k['flows']} flows · saturated {pct(k['saturated_fraction'])} of the "
                f"window · RTT {secs(spec.rtt if spec else k['rtt'])}",
                f"+1 Gbps here: {price(fig.price(f'link:{name}'))} req/s of Λ (the bound)"
                + _gain(fig, "Gbps"),
                _binds(fig, name)]
    if kind == "site":
        s = fig.site(name)
        return [f"site {name}",
                f"{s['instances']} instances taking work, {s['failed']} down · utilization "
                f"{pct(s['utilization'])} · busy {s['busy']} · queue {s['queue']}",
                f"served {rate(s['served_rate'])} · egress {gbps(s['egress_gbps'])} of "
                f"{gbps(s['egress_capacity_gbps'])} ({pct(s['egress_utilization'])})",
                f"+1 instance here: {price(fig.price(f'site:{name}'))} req/s"
                + _gain(fig, "instance")
                + (f" · +1 Gbps egress: {price(fig.price(f'egress:{name}'))}"
                   if f"egress:{name}" in (fig.model.prices if fig.model else {}) else ""),
                _binds(fig, name)]
    r = fig.region(name)
    lam_p, lam_b = fig.region_lambda(name)
    t = r["ttft"]
    spec_t = next((x[1] for x in (fig.objects.get("live_state").regions
                                  if fig.objects.get("live_state") else ()) if x[0] == name),
                  fig.topo.region(name).threshold)
    return [f"region {name} · routing {fig.policy(name)} · t {format_tokens(spec_t)} · "
            f"N_p/N_d {r['n_p']}/{r['n_d']}",
            f"offered {rate(r['offered_rate'])} · served {rate(r['served_rate'])} · queue "
            f"{r['queue']} · in flight {r['in_flight']} · rejected {r['rejected']}",
            f"TTFT P50 {secs(t['p50'])} · P90 {secs(t['p90'])} (measured, the window)",
            f"Λ here: policy {rate(lam_p)} · bound {rate(lam_b)} (its share of the total)",
            _region_state(fig, name),
            f"+1 instance here: {price(fig.price(f'pool:{name}'))} req/s (PD-P "
            f"{price(fig.price(f'pd-p:{name}'))}, PD-D {price(fig.price(f'pd-d:{name}'))})"
            + _gain(fig, "decode instance"),
            "binds here: " + (", ".join(fig.region_binds(name)) or "nothing")]


def _region_state(fig: Figures, name: str) -> str:
    """Offered against what the region's own rows carry, with the state named."""
    own, st = fig.region_state(name)
    offered = fig.region(name)["target_rate"]
    return (f"offered {rate(offered)} against its own Λ {rate(own)} (its PD-P, PD-D and links): "
            + (st or "served"))


def _gain(fig: Figures, unit: str) -> str:
    """The bound re-solved with the knob raised by a step: where the price stops holding."""
    if fig.gain is None:
        return ""
    step, gain = fig.gain
    plural = "s" if step != 1 and unit != "Gbps" else ""
    return f" · re-solved, +{step:g} {unit}{plural}: {price(gain)} req/s"


def _binds(fig: Figures, name: str) -> str:
    m = fig.model
    if m is None:
        return ""
    rows = [r for r in m.policy_binding if element_of(r) == name]
    bound = [r for r in m.bound_binding if element_of(r) == name]
    if rows:
        return f"binds the running policy ({', '.join(rows)})"
    if bound:
        return f"binds the routing bound ({', '.join(bound)}), not the running policy"
    return "does not bind"


class TopologyDetail(SizedStatic):
    DEFAULT_CSS = "TopologyDetail { height: auto; padding: 0 1; border-top: hkey $panel-lighten-2; }"

    def show(self, fig: Figures | None, selected: Element | None) -> None:
        self.remember(fig, selected)
        if fig is None or selected is None:
            self.update("")
            return
        out = Text(no_wrap=False)
        out.append(model_line(fig) + "\n", style="bold")
        lines = detail_lines(fig, selected)
        out.append(lines[0] + "\n", style="bold underline")
        out.append("\n".join(x for x in lines[1:] if x))
        self.update(out)


# the selected element's history: (series name, key path into its object, scale, unit)
SERIES = {
    "link": (("carried", ("gbps",), 1.0, "Gbps"), ("capacity now", ("capacity_gbps",), 1.0,
                                                    "Gbps")),
    "site": (("utilization", ("utilization",), 100.0, "%"), ("egress", ("egress_utilization",),
                                                            100.0, "%")),
    "region": (("TTFT P90", ("ttft", "p90"), 1.0, "s"), ("TTFT P50", ("ttft", "p50"), 1.0, "s")),
    # a region's throughput against its own Λ, as the pair's throughput chart: the model's
    # figure is not in the snapshot (no path), the dashboard fills it per live state
    "throughput": (("offered", ("offered_rate",), 1.0, "req/s"),
                   ("served", ("served_rate",), 1.0, "req/s"), ("own Λ", None, 1.0, "req/s")),
}
GROUP = {"link": "links", "site": "sites", "region": "regions", "throughput": "regions"}
COLORS = {"throughput": ("foreground", "primary", "error")}  # the pair's throughput chart's


def selection_series(history: tuple, el: Element) -> tuple[list[float], dict[str, list[float]]]:
    """Seconds before now and each series of the selected element over the tick's history."""
    kind, name = el
    if not history:
        return [], {}
    now = history[-1].sim_time
    xs, out = [], {label: [] for label, *_ in SERIES[kind]}
    for snap in history:
        obj = (snap.topology or {}).get(GROUP[kind], {}).get(name)
        if obj is None:
            continue
        xs.append(snap.sim_time - now)
        for label, path, scale, _ in SERIES[kind]:
            v: object = obj if path is not None else None
            for k in path or ():
                v = v.get(k) if isinstance(v, dict) else None
            out[label].append(float(v) * scale if isinstance(v, int | float) else math.nan)
    return xs, out


class SelectionChart(Chart):
    """The selected element over the recent history: a link's carried Gbps and capacity now, a
    site's utilization and egress use, a region's TTFT P90 and P50 (the window's, per sample);
    as "throughput" a region's offered and served rates against its own Λ.
    The dashboard's chart controls apply (`controls`: window, series 1-2, auto / log)."""

    DEFAULT_CSS = "SelectionChart { height: 1fr; min-height: 6; }"
    MIN_ROWS = 6  # below this there is no chart (the map and the detail come first)

    controls = ChartControls()

    def control(self, controls: ChartControls) -> None:
        self.controls = controls
        self._version += 1  # the same data, drawn anew
        self.refresh()

    def draw(self, plt, data) -> None:
        el, xs, series = data
        kind, name = el
        units = {label: unit for label, _, _, unit in SERIES[kind]}
        c = self.controls
        names = tuple(series)
        full = f"{name}: " + " · ".join(f"{k} ({units[k]})" for k in series)
        if kind == "throughput" and xs:  # as the pair's: the latest figures in its title
            full = (f"{name} req/s · served {series['served'][-1]:.3g} of offered "
                    f"{series['offered'][-1]:.3g} · own Λ {series['own Λ'][-1]:.3g}")
        self.title(plt, full, name, (c.describe(names), c.describe(names, compact=True)),
                   changed=c != ChartControls())
        x = np.asarray(xs, dtype=float)
        keep = x >= -c.window
        if keep.sum() < 2:
            return
        shown = {k: np.asarray(v, dtype=float)[keep] for n, (k, v) in enumerate(series.items(), 1)
                 if c.shows(n)}
        vals = np.concatenate([*shown.values(), [np.nan]])
        top = float(np.nanmax(vals)) if np.isfinite(vals).any() else 0.0
        plt.xlabel("simulated seconds before now")  # before the y axis: it takes a row
        self.y_axis(plt, max(top, 1e-9) * 1.15, log=c.log, values=vals)
        for label, col in zip(series, COLORS.get(kind, ("primary", "warning")), strict=False):
            if label in shown:
                self.line(plt, x[keep], shown[label], col, label)
