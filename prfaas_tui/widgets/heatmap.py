"""The heat map of Λmax over (t, N_p) at the live state: columns are thresholds (the
optimizer's grid, binned to the width), rows the split N_p (N_d = the alive pool - N_p), each
cell coloured by the best Λmax it covers; ◆ marks where the deployment runs, ★ the optimum."""

from __future__ import annotations

import numpy as np
from rich.text import Text

from emulator.units import format_tokens, format_tokens_short
from prfaas_tui.pictures import HeatMap, heat_cells
from prfaas_tui.widgets.theme import SizedStatic

# viridis in 9 steps: ordered in lightness, readable on dark and light themes
PALETTE = ("#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962",
           "#addc30", "#fde725")
STYLES = tuple(f"bold {'#000000' if k >= 5 else '#ffffff'} on {c}" for k, c in enumerate(PALETTE))
GUTTER = 4  # the N_p labels
NOW, BEST = "◆", "★"


def shades(values: np.ndarray, top: float) -> np.ndarray:
    """The palette step of each value against the grid's maximum (0 where undefined)."""
    if not top > 0:
        return np.zeros(np.shape(values), dtype=int)
    k = np.rint(np.nan_to_num(np.asarray(values, float) / top) * (len(PALETTE) - 1))
    return np.clip(k, 0, len(PALETTE) - 1).astype(int)


class HeatMapView(SizedStatic):
    DEFAULT_CSS = "HeatMapView { height: 1fr; width: 1fr; min-height: 6; padding: 0 1; }"

    _drawn: tuple | None = None

    def show(self, hm: HeatMap | None, note: str | None = None) -> None:
        """Draw the map, or without one the `note` saying why there is none."""
        self.remember(hm, note)
        if self._drawn is not None and self._drawn[0] is hm \
                and self._drawn[1:] == (note, self.size):
            return  # the same map at the same size: nothing to redo
        self._drawn = (hm, note, self.size)
        if hm is None:
            self.update(note or "", layout=False)
            return
        width, height = max(self.size.width - 2, 20), max(self.size.height, 6)
        cols, rows = width - GUTTER, max(height - 3, 1)
        cells = heat_cells(hm, cols, rows)
        top = float(hm.grid.lambda_max.max())
        out = Text(no_wrap=True, overflow="crop")
        t_now, t_best = hm.t_at(hm.now[0]), hm.t_at(hm.best[0])
        title = (f"Λmax over (t, N_p) · {hm.mode} · {NOW} now {format_tokens(t_now)},"
                 f" N_p {hm.now[1]}: {hm.now_value:.2f} · {BEST} best {format_tokens(t_best)},"
                 f" N_p {hm.best[1]}: {hm.best_value:.2f}")
        medium = (f"{NOW} now {format_tokens(t_now)}/{hm.now[1]}: {hm.now_value:.2f} · "
                  f"{BEST} best {format_tokens(t_best)}/{hm.best[1]}: {hm.best_value:.2f}")
        short = f"Λmax {NOW}{hm.now_value:.2f} {BEST}{hm.best_value:.2f}"
        out.append(next(x for x in (title, medium, short) if len(x) <= width or x is short)[:width],
                   style="bold")
        steps = shades(cells.values, top).tolist()
        for r, n_p in enumerate(cells.n_p_cells):
            first = r == 0 or cells.n_p_cells[r - 1] != n_p
            out.append("\n")
            out.append(f"{n_p.start:>3} " if first and len(n_p) == 1 else
                       f"{n_p.start:>3}+" if first else " " * GUTTER, style="dim")
            run, style = "", ""  # cells of one colour appended together (a row has few runs)
            for c, k in enumerate(steps[r]):
                mark = BEST if (r, c) == cells.best else NOW if (r, c) == cells.now else " "
                cell = STYLES[k]
                if cell != style and run:
                    out.append(run, style=style)
                    run = ""
                run, style = run + mark, cell
            out.append(run, style=style)
        out.append("\n" + " " * GUTTER + self._axis(hm, cells.t_cells, cols), style="dim")
        head = "N_p ↑ t → · Λmax 0 " if cols >= 40 else "Λ 0 "
        out.append("\n" + " " * GUTTER + head, style="dim")
        for p in PALETTE[:max(cols - len(head) - 6, 0)]:
            out.append(" ", style=f"on {p}")
        out.append(f" {top:.2f}" + (" req/s" if cols >= 44 else ""), style="dim")
        self.update(out, layout=False)

    @staticmethod
    def _axis(hm: HeatMap, t_cells: list[range], cols: int) -> str:
        """Threshold labels under the columns (as many as fit, 8 columns apart at least)."""
        line = [" "] * cols
        used = -1
        for c in range(0, len(t_cells), max(8, len(t_cells) // 6)):
            label = "|" + format_tokens_short(hm.t_at(t_cells[c].start))
            if c > used and c + len(label) <= cols:
                line[c:c + len(label)] = label
                used = c + len(label)
        return "".join(line)
