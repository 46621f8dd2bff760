"""Torch layers for the units of a config's architecture (emulator/torch_prefill/architecture.py).

Every block is pre-norm with a residual and returns its output and its cache split into
("kv", per-token tensors) and ("state", fixed tensors), so the bytes a decode node would
receive are counted from what the forward pass returned. `UnitStack` is the base (embedding,
final norm, last-position logits) plus `depth` copies of one unit: timing it at two depths gives
the unit's time per layer.
"""

from __future__ import annotations

import math

from emulator.torch_prefill import TorchUnavailable
from emulator.torch_prefill.architecture import Architecture, Unit
from emulator.torch_prefill.linear_attention import chunked_linear_attention
from emulator.torch_prefill.models import RMSNorm, _sdpa, apply_rope, rope_tables

try:
    import torch
    import torch.nn.functional as F
    from torch import Tensor, nn
except (ImportError, OSError) as exc:
    raise TorchUnavailable() from exc

Caches = dict[str, tuple[Tensor, ...]]
STATE_DTYPES = {4: torch.float32, 2: torch.bfloat16, 1: torch.uint8}


def _rope(x: Tensor, rope: tuple[Tensor, Tensor]) -> Tensor:
    """RoPE on the first len(cos) dims of x's last axis (an odd head width keeps one as is)."""
    r = rope[0].shape[-1]
    if r == x.shape[-1]:
        return apply_rope(x, *rope)
    return torch.cat([apply_rope(x[..., :r], *rope), x[..., r:]], -1)


def _local_attention(q: Tensor, k: Tensor, v: Tensor, window: int, chunked: bool) -> Tensor:
    """Causal attention where a query sees the last `window` keys (sliding) or its own chunk of
    `window` (chunked): blocks of `window` queries against one or two blocks of keys, so the work
    is O(l x window), as a windowed flash kernel's."""
    B, H, L, _ = q.shape
    if window >= L:
        return _sdpa(q, k, v)
    if k.shape[1] != H:  # blocks put the heads elsewhere: expand the KV heads first
        k, v = k.repeat_interleave(H // k.shape[1], 1), v.repeat_interleave(H // v.shape[1], 1)
    W = window
    N = math.ceil(L / W)
    pad = N * W - L
    if pad:  # padded keys come after every real query: the causal masks hide them
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))

    def blocks(t: Tensor) -> Tensor:  # (B, h, N*W, d) -> (B, N, h, W, d)
        return t.reshape(t.shape[0], t.shape[1], N, W, t.shape[-1]).transpose(1, 2)

    qb, kb, vb = blocks(q), blocks(k), blocks(v)
    sdpa = F.scaled_dot_product_attention
    if chunked:
        out = sdpa(qb, kb, vb, is_causal=True)
    else:  # block n's queries see keys of blocks n-1 and n: query i, key j' when i < j' <= i + W
        first = sdpa(qb[:, :1], kb[:, :1], vb[:, :1], is_causal=True)
        k2 = torch.cat([kb[:, :-1], kb[:, 1:]], -2)
        v2 = torch.cat([vb[:, :-1], vb[:, 1:]], -2)
        i = torch.arange(W, device=q.device)[:, None]
        j = torch.arange(2 * W, device=q.device)[None, :]
        mask = (j > i) & (j <= i + W)
        rest = sdpa(qb[:, 1:], k2, v2, attn_mask=mask)
        out = torch.cat([first, rest], 1)
    return out.transpose(1, 2).reshape(B, H, N * W, -1)[:, :, :L]


class Attention(nn.Module):
    """GQA / MHA, full or windowed (swa, chunked); caches k (after RoPE) and v of the tokens
    the card says the layer holds (all, or the last min(l, window)); none when it reuses
    another layer's KV."""

    def __init__(self, hidden: int, unit: Unit):
        super().__init__()
        d = unit.dims
        self.h, self.hkv, self.qk, self.v = d["heads"], d["kv_heads"], d["qk"], d["v"]
        self.window, self.keeps, self.kind = d["window"], d["keeps"], unit.kind
        self.rope_dim = self.qk - self.qk % 2
        self.wq = nn.Linear(hidden, self.h * self.qk, bias=False)
        self.wk = nn.Linear(hidden, self.hkv * self.qk, bias=False)
        self.wv = nn.Linear(hidden, self.hkv * self.v, bias=False)
        self.wo = nn.Linear(self.h * self.v, hidden, bias=False)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor]) -> tuple[Tensor, Caches]:
        B, L, _ = x.shape
        q = self.wq(x).view(B, L, self.h, self.qk).transpose(1, 2)
        k = self.wk(x).view(B, L, self.hkv, self.qk).transpose(1, 2)
        v = self.wv(x).view(B, L, self.hkv, self.v).transpose(1, 2)
        q, k = _rope(q, rope), _rope(k, rope)
        if self.kind == "gqa":
            o = _sdpa(q, k, v)
        else:
            o = _local_attention(q, k, v, self.window, self.kind == "chunked")
        o = o.transpose(1, 2).reshape(B, L, self.h * self.v)
        held = L if self.window is None else min(L, self.window)
        kv = (k[:, :, L - held:], v[:, :, L - held:]) if self.keeps else ()
        return self.wo(o), {"kv": kv}


class LatentAttention(nn.Module):
    """MLA: caches the normed latent (kv_lora_rank) and the shared rope key per token, plus a
    side cache of `aux` bytes per token (an indexer's fp8 keys) when the card has one."""

    def __init__(self, hidden: int, unit: Unit):
        super().__init__()
        d = unit.dims
        self.h, self.dc, self.dr, self.dn, self.dv = d["heads"], d["rank"], d["rope"], d["nope"], d["v"]
        self.rope_dim = self.dr
        dq = self.h * (self.dn + self.dr)
        if d["q_rank"]:
            self.wq = nn.Sequential(nn.Linear(hidden, d["q_rank"], bias=False), RMSNorm(d["q_rank"]),
                                    nn.Linear(d["q_rank"], dq, bias=False))
        else:
            self.wq = nn.Linear(hidden, dq, bias=False)
        self.wkv_a = nn.Linear(hidden, self.dc + self.dr, bias=False)
        self.kv_norm = RMSNorm(self.dc)
        self.wkv_b = nn.Linear(self.dc, self.h * (self.dn + self.dv), bias=False)
        self.wo = nn.Linear(self.h * self.dv, hidden, bias=False)
        self.w_aux = nn.Linear(hidden, d["aux"], bias=False) if d["aux"] else None

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor]) -> tuple[Tensor, Caches]:
        B, L, _ = x.shape
        q = self.wq(x).view(B, L, self.h, self.dn + self.dr).transpose(1, 2)
        q_nope, q_rope = q.split([self.dn, self.dr], -1)
        c_kv, k_rope = self.wkv_a(x).split([self.dc, self.dr], -1)
        c_kv = self.kv_norm(c_kv)
        k_rope = apply_rope(k_rope, *rope)
        kv = self.wkv_b(c_kv).view(B, L, self.h, self.dn + self.dv).transpose(1, 2)
        k_nope, v = kv.split([self.dn, self.dv], -1)
        q = torch.cat([q_nope, apply_rope(q_rope, *rope)], -1)
        k = torch.cat([k_nope, k_rope[:, None].expand(B, self.h, L, self.dr)], -1)
        o = _sdpa(q, k, v).transpose(1, 2).reshape(B, L, self.h * self.dv)
        cache: tuple[Tensor, ...] = (c_kv, k_rope)
        if self.w_aux is not None:
            cache += (self.w_aux(x).to(torch.uint8),)
        return self.wo(o), {"kv": cache}


class StateMixer(nn.Module):
    """A recurrent mixer of the card's state size: gated linear attention over `heads` x d x d
    (kept in the state dtype) and a conv state of the remaining bytes (the last tokens' inputs)."""

    rope_dim = 0

    def __init__(self, hidden: int, unit: Unit, chunk_size: int = 64):
        super().__init__()
        d = unit.dims
        self.h, self.d, self.chunk = d["heads"], d["d"], chunk_size
        self.state_dtype = STATE_DTYPES[d["itemsize"]]
        self.conv_bytes = d["conv_bytes"]
        inner = self.h * self.d
        self.wqkvg = nn.Linear(hidden, 4 * inner, bias=False) if inner else None
        self.w_decay = nn.Linear(hidden, max(self.h, 1), bias=True)
        self.wo = nn.Linear(max(inner, 1), hidden, bias=False)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor]) -> tuple[Tensor, Caches]:
        B, L, _ = x.shape
        flat = x.reshape(B, -1).view(torch.uint8)
        conv = flat[:, flat.shape[1] - min(self.conv_bytes, flat.shape[1]):]
        if conv.shape[1] < self.conv_bytes:
            conv = F.pad(conv, (self.conv_bytes - conv.shape[1], 0))
        if self.wqkvg is None:
            return torch.zeros_like(x), {"state": (conv.clone(),)}
        q, k, v, gate = (t.view(B, L, self.h, self.d).transpose(1, 2)
                         for t in self.wqkvg(x).chunk(4, -1))
        log_decay = -F.softplus(self.w_decay(x).float()).transpose(1, 2)
        o, state = chunked_linear_attention(F.normalize(q, dim=-1), F.normalize(k, dim=-1), v,
                                            log_decay, self.chunk)
        o = (o * F.silu(gate)).transpose(1, 2).reshape(B, L, self.h * self.d)
        return self.wo(o), {"state": (state.to(self.state_dtype), conv.clone())}


class GatedMLP(nn.Module):
    def __init__(self, hidden: int, width: int):
        super().__init__()
        self.gate_up = nn.Linear(hidden, 2 * width, bias=False)
        self.down = nn.Linear(width, hidden, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        g, u = self.gate_up(x).chunk(2, -1)
        return self.down(F.silu(g) * u)


class Experts(nn.Module):
    """Routed experts: a softmax router, top-k per token, the tokens sorted by expert and each
    expert's run in turn (one GEMM per expert: what runs without a grouped-GEMM kernel), the
    weighted outputs scattered back."""

    def __init__(self, hidden: int, experts: int, top_k: int, width: int):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList(GatedMLP(hidden, width) for _ in range(experts))

    def forward(self, x: Tensor) -> Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        weights, chosen = self.router(flat).float().softmax(-1).topk(self.top_k, -1)
        order = chosen.flatten().argsort()  # (token, slot) pairs grouped by expert
        counts = torch.bincount(chosen.flatten(), minlength=len(self.experts)).tolist()
        rows = order // self.top_k
        ys = [expert(part) for expert, part, n in zip(
            self.experts, flat[rows].split(counts), counts, strict=True) if n]
        y = torch.cat(ys) * weights.flatten()[order, None].to(flat.dtype)
        return torch.zeros_like(flat).index_add_(0, rows, y).view(shape)


class UnitBlock(nn.Module):
    """x += mixer(norm(x)) for a mixer unit; x += ffn(norm(x)) for an FFN unit."""

    def __init__(self, hidden: int, unit: Unit):
        super().__init__()
        self.norm = RMSNorm(hidden)
        self.ffn: nn.Module | None = None
        self.mixer: nn.Module | None = None
        if unit.kind == "ffn":
            self.ffn = GatedMLP(hidden, unit.dims["width"])
        elif unit.kind == "moe":
            self.ffn = Experts(hidden, unit.dims["experts"], unit.dims["top_k"], unit.dims["width"])
        elif unit.kind == "mla":
            self.mixer = LatentAttention(hidden, unit)
        elif unit.kind == "state":
            self.mixer = StateMixer(hidden, unit)
        else:
            self.mixer = Attention(hidden, unit)
        self.rope_dim = getattr(self.mixer, "rope_dim", 0)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor]) -> tuple[Tensor, Caches]:
        if self.ffn is not None:
            return x + self.ffn(self.norm(x)), {}
        h, cache = self.mixer(self.norm(x), rope)
        return x + h, cache


class UnitStack(nn.Module):
    """The base (embedding, final norm, logits of the last position) and `depth` layers of one
    unit; forward(tokens, n) runs the first n of them (0: the base alone)."""

    def __init__(self, arch: Architecture, unit: Unit, depth: int, rope_base: float = 10000.0):
        super().__init__()
        self.vocab_size = arch.vocab
        self.embed = nn.Embedding(arch.vocab, arch.hidden)
        self.blocks = nn.ModuleList(UnitBlock(arch.hidden, unit) for _ in range(depth))
        self.norm = RMSNorm(arch.hidden)
        self.lm_head = nn.Linear(arch.hidden, arch.vocab, bias=False)
        self.rope_dim = self.blocks[0].rope_dim if depth else 0
        self.rope_base = rope_base

    def forward(self, tokens: Tensor, depth: int | None = None) -> tuple[Tensor, list[Caches]]:
        x = self.embed(tokens)
        rope = rope_tables(tokens.shape[1], self.rope_dim, self.rope_base, x.device, x.dtype)
        caches = []
        for block in self.blocks[:depth]:
            x, cache = block(x, rope)
            caches.append(cache)
        return self.lm_head(self.norm(x[:, -1])), caches


def init_weights(net: nn.Module, layers: int, std: float = 0.02) -> None:
    """Normal(0, 0.02) matrices, output projections scaled by depth; recurrent decays
    log-uniform in [0.9, 0.999] per token (a long but bounded memory); norms stay at one."""
    for name, mod in net.named_modules():
        if isinstance(mod, nn.Linear | nn.Embedding):
            scale = 1 / math.sqrt(2 * max(layers, 1)) if name.endswith(("wo", "down")) else 1.0
            mod.weight.data.normal_(0.0, std * scale)
        if name.endswith("w_decay"):
            rate = torch.empty_like(mod.bias).uniform_(math.log(1e-3), math.log(0.105)).exp()
            mod.bias.data.copy_(torch.log(torch.expm1(rate)))  # softplus(bias) = -log(a)


def build_stack(arch: Architecture, unit: Unit, depth: int, device: torch.device,
                dtype: torch.dtype, seed: int = 0) -> UnitStack:
    """A seeded random-weight stack in eval mode; nothing is downloaded."""
    cuda = [torch.cuda.current_device() if device.index is None else device.index] \
        if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda), torch.device(device):
        torch.manual_seed(seed)
        net = UnitStack(arch, unit, depth)
        init_weights(net, sum(u.count for u in arch.mixers))
    net = net.to(dtype).eval()
    net.requires_grad_(False)
    return net
