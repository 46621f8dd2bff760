"""The status line and the key footer.

The status line: what is wrong (incidents, instances down, the instability banner, the stage
the emulator measured busiest), the simulated clock, pace, request accounting and the scheduler's last word. On a
narrow terminal the least important parts drop out first, so what is wrong, the clock and the
accounting (lost must read 0) always stay on screen.

The footer (`KeyFooter`): Textual's, fitted to the width. Below 130 columns it keeps the keys
that fit on one line, with `v` (the model view, which shares the middle with the charts there),
and drops the command-palette key (help lists it), so nothing is cut mid-word. The pair's
knob keys (`t`, `p`, `c`, `v`) leave the footer of a topology's map for `enter` (the selected
element's knobs), which the pair's footer leaves out (its knob panel takes `enter`); every key
still works on both (help lists them).
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from prfaas_tui.live import Tick
from prfaas_tui.widgets.controls import speed_text
from prfaas_tui.widgets.model_panel import STAGE_LABELS
from prfaas_tui.widgets.theme import SizedStatic, color


def clock(seconds: float) -> str:
    """Simulated time as H:MM:SS.s (simulated, never wall time)."""
    m, s = divmod(max(seconds, 0.0), 60)
    h, m = divmod(int(m), 60)
    return f"{h}:{m:02d}:{s:04.1f}"


def busiest_text(stage: str) -> str:
    """The emulator's measured bottleneck (`emulator.sim.books.metrics.bottleneck`: the stage that
    worked hardest over the last window) in words that keep it apart from the model's "binds"
    (the stage whose ceiling is Λmax at the live state): the two differ while queues drain or
    refill, and one word for both read as a contradiction during a drill."""
    return f"busiest {STAGE_LABELS.get(stage, stage)} (measured)"


def instances_down(snap) -> list[str]:
    """"2 of 4 PrfaaS alive" for each stage with instances down (the knob does not move)."""
    k = snap.knobs
    knob = {"prfaas": k.n_prfaas, "pd-p": k.n_p, "pd-d": k.n_d}
    return [f"{knob[name] - st.failed} of {knob[name]} {STAGE_LABELS[name]} alive"
            for name, st in snap.stages.items() if st.failed and name in knob]


class StatusLine(SizedStatic):
    DEFAULT_CSS = "StatusLine { height: 1; padding: 0 1; background: $panel; }"

    def show(self, tick: Tick | None, note: str = "", banner: str | None = None,
             slo: float | None = None) -> None:
        """`banner`: the stability report's ("unstable: PrfaaS backlog +0.09 req/s"), kept on
        screen at any width: a growing queue is what the operator must see first. `slo`: the
        P90 TTFT target; while the measured P90 (recent window) is above it, the line says so
        ("⚠ P90 13.3s > SLO 10s")."""
        self.remember(tick, note, banner, slo)
        if tick is None:
            self.update(Text(note or "starting the emulator…"), layout=False)
            return
        s = tick.snapshot
        bad, ok = color(self, "text-error"), color(self, "text-success")
        pace = speed_text(tick.speed) + (f" (rtf {tick.rtf:.3g})" if tick.rtf is not None else "")
        # (priority: lower stays longer, text, style), in display order: what is wrong first
        # (incidents, instances down, the instability banner, the busiest stage), so a narrow
        # terminal keeps them and drops the accounting details
        parts: list[tuple[int, str, str]] = []
        if s.incidents:
            parts.append((0, f"⚠ {', '.join(s.incidents)}", bad))
        for text in instances_down(s):
            parts.append((1, text, bad))
        if banner:
            parts.append((0, f"⚠ {banner}", f"bold {bad}"))
        if note:
            parts.append((0, note, bad))
        p90 = s.ttft_p90
        if slo is not None and p90 is not None and math.isfinite(p90) and p90 > slo:
            parts.append((0, f"⚠ P90 {p90:.1f}s > SLO {slo:g}s", f"bold {bad}"))
        if s.bottleneck:  # a measurement, not an alarm: it gives way on a narrow line
            parts.append((1, busiest_text(s.bottleneck), ""))
        parts += [  # ESSENTIAL: never dropped nor shortened (the clock, and lost must read 0)
            (ESSENTIAL, ("⏸ " if tick.paused else "▶ ") + f"sim {clock(s.sim_time)}", "bold"),
            (ESSENTIAL, f"lost {s.lost}", f"bold {bad if s.lost else ok}"),
            (2, pace, ""),
            (1, f"in flight {s.in_flight:,}", ""),
            (1, f"done {s.completed:,}", ""),
            (4, f"arrived {s.arrived:,}", ""),
        ]
        if s.rejected:
            parts.append((1, f"rejected {s.rejected:,}", bad))
        if s.decisions:
            parts.append((5, " ".join(s.decisions[-1].split()), "dim"))
        room = max(self.size.width - 2, 40)
        parts = _shorten(parts, room)
        keep = set()
        used = 0
        for i in sorted(range(len(parts)), key=lambda i: parts[i][0]):
            if used + len(parts[i][1]) + 3 <= room or parts[i][0] <= 0:
                keep.add(i)
                used += len(parts[i][1]) + 3
        out = Text(no_wrap=True, overflow="ellipsis")
        for i, (_, text, style) in enumerate(parts):
            if i in keep:
                out.append(" · " if len(out) else "")
                out.append(text, style=style)
        self.update(out, layout=False)


ESSENTIAL = -1  # a status part kept whole at any width
MIN_PART = 12  # a what-is-wrong part is shortened to no less than this (with "…")


def _shorten(parts: list[tuple[int, str, str]], room: int) -> list[tuple[int, str, str]]:
    """The parts kept at any width must fit `room`: shorten the longest what-is-wrong ones
    (priority 0: a long instability banner) with an ellipsis, never the essential ones, so
    the clock and lost stay on the line."""
    over = sum(len(t) + 3 for p, t, _ in parts if p <= 0) - room
    out = list(parts)
    while over > 0:
        i = max((j for j, (p, t, _) in enumerate(out) if p == 0 and len(t) > MIN_PART),
                key=lambda j: len(out[j][1]), default=None)
        if i is None:
            break
        p, t, st = out[i]
        cut = min(over, len(t) - MIN_PART)
        out[i] = (p, t[:len(t) - cut - 1] + "…", st)
        over -= cut
    return out


WIDE_ONLY_KEYS = frozenset({"full_stop", "c"})  # dropped from the footer below 130 columns
NARROW_ONLY_KEYS = frozenset({"v"})  # `v` switches charts/model: only narrow layouts need it
PAIR_ONLY_KEYS = frozenset({"t", "p", "c", "v"})  # in the footer of the pair's screen only
MAP_ONLY_KEYS = frozenset({"enter"})  # in the footer of a topology's map only


class KeyFooter(Footer):
    """See the module docstring; the `-narrow`/`-wide` class of the screen decides."""

    SCOPED_CSS = False  # the rules read the screen's width class
    DEFAULT_CSS = """
    .-narrow KeyFooter FooterKey.-wide-only { display: none; }
    .-narrow KeyFooter FooterKey.-command-palette { display: none; }
    .-wide KeyFooter FooterKey.-narrow-only { display: none; }
    .-topology KeyFooter FooterKey.-pair-only { display: none; }
    .-pair KeyFooter FooterKey.-map-only { display: none; }
    """

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                widget.set_class(widget.key in WIDE_ONLY_KEYS, "-wide-only")
                widget.set_class(widget.key in NARROW_ONLY_KEYS, "-narrow-only")
                widget.set_class(widget.key in PAIR_ONLY_KEYS, "-pair-only")
                widget.set_class(widget.key in MAP_ONLY_KEYS, "-map-only")
            yield widget
