"""The one parser of a `[decode]` table: Eq. 5's constants (the top level's, or a topology
region's override of some of them), or a decode derived from the cards.

[decode]  t_decode, bs_max, l_out: the constants (the paper's presets);
          or from = "cards", tpot (default 25 ms), l_out: BS_max is the largest batch whose step
          meets `tpot` and whose KV fits the local GPUs, t_decode = T_step(BS_max) at the mean
          decode context (input mean + l_out / 2), both from the local profile's roofline cards
          (emulator.cards.decode), and the emulator's decode steps at T_step(batch, context)
          (`CardStep`). In a topology each region derives its own from its local profile's
          cards and lengths (`parse_region_decode`). docs/decode.md.
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
from emulator.scenario.knobs import CONSTANT_DECODE, TPOT, KnobError
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
    values = {}
    for key, (conv, check) in _CHECKS.items():
        if base is not None and not dec.has(key):
            continue
        values[key] = dec.get(key, conv, check=check)
    return DecodeSpec(**values) if base is None else replace(base, **values)


@dataclass(frozen=True)
class FromCards:
    """A topology's top-level `[decode]` with from = "cards": each region derives its own
    decode from its local profile's cards and its own lengths."""

    l_out: float
    tpot: float = DEFAULT_TPOT_S


def _source(dec: Reader, default: str = "constants") -> str:
    return dec.get("from", str, default, check=lambda x: None if x in SOURCES
                   else f"must be {' or '.join(repr(s) for s in SOURCES)}, got {x!r}")


def _no_constants(dec: Reader) -> None:
    for key in ("t_decode", "bs_max"):
        if dec.has(key):
            raise dec.error(key, 'derived from the cards with from = "cards": drop one of the two')


def _l_out(dec: Reader) -> float:
    """`l_out`, required, by its rule (the constants' and the cards' alike)."""
    conv, check = _CHECKS["l_out"]
    return dec.get("l_out", conv, check=check)


def parse_base_decode(dec: Reader) -> DecodeSpec | FromCards:
    """A topology's top-level `[decode]`: the constants its regions inherit, or from = "cards"
    (each region derives its own)."""
    if _source(dec) == "constants":
        if dec.has("tpot"):
            raise dec.error("tpot", 'bounds a decode derived from the cards: add from = "cards" '
                            "or drop it")
        return parse_decode(dec)
    _no_constants(dec)
    return FromCards(_l_out(dec),
                     dec.get("tpot", TPOT.parse, DEFAULT_TPOT_S))


Cards = tuple[ModelCard, GpuCard, Setup]


def context_problem(card: ModelCard, context: float) -> str | None:
    """Why a mean decode context is beyond what the model serves, or None."""
    limit = card.config.get("max_position_embeddings") if isinstance(card.config, dict) else None
    if isinstance(limit, int) and not isinstance(limit, bool) and context > limit:
        return (f"the mean decode context {context:,.0f} tokens (input mean + l_out / 2) is "
                f"beyond {card.name}'s max_position_embeddings ({limit:,})")
    return None


def parse_pair_decode(dec: Reader, cards: Cards | None, mean_in: float,
                      ) -> tuple[DecodeSpec, CardStep | None]:
    """A pair's `[decode]`: the constants, or (from = "cards") the decode the local profile's
    cards give at the mean decode context, with the step the emulator runs. `cards` is the local
    profile's (model, gpu, setup), None when that profile is no roofline."""
    base = parse_base_decode(dec)
    if isinstance(base, DecodeSpec):
        return base, None
    return derive_decode(dec, cards, base, mean_in)


def parse_region_decode(dec: Reader | None, top: Reader, base: DecodeSpec | FromCards,
                        cards: Cards | None, mean_in: float, region: str,
                        ) -> tuple[DecodeSpec, CardStep | None]:
    """A topology region's decode: its own `[region.decode]` (`dec`, None if absent) over the
    top-level's `base`. A region derives from its local profile's `cards` when either says
    from = "cards" (the region's word wins); its tpot and l_out default to the top level's."""
    inherited = "cards" if isinstance(base, FromCards) else "constants"
    source = inherited if dec is None else _source(dec, inherited)
    where = f"region {region!r}: "
    if source == "constants":
        if dec is None:
            assert isinstance(base, DecodeSpec)
            return base, None
        if dec.has("tpot"):
            raise dec.error("tpot", 'bounds a decode derived from the cards: add from = "cards" '
                            "or drop it")
        return parse_decode(dec, base if isinstance(base, DecodeSpec) else None), None
    if dec is None:
        assert isinstance(base, FromCards)
        return derive_decode(top, cards, base, mean_in, where)
    _no_constants(dec)
    l_out = _l_out(dec) if dec.has("l_out") else base.l_out
    tpot = dec.get("tpot", TPOT.parse, getattr(base, "tpot", DEFAULT_TPOT_S))
    return derive_decode(dec, cards, FromCards(l_out, tpot), mean_in, where)


def derive_decode(dec: Reader, cards: Cards | None, spec: FromCards, mean_in: float,
                  where: str = "") -> tuple[DecodeSpec, CardStep]:
    """BS_max and t_decode = T_step(BS_max) from `cards` at the mean decode context (mean_in +
    l_out / 2), and the step the emulator runs; problems name `dec`'s keys (`where` says whose
    cards they were)."""
    if cards is None:
        raise dec.error("from", f"{where}the cards are the local profile's roofline = {{ model, "
                        "gpu, ... }: that profile has none (give t_decode and bs_max instead)")
    card, gpu, setup = cards
    context = mean_in + spec.l_out / 2
    if (msg := context_problem(card, context)) is not None:
        raise dec.error("l_out", where + msg)
    try:
        lim = bs_max(card, gpu, setup, context, spec.tpot)
    except CardError as exc:
        raise dec.error("tpot" if exc.key == "--tpot" else "from", where + exc.message) from None
    step = CardStep(card, gpu, setup, spec.tpot, context, lim)
    return DecodeSpec(t_decode=lim.step.step_s, bs_max=lim.batch, l_out=spec.l_out), step


@dataclass(eq=False)
class CardStep:
    """The decode step of the cards, for the emulator. Within a segment of constant batch B
    (the steps between two joins or completions) the step is taken as affine in the batch's
    total context C = B x (mean context x),

        T ~ a + c x C,   the chord of T_step(B, .) through two context points,

    so the closed form for a + b B + c C strokes the segment in one event. The rule:
    - a batch whose step is affine in context over [0, MAX_CONTEXT] (full-attention and state
      layers, one bound of the max() throughout: the chord through 0 and MAX_CONTEXT meets the
      step at its quarter points) uses that one chord for every segment: exact;
    - otherwise (a sliding window filling, the memory/compute bound switching) the chord runs
      through g0 <= x0 (the segment's start) and g1 >= x0 + k (after the k steps to its next
      completion, each adding one token per request) on a GRID-token grid when the step is
      affine there (its midpoint tells), else across the one cell [g0, g0 + GRID] and the stage
      refits at its end (`coefficients`' third value). A kink on the grid is exact; one inside
      a cell is off by at most the step's curvature over GRID tokens (< 1e-5 of the stroke on
      the test configs: tests/test_decode_from_cards.py steps one step at a time against it).
    Every request of a batch is taken at the batch's mean context."""

    card: ModelCard
    gpu: GpuCard
    setup: Setup
    tpot: float = DEFAULT_TPOT_S
    context: float = 0.0  # the mean decode context the model's Eq. 5 uses
    limit: BatchLimit | None = None  # BS_max at `context` and `tpot`
    _memo: dict = field(default_factory=dict, repr=False)

    GRID = 256  # context tokens between evaluations of the cards
    MAX_CONTEXT = 1 << 20  # the range a batch's one chord must hold over
    _AFFINE = 1e-9  # relative gap below which the chord is the step
    _lines: dict = field(default_factory=dict, repr=False)  # batch -> (a, c) or None

    def seconds(self, batch: int, context: float) -> float:
        """T_step(batch, context) (memoized: a run revisits the same grid cells)."""
        key = (batch, context)
        t = self._memo.get(key)
        if t is None:
            t = self._memo[key] = step_time(self.card, self.gpu, self.setup, batch,
                                            context).step_s
        return t

    def fastest(self, context: float) -> float:
        """The shortest step a request of `context` tokens can take (alone in its batch)."""
        return self.seconds(1, context)

    def coefficients(self, batch: int, ctx: float, steps: int) -> tuple[float, float, float]:
        """(a, c, valid): step seconds ~ a + c x (the batch's total context) for the next
        `valid` steps (<= `steps`, those to the segment's next completion) of `batch` requests
        holding `ctx` tokens; valid = inf: for every segment of `batch`, whatever its context."""
        line = self._lines.get(batch, False)
        if line is False:
            line = self._lines[batch] = self._line(batch)
        if line is not None:
            return line[0], line[1], math.inf
        g = self.GRID
        x0 = ctx / batch
        g0 = math.floor(x0 / g) * g
        g1 = max(math.ceil((x0 + steps) / g) * g, g0 + g)
        t0, t1 = self.seconds(batch, g0), self.seconds(batch, g1)
        valid = steps
        if g1 - g0 > g:
            gm = g0 + (g1 - g0) // (2 * g) * g
            chord = t0 + (t1 - t0) * (gm - g0) / (g1 - g0)
            if abs(self.seconds(batch, gm) - chord) > self._AFFINE * chord:
                g1 = g0 + g
                t1 = self.seconds(batch, g1)
                valid = min(steps, math.ceil(g1 - x0))
        slope = (t1 - t0) / (g1 - g0)  # seconds per token of mean context
        return t0 - slope * g0, slope / batch, valid

    def at_tpot(self, tpot: float) -> CardStep:
        """The same cards and context under another TPOT SLO: BS_max derived again (the step
        itself is physics and keeps its memo and chords). ValueError, the phrase after the
        knob's name, when no batch of 1 meets `tpot` or it is out of range."""
        if (why := tpot_problem(tpot)) is not None:
            raise ValueError(why)
        try:
            lim = bs_max(self.card, self.gpu, self.setup, self.context, tpot)
        except CardError as exc:
            raise ValueError(exc.message) from None
        return CardStep(self.card, self.gpu, self.setup, tpot, self.context, lim, self._memo,
                        self._lines)

    def decode(self, base: DecodeSpec) -> DecodeSpec:
        """`base` (its l_out) with Eq. 5's BS_max and t_decode of this step's limit."""
        assert self.limit is not None
        return replace(base, t_decode=self.limit.step.step_s, bs_max=self.limit.batch)

    def _line(self, batch: int) -> tuple[float, float] | None:
        """(a, c) when the step at `batch` is affine in context up to MAX_CONTEXT, else None."""
        top = self.MAX_CONTEXT
        t0, t1 = self.seconds(batch, 0), self.seconds(batch, top)
        for q in (top // 4, top // 2, 3 * top // 4):
            chord = t0 + (t1 - t0) * q / top
            if abs(step_time(self.card, self.gpu, self.setup, batch, q).step_s - chord) > \
                    self._AFFINE * chord:
                return None
        return t0, (t1 - t0) / top / batch


def retimed(step: object, tpot: float, where: str | None = None) -> CardStep:
    """`step` (a region's or the pair's decode step) under the TPOT SLO `tpot`: KnobError
    naming the knob (and the element `where`, "region west") when its decode is constants or
    no batch of 1 meets `tpot`."""
    if not isinstance(step, CardStep):
        raise KnobError("tpot", CONSTANT_DECODE, where)
    try:
        return step.at_tpot(tpot)
    except ValueError as exc:
        raise KnobError("tpot", str(exc), where) from None

