"""The plan screen's cost/goodput picture: every finished candidate, the planner's Pareto front
(`emulator.planner.sweep.pareto`: none cheaper with more goodput) joined as a line, and the
candidate under the table's cursor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from emulator.planner.sweep import pareto
from prfaas_tui.widgets.plots import Chart


@dataclass(frozen=True)
class ParetoData:
    priced: tuple[dict, ...]  # candidates with a cost per hour
    front: tuple[dict, ...]  # the planner's front, cheapest first
    selected: dict | None  # the table's cursor row

    @classmethod
    def of(cls, records: list[dict], selected: dict | None = None) -> ParetoData:
        return cls(tuple(r for r in records if r.get("cost_per_hour") is not None),
                   tuple(pareto(records)), selected)


class ParetoChart(Chart):
    def draw(self, plt: Any, d: ParetoData) -> None:
        if not d.priced:
            self.title(plt, "cost / goodput: this plan's presets have no prices (no cost axis)",
                       "no prices: no cost axis")
            return
        n = len(d.front)
        self.title(plt, f"cost / SLO goodput · Pareto front: {n} of {len(d.priced)} candidates",
                   f"Pareto front {n}/{len(d.priced)}")
        big = self.roomy
        plt.scatter([r["cost_per_hour"] for r in d.priced], [r["goodput"] for r in d.priced],
                    color=self.c("foreground"), marker="•", label="candidates" if big else None)
        xs, ys = [r["cost_per_hour"] for r in d.front], [r["goodput"] for r in d.front]
        plt.plot(xs, ys, color=self.c("success"), marker="braille")
        plt.scatter(xs, ys, color=self.c("success"), marker="●",
                    label="Pareto front" if big else None)
        sel = d.selected
        if sel is not None and sel.get("cost_per_hour") is not None:
            plt.scatter([sel["cost_per_hour"]], [sel["goodput"]], color=self.c("error"),
                        marker="◆", label="selected" if big else None)
        top = max(r["goodput"] for r in d.priced)
        plt.xlabel("cost per hour")  # before the y axis: it takes a row
        self.y_axis(plt, max(top, 1e-3) * 1.15)
