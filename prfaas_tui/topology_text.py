"""The topology drawn as text: the figures each element shows and two layouts of them.

- `draw_map`: sites (left) and regions (right) as boxes; each link is a line into its
  region's box, labelled with its site, its capacity now, its utilization and its queue
  (flows in flight) — for terminals of 120 columns and more;
- `draw_matrix`: the same numbers as a sites x regions matrix (a cell is the link between
  them), with one row per region and per site below — for narrow terminals (80x24).

Both read one `Figures` (the tick's snapshot objects and the live model, nothing else), so the
two layouts, the detail panel and `snapshot --format json` print the same numbers. The element
the running policy's model says binds is drawn reversed; the selected one is marked `▸`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from emulator.topology.live import LiveModel, element_of
from emulator.topology.load import region_lambdas, state
from emulator.topology.spec import Topology

Element = tuple[str, str]  # (kind: site | region | link, name)
MAP_MIN_WIDTH = 120  # below this the matrix is drawn
SITE_W, REGION_W = 30, 42
BOX_H = 6  # rows of a box, borders included


def elements(topo: Topology) -> list[Element]:
    """The selectable elements in the order the arrow keys walk them."""
    return ([("site", s.name) for s in topo.sites] + [("region", r.name) for r in topo.regions]
            + [("link", k.name) for k in topo.links])


def step_element(order: list[Element], selected: Element | None, step: int) -> Element | None:
    """The element `step` places from `selected` in `order`, round the end (the arrow keys)."""
    if not order:
        return selected
    i = order.index(selected) if selected in order else -1
    return order[(i + step) % len(order)]


def gbps(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.0f}G" if x >= 10 else f"{x:.1f}G" if x >= 1 else f"{x * 1000:.0f}M"


def pct(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.0%}"


def secs(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x * 1000:.0f}ms" if x < 1 else f"{x:.2f}s" if x < 10 else f"{x:.1f}s"


def rate(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.3g}/s" if x < 100 else f"{x:.0f}/s"


def price(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:+.3g}"


@dataclass(frozen=True)
class Figures:
    """What the view shows of one instant: the snapshot's objects and the live model."""

    topo: Topology
    objects: dict[str, Any]  # regions, sites, links (+ policies) of the tick's snapshot
    model: LiveModel | None
    gain: tuple[float, float] | None = None  # the selected element's (step, bound's gain)

    @property
    def binding(self) -> str | None:
        return self.model.binding_element if self.model is not None else None

    def binds(self, name: str) -> bool:
        return self.binding == name

    def link(self, name: str) -> dict[str, Any]:
        return self.objects["links"][name]

    def site(self, name: str) -> dict[str, Any]:
        return self.objects["sites"][name]

    def region(self, name: str) -> dict[str, Any]:
        return self.objects["regions"][name]

    def policy(self, region: str) -> str:
        return self.objects.get("policies", {}).get(region, self.region(region).get("routing"))

    def price(self, row: str) -> float | None:
        return self.model.prices.get(row) if self.model is not None else None

    def region_lambda(self, name: str) -> tuple[float | None, float | None]:
        """The region's part of the policy's and of the bound's Lambda (its share)."""
        if self.model is None:
            return None, None
        share = self.topo.region(name).share
        return share * self.model.policy_lambda, share * self.model.bound_lambda

    def region_state(self, name: str) -> tuple[float, str | None]:
        """The region's own Λ (what its PD-P, PD-D and links carry of its traffic, at the
        running policy's live utilization) and its state at the rate it is offered (None:
        served; `emulator.topology.load`'s words)."""
        if self.model is None:
            return math.nan, None
        own = region_lambdas(self.topo, self.model.policy_lambda,
                             self.model.policy_utilization)[name]
        return own, state(self.region(name)["target_rate"], own)

    def region_binds(self, name: str) -> list[str]:
        """The policy's binding rows that concern region `name` (its own, its links, its
        sites)."""
        if self.model is None:
            return []
        mine = {name, *(k.name for k in self.topo.links_of_region(name)),
                *(k.site for k in self.topo.links_of_region(name))}
        return [r for r in self.model.policy_binding if element_of(r) in mine]

    # one line each, the words the map, the matrix and the detail panel share
    def link_line(self, name: str) -> str:
        return f"{self.link_capacity(name)} q{self.link(name)['flows']}"

    def link_capacity(self, name: str) -> str:
        """A link's capacity now and its utilization ("40G 73%"); a WAN path its TCP caps
        below the line rate also shows the line and the cap ("9.2G/40G loss 73%")."""
        k = self.link(name)
        if k.get("cap", "line") != "line":
            return (f"{gbps(k['capacity_gbps'])}/{gbps(k['line_gbps'])} {k['cap']} "
                    f"{pct(k['utilization'])}")
        return f"{gbps(k['capacity_gbps'])} {pct(k['utilization'])}"

    def site_lines(self, name: str) -> list[str]:
        s = self.site(name)
        return [f"inst {s['instances']}/{s['instances'] + s['failed']}"
                f"  util {pct(s['utilization'])}",
                f"queue {s['queue']}  egress {pct(s['egress_utilization'])}",
                f"+1 inst: {price(self.price(f'site:{name}'))}"]

    def region_lines(self, name: str) -> list[str]:
        r = self.region(name)
        t = r["ttft"]
        return [f"{rate(r['offered_rate'])} in  {rate(r['served_rate'])} out  q{r['queue']}",
                f"TTFT P50 {secs(t['p50'])}  P90 {secs(t['p90'])}",
                f"N_p/N_d {r['n_p']}/{r['n_d']}  +1 inst: {price(self.price(f'pool:{name}'))}"]


def _styles(fig: Figures, name: str, selected: str | None, bind: str) -> str:
    style = ""
    if fig.binds(name):
        style = f"bold reverse {bind}"
    if name == selected:
        style = (style + " underline").strip() or "bold underline"
    return style


def draw_map(fig: Figures, width: int, selected: Element | None, bind: str = "red") -> Text:
    """Boxes and lines (see the module docstring); `bind`: the binding element's colour."""
    topo = fig.topo
    sel = selected[1] if selected else None
    mid = max(width - SITE_W - REGION_W - 2, 24)
    rows: list[Text] = []
    site_rows: list[Text] = []
    for s in topo.sites:
        site_rows += _box(s.name, "site", fig.site_lines(s.name), SITE_W,
                          _styles(fig, s.name, sel, bind), s.name == sel)
    region_rows: list[Text] = []
    for r in topo.regions:
        box = _box(f"{r.name} · {fig.policy(r.name)}", "region", fig.region_lines(r.name),
                   REGION_W, _styles(fig, r.name, sel, bind), r.name == sel)
        links = topo.links_of_region(r.name)
        for i, row in enumerate(box):
            line = Text(no_wrap=True)
            j = i - 1
            if 0 <= j < len(links) and i < BOX_H - 1:
                k = links[j]
                label = f" {k.name} {fig.link_line(k.name)} "  # both ends: a site feeds several
                style = _styles(fig, k.name, sel, bind)
                mark = "▸" if k.name == sel else "━"
                fill = max(mid - len(label) - 3, 2)
                line.append(mark + "━" * (fill // 2), style=style or "dim")
                line.append(label, style=style)
                line.append("━" * (fill - fill // 2) + "┫", style=style or "dim")
            else:
                line.append(" " * mid)
            line.append(row)
            region_rows.append(line)
    for i in range(max(len(site_rows), len(region_rows))):
        out = Text(no_wrap=True, overflow="crop")
        out.append(site_rows[i] if i < len(site_rows) else Text(" " * SITE_W))
        out.append(" ")
        out.append(region_rows[i] if i < len(region_rows) else Text(""))
        rows.append(out)
    text = Text("\n").join(rows)
    text.no_wrap, text.overflow = True, "crop"
    return text


def _box(title: str, kind: str, lines: list[str], w: int, style: str, selected: bool
         ) -> list[Text]:
    inner = w - 2
    head = ("▸ " if selected else "") + title
    top = Text("┏" if selected else "┌", style=style or "")
    top.append(f" {head} "[:inner].ljust(inner, "━" if selected else "─"), style=style or "bold")
    top.append("┓" if selected else "┐", style=style)
    out = [top]
    v = "┃" if selected else "│"
    for i in range(BOX_H - 2):
        body = lines[i] if i < len(lines) else ""
        row = Text(v, style=style)
        row.append(f" {body}"[:inner].ljust(inner))
        row.append(v, style=style)
        out.append(row)
    bottom = Text(("┗" if selected else "└") + ("━" if selected else "─") * inner
                  + ("┛" if selected else "┘"), style=style)
    out.append(bottom)
    return out


def draw_matrix(fig: Figures, width: int, selected: Element | None, bind: str = "red") -> Text:
    """Sites x regions (cells: links), then a row per region and per site."""
    topo = fig.topo
    sel = selected[1] if selected else None
    names = [r.name for r in topo.regions]
    head_w = max(8, min(10, max((len(s.name) for s in topo.sites), default=0) + 1))
    cell = max(8, min(14, (width - head_w) // max(len(names), 1)))
    out = Text(no_wrap=True, overflow="crop")
    out.append("links".ljust(head_w), style="dim")
    for n in names:
        out.append(_cell(n, cell, _styles(fig, n, sel, bind) or "bold", n == sel))
    for s in topo.sites:
        for line in (0, 1):
            out.append("\n")
            out.append(_cell(s.name if line == 0 else "", head_w,
                             (_styles(fig, s.name, sel, bind) or "bold") if line == 0 else "",
                             s.name == sel and line == 0))
            for n in names:
                k = topo.link(s.name, n)
                if k is None:
                    out.append(("·" if line == 0 else "").center(cell), style="dim")
                else:
                    text = fig.link_capacity(k.name) if line == 0 else \
                        f"q{fig.link(k.name)['flows']}"
                    out.append(_cell(text, cell, _styles(fig, k.name, sel, bind),
                                     k.name == sel and line == 0))
    for r in topo.regions:
        out.append("\n")
        lines = fig.region_lines(r.name)
        body = f"{r.name[:head_w + 3]:<{head_w + 3}} {lines[0]}  {lines[1][5:]}"
        out.append(_cell(body, width, _styles(fig, r.name, sel, bind), r.name == sel))
    for s in topo.sites:
        out.append("\n")
        lines = fig.site_lines(s.name)
        body = f"{s.name[:head_w + 3]:<{head_w + 3}} {lines[0]}  {lines[1]}"
        out.append(_cell(body, width, _styles(fig, s.name, sel, bind), s.name == sel))
    return out


def _cell(text: str, w: int, style: str, selected: bool) -> Text:
    body = ("▸" if selected else " ") + text
    return Text(body[:w - 1].ljust(w - 1) + " ", style=style)
