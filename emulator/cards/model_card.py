"""Model cards: a Hugging Face-style `config.json` reduced to what serving cost depends on.

Why: an operator has a config.json, not prefill-time and KV-size tables. From the config we
derive, per layer kind, the KV bytes a token leaves behind, the fixed state a request holds, the
parameters a token activates (MoE: only its experts) and the attention FLOPs; the roofline
(emulator/cards/roofline.py) turns these into T_prefill(l) and S_kv(l).

Layer kinds:
- `gqa`: full attention, GQA or MHA; KV per token 2 x n_kv_heads x head_dim x dtype bytes
  (K and V widths summed when v_head_dim differs);
- `mla`: multi-head latent attention; KV per token (kv_lora_rank + qk_rope_head_dim) x bytes;
- `swa`: sliding-window GQA; the same per-token KV, but only the last `window` tokens stay;
- `linear`: linear attention (KDA, Gated DeltaNet, Lightning); no per-token KV, a fixed state of
  heads x d_k x d_v in its state dtype plus the short-convolution states.

Families recognised: GQA/MHA (Llama, Mistral, Qwen2/3, Qwen3-MoE, MiniMax-M2, Mixtral), MLA
(DeepSeek-V3, Kimi K2), Kimi Linear (KDA:MLA), Qwen3-Next / Qwen3.5 (GDN:GQA), Bailing/Ring
linear (Lightning:MLA), MiMo-V2 (SWA:GQA). Anything else, or a missing or absurd field, raises
CardError naming the file and key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from emulator.cards import (
    CARDS_DIR,
    MAX_DEPTH,
    CardError,
    card_text,
    check_depth,
    check_name,
    load_named,
    shipped_cards,
)

KINDS = ("gqa", "mla", "swa", "linear")
DTYPE_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "float32": 4,
               "fp32": 4, "float": 4, "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1}
KV_DTYPES = {"fp32": 4, "bf16": 2, "fp8": 1}  # KV-cache dtypes (flags offer bf16 and fp8)
CHUNK = 64  # chunk length of chunked linear-attention kernels (FLA), for their intra-chunk FLOPs
MAX_DIM = 1 << 24  # any head count, dimension or layer count beyond this is a typo

GQA_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
             "minimax_m2", "gemma", "gemma2", "phi3", "glm4_moe", "gpt_oss"}
MLA_TYPES = {"deepseek_v2", "deepseek_v3", "kimi_k2"}
KIMI_LINEAR_TYPES = {"kimi_linear"}
GDN_TYPES = {"qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text"}
BAILING_LINEAR_TYPES = {"bailing_moe_linear", "bailing_moe_v2_5", "bailing_hybrid"}
MIMO_TYPES = {"mimo_v2", "mimo_v2_flash"}


@dataclass(frozen=True)
class LayerGroup:
    """Every layer of one kind (and one geometry) in the model."""

    kind: str
    count: int
    kv_bytes_per_token: float = 0.0  # per layer, in the KV dtype (0 for linear)
    window: int | None = None  # swa only
    state_bytes: float = 0.0  # per layer, fixed per request (linear only)
    pair_flops: float = 0.0  # attention FLOPs per (query, key) pair: 2 x heads x (d_qk + d_v)
    token_flops: float = 0.0  # linear attention FLOPs per token (state update, output, chunk)


@dataclass(frozen=True)
class Matmuls:
    """The model's matmul parameters by the kernel class that runs them (summed over layers).

    `dense` runs every token through (attention projections, dense FFNs, shared experts, the
    router); `routed_active` is what one token's top-k experts hold; `routed_total` every
    routed expert (memory, and the weights a grouped GEMM reads)."""

    dense: float
    routed_active: float = 0.0
    routed_total: float = 0.0
    moe_layers: int = 0
    experts: int = 0
    top_k: int = 0
    hidden: int = 0
    act_width: float = 0.0  # summed widths of the dense/shared FFN activations (elementwise)
    embed: float = 0.0  # embedding and LM-head parameters (vocab x hidden, once if tied)
    heads: int = 1  # attention heads (TP splits them)
    kv_heads: int = 1  # KV heads (TP beyond them replicates the KV); 1 for MLA (latent)


@dataclass(frozen=True)
class ModelCard:
    """What serving cost depends on, derived from one config.json."""

    name: str
    family: str
    dtype: str
    groups: tuple[LayerGroup, ...]
    active_params: float  # parameters in the matmuls one token runs through (MoE: activated)
    source: str = ""  # where the fields rest on (the card's own citation)
    matmul: Matmuls | None = None  # the parameters by operation class (kernel model, memory)
    weight_dtype: str = "bf16"  # the GEMM dtype the checkpoint implies (quantization_config)
    weight_dtype_problem: str = ""  # why no default could be taken (an unmodelled quantization)
    kv_dtype: str = "bf16"  # the dtype of the per-token KV in `groups`
    notes: str = ""
    path: str | None = None
    config: dict = field(default_factory=dict, repr=False)

    @property
    def layers(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for g in self.groups:
            out[g.kind] = out.get(g.kind, 0) + g.count
        return out

    @property
    def num_layers(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes one token adds across all layers that keep a per-token KV (a windowed layer
        counts while the token is inside its window)."""
        return float(sum(g.count * g.kv_bytes_per_token for g in self.groups))

    @property
    def state_bytes(self) -> float:
        """Fixed bytes per request: linear-attention states and short-conv states."""
        return float(sum(g.count * g.state_bytes for g in self.groups))

    def breaks(self) -> list[float]:
        """Lengths where a cost curve changes piece: the sliding windows."""
        return sorted({float(g.window) for g in self.groups if g.kind == "swa" and g.window})

    def kv_bytes(self, length: float | np.ndarray) -> float | np.ndarray:
        """S_kv(l): the KVCache a prefill of l tokens leaves (what crosses the link)."""
        n_tok = np.asarray(length, dtype=float)
        total = np.full_like(n_tok, self.state_bytes)
        for g in self.groups:
            if g.kind in ("gqa", "mla"):
                total = total + g.count * g.kv_bytes_per_token * n_tok
            elif g.kind == "swa":
                total = total + g.count * g.kv_bytes_per_token * np.minimum(n_tok, g.window)
        return float(total) if total.ndim == 0 else total

    def attn_flops_per_token(self, context: float) -> float:
        """Attention FLOPs of the token at position `context` (it attends to `context` keys,
        fewer in a window); linear layers cost a constant per token."""
        out = 0.0
        for g in self.groups:
            if g.kind in ("gqa", "mla"):
                out += g.count * g.pair_flops * context
            elif g.kind == "swa":
                out += g.count * g.pair_flops * min(context, g.window or context)
            else:
                out += g.count * g.token_flops
        return out

    def gemm_flops(self, length: float | np.ndarray) -> float | np.ndarray:
        """Matmul FLOPs of a prefill of l tokens: 2 x active parameters per token."""
        return 2.0 * self.active_params * np.asarray(length, dtype=float)

    def attn_flops(self, length: float | np.ndarray) -> float | np.ndarray:
        """Attention FLOPs of a causal prefill of l tokens: sum over positions i = 1..l of
        attn_flops_per_token(i), in closed form (quadratic for full layers)."""
        n_tok = np.asarray(length, dtype=float)
        total = np.zeros_like(n_tok)
        for g in self.groups:
            if g.kind in ("gqa", "mla"):
                total = total + g.count * g.pair_flops * n_tok * (n_tok + 1) / 2
            elif g.kind == "swa":
                w = float(g.window)
                inside = n_tok * (n_tok + 1) / 2
                beyond = w * (w + 1) / 2 + (n_tok - w) * w
                total = total + g.count * g.pair_flops * np.where(n_tok <= w, inside, beyond)
            else:
                total = total + g.count * g.token_flops * n_tok
        return float(total) if total.ndim == 0 else total

    @property
    def total_params(self) -> float:
        """Every parameter the GPUs must hold (all experts, embeddings)."""
        m = self.matmul
        return float(m.dense + m.routed_total + m.embed) if m else self.active_params

    def with_kv_dtype(self, kv_dtype: str) -> ModelCard:
        """The same model with its per-token KV stored in `kv_dtype` (bf16 or fp8): the fixed
        linear-attention state keeps its own dtype."""
        if kv_dtype == self.kv_dtype:
            return self
        scale = KV_DTYPES[kv_dtype] / KV_DTYPES[self.kv_dtype]
        groups = tuple(replace(g, kv_bytes_per_token=g.kv_bytes_per_token * scale) for g in self.groups)
        return replace(self, groups=groups, kv_dtype=kv_dtype)

    def to_dict(self) -> dict:
        return {"name": self.name, "family": self.family, "dtype": self.dtype,
                "weight_dtype": self.weight_dtype, "kv_dtype": self.kv_dtype,
                "total_params": self.total_params,
                "layers": self.layers, "kv_bytes_per_token": self.kv_bytes_per_token,
                "state_bytes": self.state_bytes, "active_params": self.active_params,
                "windows": {str(int(w)): sum(g.count for g in self.groups if g.window == w)
                            for w in self.breaks()},
                "source": self.source}


# -- reading ------------------------------------------------------------------------------------
class _Fields:
    """Typed, strict access to a config dict; every failure names the file and key."""

    def __init__(self, data: dict, path: str | None, prefix: str = ""):
        self.data, self.path, self.prefix = data, path, prefix

    def key(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def error(self, name: str, message: str) -> CardError:
        return CardError(self.path, self.key(name), message)

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def int(self, name: str, default: int | None = None, *, minimum: int = 1) -> int:
        if not self.has(name):
            if default is None:
                raise self.error(name, "missing (required for this architecture)")
            if default < minimum:  # a default derived from other fields (hidden // heads)
                raise self.error(name, f"missing, and the value derived from the other fields "
                                 f"is {default} (at least {minimum} needed)")
            return default
        return self.whole(name, self.data[name], minimum)

    def whole(self, name: str, v: object, minimum: int = 1, maximum: int = MAX_DIM) -> int:
        """v as a whole number in [minimum, maximum]; the type is checked before any float
        conversion, so a 400-digit integer is refused, not overflowed."""
        if isinstance(v, bool) or not isinstance(v, int | float) \
                or (isinstance(v, float) and not (math.isfinite(v) and v.is_integer())):
            raise self.error(name, f"must be a whole number, got {shown(v)}")
        if not minimum <= v <= maximum:  # int vs int/float compares exactly
            raise self.error(name, f"must be between {minimum} and {maximum}, got {shown(v)}")
        return int(v)

    def first_int(self, names: Iterable[str], default: int | None = None, *,
                  minimum: int = 1) -> int:
        names = list(names)
        for n in names:
            if self.has(n):
                return self.int(n, minimum=minimum)
        if default is None:
            raise self.error(names[0], "missing (required for this architecture; also read as "
                             + ", ".join(names[1:]) + ")" if len(names) > 1 else "missing")
        return default

    def int_list(self, name: str, length: int | None = None, *, lo: int = 0,
                 hi: int = MAX_DIM, unique: bool = False) -> list[int]:
        """A list of whole numbers in [lo, hi] (each once if `unique`), of `length` entries."""
        v = self.data.get(name)
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                              for x in v):
            raise self.error(name, "must be a list of whole numbers")
        if length is not None and len(v) != length:
            raise self.error(name, f"has {len(v)} entries for {length} layers")
        bad = next((x for x in v if not lo <= x <= hi), None)
        if bad is not None:
            raise self.error(name, f"entries must be between {lo} and {hi}, got {shown(bad)}")
        if unique and len(set(v)) != len(v):
            dup = next(x for i, x in enumerate(v) if x in v[:i])
            raise self.error(name, f"lists layer {dup} more than once")
        return v

    def section(self, name: str) -> _Fields:
        v = self.data.get(name)
        if not isinstance(v, dict):
            raise self.error(name, "missing or not an object")
        return _Fields(v, self.path, self.key(name))


def shown(v: object) -> str:
    """A value for a one-line message: short, whatever its size (a 400-digit number)."""
    text = repr(v) if not isinstance(v, int) or abs(v) < 10**30 else f"a {len(str(abs(v)))}-digit number"
    return text if len(text) <= 60 else text[:57] + "..."


def _dtype(f: _Fields, name: str = "torch_dtype") -> tuple[str, int]:
    for key in (name, "dtype"):
        if f.has(key):
            raw = f.data[key]
            if not isinstance(raw, str) or raw.lower() not in DTYPE_BYTES:
                raise f.error(key, f"unknown dtype {raw!r} (known: {', '.join(sorted(DTYPE_BYTES))})")
            return raw.lower(), DTYPE_BYTES[raw.lower()]
    return "bfloat16", 2


def _state_dtype_bytes(f: _Fields) -> int:
    raw = f.data.get("mamba_ssm_dtype", "float32")
    if not isinstance(raw, str) or raw.lower() not in DTYPE_BYTES:
        raise f.error("mamba_ssm_dtype", f"unknown dtype {raw!r}")
    return DTYPE_BYTES[raw.lower()]


def _text(data: dict) -> tuple[dict, str]:
    """Multimodal wrappers keep the language model under text_config; its fields win."""
    tc = data.get("text_config")
    if isinstance(tc, dict):
        merged = {**{k: v for k, v in data.items() if k != "text_config"}, **tc}
        return merged, "text_config."
    return data, ""


def _family(f: _Fields) -> str:
    """The family from model_type / architectures, checked against the structure present."""
    mt = str(f.data.get("model_type", "")).lower()
    archs = f.data.get("architectures") or []
    arch = " ".join(str(a) for a in archs).lower() if isinstance(archs, list) else str(archs).lower()
    if mt in KIMI_LINEAR_TYPES or "kimilinear" in arch or isinstance(f.data.get("linear_attn_config"), dict):
        return "kimi-linear"
    if mt in MIMO_TYPES or "mimov2" in arch or f.has("hybrid_layer_pattern"):
        return "mimo-swa"
    if mt in GDN_TYPES or "qwen3next" in arch or "qwen3_5" in arch or f.has("linear_num_value_heads"):
        return "qwen-gdn"
    if mt in BAILING_LINEAR_TYPES or "bailingmoelinear" in arch or f.has("layer_group_size"):
        return "bailing-lightning"
    if mt in MLA_TYPES or "deepseekv3" in arch or "deepseekv2" in arch:
        return "mla"
    if mt in GQA_TYPES or any(k in arch for k in ("llama", "mistral", "mixtral", "qwen2", "qwen3",
                                                  "minimaxm2", "gemma")):
        return "gqa"
    what = mt or (", ".join(map(str, archs)) if isinstance(archs, list) else str(archs)) or "none given"
    raise CardError(f.path, "model_type" if mt or not archs else "architectures",
                    f"unknown architecture {what!r} (known families: GQA/MHA Llama, Qwen2/3, "
                    "MiniMax-M2; MLA DeepSeek-V3, Kimi K2; hybrids Kimi Linear, Qwen3-Next/3.5, "
                    "Ring/Bailing linear, MiMo-V2)")


# -- per-family geometry ---------------------------------------------------------------------------
def _gqa_geometry(f: _Fields, prefix: str = "") -> dict:
    hidden = f.int("hidden_size")
    heads = f.int(prefix + "num_attention_heads") if prefix else f.int("num_attention_heads")
    kv = f.int(prefix + "num_key_value_heads", heads)
    if kv > heads or heads % kv:
        raise f.error(prefix + "num_key_value_heads", f"{kv} KV heads for {heads} query heads "
                      f"({prefix}num_attention_heads): must divide them")
    head_dim = f.int(prefix + "head_dim", hidden // heads if hidden % heads == 0 else None)
    v_dim = f.int(prefix + "v_head_dim", head_dim)
    return {"hidden": hidden, "heads": heads, "kv": kv, "head_dim": head_dim, "v_dim": v_dim}


def _gqa_group(g: dict, count: int, nbytes: int, kind: str = "gqa", window: int | None = None,
               gate: bool = False) -> tuple[LayerGroup, float]:
    kv_bytes = g["kv"] * (g["head_dim"] + g["v_dim"]) * nbytes
    params = g["hidden"] * (g["heads"] * g["head_dim"] * (2 if gate else 1)
                            + g["kv"] * (g["head_dim"] + g["v_dim"])) \
        + g["heads"] * g["v_dim"] * g["hidden"]
    pair = 2.0 * g["heads"] * (g["head_dim"] + g["v_dim"])
    return LayerGroup(kind, count, kv_bytes, window, 0.0, pair), float(params * count)


def _mla_group(f: _Fields, count: int, nbytes: int) -> tuple[LayerGroup, float]:
    hidden = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    rank = f.int("kv_lora_rank")
    rope = f.int("qk_rope_head_dim")
    nope = f.int("qk_nope_head_dim")
    v_dim = f.int("v_head_dim")
    q_rank = f.int("q_lora_rank", 0, minimum=0)
    d_qk = nope + rope
    q = hidden * q_rank + q_rank * heads * d_qk if q_rank else hidden * heads * d_qk
    params = q + hidden * (rank + rope) + rank * heads * (nope + v_dim) + heads * v_dim * hidden
    pair = 2.0 * heads * (d_qk + v_dim)
    return LayerGroup("mla", count, (rank + rope) * nbytes, None, 0.0, pair), float(params * count)


def _linear_group(count: int, heads_k: int, heads_v: int, d_k: int, d_v: int, conv_channels: int,
                  conv_kernel: int, state_bytes: int, nbytes: int) -> LayerGroup:
    """A linear-attention layer: state heads_v x d_k x d_v (state dtype) plus short-conv states
    of (kernel - 1) x channels (model dtype); FLOPs per token from the chunked algorithm: state
    update and read-out (4 x heads x d_k x d_v) and the intra-chunk products."""
    state = heads_v * d_k * d_v * state_bytes + max(conv_kernel - 1, 0) * conv_channels * nbytes
    flops = 4.0 * heads_v * d_k * d_v + 2.0 * CHUNK * max(heads_k, heads_v) * (d_k + d_v)
    return LayerGroup("linear", count, 0.0, None, float(state), 0.0, flops)


def _ffn(f: _Fields, n_layers: int) -> dict:
    """The FFN matmul parameters, summed over layers, split by kernel class (see Matmuls)."""
    hidden = f.int("hidden_size")
    experts = f.first_int(("n_routed_experts", "num_experts", "num_local_experts"), 0, minimum=0)
    if experts == 0:
        width = f.int("intermediate_size")
        return {"dense": float(n_layers * 3 * hidden * width), "act_width": float(n_layers * width)}
    top_k_keys = ("num_experts_per_tok", "num_experts_per_token", "moe_topk")
    top_k = f.first_int(top_k_keys)
    if top_k > experts:
        raise f.error(next(k for k in top_k_keys if f.has(k)),
                      f"{top_k} experts per token for {experts} experts")
    expert_size = f.first_int(("moe_intermediate_size", "intermediate_size"))
    shared = 0
    if f.has("shared_expert_intermediate_size"):
        shared = f.int("shared_expert_intermediate_size", minimum=0)
    else:
        shared = f.first_int(("n_shared_experts", "num_shared_experts"), 0, minimum=0) * expert_size
    if isinstance(f.data.get("moe_layer_freq"), list):
        freq = f.int_list("moe_layer_freq", n_layers, hi=1)
        dense = sum(1 for x in freq if not x)
    else:
        dense = f.int("first_k_dense_replace", 0, minimum=0)
        dense = min(dense, n_layers)
    dense_size = f.first_int(("dense_intermediate_size", "intermediate_size"), expert_size)
    moe = n_layers - dense
    return {"dense": float(dense * 3 * hidden * dense_size + moe * (3 * hidden * shared + hidden * experts)),
            "routed_active": float(moe * 3 * hidden * top_k * expert_size),
            "routed_total": float(moe * 3 * hidden * experts * expert_size),
            "moe_layers": moe, "experts": experts, "top_k": top_k,
            "act_width": float(dense * dense_size + moe * shared)}


def _quant_dtype(f: _Fields, torch_dtype: str) -> tuple[str, str]:
    """The GEMM dtype a checkpoint is served in by default, from quantization_config (FP8
    checkpoints: DeepSeek-V3, *-FP8 releases) or an 8-bit torch_dtype; ("", why) when the
    checkpoint uses a quantization this model does not cover (the flag then decides)."""
    q = f.data.get("quantization_config")
    if DTYPE_BYTES.get(torch_dtype) == 1:
        return "fp8", ""
    if not isinstance(q, dict):
        return "bf16", ""
    method = str(q.get("quant_method", "")).lower()
    algo = str(q.get("quant_algo", "")).lower()
    fmt = str(q.get("fmt", "")).lower()
    if method == "fp8" or "fp8" in algo or fmt.startswith("e4m3") or fmt.startswith("float8"):
        return "fp8", ""
    groups = q.get("config_groups")
    if method == "compressed-tensors" and isinstance(groups, dict):
        w = [g.get("weights", {}) for g in groups.values() if isinstance(g, dict)]
        if w and all(isinstance(x, dict) and x.get("num_bits") == 8 and x.get("type") == "float"
                     for x in w):
            return "fp8", ""
        if w and all(isinstance(x, dict) and x.get("num_bits") == 4 and x.get("type") == "int"
                     for x in w):
            return "int4", ""  # W4A16 experts (Kimi K2 Thinking's release)
    return "", (f"quantization_config: {method or algo or 'this quantization'} is not modelled "
                "(bf16, fp8, int4 experts): give the dtype to serve it in (--dtype)")


def _kv_quant(f: _Fields) -> str:
    """fp8 when the checkpoint asks for an FP8 KV cache, else bf16."""
    q = f.data.get("quantization_config")
    if isinstance(q, dict):
        kv = q.get("kv_cache_quant_algo") or q.get("kv_cache_scheme")
        if (isinstance(kv, str) and "fp8" in kv.lower()) or \
                (isinstance(kv, dict) and kv.get("num_bits") == 8 and kv.get("type") == "float"):
            return "fp8"
    return "bf16"


def from_dict(data: dict, path: str | Path | None = None, name: str | None = None) -> ModelCard:
    """A ModelCard from a parsed config.json (the `_card` object, if any, is the citation)."""
    spath = str(path) if path else None
    if not isinstance(data, dict):
        raise CardError(spath, "", "a config.json must hold one JSON object")
    meta = data.get("_card") if isinstance(data.get("_card"), dict) else {}
    for key in ("name", "source", "notes"):
        if key in meta and not isinstance(meta[key], str):
            raise CardError(spath, f"_card.{key}", f"must be a string, got {shown(meta[key])}")
    if name is None and "name" in meta:
        check_name(meta["name"], spath, "_card.name")
    flat, pre = _text(data)
    f = _Fields(flat, spath)
    family = _family(f)
    n = f.int("num_hidden_layers")
    dtype, nbytes = _dtype(f)
    hidden = f.int("hidden_size")
    vocab = f.int("vocab_size", 0, minimum=0)
    groups: list[LayerGroup] = []
    attn_params = 0.0
    attn_heads = f.int("num_attention_heads")
    kv_heads = 1 if f.has("kv_lora_rank") else f.int("num_key_value_heads", attn_heads)

    if family == "gqa":
        grp, p = _gqa_group(_gqa_geometry(f), n, nbytes)
        groups, attn_params = [grp], p
    elif family == "mla":
        grp, p = _mla_group(f, n, nbytes)
        groups, attn_params = [grp], p
    elif family == "kimi-linear":
        lin = f.section("linear_attn_config")
        full = lin.int_list("full_attn_layers", lo=1, hi=n, unique=True)
        kda = lin.int_list("kda_layers", lo=1, hi=n, unique=True) if lin.has("kda_layers") \
            else [i for i in range(1, n + 1) if i not in set(full)]
        if sorted(set(full) | set(kda)) != list(range(1, n + 1)) or set(full) & set(kda):
            raise lin.error("full_attn_layers", f"full_attn_layers and kda_layers must split "
                            f"layers 1..{n} (num_hidden_layers) between them")
        heads, d = lin.int("num_heads"), lin.int("head_dim")
        kernel = lin.int("short_conv_kernel_size", 4)
        grp, p = _mla_group(f, len(full), nbytes)
        kda_grp = _linear_group(len(kda), heads, heads, d, d, 3 * heads * d, kernel,
                                _state_dtype_bytes(f), nbytes)
        # q, k, v, o projections plus the low-rank (rank head_dim) forget and output gates
        kda_params = len(kda) * (4 * hidden * heads * d + 2 * (hidden * d + d * heads * d))
        groups, attn_params = [kda_grp, grp], p + kda_params
    elif family == "qwen-gdn":
        if f.has("layer_types") and not isinstance(flat["layer_types"], list):
            raise f.error("layer_types", "must be a list of linear_attention / full_attention")
        if isinstance(flat.get("layer_types"), list):
            types = flat["layer_types"]
            if len(types) != n or not all(t in ("linear_attention", "full_attention")
                                          for t in types):
                raise f.error("layer_types", f"must list {n} entries of linear_attention / "
                              "full_attention")
            n_full = types.count("full_attention")
        else:
            interval = f.int("full_attention_interval")
            n_full = n // interval
        hk, hv = f.int("linear_num_key_heads"), f.int("linear_num_value_heads")
        dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
        kernel = f.int("linear_conv_kernel_dim", 4)
        lin_grp = _linear_group(n - n_full, hk, hv, dk, dv, 2 * hk * dk + hv * dv, kernel,
                                _state_dtype_bytes(f), nbytes)
        gate = bool(flat.get("attn_output_gate", family == "qwen-gdn"))
        grp, p = _gqa_group(_gqa_geometry(f), n_full, nbytes, gate=gate)
        lin_params = (n - n_full) * (hidden * (2 * hk * dk + 2 * hv * dv + 2 * hv) + hv * dv * hidden)
        groups, attn_params = [lin_grp, grp], p + lin_params
    elif family == "bailing-lightning":
        group_size = f.int("layer_group_size")
        # every group_size-th layer and any trailing remainder are full attention
        full_idx = [i for i in range(n) if (i + 1) % group_size == 0 or i >= (n // group_size) * group_size]
        heads = f.int("num_attention_heads")
        d = f.int("linear_head_dim", f.int("head_dim", hidden // heads))
        lin_grp = _linear_group(n - len(full_idx), heads, heads, d, d, 0, 0,
                                _state_dtype_bytes(f), nbytes)
        lin_params = (n - len(full_idx)) * 5 * hidden * heads * d  # q, k, v, gate, out
        if f.has("kv_lora_rank"):
            grp, p = _mla_group(f, len(full_idx), nbytes)
        else:
            grp, p = _gqa_group(_gqa_geometry(f), len(full_idx), nbytes)
        groups, attn_params = [lin_grp, grp], p + lin_params
    elif family == "mimo-swa":
        pattern = f.int_list("hybrid_layer_pattern", n, hi=1)
        if not set(pattern) <= {0, 1}:
            raise f.error("hybrid_layer_pattern", "entries must be 0 (full) or 1 (sliding window)")
        window = f.first_int(("sliding_window", "sliding_window_size"))
        full_g = _gqa_geometry(f)
        swa_g = {**full_g, "heads": f.int("swa_num_attention_heads", full_g["heads"]),
                 "kv": f.int("swa_num_key_value_heads", full_g["kv"]),
                 "head_dim": f.int("swa_head_dim", full_g["head_dim"]),
                 "v_dim": f.int("swa_v_head_dim", full_g["v_dim"])}
        g1, p1 = _gqa_group(full_g, pattern.count(0), nbytes)
        g2, p2 = _gqa_group(swa_g, pattern.count(1), nbytes, kind="swa", window=window)
        groups, attn_params = [g for g in (g2, g1) if g.count], p1 + p2

    ffn = _ffn(f, n)
    active = attn_params + ffn["dense"] + ffn.get("routed_active", 0.0) + vocab * hidden  # + LM head
    tied = flat.get("tie_word_embeddings") is True
    matmul = Matmuls(dense=attn_params + ffn["dense"], routed_active=ffn.get("routed_active", 0.0),
                     routed_total=ffn.get("routed_total", 0.0), moe_layers=ffn.get("moe_layers", 0),
                     experts=ffn.get("experts", 0), top_k=ffn.get("top_k", 0), hidden=hidden,
                     act_width=ffn["act_width"], embed=float(vocab * hidden * (1 if tied else 2)),
                     heads=attn_heads, kv_heads=kv_heads)
    wdtype, problem = _quant_dtype(f, dtype)
    kv_quant = _kv_quant(f)
    label = name or str(meta.get("name") or (Path(path).parent.name if path and Path(path).name
                                              == "config.json" else Path(path).stem if path else "model"))
    card = ModelCard(name=label, family=family, dtype=dtype, groups=tuple(groups),
                     active_params=float(active), source=str(meta.get("source", "")),
                     notes=str(meta.get("notes", "")), path=spath, config=data, matmul=matmul,
                     weight_dtype=wdtype, weight_dtype_problem=problem,
                     kv_dtype={4: "fp32", 2: "bf16", 1: "fp8"}[nbytes])
    return card.with_kv_dtype("fp8") if kv_quant == "fp8" else card


def read_config(path: str | Path, name: str | None = None) -> ModelCard:
    """A ModelCard from a config.json on disk (UTF-8 JSON, finite numbers)."""
    p = Path(path)
    text = card_text(p)

    def no_constants(token: str):
        raise ValueError(f"{token} is not a finite number")

    try:
        data = json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as exc:
        raise CardError(p, "", f"malformed JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise CardError(p, "", f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # a constant, or an integer of over 4,300 digits
        raise CardError(p, "", str(exc).split(";")[0]) from None
    check_depth(data, p)
    return from_dict(data, p, name)


def shipped_dir() -> Path:
    return CARDS_DIR / "models"


def shipped() -> list[str]:
    return shipped_cards("models", ".json")


def load_card(name_or_path: str | Path) -> ModelCard:
    """A shipped card by name (emulator/cards/models/NAME.json) or a config.json path."""
    return load_named(name_or_path, "models", ".json", read_config, "model card")
