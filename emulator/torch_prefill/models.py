"""A compact decoder family with random (seeded) weights, sized so that compute is realistic.

Each block is pre-norm: x += mixer(RMSNorm(x)); x += SwiGLU(RMSNorm(x)). Mixers:
`GQAAttention` (dense), `MLAAttention` (hybrid full layers: latent KV + rope key) and
`GatedLinearAttention` (hybrid linear layers: fixed-size fp32 state). Every mixer returns its
output and the tensors a decode node would need to continue from this prefill.
"""

from __future__ import annotations

import math

from emulator.torch_prefill import TorchUnavailable
from emulator.torch_prefill.config import ModelConfig, get_config
from emulator.torch_prefill.linear_attention import chunked_linear_attention

try:
    import torch
    import torch.nn.functional as F
    from torch import Tensor, nn
except (ImportError, OSError) as exc:
    raise TorchUnavailable() from exc

Cache = tuple[Tensor, ...]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return xf.to(x.dtype) * self.weight


def rope_tables(length: int, dim: int, base: float, device: torch.device,
                dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    inv = base ** (-torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim)
    freqs = torch.outer(torch.arange(length, device=device, dtype=torch.float32), inv)
    emb = torch.cat([freqs, freqs], -1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x: (..., L, dim); rotate-half RoPE."""
    x1, x2 = x.chunk(2, -1)
    return x * cos + torch.cat([-x2, x1], -1) * sin


def _sdpa(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    if k.shape[1] != q.shape[1]:
        try:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        except TypeError:  # torch < 2.5
            rep = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class GQAAttention(nn.Module):
    """Causal GQA; caches k (after RoPE) and v: 2 * n_kv_heads * head_dim per token."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.h, self.hkv, self.hd = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.wq = nn.Linear(cfg.d_model, self.h * self.hd, bias=False)
        self.wk = nn.Linear(cfg.d_model, self.hkv * self.hd, bias=False)
        self.wv = nn.Linear(cfg.d_model, self.hkv * self.hd, bias=False)
        self.wo = nn.Linear(self.h * self.hd, cfg.d_model, bias=False)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor]) -> tuple[Tensor, Cache]:
        B, L, _ = x.shape
        q = self.wq(x).view(B, L, self.h, self.hd).transpose(1, 2)
        k = self.wk(x).view(B, L, self.hkv, self.hd).transpose(1, 2)
        v = self.wv(x).view(B, L, self.hkv, self.hd).transpose(1, 2)
        q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        o = _sdpa(q, k, v).transpose(1, 2).reshape(B, L, self.h * self.hd)
        return self.wo(o), (k, v)


class MLAAttention(nn.Module):
    """MLA-style: caches the normed latent c_kv (d_c) and one shared rope key (d_r) per token;
    per-head keys/values are re-expanded from the latent. q/k head = nope + rope = head_dim."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.h, self.hd = cfg.n_heads, cfg.head_dim
        self.dr, self.dc = cfg.rope_dim, cfg.kv_latent_dim
        self.dn = self.hd - self.dr
        self.wq = nn.Linear(cfg.d_model, self.h * self.hd, bias=False)
        self.wkv_a = nn.Linear(cfg.d_model, self.dc + self.dr, bias=False)
        self.kv_norm = RMSNorm(self.dc)
        self.wkv_b = nn.Linear(self.dc, self.h * (self.dn + self.hd), bias=False)
        self.wo = nn.Linear(self.h * self.hd, cfg.d_model, bias=False)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor]) -> tuple[Tensor, Cache]:
        B, L, _ = x.shape
        q = self.wq(x).view(B, L, self.h, self.hd).transpose(1, 2)
        q_nope, q_rope = q.split([self.dn, self.dr], -1)
        c_kv, k_rope = self.wkv_a(x).split([self.dc, self.dr], -1)
        c_kv = self.kv_norm(c_kv)  # (B, L, d_c): cached
        k_rope = apply_rope(k_rope, *rope)  # (B, L, d_r): cached
        kv = self.wkv_b(c_kv).view(B, L, self.h, self.dn + self.hd).transpose(1, 2)
        k_nope, v = kv.split([self.dn, self.hd], -1)
        q = torch.cat([q_nope, apply_rope(q_rope, *rope)], -1)
        k = torch.cat([k_nope, k_rope[:, None].expand(B, self.h, L, self.dr)], -1)
        o = _sdpa(q, k, v).transpose(1, 2).reshape(B, L, self.h * self.hd)
        return self.wo(o), (c_kv, k_rope)


class GatedLinearAttention(nn.Module):
    """KDA-like linear layer: L2-normed q/k, a per-head data-dependent decay, output gate and
    norm. Its cache is the final state: n_heads x head_dim x head_dim in fp32, whatever l is."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.h, self.hd, self.chunk = cfg.n_heads, cfg.head_dim, cfg.chunk_size
        inner = self.h * self.hd
        self.wq = nn.Linear(cfg.d_model, inner, bias=False)
        self.wk = nn.Linear(cfg.d_model, inner, bias=False)
        self.wv = nn.Linear(cfg.d_model, inner, bias=False)
        self.wg = nn.Linear(cfg.d_model, inner, bias=False)
        self.w_decay = nn.Linear(cfg.d_model, self.h, bias=True)
        self.o_norm = RMSNorm(self.hd)
        self.wo = nn.Linear(inner, cfg.d_model, bias=False)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor]) -> tuple[Tensor, Cache]:
        B, L, _ = x.shape

        def heads(t: Tensor) -> Tensor:
            return t.view(B, L, self.h, self.hd).transpose(1, 2)

        q = F.normalize(heads(self.wq(x)), dim=-1)
        k = F.normalize(heads(self.wk(x)), dim=-1)
        v = heads(self.wv(x))
        log_decay = -F.softplus(self.w_decay(x).float()).transpose(1, 2)  # (B, H, L)
        o, state = chunked_linear_attention(q, k, v, log_decay, self.chunk)
        o = self.o_norm(o.transpose(1, 2)).reshape(B, L, -1) * F.silu(self.wg(x))
        return self.wo(o), (state,)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, full: bool):
        super().__init__()
        self.kind = "full" if full else "linear"
        if not full:
            self.mixer: nn.Module = GatedLinearAttention(cfg)
        elif cfg.full_attn == "mla":
            self.mixer = MLAAttention(cfg)
        else:
            self.mixer = GQAAttention(cfg)
        self.norm1, self.norm2 = RMSNorm(cfg.d_model), RMSNorm(cfg.d_model)
        self.gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.up = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.down = nn.Linear(cfg.d_ff, cfg.d_model, bias=False)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor]) -> tuple[Tensor, Cache]:
        h, cache = self.mixer(self.norm1(x), rope)
        x = x + h
        y = self.norm2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y)), cache


class PrefillLM(nn.Module):
    """Embedding -> blocks -> norm -> logits of the last position (all a prefill samples from)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg, cfg.is_full(i)) for i in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.rope_dim = cfg.rope_dim if cfg.full_attn == "mla" else cfg.head_dim

    def forward(self, tokens: Tensor) -> tuple[Tensor, list[tuple[str, Cache]]]:
        x = self.embed(tokens)
        rope = rope_tables(tokens.shape[1], self.rope_dim, self.cfg.rope_base, x.device, x.dtype)
        caches: list[tuple[str, Cache]] = []
        for block in self.blocks:
            x, cache = block(x, rope)
            caches.append((block.kind, cache))
        return self.lm_head(self.norm(x[:, -1])), caches


def _init_weights(model: PrefillLM) -> None:
    """Small-std normal init (residual outputs scaled by depth); linear-layer decays log-uniform
    in [0.9, 0.999] per token so states hold a long but bounded memory."""
    std = 0.02
    for name, p in model.named_parameters():
        if name.endswith("norm.weight") or "norm1" in name or "norm2" in name:
            continue
        if name.endswith("w_decay.bias"):
            rate = torch.empty_like(p).uniform_(math.log(1e-3), math.log(0.105)).exp()
            p.data.copy_(torch.log(torch.expm1(rate)))  # softplus(bias) = -log(a)
        elif name.endswith(("wo.weight", "down.weight")):
            p.data.normal_(0.0, std / math.sqrt(2 * model.cfg.n_layers))
        else:
            p.data.normal_(0.0, std)


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """None -> cuda when present else cpu; a cuda request without a GPU is a ValueError."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    text = str(device)
    if text != "cpu" and not (text == "cuda" or text.startswith("cuda:")):
        raise ValueError(f"must be cuda or cpu, got {text!r}")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("cuda requested but no CUDA device is available (use --device cpu)")
    return dev


def default_dtype(device: torch.device) -> torch.dtype:
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def build_model(model: str | ModelConfig, device: str | torch.device | None = None,
                seed: int = 0, dtype: torch.dtype | None = None) -> PrefillLM:
    """Random-weight model in eval mode on `device` (bf16 on GPU, fp32 on CPU); the same seed
    gives the same weights on the same device. Nothing is downloaded."""
    cfg = get_config(model) if isinstance(model, str) else model
    dev = resolve_device(device)
    cuda_ids = [torch.cuda.current_device() if dev.index is None else dev.index] \
        if dev.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda_ids), torch.device(dev):
        torch.manual_seed(seed)
        net = PrefillLM(cfg)
        _init_weights(net)
    net = net.to(dtype or default_dtype(dev)).eval()
    net.requires_grad_(False)
    return net


def param_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
