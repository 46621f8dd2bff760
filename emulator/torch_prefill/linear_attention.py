"""Gated (decayed) linear attention: S_t = a_t S_{t-1} + k_t^T v_t, o_t = q_t S_t.

The chunked form is what the hybrid model runs: linear in l, with a causal matmul inside each
chunk and the state carried between chunks. The token-by-token recurrence is the reference the
tests hold it to. The decay a_t = exp(log_decay_t) is a scalar per head and token, so every
decay factor used below is exp(of a non-positive number) and stays in (0, 1].
"""

from __future__ import annotations

import math

from emulator.torch_prefill import TorchUnavailable

try:
    import torch
    import torch.nn.functional as F
    from torch import Tensor
except (ImportError, OSError) as exc:
    raise TorchUnavailable() from exc


def chunked_linear_attention(q: Tensor, k: Tensor, v: Tensor, log_decay: Tensor,
                             chunk_size: int = 64,
                             state: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """q, k: (B, H, L, dk); v: (B, H, L, dv); log_decay: (B, H, L), <= 0.

    Returns (o of shape (B, H, L, dv) in v's dtype, final state (B, H, dk, dv) in fp32).
    Work is O(L * (C*d + dk*dv)); the inter-chunk carry is one fused kernel per chunk.
    """
    B, H, L, dk = q.shape
    dv = v.shape[-1]
    C = chunk_size
    N = max(1, math.ceil(L / C))
    pad = N * C - L
    if pad:  # k = v = 0 and no decay: padding neither updates nor decays the state
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        log_decay = F.pad(log_decay, (0, pad))
    q = q.reshape(B, H, N, C, dk)
    k = k.reshape(B, H, N, C, dk)
    v = v.reshape(B, H, N, C, dv)
    g = log_decay.float().reshape(B, H, N, C).cumsum(-1)  # G_i: decay from chunk start to i

    # intra-chunk: o_i = sum_{j<=i} exp(G_i - G_j) (q_i . k_j) v_j
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    rel = (g[..., :, None] - g[..., None, :]).masked_fill(~causal, -math.inf).exp()
    out = ((q @ k.transpose(-1, -2)) * rel.to(q.dtype)) @ v

    # chunk n adds U_n = sum_j exp(G_C - G_j) k_j^T v_j and decays the carried state by exp(G_C)
    g_last = g[..., -1:]
    k_dec = k.float() * (g_last - g).exp()[..., None]
    states = torch.empty(N + 1, B, H, dk, dv, dtype=torch.float32, device=q.device)
    states[0] = 0.0 if state is None else state.float()
    states[1:] = (k_dec.transpose(-1, -2) @ v.float()).permute(2, 0, 1, 3, 4)
    chunk_decay = g_last.squeeze(-1).exp().permute(2, 0, 1)[..., None, None]  # (N, B, H, 1, 1)
    for n in range(1, N + 1):  # inclusive scan: S_n = exp(G_C) S_{n-1} + U_n
        states[n].addcmul_(states[n - 1], chunk_decay[n - 1])

    # inter-chunk: o_i += exp(G_i) q_i S_{n-1}
    prev = states[:-1].permute(1, 2, 0, 3, 4).to(q.dtype)  # state before each chunk
    out = out + (q * g.exp()[..., None].to(q.dtype)) @ prev
    return out.reshape(B, H, N * C, dv)[:, :, :L], states[-1].clone()


def recurrent_linear_attention(q: Tensor, k: Tensor, v: Tensor, log_decay: Tensor,
                               state: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Token-by-token reference of `chunked_linear_attention` (fp32, O(L) Python steps)."""
    B, H, L, dk = q.shape
    dv = v.shape[-1]
    S = torch.zeros(B, H, dk, dv, dtype=torch.float32, device=q.device)
    if state is not None:
        S = S + state.float()
    q, k, v = q.float(), k.float(), v.float()
    a = log_decay.float().exp()
    out = torch.empty(B, H, L, dv, dtype=torch.float32, device=q.device)
    for t in range(L):
        S = a[:, :, t, None, None] * S + k[:, :, t, :, None] * v[:, :, t, None, :]
        out[:, :, t] = (q[:, :, t, None, :] @ S).squeeze(-2)
    return out, S
