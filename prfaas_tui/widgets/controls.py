"""The knob panel: every setting an operator can turn, stepped with keys or typed exactly.

A step goes straight to the session (`Session.request`: validated once there), so a burst of
keys steps from the last one; the panel then tells the screen (`ControlPanel.Changed`). Typing
a value is the screen's prompt (`ControlPanel.Edit`). The panel draws the model view it is bound
to; a refusal shows its reason under the knobs (`reason`) and changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from emulator.paradigm import Paradigm
from emulator.scenario.knobs import TPOT, KnobError
from emulator.units import GBPS, K_TOKENS, format_tokens, to_gbps
from prfaas_tui.knob_input import KnobInputError, Limits, hint, parse_knob
from prfaas_tui.modelview import (
    ModelView,
    Refused,
    Settings,
    nice_step,
    paradigm_point,
    step_speed,
)
from prfaas_tui.session import Session
from prfaas_tui.widgets.theme import color


def speed_text(speed: float) -> str:
    return "max" if math.isinf(speed) else f"{speed:g}x"


def _typed(key: str) -> Callable[[Settings, str], dict]:
    """A typed value through knob_input.parse_knob: the knob registry's parse and range, one
    line in the project's words when refused (never a Python message)."""
    def parse(s: Settings, text: str) -> dict:
        system = s.scenario.system
        lam = paradigm_point(s).lambda_max if key == "rate" else None
        try:
            return parse_knob(key, text, Limits(t_max=system.lengths.support[1],
                                                pool=system.local_pool, lambda_max=lam))
        except KnobInputError as exc:
            raise Refused(str(exc)) from None
    return parse


def _paradigm(text: str) -> dict:
    want = text.strip().lower()
    for p in Paradigm if want else ():  # nothing typed matches nothing (not the first)
        if want in (p, p.label.lower()) or p.startswith(want):
            return {"paradigm": p}
    raise Refused(f"paradigm must be one of {', '.join(Paradigm)}")


def _cycle(s: Settings, d: int) -> dict:
    i = tuple(Paradigm).index(s.paradigm)
    return {"paradigm": tuple(Paradigm)[(i + (1 if d > 0 else -1)) % len(Paradigm)]}


def _t_step(s: Settings, d: int) -> dict:
    hi = s.scenario.system.lengths.support[1]
    return {"t": min(hi, max(0.0, s.scenario.t + d * K_TOKENS))}


def _gbps_step(s: Settings, d: int) -> dict:
    g = to_gbps(s.scenario.system.bandwidth)
    step = nice_step(g * (0.999 if d < 0 else 1.0), 1) * abs(d)
    return {"bandwidth": max(step / 10, g + math.copysign(step, d)) * GBPS}


def _rate_step(s: Settings, d: int) -> dict:
    step = nice_step(s.rate * (0.999 if d < 0 else 1.0), 2) * abs(d)
    return {"rate": max(step / 10, s.rate + math.copysign(step, d))}


def _tpot(s: Settings, text: str) -> dict:
    """A typed TPOT SLO through the registry's rule (the decode's own check in `apply`)."""
    try:
        return {"tpot": TPOT.read(text)}
    except KnobError as exc:
        raise Refused(f"TPOT {exc.reason}" if exc.reason.startswith("must") else str(exc)) \
            from None


def _tpot_step(s: Settings, d: int) -> dict:
    if s.tpot is None:
        return {"tpot": math.nan}  # refused by `apply` in the constants' words
    step = nice_step(s.tpot * (0.999 if d < 0 else 1.0), 2) * abs(d)
    return {"tpot": max(step / 10, s.tpot + math.copysign(step, d))}


@dataclass(frozen=True)
class Knob:
    """One control: how to show it, step it (d = +-1 small, +-8 big) and parse a typed value."""

    key: str
    label: str
    hint: str
    show: Callable[[Settings], str]
    step: Callable[[Settings, int], dict]
    parse: Callable[[Settings, str], dict]


KNOBS: tuple[Knob, ...] = (
    Knob("t", "t", f"threshold: {hint('t')}",
         lambda s: f"{format_tokens(s.scenario.t)}",
         _t_step, _typed("t")),
    Knob("n_prfaas", "N_prfaas", hint("n_prfaas"),
         lambda s: str(s.scenario.system.n_prfaas),
         lambda s, d: {"n_prfaas": s.scenario.system.n_prfaas + int(math.copysign(1, d))},
         _typed("n_prfaas")),
    Knob("n_p", "N_p", hint("n_p"),
         lambda s: str(s.scenario.n_p),
         lambda s, d: {"n_p": s.scenario.n_p + int(math.copysign(1, d))},
         _typed("n_p")),
    Knob("n_d", "N_d", hint("n_d"),
         lambda s: str(s.scenario.n_d),
         lambda s, d: {"n_d": s.scenario.n_d + int(math.copysign(1, d))},
         _typed("n_d")),
    Knob("bandwidth", "B_out", f"cross-datacenter link: {hint('bandwidth')}",
         lambda s: f"{to_gbps(s.scenario.system.bandwidth):.4g} Gbps",
         _gbps_step, _typed("bandwidth")),
    Knob("rate", "rate", f"offered rate: {hint('rate')}",
         lambda s: f"{s.rate:.3g} req/s", _rate_step, _typed("rate")),
    Knob("paradigm", "paradigm", "prfaas-pd, homogeneous or naive",
         lambda s: s.paradigm.label, _cycle, lambda s, x: _paradigm(x)),
    Knob("speed", "speed", f"simulated seconds per wall second: {hint('speed')}",
         lambda s: speed_text(s.speed),
         lambda s, d: {"speed": step_speed(s.speed, int(math.copysign(1, d)))},
         _typed("speed")),
)
# the TPOT SLO: a row of its own, only on a decode from the cards (`shown`)
TPOT_KNOB = Knob("tpot", "TPOT",
                 f"TPOT SLO of a decode from the cards: {TPOT.written} (BS_max follows)",
                 lambda s: "constants" if s.tpot is None else f"{s.tpot * 1e3:.4g} ms",
                 _tpot_step, _tpot)
KNOB_BY_KEY = {k.key: k for k in (*KNOBS, TPOT_KNOB)}


def shown(s: Settings) -> tuple[Knob, ...]:
    """The knobs these settings have: TPOT only on a decode from the cards."""
    return KNOBS if s.tpot is None else (*KNOBS, TPOT_KNOB)


class ControlPanel(Widget, can_focus=True):
    """Rows of knobs with a cursor: up/down select, left/right step, enter types a value."""

    DEFAULT_CSS = """
    ControlPanel { height: auto; padding: 0 1; }
    ControlPanel:focus { background-tint: $foreground 4%; }
    """
    BINDINGS = [
        Binding("up,k", "move(-1)", "Previous knob", show=False, id="knob-up"),
        Binding("down,j", "move(1)", "Next knob", show=False, id="knob-down"),
        Binding("left,h,minus", "step(-1)", "Decrease", show=False, id="knob-decrease"),
        Binding("right,l,plus,equals_sign", "step(1)", "Increase", show=False, id="knob-increase"),
        Binding("shift+left,H", "step(-8)", "Decrease a lot", show=False, id="knob-decrease-big"),
        Binding("shift+right,L", "step(8)", "Increase a lot", show=False, id="knob-increase-big"),
        Binding("enter", "edit", "Type value", show=False, id="knob-edit"),
    ]

    HINT = "↑↓ knob  ←→ step  ⏎ type"  # the keys line under the knobs (a variant's own)

    cursor: reactive[int] = reactive(0)
    reason: reactive[str] = reactive("", layout=True)
    view: reactive[ModelView | None] = reactive(None)  # bound to the screen's

    class Changed(Message):
        """A step was taken: the session has new settings."""

    class Edit(Message):
        """The operator wants to type a value for this knob."""

        def __init__(self, knob: Knob) -> None:
            super().__init__()
            self.knob = knob

    def __init__(self, session: Session, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session

    @property
    def knobs(self) -> tuple[Knob, ...]:
        return shown(self.session.settings)

    def select(self, key: str) -> None:
        self.cursor = next(i for i, k in enumerate(self.knobs) if k.key == key)

    def action_move(self, d: int) -> None:
        self.cursor = (self.cursor + d) % len(self.knobs)

    def action_step(self, d: int) -> None:
        """One step from the session's current settings (not from the view drawn, which may
        lag a burst of keys)."""
        try:
            self.session.request(**self.knobs[self.cursor].step(self.session.settings, d))
        except Refused as exc:
            self.reason = str(exc)
            return
        self.reason = ""
        self.post_message(self.Changed())

    def action_edit(self) -> None:
        self.post_message(self.Edit(self.knobs[self.cursor]))

    def render(self) -> Text:
        out = Text()
        if self.view is None:
            return out
        s = self.view.settings
        width = max(self.size.width - 2, 20)
        for i, k in enumerate(shown(s)):
            sel = i == self.cursor
            style = "reverse" if sel and self.has_focus else ("bold" if sel else "")
            row = Text(("▸ " if sel else "  ") + k.label.ljust(9), style=style)
            row.append(k.show(s).rjust(max(width - len(row), 0)), style=style)
            out.append_text(row)
            out.append("\n")
        sc = s.scenario
        used = sc.n_p + sc.n_d
        pool = sc.system.local_pool
        out.append(f"pool {sc.n_p}+{sc.n_d} = {used} of {pool}", style="dim")
        if used < pool:
            out.append(f" ({pool - used} idle)", style="dim")
        out.append(f"\n{self.HINT}", style="dim")
        if self.reason:
            out.append("\n")
            out.append(f"✗ {self.reason}", style=f"bold {color(self, 'text-error')}")
        return out

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.knobs) + 2 + (self._reason_lines(width) if self.reason else 0)

    def _reason_lines(self, width: int) -> int:
        return max(1, math.ceil((len(self.reason) + 2) / max(width, 1)))
