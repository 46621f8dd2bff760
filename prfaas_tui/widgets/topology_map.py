"""The topology view's widgets: the map (boxes and lines, or the matrix on a narrow terminal)
and the detail panel of the selected element (its figures, the model at the live state, the
shadow prices). Both draw from one `Figures` (prfaas_tui.topology_text)."""

from __future__ import annotations

from rich.text import Text

from emulator.topology.live import element_of
from emulator.units import format_tokens
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
from prfaas_tui.widgets.theme import SizedStatic, color


class TopologyMap(SizedStatic):
    DEFAULT_CSS = "TopologyMap { height: auto; padding: 0 1; }"

    def show(self, fig: Figures | None, selected: Element | None) -> None:
        self.remember(fig, selected)
        if fig is None:
            self.update("topology: waiting for the emulator…", layout=False)
            return
        width = max(self.size.width - 2, 40)
        bind = color(self, "text-error")
        draw = draw_map if width >= MAP_MIN_WIDTH else draw_matrix
        self.update(draw(fig, width, selected, bind))


def model_line(fig: Figures) -> str:
    """Λ of the running policy and of the routing bound at the live state, and what binds."""
    m = fig.model
    if m is None:
        return "model: waiting for the first tick"
    gap = (m.bound_lambda - m.policy_lambda) / m.bound_lambda if m.bound_lambda > 0 else 0.0
    return (f"Λ policy {rate(m.policy_lambda)} · bound {rate(m.bound_lambda)} · gap {pct(gap)}"
            f" · binds {', '.join(m.policy_binding) or 'nothing'}")


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
            f"+1 instance here: {price(fig.price(f'pool:{name}'))} req/s (PD-P "
            f"{price(fig.price(f'pd-p:{name}'))}, PD-D {price(fig.price(f'pd-d:{name}'))})"
            + _gain(fig, "decode instance"),
            "binds here: " + (", ".join(fig.region_binds(name)) or "nothing")]


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
