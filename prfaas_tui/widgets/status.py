"""The status line: simulated clock, pace, request accounting and the scheduler's last word.

On a narrow terminal the least important parts drop out first, so the clock and the
accounting (lost must read 0) always stay on screen.
"""

from __future__ import annotations

from rich.text import Text

from prfaas_tui.live import Tick
from prfaas_tui.widgets.controls import speed_text
from prfaas_tui.widgets.model_panel import STAGE_LABELS
from prfaas_tui.widgets.theme import SizedStatic, color


def clock(seconds: float) -> str:
    """Simulated time as H:MM:SS.s (simulated, never wall time)."""
    m, s = divmod(max(seconds, 0.0), 60)
    h, m = divmod(int(m), 60)
    return f"{h}:{m:02d}:{s:04.1f}"


def instances_down(snap) -> list[str]:
    """"2 of 4 PrfaaS alive" for each stage with instances down (the knob does not move)."""
    k = snap.knobs
    knob = {"prfaas": k.n_prfaas, "pd-p": k.n_p, "pd-d": k.n_d}
    return [f"{knob[name] - st.failed} of {knob[name]} {STAGE_LABELS[name]} alive"
            for name, st in snap.stages.items() if st.failed and name in knob]


class StatusLine(SizedStatic):
    DEFAULT_CSS = "StatusLine { height: 1; padding: 0 1; background: $panel; }"

    def show(self, tick: Tick | None, note: str = "") -> None:
        self.remember(tick, note)
        if tick is None:
            self.update(Text(note or "starting the emulator…"), layout=False)
            return
        s = tick.snapshot
        bad, ok = color(self, "text-error"), color(self, "text-success")
        pace = speed_text(tick.speed) + (f" (rtf {tick.rtf:.3g})" if tick.rtf is not None else "")
        # (priority: lower stays longer, text, style), in display order
        parts: list[tuple[int, str, str]] = [
            (0, ("⏸ " if tick.paused else "▶ ") + f"sim {clock(s.sim_time)}", "bold"),
            (2, pace, ""),
            (1, f"in flight {s.in_flight:,}", ""),
            (1, f"done {s.completed:,}", ""),
            (4, f"arrived {s.arrived:,}", ""),
        ]
        if s.rejected:
            parts.append((1, f"rejected {s.rejected:,}", bad))
        parts.append((0, f"lost {s.lost}", f"bold {bad if s.lost else ok}"))
        if s.bottleneck:
            parts.append((3, f"bottleneck {STAGE_LABELS.get(s.bottleneck, s.bottleneck)}", ""))
        if s.incidents:
            parts.append((1, f"⚠ {', '.join(s.incidents)}", bad))
        for text in instances_down(s):
            parts.append((1, text, bad))
        if note:
            parts.append((0, note, bad))
        if s.decisions:
            parts.append((5, " ".join(s.decisions[-1].split()), "dim"))
        room = max(self.size.width - 2, 40)
        keep = set()
        used = 0
        for i in sorted(range(len(parts)), key=lambda i: parts[i][0]):
            if used + len(parts[i][1]) + 3 <= room or parts[i][0] == 0:
                keep.add(i)
                used += len(parts[i][1]) + 3
        out = Text(no_wrap=True, overflow="ellipsis")
        for i, (_, text, style) in enumerate(parts):
            if i in keep:
                out.append(" · " if len(out) else "")
                out.append(text, style=style)
        self.update(out, layout=False)
