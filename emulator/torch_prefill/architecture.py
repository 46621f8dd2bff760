"""A published config.json as units of torch layers (pure Python, no torch).

Why from the model card and not from each family's fields: the card (emulator/cards) already
reads 13 families into layer groups with what each keeps per request and what its mixer costs;
building the torch model from those groups makes every family the cards read measurable, hybrids
included, and makes the cache the forward pass returns equal to the card's by construction (the
profile checks it anyway).

A model is its embedding and head (the base) plus *units*: one per layer group (a mixer with its
norm and residual) and one per FFN kind (a dense gated MLP, routed experts), each with the number
of layers that run it. The two-depth method times each unit at two depths and multiplies the
per-layer difference by that count (emulator/torch_prefill/depth.py).

Geometry the card leaves open is chosen so that bytes match exactly and work matches closely:

* attention: heads x (qk + v width) from the group's FLOPs per (query, key) pair, KV heads from
  its bytes per token; MLA from the config's kv_lora_rank / qk_*_head_dim / v_head_dim;
* a recurrent state (linear attention, Mamba, lightning): a gated linear attention whose
  heads x d x d state (in the state dtype) and a conv state (the remaining bytes) make the card's
  state size, d chosen so that its FLOPs per token meet the card's;
* FFN: one gated MLP per layer of the card's mean activation width; routed experts per MoE layer
  of the width its active parameters imply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from emulator.cards import CardError
from emulator.cards.fields import state_dtype_bytes, text_fields
from emulator.cards.layers import STATE
from emulator.cards.model_card import ModelCard

MAX_HEAD_WIDTH = 1024  # qk + v width of one attention head beyond which a fallback is refused
STATE_CHUNK = 64  # the chunk length the card's linear FLOPs assume (emulator/cards/layers.CHUNK)


@dataclass(frozen=True)
class Unit:
    """Layers of one kind and geometry: `kind` is gqa/swa/chunked/mla (attention), state
    (any recurrent mixer), ffn or moe; `count` layers run it; `dims` its sizes."""

    kind: str
    count: int
    dims: dict = field(default_factory=dict)
    label: str = ""  # the card's kind (ssm, linear, lightning...) for a state unit

    @property
    def name(self) -> str:
        return f"{self.label or self.kind} x{self.count}"


@dataclass(frozen=True)
class Architecture:
    """What the torch model is built from; `slow_kernels` says which units run without the
    kernels a serving stack has (the time is then an upper bound)."""

    name: str
    hidden: int
    vocab: int
    units: tuple[Unit, ...]
    slow_kernels: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def mixers(self) -> tuple[Unit, ...]:
        return tuple(u for u in self.units if u.kind not in ("ffn", "moe"))


def _attention_dims(card: ModelCard, pair_flops: float, kv_bytes: float, window: int | None,
                    where: str) -> dict:
    """heads, kv_heads, qk and v widths from the group's pair FLOPs and KV bytes (bf16)."""
    per_pair = round(pair_flops / 2)  # heads x (qk + v width)
    kv_el = round(kv_bytes / 2)  # kv_heads x (qk + v width); 0: the layer reuses another's KV
    heads0 = card.matmul.heads if card.matmul else 1
    candidates = [per_pair // heads0] if per_pair % heads0 == 0 else []
    candidates += [w for w in range(min(MAX_HEAD_WIDTH, per_pair), 1, -1) if per_pair % w == 0]
    for width in candidates:
        heads = per_pair // width
        kv = kv_el // width if kv_el else heads
        if width > MAX_HEAD_WIDTH or (kv_el and kv * width != kv_el) or heads % kv:
            continue
        v = width // 2
        return {"heads": heads, "kv_heads": kv, "qk": width - v, "v": v, "window": window,
                "keeps": kv_el > 0}
    raise CardError(card.path or card.name, where,
                    f"no attention geometry gives {per_pair} = heads x head width and "
                    f"{kv_el} = KV heads x head width")


def _mla_dims(card: ModelCard, aux_bytes: float, where: str) -> dict:
    f = text_fields(card.config, card.path)
    dims = {"heads": f.int("num_attention_heads"), "rank": f.int("kv_lora_rank"),
            "rope": f.int("qk_rope_head_dim"), "nope": f.int("qk_nope_head_dim"),
            "v": f.int("v_head_dim"), "q_rank": f.int("q_lora_rank", 0, minimum=0),
            "aux": int(aux_bytes)}
    if aux_bytes != int(aux_bytes):
        raise CardError(card.path or card.name, where, f"side cache of {aux_bytes} B per token")
    return dims


def _state_dims(state_bytes: float, token_flops: float, itemsize: int) -> dict:
    """A heads x d x d state in `itemsize` bytes plus a conv state of the remaining bytes, with
    d such that 4 H d^2 + 2 C H 2d (update, read-out, intra-chunk) meets the card's FLOPs."""
    total = int(round(state_bytes))
    elements = max(total // itemsize, 1)
    extra = token_flops - 4.0 * elements
    d = 2 * 2 * STATE_CHUNK * elements / extra if extra > 0 else 128
    d = 2 ** int(min(8, max(4, round(math.log2(d)))))  # 16..256, as kernels tile heads
    while d > 1 and d * d > elements:
        d //= 2
    heads = max(1, elements // (d * d))
    if heads >= 8:  # published head counts are multiples of 8: the rest is conv state
        heads -= heads % 8
    conv = total - heads * d * d * itemsize
    if conv < 0:
        heads, d, conv = 0, 0, total
    return {"heads": heads, "d": d, "itemsize": itemsize, "conv_bytes": conv}


def architecture(card: ModelCard) -> Architecture:
    """The units of `card`'s model; CardError (naming the config) when a group cannot be built."""
    m = card.matmul
    where = card.path or card.name
    if m is None or not m.hidden:
        raise CardError(where, "", "card has no matmul accounting to build a model from")
    served = card.with_kv_dtype("bf16")  # geometry from bf16 bytes: 2 per element
    f = text_fields(card.config, card.path)
    units: list[Unit] = []
    slow: list[str] = []
    notes: list[str] = []
    for i, g in enumerate(served.groups):
        key = f"layer group {i + 1} ({g.kind})"
        if g.kind in STATE:
            dims = _state_dims(g.state_bytes, g.token_flops, state_dtype_bytes(f))
            units.append(Unit("state", g.count, dims, g.kind))
            if g.kind not in slow:
                slow.append(g.kind)
        elif g.kind == "mla":
            units.append(Unit("mla", g.count, _mla_dims(card, g.aux_bytes_per_token, key)))
        else:
            units.append(Unit(g.kind, g.count, _attention_dims(
                card, g.pair_flops, g.kv_bytes_per_token, g.window, key)))
        if g.topk:
            slow.append("sparse top-k attention")
            notes.append(f"{g.kind}: the top-{g.topk} sparse attention runs dense (and its "
                         "indexer's scoring is not run)")
    layers = card.num_layers
    width = round(m.act_width / layers) if m.act_width else 0
    if width:
        units.append(Unit("ffn", layers, {"width": width}))
    if m.routed_active and m.moe_layers and m.top_k:
        expert = round(m.routed_active / (m.moe_layers * m.top_k * 3 * m.hidden))
        units.append(Unit("moe", m.moe_layers, {"experts": m.experts, "top_k": m.top_k,
                                                "width": max(expert, 1)}))
        slow.append("moe")
    if any(u.kind == "state" for u in units):
        notes.append("recurrent layers: a gated linear attention of the card's state size and "
                     "FLOPs per token stands for the family's own mixer")
    if width:
        notes.append(f"FFN: one gated MLP of the mean width {width} per layer")
    vocab = f.int("vocab_size", max(1, round(m.embed / m.hidden / 2)), minimum=1)
    return Architecture(card.name, m.hidden, vocab, tuple(units), tuple(slow), tuple(notes))


SLOW_REASONS = {
    "linear": "linear attention runs the project's chunked torch kernel, not fla's",
    "lightning": "lightning attention runs the project's chunked torch kernel, not MiniMax's",
    "ssm": "Mamba layers run the project's chunked torch kernel, not mamba_ssm's scan",
    "moe": "routed experts run one at a time, not as a grouped GEMM",
    "sparse top-k attention": "top-k sparse attention runs dense",
}


def upper_bound_reason(arch: Architecture) -> str:
    """Why the measured time is an upper bound of the architecture's ('' when it is not)."""
    return "; ".join(SLOW_REASONS.get(k, k) for k in arch.slow_kernels)


def expected_kv_bytes(card: ModelCard, length: int, kv_itemsize: int) -> int:
    """S_kv(length) by the card's per-layer model with the per-token KV in `kv_itemsize` bytes
    (states and side caches keep their own dtypes)."""
    dtype = {4: "fp32", 2: "bf16", 1: "fp8"}[kv_itemsize]
    return int(round(float(card.with_kv_dtype(dtype).kv_bytes(length))))
