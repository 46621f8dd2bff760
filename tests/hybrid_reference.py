"""Hand computations of what a request holds per layer, from a published config.json's own fields.

Why a separate module: the family tests compare the cards (emulator.cards.model_card) with these
numbers, so they must not share a line of code with them. Each function reads the config the way
the architecture's reference implementation does (cited per family) and returns a `Hand`: the
layers by cache kind, the bytes each token leaves in the layers that keep every token, the layers
that keep a bounded number of tokens (a sliding window; a Llama-4 attention chunk), the fixed
state of a request, and the parameter counts.

Conventions (shared with the cards): per-token KV in the model's dtype (bf16, 2 bytes) unless the
checkpoint asks for an fp8 KV cache; convolution states (kernel - 1) x channels in the model's
dtype; SSM, linear-attention and lightning states in fp32 unless the config names a state dtype.
Parameters count the matmuls and the embeddings (once if tied); the active count is what one
token runs through plus the LM head (the input embedding is a lookup, not a matmul). Norms,
biases and gates of a few thousand entries are left out: they are far below the 2% tolerance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

CONFIGS = Path(__file__).resolve().parent / "configs"
BF16, FP32, FP8 = 2, 4, 1
MXFP4_BITS = 4.25  # 4-bit E2M1 values plus one 8-bit E8M0 scale per 32 values


def load(name: str) -> dict:
    """A config under tests/configs as published (Infinity allowed, as Python's json reads it)."""
    return json.loads((CONFIGS / f"{name}.json").read_text())


@dataclass(frozen=True)
class Hand:
    """What the hand computation says a request of l tokens holds, and the parameter counts."""

    layers: dict[str, int]
    every_token: float  # bytes per token over the layers that keep every token (gqa, mla)
    bounded: tuple[tuple[float, int], ...] = ()  # (bytes per token over the layers, token cap)
    state: float = 0.0  # fixed bytes per request
    total: float = 0.0
    active: float = 0.0
    extra: dict = field(default_factory=dict)  # family-specific figures a test may check

    def kv(self, length: int) -> float:
        """S_kv(l): every-token layers x l, bounded layers x min(l, cap), plus the state."""
        return (self.every_token * length
                + sum(b * min(length, cap) for b, cap in self.bounded) + self.state)


def _attn(hidden: int, heads: int, kv_heads: int, head_dim: int, *, v: bool = True) -> int:
    """q, k, (v,) o projections of one attention layer."""
    return hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * (2 if v else 1)


def _kv(kv_heads: int, head_dim: int, nbytes: int = BF16) -> int:
    """Bytes one token leaves in one attention layer: a K and a V per KV head."""
    return 2 * kv_heads * head_dim * nbytes


# -- sliding-window and chunked attention ----------------------------------------------------------
def gpt_oss(c: dict) -> Hand:
    """gpt-oss: `layer_types` names each layer sliding_attention (window `sliding_window`) or
    full_attention (transformers models/gpt_oss/configuration_gpt_oss.py: the default
    alternates, sliding first); MoE in every layer, experts SwiGLU of width intermediate_size;
    mxfp4 experts (quantization_config.quant_method), attention and router kept in bf16."""
    n, h = c["num_hidden_layers"], c["hidden_size"]
    types = c["layer_types"]
    n_swa, n_full = types.count("sliding_attention"), types.count("full_attention")
    per = _kv(c["num_key_value_heads"], c["head_dim"])
    attn = _attn(h, c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"])
    expert = 3 * h * c["intermediate_size"]
    experts = n * c["num_local_experts"] * expert
    embed = c["vocab_size"] * h
    dense = n * (attn + h * c["num_local_experts"])  # attention and router
    return Hand({"gqa": n_full, "swa": n_swa}, n_full * per, ((n_swa * per, c["sliding_window"]),),
                total=dense + experts + 2 * embed,
                active=dense + n * c["num_experts_per_tok"] * expert + embed,
                extra={"expert_params": experts, "dense_params": dense, "embed_params": 2 * embed})


def llama4(c: dict) -> Hand:
    """Llama-4 (text_config): `no_rope_layers[i]` is 1 for a RoPE layer, which attends within
    its chunk of `attention_chunk_size` tokens, and 0 for a NoPE layer, which attends to all;
    absent, every 4th layer is NoPE (transformers models/llama4/configuration_llama4.py,
    no_rope_layer_interval = 4; modeling_llama4.py: chunked_attention for RoPE layers).
    A chunked layer holds the current chunk only: at most `attention_chunk_size` tokens, so
    the transfer carries min(l, chunk) of them. MoE every `interleave_moe_layer_step` layers:
    routed experts and one shared expert of width intermediate_size, the other layers a dense
    MLP of width intermediate_size_mlp."""
    t = c["text_config"]
    n, h = t["num_hidden_layers"], t["hidden_size"]
    rope = t.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(n)]
    n_chunked, n_full = sum(rope), n - sum(rope)
    per = _kv(t["num_key_value_heads"], t["head_dim"])
    attn = _attn(h, t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"])
    step = t["interleave_moe_layer_step"]
    n_moe = len(range(step - 1, n, step))
    expert = 3 * h * t["intermediate_size"]
    experts = n_moe * t["num_local_experts"] * expert
    dense = n * attn + n_moe * (expert + h * t["num_local_experts"]) \
        + (n - n_moe) * 3 * h * t["intermediate_size_mlp"]
    embed = t["vocab_size"] * h
    return Hand({"gqa": n_full, "chunked": n_chunked}, n_full * per,
                ((n_chunked * per, t["attention_chunk_size"]),),
                total=dense + experts + 2 * embed,
                active=dense + n_moe * t["num_experts_per_tok"] * expert + embed)


def mistral(c: dict) -> Hand:
    """Mistral / Ministral: `layer_types` if given; without it every layer slides over
    `sliding_window` when one is set (transformers models/mistral/modeling_mistral.py: each
    MistralAttention passes the config's sliding_window; vLLM's llama.py leaves the per-layer
    window unset without layer_types and its Attention takes the model's sliding_window
    instead). head_dim, SwiGLU MLP of intermediate_size, embeddings untied."""
    n, h = c["num_hidden_layers"], c["hidden_size"]
    types = c.get("layer_types") or (["sliding_attention"] * n if c.get("sliding_window")
                                     else ["full_attention"] * n)
    n_swa, n_full = types.count("sliding_attention"), types.count("full_attention")
    per = _kv(c["num_key_value_heads"], c["head_dim"])
    attn = _attn(h, c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"])
    dense = n * (attn + 3 * h * c["intermediate_size"])
    embed = c["vocab_size"] * h
    bounded = ((n_swa * per, c["sliding_window"]),) if n_swa else ()
    return Hand({k: v for k, v in (("gqa", n_full), ("swa", n_swa)) if v}, n_full * per, bounded,
                total=dense + 2 * embed, active=dense + embed)


def gemma2(c: dict) -> Hand:
    """Gemma-2: `layer_types` if given, else layers alternate sliding (even index, window
    `sliding_window`) and global (transformers models/gemma2/configuration_gemma2.py); GeGLU
    MLP; embeddings tied."""
    n, h = c["num_hidden_layers"], c["hidden_size"]
    types = c.get("layer_types") or ["sliding_attention" if (i + 1) % 2 else "full_attention"
                                     for i in range(n)]
    n_swa, n_full = types.count("sliding_attention"), types.count("full_attention")
    per = _kv(c["num_key_value_heads"], c["head_dim"])
    attn = _attn(h, c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"])
    dense = n * (attn + 3 * h * c["intermediate_size"])
    embed = c["vocab_size"] * h
    return Hand({"gqa": n_full, "swa": n_swa}, n_full * per, ((n_swa * per, c["sliding_window"]),),
                total=dense + embed, active=dense + embed)


def gemma3(c: dict) -> Hand:
    """Gemma-3 (text_config): `layer_types` if given, else every `sliding_window_pattern`-th
    layer (default 6) is global and the others slide over `sliding_window` tokens
    (transformers models/gemma3/configuration_gemma3.py); head_dim, GeGLU MLP; vocab_size
    defaults to 262208 when text_config leaves it out; embeddings tied (Gemma's default)."""
    t = c["text_config"]
    n, h = t["num_hidden_layers"], t["hidden_size"]
    pattern = t.get("sliding_window_pattern", 6)
    types = t.get("layer_types") or ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                     for i in range(n)]
    n_swa, n_full = types.count("sliding_attention"), types.count("full_attention")
    per = _kv(t["num_key_value_heads"], t["head_dim"])
    attn = _attn(h, t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"])
    dense = n * (attn + 3 * h * t["intermediate_size"])
    embed = t.get("vocab_size", 262208) * h
    return Hand({"gqa": n_full, "swa": n_swa}, n_full * per, ((n_swa * per, t["sliding_window"]),),
                total=dense + embed, active=dense + embed)


def gemma4(c: dict) -> Hand:
    """Gemma-4 (text_config): `layer_types`; sliding layers use num_key_value_heads x head_dim,
    full layers num_global_key_value_heads x global_head_dim, and with attention_k_eq_v they
    have no v_proj (V is the K projection, normed apart, so the cache still keeps a K and a V)
    (transformers models/gemma4/configuration_gemma4.py per_layer_config). Every layer runs a
    dense GeGLU MLP of intermediate_size next to the MoE block: num_experts experts of
    moe_intermediate_size, top_k_experts per token. Embeddings tied."""
    t = c["text_config"]
    n, h, heads = t["num_hidden_layers"], t["hidden_size"], t["num_attention_heads"]
    types = t["layer_types"]
    n_swa, n_full = types.count("sliding_attention"), types.count("full_attention")
    kv_g, d_g = t["num_global_key_value_heads"], t["global_head_dim"]
    k_eq_v = t.get("attention_k_eq_v", False)
    attn = n_swa * _attn(h, heads, t["num_key_value_heads"], t["head_dim"]) \
        + n_full * _attn(h, heads, kv_g, d_g, v=not k_eq_v)
    expert = 3 * h * t["moe_intermediate_size"]
    dense = attn + n * (3 * h * t["intermediate_size"] + h * t["num_experts"])
    embed = t["vocab_size"] * h
    return Hand({"gqa": n_full, "swa": n_swa}, n_full * _kv(kv_g, d_g),
                ((n_swa * _kv(t["num_key_value_heads"], t["head_dim"]), t["sliding_window"]),),
                total=dense + n * t["num_experts"] * expert + embed,
                active=dense + n * t["top_k_experts"] * expert + embed,
                extra={"top_k": t["top_k_experts"]})


# -- state-space and lightning hybrids ---------------------------------------------------------------
def nemotron_h(c: dict) -> Hand:
    """Nemotron-H: `hybrid_override_pattern`, one character per layer: M a Mamba-2 mixer, * an
    attention layer, - an MLP and E an MoE layer (neither keeps a cache) (transformers
    models/nemotron_h, vLLM model_executor/models/nemotron_h.py). Mamba-2: d_inner =
    mamba_num_heads x mamba_head_dim; conv over d_inner + 2 x n_groups x ssm_state_size
    channels, kernel conv_kernel; state heads x head_dim x ssm_state_size in
    mamba_ssm_cache_dtype (fp32 when absent). Attention heads of attention_head_dim (head_dim
    in later configs). MLPs and experts are ReLU^2, up and down only: intermediate_size for
    an MLP layer; n_routed_experts of moe_intermediate_size plus a shared expert of
    moe_shared_expert_intermediate_size for an MoE layer."""
    p, h = c["hybrid_override_pattern"], c["hidden_size"]
    n_m, n_a, n_mlp, n_moe = p.count("M"), p.count("*"), p.count("-"), p.count("E")
    heads, hd, ds, g = c["mamba_num_heads"], c["mamba_head_dim"], c["ssm_state_size"], c["n_groups"]
    d_inner = heads * hd
    conv_ch = d_inner + 2 * g * ds
    ssm_bytes = {"float32": FP32, "bfloat16": BF16}[c.get("mamba_ssm_cache_dtype", "float32")]
    state = (c["conv_kernel"] - 1) * conv_ch * BF16 + heads * hd * ds * ssm_bytes
    mamba = h * (2 * d_inner + 2 * g * ds + heads) + conv_ch * c["conv_kernel"] + d_inner * h
    d = c.get("attention_head_dim") or c["head_dim"]
    attn = _attn(h, c["num_attention_heads"], c["num_key_value_heads"], d)
    dense = n_m * mamba + n_a * attn + n_mlp * 2 * h * c["intermediate_size"]
    experts = active_experts = 0
    if n_moe:
        expert = 2 * h * c["moe_intermediate_size"]
        dense += n_moe * (2 * h * c["moe_shared_expert_intermediate_size"] + h * c["n_routed_experts"])
        experts = n_moe * c["n_routed_experts"] * expert
        active_experts = n_moe * c["num_experts_per_tok"] * expert
    embed = c["vocab_size"] * h
    return Hand({"ssm": n_m, "gqa": n_a}, n_a * _kv(c["num_key_value_heads"], d),
                state=n_m * state, total=dense + experts + 2 * embed,
                active=dense + active_experts + embed, extra={"state_per_layer": state})


def jamba(c: dict) -> Hand:
    """Jamba: layer i is attention when i % attn_layer_period == attn_layer_offset, else a
    Mamba-1 mixer; it is MoE (num_experts SwiGLU experts of intermediate_size, a router) when
    i % expert_layer_period == expert_layer_offset, else a dense SwiGLU MLP of the same width
    (transformers models/jamba/configuration_jamba.py, layers_block_type and
    layers_num_experts). Mamba-1 (modeling_jamba.py, JambaMambaMixer): d_inner = mamba_expand
    x hidden; conv over d_inner channels, kernel mamba_d_conv; SSM state d_inner x
    mamba_d_state (fp32 by the shared convention: the config names no state dtype); in_proj
    to 2 x d_inner, x_proj to dt_rank + 2 x d_state, dt_proj back to d_inner, A_log, out_proj.
    Attention heads of hidden / num_attention_heads; no sliding window (sliding_window null)."""
    n, h = c["num_hidden_layers"], c["hidden_size"]
    kinds = ["gqa" if i % c["attn_layer_period"] == c["attn_layer_offset"] else "ssm" for i in range(n)]
    n_a, n_m = kinds.count("gqa"), kinds.count("ssm")
    moe = [i % c["expert_layer_period"] == c["expert_layer_offset"] for i in range(n)]
    n_moe = sum(moe)
    d_inner, ds, k = c["mamba_expand"] * h, c["mamba_d_state"], c["mamba_d_conv"]
    dt_rank = c["mamba_dt_rank"]
    state = (k - 1) * d_inner * BF16 + d_inner * ds * FP32
    mamba = h * 2 * d_inner + d_inner * k + d_inner * (dt_rank + 2 * ds) + dt_rank * d_inner \
        + d_inner * ds + d_inner * h
    d = h // c["num_attention_heads"]
    attn = _attn(h, c["num_attention_heads"], c["num_key_value_heads"], d)
    mlp = 3 * h * c["intermediate_size"]
    dense = n_m * mamba + n_a * attn + (n - n_moe) * mlp + n_moe * h * c["num_experts"]
    embed = c["vocab_size"] * h
    return Hand({"gqa": n_a, "ssm": n_m}, n_a * _kv(c["num_key_value_heads"], d),
                state=n_m * state, total=dense + n_moe * c["num_experts"] * mlp + 2 * embed,
                active=dense + n_moe * c["num_experts_per_tok"] * mlp + embed,
                extra={"state_per_layer": state, "moe_layers": n_moe})


def minimax_m1(c: dict) -> Hand:
    """MiniMax-M1 / Text-01: `attn_type_list[i]` is 0 for a lightning (linear) attention layer
    and 1 for softmax attention (MiniMax modeling_minimax_m1.py). A lightning layer keeps a
    state of num_attention_heads x head_dim x head_dim (vLLM minimax_text_01.py,
    MambaStateShapeCalculator.linear_attention_state_shape), fp32 by the shared convention.
    Lightning layers project q, k, v and an output gate of heads x head_dim; MoE of
    num_local_experts SwiGLU experts in every layer."""
    n, h = c["num_hidden_layers"], c["hidden_size"]
    kinds = c["attn_type_list"]
    n_full, n_lin = kinds.count(1), kinds.count(0)
    heads, d = c["num_attention_heads"], c["head_dim"]
    lightning = 3 * h * heads * d + h * heads * d + heads * d * h  # qkv, gate, out
    attn = n_lin * lightning + n_full * _attn(h, heads, c["num_key_value_heads"], d)
    expert = 3 * h * c["intermediate_size"]
    dense = attn + n * h * c["num_local_experts"]
    embed = c["vocab_size"] * h
    return Hand({"gqa": n_full, "lightning": n_lin}, n_full * _kv(c["num_key_value_heads"], d),
                state=n_lin * heads * d * d * FP32,
                total=dense + n * c["num_local_experts"] * expert + 2 * embed,
                active=dense + n * c["num_experts_per_tok"] * expert + embed)


# -- latent attention with a sparse indexer ------------------------------------------------------------
def deepseek_v32(c: dict) -> Hand:
    """DeepSeek-V3.2: MLA in every layer (latent kv_lora_rank + rope key qk_rope_head_dim per
    token) plus the lightning indexer's key cache: index_head_dim fp8 bytes and one fp32
    scale per token per layer (vLLM model_executor/models/deepseek_v2.py, Indexer). MoE after
    first_k_dense_replace dense layers: n_routed_experts + n_shared_experts of
    moe_intermediate_size, num_experts_per_tok routed per token. The MTP layer is not counted
    (the published 671B leaves it out)."""
    n, h, heads = c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"]
    q_rank, rank, rope = c["q_lora_rank"], c["kv_lora_rank"], c["qk_rope_head_dim"]
    nope, v = c["qk_nope_head_dim"], c["v_head_dim"]
    mla = h * q_rank + q_rank * heads * (nope + rope) + h * (rank + rope) \
        + rank * heads * (nope + v) + heads * v * h
    ih, idim = c["index_n_heads"], c["index_head_dim"]
    indexer = q_rank * ih * idim + h * idim + h * ih
    k = c["first_k_dense_replace"]
    expert = 3 * h * c["moe_intermediate_size"]
    dense = n * (mla + indexer) + k * 3 * h * c["intermediate_size"] \
        + (n - k) * (c["n_shared_experts"] * expert + h * c["n_routed_experts"])
    embed = c["vocab_size"] * h
    per = (rank + rope) * BF16 + idim * FP8 + FP32
    return Hand({"mla": n}, n * per,
                total=dense + (n - k) * c["n_routed_experts"] * expert + 2 * embed,
                active=dense + (n - k) * c["num_experts_per_tok"] * expert + embed,
                extra={"latent_per_token": n * (rank + rope) * BF16,
                       "indexer_per_token": n * (idim * FP8 + FP32)})


# -- the control: a gated-DeltaNet hybrid the cards read today ----------------------------------------
def qwen35(c: dict) -> Hand:
    """Qwen3.5 (text_config): `layer_types` linear_attention (gated DeltaNet: state
    linear_num_value_heads x linear_key_head_dim x linear_value_head_dim, conv over
    2 x key heads x key dim + value heads x value dim channels) or full_attention (gated
    query: q_proj twice as wide); MoE with one shared expert of
    shared_expert_intermediate_size (transformers models/qwen3_5_moe)."""
    t = c["text_config"]
    n, h = t["num_hidden_layers"], t["hidden_size"]
    types = t["layer_types"]
    n_lin, n_full = types.count("linear_attention"), types.count("full_attention")
    hk, hv = t["linear_num_key_heads"], t["linear_num_value_heads"]
    dk, dv = t["linear_key_head_dim"], t["linear_value_head_dim"]
    conv_ch = 2 * hk * dk + hv * dv
    state = hv * dk * dv * FP32 + (t["linear_conv_kernel_dim"] - 1) * conv_ch * BF16
    heads, kv, d = t["num_attention_heads"], t["num_key_value_heads"], t["head_dim"]
    full = h * heads * d + _attn(h, heads, kv, d)  # the output gate doubles q_proj
    lin = h * (2 * hk * dk + 2 * hv * dv + 2 * hv) + hv * dv * h
    expert = 3 * h * t["moe_intermediate_size"]
    dense = n_full * full + n_lin * lin \
        + n * (3 * h * t["shared_expert_intermediate_size"] + h * t["num_experts"])
    embed = t["vocab_size"] * h
    return Hand({"gqa": n_full, "linear": n_lin}, n_full * _kv(kv, d), state=n_lin * state,
                total=dense + n * t["num_experts"] * expert + 2 * embed,
                active=dense + n * t["num_experts_per_tok"] * expert + embed)


# name -> (hand computation, published total, published active, where published)
FAMILIES: dict[str, tuple] = {
    "gpt-oss-20b": (gpt_oss, 20.91e9, 3.61e9, "OpenAI gpt-oss model card: 20.91B total, 3.61B active"),
    "gpt-oss-120b": (gpt_oss, 116.83e9, 5.13e9, "OpenAI gpt-oss model card: 116.83B total, 5.13B active"),
    "llama-4-scout-17b-16e-instruct": (llama4, 109e9, 17e9,
                                       "Meta: Llama 4 Scout, 17B active / 109B total (with vision)"),
    "ministral-8b-instruct-2410": (mistral, 8.02e9, None,
                                   "Mistral AI: Ministral-8B-Instruct-2410, 8.02B parameters (model card)"),
    "gemma-2-2b-it": (gemma2, 2.61e9, None, "Google: Gemma 2 2B, 2.61B parameters"),
    "medgemma-27b-it": (gemma3, 27.4e9, None, "Google: Gemma 3 27B / MedGemma 27B, 27.4B with vision"),
    "gemma-4-26b-a4b": (gemma4, 25.2e9, 3.8e9, "Google: Gemma 4 26B A4B, 25.2B total, 3.8B active"),
    "nemotron-h-56b": (nemotron_h, 56e9, None, "NVIDIA: Nemotron-H-56B-Base-8K, 56B"),
    "nemotron-3-nano-30b-a3b": (nemotron_h, 31.6e9, 3.2e9,
                                "NVIDIA: Nemotron 3 Nano 30B-A3B, 31.6B total, 3.2B active"),
    "ai21-jamba-1.5-mini": (jamba, 52e9, 12e9,
                            "AI21: Jamba 1.5 Mini, 52B total, 12B active (model card)"),
    "minimax-m1": (minimax_m1, 456e9, 45.9e9, "MiniMax-M1 report: 456B total, 45.9B activated"),
    "deepseek-v3.2": (deepseek_v32, 671e9, 37e9, "DeepSeek-V3.2: 671B total (685B with MTP), 37B active"),
    "qwen3.5-35b-a3b": (qwen35, 35e9, 3e9, "Qwen: Qwen3.5-35B-A3B, 35B total, 3B active"),
}


def hand(name: str) -> Hand:
    return FAMILIES[name][0](load(name))
