"""Model cards: a Hugging Face-style `config.json` reduced to what serving cost depends on.

Why: an operator has a config.json, not prefill-time and KV-size tables. From the config we
derive a list of layer groups (emulator/cards/layers.py: full, sliding-window and chunked
attention, MLA, linear attention, Mamba, lightning attention, each with what it keeps per
request), the parameters a token activates (MoE: only its experts) and the mixers' FLOPs; the
roofline (emulator/cards/roofline.py) turns these into T_prefill(l) and S_kv(l).

S_kv(l) = sum over groups of what each holds after a prefill of l tokens: every token's KV for
full attention, min(l, window) tokens for a window or a chunk, a fixed state for the recurrent
kinds, plus per-token side caches (an indexer's keys).

Each family has its reader in emulator/cards/families.py (the registry and the rules). A
missing or absurd field, an unknown architecture or layer kind, raises CardError naming the file
and key.
"""

from __future__ import annotations

import json
import math
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
from emulator.cards.families import Build, generic_ffn, reader_for
from emulator.cards.fields import DTYPE_BYTES, Fields, model_dtype, shown, text_fields
from emulator.cards.layers import KINDS, STATE, WINDOWED, LayerGroup

__all__ = ["KINDS", "DTYPE_BYTES", "KV_DTYPES", "LayerGroup", "Matmuls", "ModelCard", "from_dict",
           "read_config", "load_card", "shipped", "shipped_dir"]

KV_DTYPES = {"fp32": 4, "bf16": 2, "fp8": 1}  # KV-cache dtypes (flags offer bf16 and fp8)


@dataclass(frozen=True)
class Matmuls:
    """The model's matmul parameters by the kernel class that runs them (summed over layers).

    `dense` runs every token through (attention and SSM projections, dense FFNs, shared experts,
    the router); `routed_active` is what one token's top-k experts hold; `routed_total` every
    routed expert (memory, and the weights a grouped GEMM reads). `reused` is the part of
    `dense` that runs at several layers but is stored once (Zamba2's shared blocks)."""

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
    reused: float = 0.0

    @property
    def dense_held(self) -> float:
        """Dense parameters the GPUs hold (a shared block once)."""
        return self.dense - self.reused


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
    depth: int = 0  # decoder layers, where they differ from the groups' sum (0: the sum)

    @property
    def layers(self) -> dict[str, int]:
        """Layers by mixer kind (a layer with two mixers, Falcon-H1's, counts in both)."""
        out: dict[str, int] = {}
        for g in self.groups:
            out[g.kind] = out.get(g.kind, 0) + g.count
        return out

    @property
    def num_layers(self) -> int:
        """Decoder layers (norms, launches and collectives are per layer)."""
        return self.depth or sum(g.count for g in self.groups)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes one token adds across all layers that keep a per-token KV (a windowed layer
        counts while the token is inside its window), side caches included."""
        return float(sum(g.count * (g.kv_bytes_per_token + g.aux_bytes_per_token) for g in self.groups))

    @property
    def state_bytes(self) -> float:
        """Fixed bytes per request: linear-attention, SSM and lightning states, conv states."""
        return float(sum(g.count * g.state_bytes for g in self.groups))

    def breaks(self) -> list[float]:
        """Lengths where a cost curve changes piece: the sliding windows and the chunks (and a
        sparse attention's top-k)."""
        caps = {float(g.window) for g in self.groups if g.kind in WINDOWED and g.window}
        caps |= {float(g.topk) for g in self.groups if g.topk}
        return sorted(caps)

    def kv_bytes(self, length: float | np.ndarray) -> float | np.ndarray:
        """S_kv(l): the KVCache a prefill of l tokens leaves (what crosses the link)."""
        n_tok = np.asarray(length, dtype=float)
        total = np.full_like(n_tok, self.state_bytes)
        for g in self.groups:
            if g.kind not in STATE:
                total = total + g.token_bytes(n_tok)
        return float(total) if total.ndim == 0 else total

    def attn_flops_per_token(self, context: float) -> float:
        """Mixer FLOPs of the token at position `context` (it attends to `context` keys,
        fewer in a window or a chunk); recurrent layers cost a constant per token."""
        return float(sum(g.flops_at(context) for g in self.groups))

    def gemm_flops(self, length: float | np.ndarray) -> float | np.ndarray:
        """Matmul FLOPs of a prefill of l tokens: 2 x active parameters per token."""
        return 2.0 * self.active_params * np.asarray(length, dtype=float)

    def attn_flops(self, length: float | np.ndarray) -> float | np.ndarray:
        """Mixer FLOPs of a causal prefill of l tokens: sum over positions i = 1..l of
        attn_flops_per_token(i), in closed form (quadratic for full layers, piecewise for
        windows, linear for recurrent layers; chunks as LayerGroup.pairs counts them, exact at
        every multiple of the chunk)."""
        n_tok = np.asarray(length, dtype=float)
        total = np.zeros_like(n_tok)
        for g in self.groups:
            total = total + g.flops(n_tok)
        return float(total) if total.ndim == 0 else total

    @property
    def total_params(self) -> float:
        """Every parameter the GPUs must hold (all experts, embeddings)."""
        m = self.matmul
        return float(m.dense_held + m.routed_total + m.embed) if m else self.active_params

    def with_kv_dtype(self, kv_dtype: str) -> ModelCard:
        """The same model with its per-token KV stored in `kv_dtype` (bf16 or fp8): the fixed
        states and side caches keep their own dtype."""
        if kv_dtype == self.kv_dtype:
            return self
        scale = KV_DTYPES[kv_dtype] / KV_DTYPES[self.kv_dtype]
        groups = tuple(replace(g, kv_bytes_per_token=g.kv_bytes_per_token * scale) for g in self.groups)
        return replace(self, groups=groups, kv_dtype=kv_dtype)

    def layer_table(self) -> list[dict]:
        """One row per layer group: kind, count, per-token KV and side cache per layer, the
        window or chunk, the state per request (all layers of the group)."""
        return [{"kind": g.kind, "count": g.count, "kv_bytes_per_token": g.kv_bytes_per_token,
                 "aux_bytes_per_token": g.aux_bytes_per_token,
                 "window": g.window if g.kind == "swa" else None,
                 "chunk": g.window if g.kind == "chunked" else None,
                 "topk": g.topk, "state_bytes": g.count * g.state_bytes} for g in self.groups]

    def to_dict(self) -> dict:
        return {"name": self.name, "family": self.family, "dtype": self.dtype,
                "weight_dtype": self.weight_dtype, "kv_dtype": self.kv_dtype,
                "total_params": self.total_params,
                "layers": self.layers, "kv_bytes_per_token": self.kv_bytes_per_token,
                "state_bytes": self.state_bytes, "active_params": self.active_params,
                "windows": {str(int(w)): sum(g.count for g in self.groups
                                             if g.kind == "swa" and g.window == w)
                            for w in self.breaks() if any(g.kind == "swa" and g.window == w
                                                          for g in self.groups)},
                "chunks": {str(int(w)): sum(g.count for g in self.groups
                                            if g.kind == "chunked" and g.window == w)
                           for w in self.breaks() if any(g.kind == "chunked" and g.window == w
                                                         for g in self.groups)},
                "layer_groups": self.layer_table(),
                "source": self.source}


# -- reading ------------------------------------------------------------------------------------
MXFP4_BYTES = 4.25 / 8  # 4-bit values and one 8-bit scale per 32 (OCP MX)
NVFP4_BYTES = 4.5 / 8  # 4-bit values and one FP8 scale per 16


def _quant_dtype(f: Fields, torch_dtype: str) -> tuple[str, str]:
    """The GEMM dtype a checkpoint is served in by default, from quantization_config: fp8
    (per-tensor or block-wise: DeepSeek-V3, *-FP8 releases, an 8-bit torch_dtype), int4
    (compressed-tensors W4A16 experts), mxfp4 (gpt-oss: the experts in MXFP4, the rest bf16),
    nvfp4 (ModelOpt or compressed-tensors NVFP4); ("", why) for a quantization this model does
    not cover."""
    q = f.data.get("quantization_config")
    if DTYPE_BYTES.get(torch_dtype) == 1:
        return "fp8", ""
    if not isinstance(q, dict):
        return "bf16", ""
    method = str(q.get("quant_method", "")).lower()
    algo = str(q.get("quant_algo", "")).lower()
    fmt = str(q.get("fmt", "")).lower()
    if method == "mxfp4":
        return "mxfp4", ""
    if "nvfp4" in algo or "nvfp4" in str(q.get("format", "")).lower():
        return "nvfp4", ""
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
        if w and all(isinstance(x, dict) and x.get("num_bits") == 4 and x.get("type") == "float"
                     for x in w):
            return "nvfp4", ""
    what = method or algo or "this quantization"
    bits = q.get("bits", q.get("w_bit", 4 if q.get("load_in_4bit") is True else
                                8 if q.get("load_in_8bit") is True else None))
    near = {4: "nvfp4 (4-bit weights in every GEMM, W4A16 math, as AWQ and GPTQ serve)",
            8: "fp8 (8-bit weights)"}.get(bits) if type(bits) is int else None
    return "", (f"quantization_config: {what}"
                f"{f' at {bits} bits' if near else ''} is not a modelled dtype (bf16, fp8, int4, "
                f"mxfp4, nvfp4): pick the nearest with --dtype (a preset: its roofline dtype)"
                f"{f', here {near}' if near else ''}, or bf16 for the unquantized weights")


def _kv_quant(f: Fields) -> str:
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
    f = text_fields(data, spath)
    reader = reader_for(f)
    n = f.int("num_hidden_layers")
    dtype, nbytes = model_dtype(f)
    hidden = f.int("hidden_size")
    attn_heads = f.int("num_attention_heads")
    kv_heads = 1 if f.has("kv_lora_rank") else f.int("num_key_value_heads", attn_heads)
    build: Build = reader.read(f, n, nbytes)
    vocab = f.int("vocab_size", build.vocab, minimum=0)
    groups, attn_params = build.groups, build.mixer_params

    ffn = build.ffn if build.ffn is not None else generic_ffn(f, n)
    active = attn_params + ffn["dense"] + ffn.get("routed_active", 0.0) + vocab * hidden  # + LM head
    tied = f.flag("tie_word_embeddings", build.tied)
    matmul = Matmuls(dense=attn_params + ffn["dense"], routed_active=ffn.get("routed_active", 0.0),
                     routed_total=ffn.get("routed_total", 0.0), moe_layers=ffn.get("moe_layers", 0),
                     experts=ffn.get("experts", 0), top_k=ffn.get("top_k", 0), hidden=hidden,
                     act_width=ffn["act_width"],
                     embed=float(vocab * hidden * (1 if tied else 2)) + build.embed_extra,
                     heads=attn_heads, kv_heads=kv_heads, reused=build.reused)
    wdtype, problem = _quant_dtype(f, dtype)
    kv_quant = _kv_quant(f)
    label = name or str(meta.get("name") or (Path(path).parent.name if path and Path(path).name
                                              == "config.json" else Path(path).stem if path else "model"))
    card = ModelCard(name=label, family=reader.family, dtype=dtype, groups=tuple(groups),
                     active_params=float(active), source=str(meta.get("source", "")),
                     notes=str(meta.get("notes", "")), path=spath, config=data, matmul=matmul,
                     weight_dtype=wdtype, weight_dtype_problem=problem,
                     kv_dtype={4: "fp32", 2: "bf16", 1: "fp8"}[nbytes],
                     depth=build.depth or 0)
    return card.with_kv_dtype("fp8") if kv_quant == "fp8" else card


def _constant(token: str) -> float:
    """JSON's non-finite constants (Infinity in Mamba-2's time_step_limit) are read as floats:
    a field the cache does not depend on never refuses a config, and a field that is read
    refuses a non-finite value by its own check, naming its key."""
    return {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}[token]


def read_config(path: str | Path, name: str | None = None) -> ModelCard:
    """A ModelCard from a config.json on disk (UTF-8 JSON)."""
    p = Path(path)
    text = card_text(p)
    try:
        data = json.loads(text, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise CardError(p, "", f"malformed JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise CardError(p, "", f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # an integer of over 4,300 digits
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
