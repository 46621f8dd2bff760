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

SCAN_BLOCK = 64  # chunks per matmul block of the inter-chunk scan


def chunked_linear_attention(q: Tensor, k: Tensor, v: Tensor, log_decay: Tensor,
                             chunk_size: int = 64,
                             state: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """q, k: (B, H, L, dk); v: (B, H, L, dv); log_decay: (B, H, L), <= 0.

    Returns (o of shape (B, H, L, dv) in v's dtype, final state (B, H, dk, dv) in fp32).
    Work is O(L * (C*d + dk*dv)); the carry between chunks is `decayed_scan`: a few matmuls,
    not one kernel launch per chunk (which left a GPU idle between launches).
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
    updates = k_dec.transpose(-1, -2) @ v.float()  # (B, H, N, dk, dv)
    s0 = None if state is None else state.float()
    states = decayed_scan(updates, g_last.squeeze(-1), s0)  # state after each chunk

    # inter-chunk: o_i += exp(G_i) q_i S_{n-1}
    first = torch.zeros_like(states[:, :, :1]) if s0 is None else s0[:, :, None]
    prev = torch.cat([first, states[:, :, :-1]], 2).to(q.dtype)  # state before each chunk
    out = out + (q * g.exp()[..., None].to(q.dtype)) @ prev
    return out.reshape(B, H, N * C, dv)[:, :, :L], states[:, :, -1].clone()


def decayed_scan(updates: Tensor, log_decay: Tensor, state: Tensor | None = None,
                 block: int = SCAN_BLOCK) -> Tensor:
    """S_n = exp(a_n) S_{n-1} + U_n for every n (updates (B, H, N, dk, dv), log_decay a (B, H, N)
    <= 0), as matmuls: inside a block of `block` chunks S = D @ U with D[n, m] = exp(A_n - A_m)
    for m <= n (A the running sum of a; every factor in (0, 1]); one step per block carries the
    state across blocks. Launches grow with N / block, not N."""
    B, H, N, dk, dv = updates.shape
    K = min(block, N)
    M = math.ceil(N / K)
    u = updates.reshape(B, H, N, dk * dv)
    a = log_decay.float()
    if M * K != N:  # no update and no decay: padding leaves the state as it is
        u = F.pad(u, (0, 0, 0, M * K - N))
        a = F.pad(a, (0, M * K - N))
    u = u.view(B, H, M, K, dk * dv)
    cum = a.view(B, H, M, K).cumsum(-1)
    causal = torch.ones(K, K, dtype=torch.bool, device=u.device).tril()
    local = (cum[..., :, None] - cum[..., None, :]).masked_fill(~causal, -math.inf).exp() @ u
    if M == 1 and state is None:
        return local.view(B, H, K, dk, dv)[:, :, :N]
    carry = (torch.zeros_like(local[:, :, 0, 0]) if state is None
             else state.float().reshape(B, H, dk * dv))
    into = cum.exp()  # decay from each block's start to each chunk
    out = []
    for m in range(M):
        blk = local[:, :, m] + into[:, :, m, :, None] * carry[:, :, None]
        out.append(blk)
        carry = blk[:, :, -1]
    return torch.stack(out, 2).view(B, H, M * K, dk, dv)[:, :, :N]


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
