"""One reader per model family, in a registry: each turns a config.json into layer groups (what
each layer keeps per request, emulator/cards/layers.py) and the parameters of its matmuls.

Why a registry: a family's layer list comes from its own fields (`layer_types`,
`hybrid_override_pattern`, `attn_layer_period/offset`, `layers_block_type`,
`sliding_window_pattern`, `attn_type_list`, `no_rope_layers`) and its architecture's documented
defaults when they are absent (transformers' configuration_<family>.py); one small function per
family keeps each rule readable and testable on its own. A family is found by `model_type`, then
by `architectures`, then by a field only it has (`READERS`, first match wins).

Every reader returns a `Build`; parameters are counted per layer from the projections the
reference implementation holds (biases only where the family has them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from emulator.cards import CardError
from emulator.cards.fields import Fields, state_dtype_bytes
from emulator.cards.layers import LayerGroup, gqa_group, linear_group, ssm_group

ATTENTION_WORDS = {"full_attention": "gqa", "sliding_attention": "swa",
                   "chunked_attention": "chunked"}


@dataclass
class Build:
    """What a reader found: the layer groups, the mixers' matmul parameters (attention or SSM
    projections, summed over layers), and the FFN (None: the generic reader over every layer)."""

    groups: list[LayerGroup]
    mixer_params: float
    ffn: dict | None = None
    depth: int | None = None  # decoder layers, when groups overlap (parallel mixers) or skip some
    reused: float = 0.0  # parameters run at several layers but stored once (shared blocks)
    embed_extra: float = 0.0  # lookup tables besides vocab x hidden (held, never multiplied)
    vocab: int = 0  # the architecture's vocab_size when the config leaves it out
    tied: bool = False  # the architecture's tie_word_embeddings when the config leaves it out


@dataclass(frozen=True)
class Reader:
    family: str
    model_types: frozenset[str]
    arch: tuple[str, ...]  # substrings of the lower-cased architecture names
    marker: tuple[str, ...]  # a field only this family has
    read: Callable[[Fields, int, int], Build]


# -- shared pieces -----------------------------------------------------------------------------
def gqa_geometry(f: Fields, prefix: str = "", head_dim: int | None = None) -> dict:
    hidden = f.int("hidden_size")
    heads = f.int(prefix + "num_attention_heads") if prefix else f.int("num_attention_heads")
    kv = f.int(prefix + "num_key_value_heads", heads)
    if kv > heads or heads % kv:
        raise f.error(prefix + "num_key_value_heads", f"{kv} KV heads for {heads} query heads "
                      f"({prefix}num_attention_heads): must divide them")
    default = head_dim if head_dim is not None else (hidden // heads if hidden % heads == 0 else None)
    hd = f.int(prefix + "head_dim", default)
    v_dim = f.int(prefix + "v_head_dim", hd)
    return {"hidden": hidden, "heads": heads, "kv": kv, "head_dim": hd, "v_dim": v_dim}


def mla_group(f: Fields, count: int, nbytes: int) -> tuple[LayerGroup, float]:
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


def ffn_build(hidden: int, *, dense_layers: int, dense_width: int, moe_layers: int = 0,
              experts: int = 0, top_k: int = 0, expert_width: int = 0, shared_width: int = 0,
              mats: int = 3, expert_extra: int = 0, router_extra: int = 0) -> dict:
    """FFN parameters by kernel class (see Matmuls): `mats` matrices per MLP (3 gated, 2 plain),
    `expert_extra` parameters per expert outside its matrices (biases), `router_extra` per
    MoE layer besides the hidden x experts router."""
    per_expert = mats * hidden * expert_width + expert_extra
    out = {"dense": float(dense_layers * mats * hidden * dense_width
                          + moe_layers * (mats * hidden * shared_width + hidden * experts + router_extra)),
           "act_width": float(dense_layers * dense_width + moe_layers * shared_width)}
    if moe_layers and experts:
        out.update({"routed_active": float(moe_layers * top_k * per_expert),
                    "routed_total": float(moe_layers * experts * per_expert),
                    "moe_layers": moe_layers, "experts": experts, "top_k": top_k})
    return out


TOP_K_KEYS = ("num_experts_per_tok", "num_experts_per_token", "moe_topk", "top_k_experts",
              "experts_per_token")
EXPERT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts")


def top_k(f: Fields, experts: int) -> int:
    k = f.first_int(TOP_K_KEYS)
    if k > experts:
        raise f.error(next(x for x in TOP_K_KEYS if f.has(x)), f"{k} experts per token for {experts} experts")
    return k


def generic_ffn(f: Fields, n_layers: int) -> dict:
    """The FFN of a decoder whose every layer has one MLP or MoE block, from the usual names:
    experts (`n_routed_experts` / `num_experts` / `num_local_experts`), top-k, the shared
    experts (`shared_expert_intermediate_size`, `shared_intermediate_size`, `n_shared_experts`
    x the expert width) and the leading dense layers (`first_k_dense_replace`, `moe_layer_freq`)."""
    hidden = f.int("hidden_size")
    experts = f.first_int(EXPERT_KEYS, 0, minimum=0)
    if experts == 0:
        width = f.int("intermediate_size")
        return {"dense": float(n_layers * 3 * hidden * width), "act_width": float(n_layers * width)}
    k = top_k(f, experts)
    expert_size = f.first_int(("moe_intermediate_size", "intermediate_size"))
    if f.has("shared_expert_intermediate_size"):
        shared = f.int("shared_expert_intermediate_size", minimum=0)
    elif f.has("shared_intermediate_size"):
        shared = f.int("shared_intermediate_size", minimum=0)
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
            "routed_active": float(moe * 3 * hidden * k * expert_size),
            "routed_total": float(moe * 3 * hidden * experts * expert_size),
            "moe_layers": moe, "experts": experts, "top_k": k,
            "act_width": float(dense * dense_size + moe * shared)}


def attention_kinds(f: Fields, n: int, default: list[str], *, need_full: str | None = None) -> list[str]:
    """Per-layer attention kinds from `layer_types` (full / sliding / chunked attention), else
    the family's default; `need_full` names the key to blame when no layer is full attention."""
    kinds = f.word_list("layer_types", n, ATTENTION_WORDS) if f.has("layer_types") else default
    if need_full and "gqa" not in kinds:
        key = "layer_types" if f.has("layer_types") else need_full
        raise f.error(key, "names no full_attention layer (this architecture needs at least one)")
    return kinds


def grouped(kinds: list[str], make: Callable[[str, int], tuple[LayerGroup, float]],
            order: tuple[str, ...] = ("swa", "chunked", "gqa")) -> tuple[list[LayerGroup], float]:
    """One group per kind present (in `order`), with its parameters summed."""
    groups, params = [], 0.0
    for kind in order:
        if kinds.count(kind):
            g, p = make(kind, kinds.count(kind))
            groups.append(g)
            params += p
    return groups, params


def every(pattern: int, n: int) -> list[str]:
    """Every `pattern`-th layer full attention, the others sliding (Gemma's default layout)."""
    return ["swa" if (i + 1) % pattern else "gqa" for i in range(n)]


def mamba2_group(count: int, *, hidden: int, d_inner: int, heads: int, head_dim: int,
                 d_state: int, groups: int, kernel: int, state_bytes: int, nbytes: int,
                 conv_bias: bool = True) -> tuple[LayerGroup, float]:
    """A Mamba-2 mixer: in_proj to (z, x, B, C, dt), the causal conv over (x, B, C), A/D/dt
    per head, the gated norm and out_proj; state heads x head_dim x d_state plus the conv."""
    conv = d_inner + 2 * groups * d_state
    params = hidden * (2 * d_inner + 2 * groups * d_state + heads) + conv * kernel \
        + (conv if conv_bias else 0) + 3 * heads + d_inner + d_inner * hidden
    g = ssm_group(count, heads * head_dim * d_state, conv, kernel, state_bytes, nbytes,
                  chunk_width=2 * groups * d_state + d_inner)
    return g, float(params * count)


def mamba2_from(f: Fields, count: int, nbytes: int, *, d_inner: int | None, width: str,
                heads: tuple[str, int | None], head_dim: str | None, d_state: tuple[str, int | None],
                groups: str, kernel: str, conv_bias: str) -> tuple[LayerGroup, float]:
    """A Mamba-2 group from a family's own key names: (`heads` key, default), the head size key
    ("auto" or absent: the SSM width over the heads), `d_inner` (None: heads x head size, named
    `width` in a refusal)."""
    hidden = f.int("hidden_size")
    n_heads = f.int(heads[0], heads[1])
    raw = f.data.get(head_dim, "auto") if head_dim else "auto"
    if raw == "auto" and d_inner is None:
        raise f.error(head_dim or heads[0], "missing (required for this architecture)")
    hd = d_inner // n_heads if raw == "auto" else f.int(head_dim)
    d_inner = n_heads * hd if d_inner is None else d_inner
    if hd * n_heads != d_inner:
        raise f.error(head_dim or heads[0], f"{hd} x {n_heads} heads ({heads[0]}) must make the "
                      f"SSM width {d_inner} ({width})")
    return mamba2_group(count, hidden=hidden, d_inner=d_inner, heads=n_heads, head_dim=hd,
                        d_state=f.int(*d_state), groups=f.int(groups, 1), kernel=f.int(kernel, 4),
                        state_bytes=state_dtype_bytes(f), nbytes=nbytes,
                        conv_bias=f.flag(conv_bias, True))


def mixer_words(f: Fields, n: int, keys: tuple[str, ...], known: dict[str, str]) -> list[str] | None:
    for key in keys:
        if f.has(key):
            return f.word_list(key, n, known)
    return None


# -- the families --------------------------------------------------------------------------------
def read_gqa(f: Fields, n: int, nbytes: int) -> Build:
    """GQA/MHA decoders (Llama, Mistral, Qwen2/3, Mixtral, Phi-3, MiniMax-M2...): every layer full
    attention unless `layer_types` says otherwise; without it, Mistral/Mixtral/Phi-3 slide every
    layer over `sliding_window` when one is set, Qwen2/3 the layers from `max_window_layers` on
    when `use_sliding_window` is true (transformers' defaults)."""
    mt = str(f.data.get("model_type", "")).lower()
    kinds = ["gqa"] * n
    if not f.has("layer_types") and f.has("sliding_window"):
        if mt in ("mistral", "ministral", "mixtral", "phi3", "ministral3"):
            kinds = ["swa"] * n
        elif mt.startswith("qwen") and f.flag("use_sliding_window", False):
            start = f.int("max_window_layers", n, minimum=0)
            kinds = ["swa" if i >= start else "gqa" for i in range(n)]
    kinds = attention_kinds(f, n, kinds)
    geo = gqa_geometry(f)
    window = f.window("sliding_window") if "swa" in kinds else None
    chunk = f.window("attention_chunk_size") if "chunked" in kinds else None
    groups, params = grouped(kinds, lambda k, c: gqa_group(
        geo, c, nbytes, kind=k, window=window if k == "swa" else chunk if k == "chunked" else None),
        order=("gqa", "swa", "chunked"))
    return Build(groups, params)


def read_mla(f: Fields, n: int, nbytes: int) -> Build:
    g, p = mla_group(f, n, nbytes)
    return Build([g], p)


def read_deepseek_v32(f: Fields, n: int, nbytes: int) -> Build:
    """DeepSeek-V3.2: MLA plus the sparse-attention indexer. Each layer also caches the
    indexer's key per token (index_head_dim fp8 bytes and one fp32 scale per 128 dims, vLLM's
    layout: 132 B at 128 dims); each query attends to at most index_topk keys, chosen by an
    indexer that scores all of them (index_n_heads x index_head_dim per pair)."""
    g, p = mla_group(f, n, nbytes)
    hidden = f.int("hidden_size")
    ih, idim = f.int("index_n_heads"), f.int("index_head_dim")
    topk = f.int("index_topk")
    q_rank = f.int("q_lora_rank", 0, minimum=0)
    aux = idim + 4 * math.ceil(idim / 128)
    indexer = (q_rank or hidden) * ih * idim + hidden * idim + hidden * ih + 2 * idim
    g = replace(g, aux_bytes_per_token=float(aux), topk=topk, aux_pair_flops=2.0 * ih * idim)
    return Build([g], p + n * indexer)


def read_gpt_oss(f: Fields, n: int, nbytes: int) -> Build:
    """gpt-oss: `layer_types` alternates sliding (window `sliding_window`, 128) and full
    attention, sliding first when absent; biased q/k/v/o and one sink per head; experts with
    biases, top-k `num_experts_per_tok` (`experts_per_token`)."""
    kinds = attention_kinds(f, n, ["swa" if (i + 1) % 2 else "gqa" for i in range(n)],
                            need_full="layer_types")
    geo = gqa_geometry(f)
    window = f.window("sliding_window", 128) if "swa" in kinds else None
    groups, params = grouped(kinds, lambda k, c: gqa_group(geo, c, nbytes, kind=k,
                                                           window=window if k == "swa" else None,
                                                           bias=True))
    params += n * geo["heads"]  # attention sinks
    hidden = geo["hidden"]
    experts = f.first_int(EXPERT_KEYS)
    width = f.int("intermediate_size")
    ffn = ffn_build(hidden, dense_layers=0, dense_width=0, moe_layers=n, experts=experts,
                    top_k=top_k(f, experts), expert_width=width,
                    expert_extra=2 * width + hidden, router_extra=experts)
    return Build(groups, params, ffn)


GEMMA = {  # model_type -> (sliding-window pattern, window, vocab, head_dim) defaults
    "gemma2": (2, 4096, 256_000, 256),
    "gemma3": (6, 4096, 262_208, 256),
    "gemma4": (6, 512, 262_144, 256),
}


def read_gemma(f: Fields, n: int, nbytes: int, mt: str) -> Build:
    """Gemma 2/3/4: local sliding-window layers with a global layer every `sliding_window_pattern`
    (Gemma 2: every other layer, no pattern field; Gemma 3 and 4: every 6th), or `layer_types`.
    Gemma 4: the global layers have their own head size (`global_head_dim`, 512) and, with
    `attention_k_eq_v`, their own KV heads (`num_global_key_value_heads`, no v_proj); its last
    layer is always global; the last `num_kv_shared_layers` reuse an earlier layer's KV and keep
    none; `enable_moe_block` adds experts (top-k `top_k_experts`) beside the dense MLP."""
    pattern_default, window_default, vocab, hd_default = GEMMA[mt]
    pattern = f.int("sliding_window_pattern", pattern_default)
    kinds = attention_kinds(f, n, every(pattern, n))
    if mt == "gemma4":
        kinds = [*kinds[:-1], "gqa"]
    if "gqa" not in kinds:
        raise f.error("layer_types" if f.has("layer_types") else "sliding_window_pattern",
                      "names no full_attention layer (this architecture needs at least one)")
    local = gqa_geometry(f, head_dim=hd_default)
    window = f.window("sliding_window", window_default) if "swa" in kinds else None
    glob, k_eq_v = dict(local), False
    if mt == "gemma4":
        k_eq_v = f.flag("attention_k_eq_v", False)
        glob["head_dim"] = glob["v_dim"] = f.int("global_head_dim", 512)
        if k_eq_v and f.has("num_global_key_value_heads"):
            glob["kv"] = f.int("num_global_key_value_heads")
    shared = f.int("num_kv_shared_layers", 0, minimum=0) if mt == "gemma4" else 0
    if shared >= n:
        raise f.error("num_kv_shared_layers", f"{shared} shared layers leave none of the {n} "
                      "layers (num_hidden_layers) to keep a KV")
    groups, params = [], 0.0
    for kind, geo in (("swa", local), ("gqa", glob)):
        own = kinds[:n - shared].count(kind)
        reuse = kinds[n - shared:].count(kind)
        for count, keeps in ((own, True), (reuse, False)):
            if not count:
                continue
            g, p = gqa_group(geo, count, nbytes, kind=kind, window=window if kind == "swa" else None)
            if kind == "gqa" and k_eq_v:
                p -= count * geo["hidden"] * geo["kv"] * geo["v_dim"]
            if not keeps:
                g = replace(g, kv_bytes_per_token=0.0)
            groups.append(g)
            params += p
    hidden = local["hidden"]
    width = f.int("intermediate_size")
    if mt == "gemma4" and f.flag("enable_moe_block", False):
        experts = f.int("num_experts")
        ffn = ffn_build(hidden, dense_layers=0, dense_width=0, moe_layers=n, experts=experts,
                        top_k=top_k(f, experts), expert_width=f.int("moe_intermediate_size"),
                        shared_width=width, router_extra=hidden)
    else:
        ffn = ffn_build(hidden, dense_layers=n, dense_width=width)
    extra = 0.0
    if mt == "gemma4" and f.int("hidden_size_per_layer_input", 0, minimum=0):
        per = f.int("hidden_size_per_layer_input")
        extra = float(f.int("vocab_size_per_layer_input", 262_144) * n * per)
        params += hidden * n * per + n * 2 * hidden * per
    return Build(groups, params, ffn, embed_extra=extra, vocab=vocab, tied=True)


def read_llama4(f: Fields, n: int, nbytes: int) -> Build:
    """Llama 4: RoPE layers use chunked attention (`attention_chunk_size`), NoPE layers
    (`no_rope_layers` entry 0, by default every 4th) full attention; MoE layers every
    `interleave_moe_layer_step` (or `moe_layers`) with one shared expert of the expert width,
    dense layers of `intermediate_size_mlp`."""
    if f.has("no_rope_layers"):
        rope = f.int_list("no_rope_layers", n, hi=1)
    else:
        interval = f.int("no_rope_layer_interval", 4)
        rope = [int((i + 1) % interval != 0) for i in range(n)]
    chunked = f.has("attention_chunk_size")
    default = ["chunked" if r and chunked else "gqa" for r in rope]
    kinds = attention_kinds(f, n, default)
    if "gqa" not in kinds:
        raise f.error("layer_types" if f.has("layer_types") else "no_rope_layers",
                      "names no full-attention (NoPE) layer (this architecture needs at least one)")
    geo = gqa_geometry(f)
    chunk = f.window("attention_chunk_size") if "chunked" in kinds else None
    groups, params = grouped(kinds, lambda k, c: gqa_group(geo, c, nbytes, kind=k,
                                                           window=chunk if k == "chunked" else None))
    hidden = geo["hidden"]
    experts = f.first_int(EXPERT_KEYS, 0, minimum=0)
    if isinstance(f.data.get("moe_layers"), list):
        moe = len(set(f.int_list("moe_layers", lo=0, hi=n - 1, unique=True)))
    else:
        step = f.int("interleave_moe_layer_step", 1)
        moe = len(range(step - 1, n, step)) if experts else 0
    width = f.int("intermediate_size")
    ffn = ffn_build(hidden, dense_layers=n - moe, dense_width=f.int("intermediate_size_mlp", width),
                    moe_layers=moe, experts=experts, top_k=top_k(f, experts) if experts else 0,
                    expert_width=width, shared_width=width)
    return Build(groups, params, ffn)


def read_jamba(f: Fields, n: int, nbytes: int) -> Build:
    """Jamba: attention every `attn_layer_period` layers from `attn_layer_offset` (8 and 4),
    Mamba-1 elsewhere (or `layers_block_type`); MoE every `expert_layer_period` from
    `expert_layer_offset` (2 and 1), dense MLPs elsewhere."""
    words = mixer_words(f, n, ("layers_block_type", "layer_types"),
                        {"attention": "gqa", "mamba": "ssm"})
    if words is None:
        period = f.int("attn_layer_period", 8)
        offset = f.int("attn_layer_offset", 4, minimum=0)
        if offset >= period:
            raise f.error("attn_layer_offset", f"{offset} must be below attn_layer_period ({period})")
        words = ["gqa" if i % period == offset else "ssm" for i in range(n)]
    hidden = f.int("hidden_size")
    geo = gqa_geometry(f)
    groups, params = [], 0.0
    n_ssm = words.count("ssm")
    if n_ssm:
        d_inner = f.int("mamba_d_inner", int(f.number("mamba_expand", 2) * hidden))
        d_state = f.int("mamba_d_state", 16)
        kernel = f.int("mamba_d_conv", 4)
        raw_rank = f.data.get("mamba_dt_rank", "auto")
        dt_rank = math.ceil(hidden / 16) if raw_rank == "auto" else f.int("mamba_dt_rank")
        conv_bias = f.flag("mamba_conv_bias", True)
        proj_bias = f.flag("mamba_proj_bias", False)
        per = (hidden * 2 * d_inner + d_inner * kernel + (d_inner if conv_bias else 0)
               + d_inner * (dt_rank + 2 * d_state) + dt_rank * d_inner + d_inner
               + d_inner * d_state + d_inner + d_inner * hidden
               + ((2 * d_inner + hidden) if proj_bias else 0))
        groups.append(ssm_group(n_ssm, d_inner * d_state, d_inner, kernel,
                                state_dtype_bytes(f), nbytes))
        params += n_ssm * per
    if words.count("gqa"):
        g, p = gqa_group(geo, words.count("gqa"), nbytes)
        groups.append(g)
        params += p
    experts = f.int("num_experts", 1)
    moe = 0
    if experts > 1:
        period = f.int("expert_layer_period", 2)
        offset = f.int("expert_layer_offset", 1, minimum=0)
        if offset >= period:
            raise f.error("expert_layer_offset", f"{offset} must be below expert_layer_period ({period})")
        moe = sum(1 for i in range(n) if i % period == offset)
    width = f.int("intermediate_size")
    ffn = ffn_build(hidden, dense_layers=n - moe, dense_width=width, moe_layers=moe,
                    experts=experts if moe else 0, top_k=top_k(f, experts) if moe else 0,
                    expert_width=width)
    return Build(groups, params, ffn, depth=n)


NEMOTRON_CHARS = {"M": "ssm", "*": "gqa", "-": "mlp", "E": "moe"}


def read_nemotron_h(f: Fields, n: int, nbytes: int) -> Build:
    """Nemotron-H: `hybrid_override_pattern` gives one character per layer: M a Mamba-2 mixer,
    * attention, - an MLP (squared ReLU, two matrices), E a mixture of experts; a layer holds
    one of them, so only M and * layers keep anything per request."""
    raw = f.data.get("hybrid_override_pattern")
    if not isinstance(raw, str):
        raise f.error("hybrid_override_pattern", "missing or not a string of M, *, - and E")
    if len(raw) != n:
        raise f.error("hybrid_override_pattern", f"has {len(raw)} layers for {n} (num_hidden_layers)")
    bad = next((c for c in raw if c not in NEMOTRON_CHARS), None)
    if bad is not None:
        raise f.error("hybrid_override_pattern", f"unknown layer kind {bad!r} (known: M, *, -, E)")
    words = [NEMOTRON_CHARS[c] for c in raw]
    hidden = f.int("hidden_size")
    groups, params = [], 0.0
    if words.count("ssm"):
        g, p = mamba2_from(f, words.count("ssm"), nbytes, d_inner=None, width="mamba_num_heads x mamba_head_dim",
                           heads=("mamba_num_heads", None), head_dim="mamba_head_dim",
                           d_state=("ssm_state_size", None), groups="n_groups", kernel="conv_kernel",
                           conv_bias="use_conv_bias")
        groups.append(g)
        params += p
    if words.count("gqa"):
        geo = gqa_geometry(f, head_dim=f.int("attention_head_dim", 0, minimum=0) or None)
        g, p = gqa_group(geo, words.count("gqa"), nbytes)
        groups.append(g)
        params += p
    mats = 2 if str(f.data.get("mlp_hidden_act", "relu2")).lower() == "relu2" else 3
    moe = words.count("moe")
    experts = f.first_int(EXPERT_KEYS, 0, minimum=0) if moe else 0
    ffn = ffn_build(hidden, dense_layers=words.count("mlp"),
                    dense_width=f.int("intermediate_size") if words.count("mlp") else 0,
                    moe_layers=moe, experts=experts, top_k=top_k(f, experts) if moe else 0,
                    expert_width=f.int("moe_intermediate_size") if moe else 0,
                    shared_width=f.int("moe_shared_expert_intermediate_size", 0, minimum=0) if moe else 0,
                    mats=mats)
    return Build(groups, params, ffn, depth=n)


def read_granite_hybrid(f: Fields, n: int, nbytes: int) -> Build:
    """Granite 4.0-H (granitemoehybrid): `layer_types` (or `layers_block_type`) of mamba and
    attention layers, all mamba when absent; Mamba-2 of `mamba_expand` x hidden in
    `mamba_n_heads` (128) heads; every layer a shared MLP (`shared_intermediate_size`, 1,024)
    beside its `num_local_experts` (8, none when 0) experts of `intermediate_size`
    (configuration_granitemoehybrid's defaults)."""
    words = mixer_words(f, n, ("layer_types", "layers_block_type"), {"attention": "gqa", "mamba": "ssm"})
    words = words or ["ssm"] * n
    hidden = f.int("hidden_size")
    groups, params = [], 0.0
    if words.count("ssm"):
        g, p = mamba2_from(f, words.count("ssm"), nbytes,
                           d_inner=int(f.number("mamba_expand", 2) * hidden),
                           width="mamba_expand x hidden_size", heads=("mamba_n_heads", 128),
                           head_dim="mamba_d_head", d_state=("mamba_d_state", 256),
                           groups="mamba_n_groups", kernel="mamba_d_conv", conv_bias="mamba_conv_bias")
        groups.append(g)
        params += p
    if words.count("gqa"):
        g, p = gqa_group(gqa_geometry(f), words.count("gqa"), nbytes)
        groups.append(g)
        params += p
    experts = f.int("num_local_experts", 8, minimum=0)
    shared = f.int("shared_intermediate_size", 1024, minimum=0)
    if experts:
        ffn = ffn_build(hidden, dense_layers=0, dense_width=0, moe_layers=n, experts=experts,
                        top_k=top_k(f, experts), expert_width=f.int("intermediate_size"),
                        shared_width=shared)
    else:
        ffn = ffn_build(hidden, dense_layers=n, dense_width=shared)
    return Build(groups, params, ffn, depth=n)


def read_falcon_h1(f: Fields, n: int, nbytes: int) -> Build:
    """Falcon-H1: every layer runs attention and a Mamba-2 mixer in parallel, then a gated MLP,
    so it keeps both a KV and a state; the SSM width is `mamba_d_ssm` (else `mamba_expand` x
    hidden) in `mamba_n_heads` heads of `mamba_d_head`."""
    hidden = f.int("hidden_size")
    geo = gqa_geometry(f)
    attn, p_attn = gqa_group(geo, n, nbytes)
    # absent: the architecture's 1,024; null: mamba_expand x hidden (configuration_falcon_h1)
    d_inner = f.int("mamba_d_ssm", 1024 if "mamba_d_ssm" not in f.data
                    else int(f.number("mamba_expand", 2) * hidden))
    ssm, p_ssm = mamba2_from(f, n, nbytes, d_inner=d_inner, width="mamba_d_ssm",
                             heads=("mamba_n_heads", 128), head_dim="mamba_d_head",
                             d_state=("mamba_d_state", 256), groups="mamba_n_groups",
                             kernel="mamba_d_conv", conv_bias="mamba_conv_bias")
    ffn = ffn_build(hidden, dense_layers=n, dense_width=f.int("intermediate_size"))
    return Build([ssm, attn], p_attn + p_ssm, ffn, depth=n)


ZAMBA2_LAYOUT = ["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"] \
    + ["mamba"] * 3 + ["hybrid"] + ["mamba"] * 2  # configuration_zamba2's default (54 layers)


def read_zamba2(f: Fields, n: int, nbytes: int) -> Build:
    """Zamba2: every layer a Mamba-2 mixer (`n_mamba_heads` heads, 8 by default, over
    `mamba_expand` x hidden); at the `hybrid` layers of `layers_block_type` one of
    `num_mem_blocks` shared transformer blocks runs first: attention over the hidden state
    concatenated with the embeddings (2 x hidden wide, heads of 2 x hidden / heads) and a gated
    MLP, each application with its own KV, its output linear and, when enabled, its LoRA
    adapters (`use_shared_mlp_adapter`, `use_shared_attention_adapter`, off by default). The
    shared blocks are stored once and run at every hybrid layer."""
    if f.has("layers_block_type"):
        words = f.word_list("layers_block_type", n, {"mamba": "ssm", "hybrid": "hybrid"})
    elif n == len(ZAMBA2_LAYOUT):
        words = ["hybrid" if w == "hybrid" else "ssm" for w in ZAMBA2_LAYOUT]
    else:
        raise f.error("layers_block_type", "missing (the per-layer list of mamba / hybrid)")
    hidden = f.int("hidden_size")
    ssm, p_ssm = mamba2_from(f, n, nbytes, d_inner=int(f.number("mamba_expand", 2) * hidden),
                             width="mamba_expand x hidden_size", heads=("n_mamba_heads", 8),
                             head_dim=None, d_state=("mamba_d_state", 64), groups="mamba_ngroups",
                             kernel="mamba_d_conv", conv_bias="use_conv_bias")
    groups: list[LayerGroup] = [ssm]
    hybrid = words.count("hybrid")
    blocks = f.int("num_mem_blocks", 1)
    params, reused = p_ssm, 0.0
    width = f.int("intermediate_size", 4 * hidden)
    if hybrid:
        attn_in = 2 * hidden
        heads_a = f.int("num_attention_heads")
        kv = f.int("num_key_value_heads", heads_a)
        hd = attn_in // heads_a
        groups.append(LayerGroup("gqa", hybrid, float(2 * kv * hd * nbytes), None, 0.0,
                                 2.0 * heads_a * 2 * hd))
        block = attn_in * (heads_a * hd + 2 * kv * hd) + heads_a * hd * hidden + 3 * hidden * width
        rank = f.int("adapter_rank", 128)
        adapters = hidden * hidden  # the per-application output linear
        if f.flag("use_shared_mlp_adapter", False):
            adapters += hidden * rank + rank * 2 * width
        if f.flag("use_shared_attention_adapter", False):
            adapters += 3 * (attn_in * rank + rank * attn_in)
        params += hybrid * (block + adapters)
        reused = float((hybrid - min(blocks, hybrid)) * block)
    ffn = {"dense": 0.0, "act_width": float(hybrid * width)}
    return Build(groups, params, ffn, depth=n, reused=reused, tied=True)


def read_minimax(f: Fields, n: int, nbytes: int) -> Build:
    """MiniMax-Text-01 / M1: `attn_type_list` (1 softmax attention, 0 lightning attention; or
    `layer_types`), lightning layers keeping a heads x head_dim x head_dim state each."""
    if f.has("attn_type_list"):
        flags = f.int_list("attn_type_list", n, hi=1)
        words = ["gqa" if x else "lightning" for x in flags]
        key = "attn_type_list"
    else:
        words = mixer_words(f, n, ("layer_types",), {"full_attention": "gqa",
                                                      "linear_attention": "lightning"})
        key = "layer_types"
        if words is None:
            raise f.error("attn_type_list", "missing (the per-layer list of 1 softmax / 0 lightning)")
    if "gqa" not in words:
        raise f.error(key, "names no full-attention layer (this architecture needs at least one)")
    geo = gqa_geometry(f)
    groups, params = [], 0.0
    n_lin = words.count("lightning")
    if n_lin:
        heads, d = geo["heads"], geo["head_dim"]
        groups.append(linear_group(n_lin, heads, heads, d, d, 0, 0, state_dtype_bytes(f), nbytes,
                                   kind="lightning"))
        params += n_lin * (5 * geo["hidden"] * heads * d)  # q, k, v, output gate, out
    g, p = gqa_group(geo, words.count("gqa"), nbytes)
    return Build([*groups, g], params + p)


def read_kimi_linear(f: Fields, n: int, nbytes: int) -> Build:
    """Kimi Linear: KDA layers and MLA layers, listed 1-based in linear_attn_config."""
    hidden = f.int("hidden_size")
    lin = f.section("linear_attn_config")
    full = lin.int_list("full_attn_layers", lo=1, hi=n, unique=True)
    kda = lin.int_list("kda_layers", lo=1, hi=n, unique=True) if lin.has("kda_layers") \
        else [i for i in range(1, n + 1) if i not in set(full)]
    if sorted(set(full) | set(kda)) != list(range(1, n + 1)) or set(full) & set(kda):
        raise lin.error("full_attn_layers", f"full_attn_layers and kda_layers must split "
                        f"layers 1..{n} (num_hidden_layers) between them")
    heads, d = lin.int("num_heads"), lin.int("head_dim")
    kernel = lin.int("short_conv_kernel_size", 4)
    grp, p = mla_group(f, len(full), nbytes)
    kda_grp = linear_group(len(kda), heads, heads, d, d, 3 * heads * d, kernel,
                           state_dtype_bytes(f), nbytes)
    # q, k, v, o projections plus the low-rank (rank head_dim) forget and output gates
    kda_params = len(kda) * (4 * hidden * heads * d + 2 * (hidden * d + d * heads * d))
    return Build([kda_grp, grp], p + kda_params)


def read_qwen_gdn(f: Fields, n: int, nbytes: int) -> Build:
    """Qwen3-Next / Qwen3.5: Gated DeltaNet layers and gated full attention every
    `full_attention_interval` layers (or `layer_types`)."""
    hidden = f.int("hidden_size")
    if f.has("layer_types"):
        types = f.data["layer_types"]
        if not isinstance(types, list) or len(types) != n or not all(
                t in ("linear_attention", "full_attention") for t in types):
            raise f.error("layer_types", f"must list {n} entries of linear_attention / full_attention")
        n_full = types.count("full_attention")
    else:
        n_full = n // f.int("full_attention_interval")
    hk, hv = f.int("linear_num_key_heads"), f.int("linear_num_value_heads")
    dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
    kernel = f.int("linear_conv_kernel_dim", 4)
    lin_grp = linear_group(n - n_full, hk, hv, dk, dv, 2 * hk * dk + hv * dv, kernel,
                           state_dtype_bytes(f), nbytes)
    gate = bool(f.data.get("attn_output_gate", True))
    grp, p = gqa_group(gqa_geometry(f), n_full, nbytes, gate=gate)
    lin_params = (n - n_full) * (hidden * (2 * hk * dk + 2 * hv * dv + 2 * hv) + hv * dv * hidden)
    return Build([lin_grp, grp], p + lin_params)


def read_bailing(f: Fields, n: int, nbytes: int) -> Build:
    """Bailing / Ring linear: every `layer_group_size`-th layer (and a trailing remainder) full
    attention (MLA or GQA), lightning-style linear attention elsewhere."""
    hidden = f.int("hidden_size")
    group_size = f.int("layer_group_size")
    full_idx = [i for i in range(n) if (i + 1) % group_size == 0 or i >= (n // group_size) * group_size]
    heads = f.int("num_attention_heads")
    d = f.int("linear_head_dim", f.int("head_dim", hidden // heads))
    lin_grp = linear_group(n - len(full_idx), heads, heads, d, d, 0, 0, state_dtype_bytes(f), nbytes)
    lin_params = (n - len(full_idx)) * 5 * hidden * heads * d  # q, k, v, gate, out
    if f.has("kv_lora_rank"):
        grp, p = mla_group(f, len(full_idx), nbytes)
    else:
        grp, p = gqa_group(gqa_geometry(f), len(full_idx), nbytes)
    return Build([lin_grp, grp], p + lin_params)


def read_mimo(f: Fields, n: int, nbytes: int) -> Build:
    """MiMo-V2: `hybrid_layer_pattern` 0 full / 1 sliding window, the sliding layers with their
    own head counts and sizes (`swa_*`)."""
    pattern = f.int_list("hybrid_layer_pattern", n, hi=1)
    window = f.first_int(("sliding_window", "sliding_window_size"))
    full_g = gqa_geometry(f)
    swa_g = {**full_g, "heads": f.int("swa_num_attention_heads", full_g["heads"]),
             "kv": f.int("swa_num_key_value_heads", full_g["kv"]),
             "head_dim": f.int("swa_head_dim", full_g["head_dim"]),
             "v_dim": f.int("swa_v_head_dim", full_g["v_dim"])}
    g1, p1 = gqa_group(full_g, pattern.count(0), nbytes)
    g2, p2 = gqa_group(swa_g, pattern.count(1), nbytes, kind="swa", window=window)
    return Build([g for g in (g2, g1) if g.count], p1 + p2)


def _r(family: str, types: str, arch: str, marker: str, read) -> Reader:
    return Reader(family, frozenset(types.split()), tuple(arch.split()), tuple(marker.split()), read)


READERS: tuple[Reader, ...] = (
    _r("kimi-linear", "kimi_linear", "kimilinear", "linear_attn_config", read_kimi_linear),
    _r("mimo-swa", "mimo_v2 mimo_v2_flash", "mimov2", "hybrid_layer_pattern", read_mimo),
    _r("qwen-gdn", "qwen3_next qwen3_5 qwen3_5_moe qwen3_5_text qwen3_5_moe_text",
       "qwen3next qwen3_5", "linear_num_value_heads", read_qwen_gdn),
    _r("bailing-lightning", "bailing_moe_linear bailing_moe_v2_5 bailing_hybrid",
       "bailingmoelinear", "layer_group_size", read_bailing),
    _r("nemotron-h", "nemotron_h", "nemotronh", "hybrid_override_pattern", read_nemotron_h),
    _r("jamba", "jamba", "jamba", "attn_layer_period", read_jamba),
    _r("granite-hybrid", "granitemoehybrid", "granitemoehybrid", "", read_granite_hybrid),
    _r("falcon-h1", "falcon_h1", "falconh1", "mamba_d_ssm", read_falcon_h1),
    _r("zamba2", "zamba2", "zamba2", "", read_zamba2),
    _r("minimax-lightning", "minimax minimax_text_01 minimax_m1", "minimaxtext01 minimaxm1",
       "attn_type_list", read_minimax),
    _r("deepseek-v3.2", "deepseek_v32", "deepseekv32", "index_head_dim", read_deepseek_v32),
    _r("mla", "deepseek_v2 deepseek_v3 kimi_k2", "deepseekv3 deepseekv2", "", read_mla),
    _r("gpt-oss", "gpt_oss", "gptoss", "", read_gpt_oss),
    _r("gemma2", "gemma2", "gemma2", "", lambda f, n, b: read_gemma(f, n, b, "gemma2")),
    _r("gemma3", "gemma3 gemma3_text", "gemma3", "", lambda f, n, b: read_gemma(f, n, b, "gemma3")),
    _r("gemma4", "gemma4 gemma4_text", "gemma4", "", lambda f, n, b: read_gemma(f, n, b, "gemma4")),
    _r("llama4", "llama4 llama4_text", "llama4", "no_rope_layers", read_llama4),
    _r("gqa", "llama mistral ministral ministral3 mixtral qwen2 qwen2_moe qwen3 qwen3_moe "
       "minimax_m2 gemma phi3 glm4_moe",
       "llama mistral mixtral qwen2 qwen3 minimaxm2 gemma", "", read_gqa),
)


def reader_for(f: Fields) -> Reader:
    """The family's reader: by model_type, then architectures, then a field only it has."""
    mt = str(f.data.get("model_type", "")).lower()
    archs = f.data.get("architectures") or []
    arch = " ".join(str(a) for a in archs).lower() if isinstance(archs, list) else str(archs).lower()
    for test in (lambda r: mt in r.model_types, lambda r: any(a in arch for a in r.arch),
                 lambda r: any(f.has(m) for m in r.marker)):
        for r in READERS:
            if test(r):
                return r
    what = mt or (", ".join(map(str, archs)) if isinstance(archs, list) else str(archs)) or "none given"
    raise CardError(f.path, "model_type" if mt or not archs else "architectures",
                    f"unknown architecture {what!r} (known families: "
                    + ", ".join(r.family for r in READERS) + ")")
