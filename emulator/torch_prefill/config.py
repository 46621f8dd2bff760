"""Model configurations (pure Python, no torch): the CLI validates names and S_kv is computed
from a config alone, both without the optional extra.

Two families of the same sizes (same d_model, layers, heads, MLP), differing only in the mixers:

* ``dense``: every layer full attention with GQA; KV per token per layer = 2*n_kv_heads*head_dim,
  set to d_model (n_kv_heads = n_heads/2), i.e. the same proportion as a large GQA model.
* ``hybrid``: ``linear_per_full`` gated linear-attention layers (fixed-size state, like KDA)
  per full-attention layer (3:1, like Kimi Linear); full layers use MLA-style latent KV, cached
  per token as a latent of ``kv_latent_dim`` (= d_model/4) plus a shared rope key of
  ``rope_dim``, as Kimi Linear / DeepSeek do.

Per token the dense model therefore caches ~10-14x the bytes of the hybrid, the same order as the
paper's Table 3 gap (Kimi Linear 3.87 vs MiniMax-M2.5 59.93 Gbps at 32K).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Family = Literal["hybrid", "dense"]
STATE_ITEMSIZE = 4  # recurrent states stay fp32 (as fla / vLLM keep KDA/GDN states)


@dataclass(frozen=True)
class ModelConfig:
    """Shape of one model. Layer i is full attention iff (i + 1) % (linear_per_full + 1) == 0."""

    name: str
    family: Family
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    head_dim: int
    d_ff: int
    n_kv_heads: int = 0  # GQA full attention (dense)
    linear_per_full: int = 0  # k linear layers per full layer (hybrid: 3)
    full_attn: Literal["gqa", "mla"] = "gqa"
    kv_latent_dim: int = 0  # MLA d_c
    rope_dim: int = 0  # MLA decoupled rope key (part of head_dim)
    chunk_size: int = 64  # linear attention chunk length
    rope_base: float = 10000.0

    def is_full(self, layer: int) -> bool:
        return (layer + 1) % (self.linear_per_full + 1) == 0

    @property
    def n_full_layers(self) -> int:
        return sum(self.is_full(i) for i in range(self.n_layers))

    @property
    def n_linear_layers(self) -> int:
        return self.n_layers - self.n_full_layers

    @property
    def kv_elements_per_token(self) -> int:
        """Cached elements one token adds in one full-attention layer."""
        if self.full_attn == "mla":
            return self.kv_latent_dim + self.rope_dim
        return 2 * self.n_kv_heads * self.head_dim

    @property
    def state_elements(self) -> int:
        """Elements of one linear layer's recurrent state (heads x d_k x d_v), independent of l."""
        return self.n_heads * self.head_dim * self.head_dim


def kv_bytes_from_config(cfg: ModelConfig, length: int, kv_itemsize: int = 4,
                         batch: int = 1) -> int:
    """S_kv(l) from the shape alone: full-layer KV (grows with l) + linear states (constant).
    `kv_itemsize` is the compute dtype's (4 fp32 on CPU, 2 bf16 on GPU); states are fp32."""
    kv = cfg.n_full_layers * length * cfg.kv_elements_per_token * kv_itemsize
    state = cfg.n_linear_layers * cfg.state_elements * STATE_ITEMSIZE
    return batch * (kv + state)


# size -> (vocab, d_model, layers, heads, head_dim, d_ff, rope_dim); tiny/small run on CPU,
# medium (~0.26-0.28B params) and large (~0.62-0.69B) are for GPUs; xl (~3B) fills one: a
# smaller model leaves a modern GPU launch-bound at every length a prefill sees.
_SIZES: dict[str, tuple[int, int, int, int, int, int, int]] = {
    "tiny": (4096, 256, 4, 4, 64, 768, 32),
    "small": (16384, 512, 8, 8, 64, 1536, 32),
    "medium": (32768, 1024, 16, 16, 64, 2816, 32),
    "large": (32768, 1536, 20, 12, 128, 4096, 64),
    "xl": (65536, 3072, 28, 24, 128, 8192, 64),
}


def _make(family: Family, size: str) -> ModelConfig:
    vocab, d, layers, heads, hd, ff, rope = _SIZES[size]
    base = ModelConfig(f"{family}-{size}", family, vocab, d, layers, heads, hd, ff,
                       chunk_size=64 if hd <= 64 else 128)
    if family == "dense":
        return replace(base, n_kv_heads=heads // 2)
    return replace(base, linear_per_full=3, full_attn="mla", kv_latent_dim=d // 4,
                   rope_dim=rope)


CONFIGS: dict[str, ModelConfig] = {
    f"{fam}-{size}": _make(fam, size) for size in _SIZES for fam in ("hybrid", "dense")
}
MODEL_NAMES: tuple[str, ...] = tuple(CONFIGS)


def get_config(name: str) -> ModelConfig:
    """The named config; ValueError listing the names if unknown."""
    try:
        return CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r} (choose from {', '.join(MODEL_NAMES)})") from None


def counterpart(name: str) -> str:
    """The same-size model of the other family: hybrid-small <-> dense-small."""
    cfg = get_config(name)
    other = "dense" if cfg.family == "hybrid" else "hybrid"
    return f"{other}-{name.split('-', 1)[1]}"
