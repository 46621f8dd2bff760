"""The one parser of a `[decode]` table: Eq. 5's constants (the top level's, or a topology
region's override of some of them), or a decode derived from the cards.

[decode]  t_decode, bs_max, l_out: the constants (the paper's presets);
          or from = "cards", tpot (default 25 ms), l_out: BS_max is the largest batch whose step
          meets `tpot` and whose KV fits the local GPUs, t_decode = T_step(BS_max) at the mean
          decode context (input mean + l_out / 2), both from the local profile's roofline cards
          (emulator.cards.decode), and the emulator's decode steps at T_step(batch, context)
          (`CardStep`). docs/decode.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from emulator.cards import CardError
from emulator.cards.decode import DEFAULT_TPOT_S, BatchLimit, bs_max, step_time, tpot_problem
from emulator.cards.gpu import GpuCard
from emulator.cards.kernel import Setup
from emulator.cards.model_card import ModelCard
from emulator.model import DecodeSpec
from emulator.scenario.lengths import MAX_TOKENS
from emulator.scenario.reader import Reader, at_most, positive
from emulator.units import parse_duration, parse_tokens

_CHECKS = {
    "t_decode": (parse_duration, lambda x: positive(x) or at_most(60, "a minute per decode step")(x)),
    "bs_max": (int, lambda x: positive(x) or at_most(1_000_000, "10^6")(x)),
    "l_out": (parse_tokens, lambda x: positive(x) or at_most(MAX_TOKENS, "16M tokens")(x)),
}
SOURCES = ("constants", "cards")


def parse_decode(dec: Reader, base: DecodeSpec | None = None) -> DecodeSpec:
    """t_decode, bs_max and l_out from `dec`; without `base` all three are required, with it
    each absent key keeps the base's value."""
    if dec.has("from") and dec.raw("from") != "constants":
        raise dec.error("from", 'a decode from the cards needs a single-pair preset ([deployment]) '
                        'whose local profile is a roofline; here give t_decode and bs_max')
    values = {}
    for key, (conv, check) in _CHECKS.items():
        if base is not None and not dec.has(key):
            continue
        values[key] = dec.get(key, conv, check=check)
    return DecodeSpec(**values) if base is None else replace(base, **values)


Cards = tuple[ModelCard, GpuCard, Setup]


def parse_pair_decode(dec: Reader, cards: Cards | None, mean_in: float,
                      ) -> tuple[DecodeSpec, CardStep | None]:
    """A pair's `[decode]`: the constants, or (from = "cards") the decode the local profile's
    cards give at the mean decode context, with the step the emulator runs. `cards` is the local
    profile's (model, gpu, setup), None when that profile is no roofline."""
    source = dec.get("from", str, "constants", check=lambda x: None if x in SOURCES
                     else f"must be {' or '.join(repr(s) for s in SOURCES)}, got {x!r}")
    if source == "constants":
        if dec.has("tpot"):
            raise dec.error("tpot", 'bounds a decode derived from the cards: add from = "cards" '
                            "or drop it")
        return parse_decode(dec), None
    if cards is None:
        raise dec.error("from", "the cards are the local profile's roofline = { model, gpu, ... }"
                        ": that profile has none (give t_decode and bs_max instead)")
    for key in ("t_decode", "bs_max"):
        if dec.has(key):
            raise dec.error(key, 'derived from the cards with from = "cards": drop one of the two')
    l_out = dec.get("l_out", *_CHECKS["l_out"])
    tpot = dec.get("tpot", parse_duration, DEFAULT_TPOT_S, check=tpot_problem)
    card, gpu, setup = cards
    context = mean_in + l_out / 2
    limit = card.config.get("max_position_embeddings") if isinstance(card.config, dict) else None
    if isinstance(limit, int) and context > limit:
        raise dec.error("l_out", f"the mean decode context {context:,.0f} tokens (input mean + "
                        f"l_out / 2) is beyond {card.name}'s max_position_embeddings ({limit:,})")
    try:
        lim = bs_max(card, gpu, setup, context, tpot)
    except CardError as exc:
        raise dec.error("tpot" if exc.key == "--tpot" else "from", exc.message) from None
    step = CardStep(card, gpu, setup, tpot, context, lim)
    return DecodeSpec(t_decode=lim.step.step_s, bs_max=lim.batch, l_out=l_out), step


@dataclass(eq=False)
class CardStep:
    """The decode step of the cards, for the emulator: per segment of constant batch B (the
    steps between two joins or completions) the step is taken as affine in the batch's total
    context C,

        T ~ a + c x C,   through T_step(B, g0) and T_step(B, g1), C = B x x

    where g0 <= x0 = C0 / B (the mean context at the segment's start) and g1 >= x0 + k (after
    the k steps to the segment's next completion, each adding one token per request) are the
    bracketing points of a GRID-token grid, so the existing closed form for a + b B + c C
    strokes the segment in one event. Exact where the step is affine in context over [g0, g1]
    (full-attention and state layers, one bound of the max() throughout); elsewhere (a sliding
    window filling, the memory/compute bound switching) the chord lies within the step's
    curvature over at most k + 2 x GRID tokens: under 0.1% of the stroke's time on the shipped
    cards (tests/test_decode_from_cards.py pins it against stepping one step at a time). Every
    request of a batch is taken at the batch's mean context."""

    card: ModelCard
    gpu: GpuCard
    setup: Setup
    tpot: float
    context: float  # the mean decode context the model's Eq. 5 uses
    limit: BatchLimit
    _memo: dict = field(default_factory=dict, repr=False)

    GRID = 256.0  # context tokens between memoized evaluations

    def seconds(self, batch: int, context: float) -> float:
        """T_step(batch, context) at a grid point (memoized: a run revisits the same cells)."""
        key = (batch, context)
        t = self._memo.get(key)
        if t is None:
            t = self._memo[key] = step_time(self.card, self.gpu, self.setup, batch,
                                            context).step_s
        return t

    def coefficients(self, batch: int, ctx: float, steps: int) -> tuple[float, float]:
        """(a, c) with step seconds ~ a + c x (the batch's total context), for a segment of
        `batch` requests holding `ctx` tokens that lasts at most `steps` steps."""
        g = self.GRID
        x0 = ctx / batch
        g0 = math.floor(x0 / g) * g
        g1 = max(math.ceil((x0 + steps) / g) * g, g0 + g)
        t0, t1 = self.seconds(batch, g0), self.seconds(batch, g1)
        slope = (t1 - t0) / (g1 - g0)  # seconds per token of mean context
        return t0 - slope * g0, slope / batch
