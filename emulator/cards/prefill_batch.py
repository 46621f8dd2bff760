"""Batched and chunked prefill from the cards: the kernel time of one engine step over several
prompts, or chunks of them, up to a token budget.

Why: engines (vLLM, SGLang, TensorRT-LLM) do not prefill one request at a time. A step packs
queued prompts up to a token budget and cuts a long prompt into chunks; what a step costs is
what the single-request kernel model charges for that many tokens, except for the mixers:

    gemm, moe, memory, collective, layer   the single-request terms at the step's token total N
                                           (a GEMM over N tokens is one GEMM; its weights stream
                                           once per step, not once per prompt)
    attention, linear                      per prompt or chunk: a chunk of c tokens after a
                                           prefix of p attends to p + c keys, FLOPs
                                           attn_flops(p + c) - attn_flops(p); the per-layer launch
                                           costs (attention_us) once per step

with the same measured efficiencies. A batch of one prompt from position 0 is the single-request
kernel exactly. The expert GEMMs pay their weight stream and their math (at the busiest
expert-parallel GPU's load) both, as the single-request model does (kernel.moe_imbalance); the
weight term counts every routed expert: a step of N tokens touches E (1 - (1 - k/E)^N) of them
(decode.touched_experts), all of them to within 0.1% once N >= 7 E / k tokens, which every step
of a useful budget is; `experts_touched` reports the figure.

At full steps of `budget` tokens (the capacity a batched engine sustains), a prompt of l tokens
costs its share of the step, l / budget, of everything but its own attention, plus that
attention; with the serving overhead paid per request or per step:

    T(l) = [overhead] + l / budget x (step(budget) without mixer FLOPs + [overhead per step]) + A(l)

A(l) is the prompt's own causal mixer time, whether it runs whole or in chunks (the chunks'
prefix-attention sums to the whole prompt's). T is a piecewise quadratic in l, split at the
model's sliding windows, so a batched profile keeps the model's exact mode. T(budget) with the
overhead per request is the single-request T_prefill(budget).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from emulator.cards.decode import touched_experts
from emulator.cards.gpu import GpuCard
from emulator.cards.kernel import Setup, kernel_breaks, kernel_parts
from emulator.cards.model_card import ModelCard
from emulator.cards.roofline import _piecewise
from emulator.profiles import Profile, StepCost

OVERHEAD_MODES = ("per-request", "per-step")
MIXER_CLASSES = ("attention", "linear")

Chunk = tuple[float, float]  # (new tokens, prefix tokens already prefilled)


def _mixer(chunks: Sequence[Chunk]):
    def flops(sub: ModelCard):
        out = None
        for c, p in chunks:
            f = sub.attn_flops(c) if p == 0 else sub.attn_flops(p + c) - sub.attn_flops(p)
            out = f if out is None else out + f
        return np.asarray(out if out is not None else 0.0, dtype=float)
    return flops


def step_parts(card: ModelCard, gpu: GpuCard, setup: Setup,
               chunks: Sequence[Chunk]) -> dict[str, float]:
    """Seconds per operation class of one step over `chunks` (module docstring)."""
    served = card.with_kv_dtype(setup.kv_dtype)
    tokens = float(sum(c for c, _ in chunks))
    parts = kernel_parts(served, gpu, setup, tokens, mixer=_mixer(chunks))
    return {k: float(v) for k, v in parts.items()}


def step_seconds(card: ModelCard, gpu: GpuCard, setup: Setup, chunks: Sequence[Chunk]) -> float:
    """The kernel time of one step over `chunks`; [(l, 0)] is kernel.kernel_seconds(l)."""
    return float(sum(step_parts(card, gpu, setup, chunks).values()))


@dataclass(frozen=True)
class BatchRow:
    """`batch` prompts of `length` tokens in one step, against the same prompts one by one."""

    batch: int
    length: float
    kernel_s: float  # the one step
    one_by_one_s: float  # batch x the single-request kernel
    experts_touched: float  # per MoE layer (0 for a dense model)
    parts: dict[str, float]

    @property
    def speedup(self) -> float:
        return self.one_by_one_s / self.kernel_s

    def to_dict(self) -> dict:
        return {"batch": self.batch, "length": self.length, "tokens": self.batch * self.length,
                "kernel_s": self.kernel_s, "per_request_s": self.kernel_s / self.batch,
                "one_by_one_s": self.one_by_one_s, "speedup": self.speedup,
                "tokens_per_s": self.batch * self.length / self.kernel_s,
                "experts_touched": self.experts_touched, "parts": self.parts}


def batch_row(card: ModelCard, gpu: GpuCard, setup: Setup, batch: int, length: float) -> BatchRow:
    """One step of `batch` whole prompts of `length` tokens."""
    parts = step_parts(card, gpu, setup, [(float(length), 0.0)] * batch)
    one = step_seconds(card, gpu, setup, [(float(length), 0.0)])
    m = card.matmul
    touched = touched_experts(m.experts, m.top_k, batch * length) if m and m.routed_active else 0.0
    return BatchRow(int(batch), float(length), float(sum(parts.values())), batch * one,
                    touched, parts)


def fixed_step_seconds(card: ModelCard, gpu: GpuCard, setup: Setup, budget: float | np.ndarray):
    """A step of `budget` tokens without its mixer FLOPs: what every prompt in it shares
    (float for a float)."""
    parts = kernel_parts(card.with_kv_dtype(setup.kv_dtype), gpu, setup,
                         np.asarray(budget, dtype=float), mixer=lambda sub: np.zeros(()))
    out = sum(parts.values())
    return float(out) if np.ndim(out) == 0 else out


def mixer_seconds(card: ModelCard, gpu: GpuCard, setup: Setup, length: float | np.ndarray):
    """A(l): a prompt's own causal attention and state-kernel FLOP time (no launch costs)."""
    served = card.with_kv_dtype(setup.kv_dtype)
    n = np.asarray(length, dtype=float)
    full = kernel_parts(served, gpu, setup, n)
    bare = kernel_parts(served, gpu, setup, n, mixer=lambda sub: np.zeros_like(n))
    out = sum(full[k] - bare[k] for k in MIXER_CLASSES)
    return float(out) if np.ndim(out) == 0 else out


def batched_prefill_seconds(card: ModelCard, gpu: GpuCard, setup: Setup, budget: float,
                            overhead: str, length: float | np.ndarray):
    """T(l) per request at full steps of `budget` tokens (module docstring); `overhead` is
    'per-request' or 'per-step' (setup.overhead_s either way)."""
    fixed = fixed_step_seconds(card, gpu, setup, budget)
    per_step = setup.overhead_s if overhead == "per-step" else 0.0
    per_req = setup.overhead_s if overhead == "per-request" else 0.0
    n = np.asarray(length, dtype=float)
    out = per_req + n / budget * (fixed + per_step) + mixer_seconds(card, gpu, setup, n)
    return float(out) if np.ndim(out) == 0 else out


def steps_of(length: float, budget: float) -> int:
    """The steps a lone prompt of `length` tokens takes under `budget` (its chunks)."""
    return max(1, math.ceil(length / budget))


MAX_BUDGET = float(1 << 24)  # 16M tokens: the longest request anything here takes


def budget_problem(budget: float, context: float | None) -> str | None:
    """What is wrong with a token budget for a model of `context` tokens (None: not stated, the
    16M-token ceiling applies), or None."""
    if not math.isfinite(budget) or budget < 1 or budget != int(budget):
        return "must be a whole number of tokens >= 1"
    if context is not None and budget > context:
        return f"{budget:,.0f} tokens is above the model's context of {context:,.0f} tokens"
    if budget > MAX_BUDGET:
        return f"{budget:,.0f} tokens is above {MAX_BUDGET:,.0f} tokens"
    return None


def context_of(card: ModelCard) -> float | None:
    """The model's context length from its config (max_position_embeddings), if it says."""
    cfg = card.config or {}
    for key in ("max_position_embeddings", "max_sequence_length", "seq_length"):
        v = cfg.get(key) if isinstance(cfg, dict) else None
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return float(v)
    text = cfg.get("text_config") if isinstance(cfg, dict) else None
    if isinstance(text, dict) and isinstance(v := text.get("max_position_embeddings"), int | float) \
            and not isinstance(v, bool) and v > 0:
        return float(v)
    return None


def batched_profile(card: ModelCard, gpu: GpuCard, setup: Setup, budget: float, overhead: str,
                    name: str, description: str = "") -> Profile:
    """The card-made profile of an instance that batches and chunks prefill up to `budget`
    tokens a step: T(l) at full steps (module docstring), S_kv as unbatched; the curve is exact
    (three samples per piece between the model's sliding windows)."""
    served = card.with_kv_dtype(setup.kv_dtype)
    t = _piecewise(lambda x: batched_prefill_seconds(card, gpu, setup, budget, overhead, x),
                   served.breaks())
    s = _piecewise(lambda x: served.kv_bytes(x), served.breaks())
    mark = f", {gpu.mark}" if gpu.mark else ""
    desc = description or (f"kernel model: {card.name} on {gpu.name}{mark} ({setup.describe()} "
                           f"{overhead}), prefill batched in {budget:,.0f}-token steps")
    per_step = setup.overhead_s if overhead == "per-step" else 0.0
    step = StepCost(_piecewise(lambda x: fixed_step_seconds(card, gpu, setup, x),
                               kernel_breaks(served, gpu, setup)),
                    _piecewise(lambda x: mixer_seconds(card, gpu, setup, x), served.breaks()),
                    per_step, setup.overhead_s - per_step)
    return Profile(name, t, s, desc, float(budget), step)
