"""Layer groups: what one kind of mixer layer keeps per request and what its prefill costs.

A model card is a list of groups (emulator/cards/model_card.py); S_kv(l) is the sum over groups
of what each holds after a prefill of l tokens. The kinds:

- `gqa`: full attention (MHA/GQA): `2 x n_kv_heads x head_dim` bytes per token (K and V widths
  summed when they differ), every token kept;
- `mla`: multi-head latent attention: `(kv_lora_rank + qk_rope_head_dim)` per token;
- `swa`: sliding-window attention: the per-token KV of the last `window` tokens, min(l, window);
- `chunked`: chunked local attention (Llama 4): a token attends only within its chunk of
  `window` tokens. transformers keeps the last `attention_chunk_size` tokens; vLLM frees a chunk
  once the next begins, keeping l mod chunk. min(l, chunk) is what both can hold, the bound a
  transfer must allow for, and keeps S_kv piecewise linear;
- `linear`: linear attention (Gated DeltaNet, KDA, Bailing's lightning): a fixed state per
  request, `heads x d_k x d_v` in the state dtype plus short-convolution states;
- `ssm`: Mamba-1 / Mamba-2: conv state `(conv_kernel - 1) x channels` in the model dtype plus
  the SSM state (Mamba-1 `d_inner x d_state`, Mamba-2 `heads x head_dim x d_state`) in the
  state dtype;
- `lightning`: MiniMax lightning attention: a fixed `heads x head_dim x head_dim` state.

`aux_bytes_per_token` is a per-token cache a layer keeps besides its KV (DeepSeek-V3.2's
indexer keys: fp8 keys plus an fp32 scale per 128 dims), held as long as the KV; it keeps its own
dtype when the KV is served in another.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KINDS = ("gqa", "mla", "swa", "chunked", "linear", "ssm", "lightning")
FULL = ("gqa", "mla")  # every token kept
WINDOWED = ("swa", "chunked")  # at most `window` tokens kept
STATE = ("linear", "ssm", "lightning")  # a fixed state, no per-token KV
CHUNK = 64  # chunk length of chunked linear-attention / SSD kernels (FLA, mamba_ssm)


@dataclass(frozen=True)
class LayerGroup:
    """Every layer of one kind (and one geometry) in the model."""

    kind: str
    count: int
    kv_bytes_per_token: float = 0.0  # per layer, in the KV dtype (0 for a state kind)
    window: int | None = None  # swa: the window; chunked: the chunk (tokens held at most)
    state_bytes: float = 0.0  # per layer, fixed per request (state kinds)
    pair_flops: float = 0.0  # attention FLOPs per (query, key) pair: 2 x heads x (d_qk + d_v)
    token_flops: float = 0.0  # state kinds: FLOPs per token (state update, read-out, chunk)
    aux_bytes_per_token: float = 0.0  # per layer, a per-token side cache (indexer keys)
    topk: int | None = None  # sparse attention: each query attends at most topk keys
    aux_pair_flops: float = 0.0  # the side cache's scoring FLOPs per (query, key) pair

    def held(self, length: np.ndarray) -> np.ndarray:
        """Tokens this group's layers hold after a prefill of `length` tokens."""
        if self.kind in FULL:
            return length
        if self.kind in WINDOWED:
            return np.minimum(length, self.window)
        return np.zeros_like(length)

    def token_bytes(self, length: np.ndarray) -> np.ndarray:
        """The per-token KV and side caches the group holds at `length` (states apart)."""
        return self.count * (self.kv_bytes_per_token + self.aux_bytes_per_token) * self.held(length)

    def pairs(self, n: np.ndarray) -> np.ndarray:
        """(query, key) pairs a causal prefill of n tokens computes: n(n+1)/2 for full
        attention; a window w: each token sees min(i, w) keys; a chunk c: each token sees its
        chunk so far, counted as (c+1)/2 keys a token once l >= c: exact at every multiple of c
        and at most c^2/8 pairs over in all between (half a chunk past a multiple), so the cost
        stays one piece each side of c; sparse top-k: each query scores at most topk keys."""
        inside = n * (n + 1) / 2
        cap = self.window if self.kind in WINDOWED else self.topk
        if cap is None:
            return inside
        w = float(cap)
        if self.kind == "chunked":
            beyond = n * (w + 1) / 2
        else:
            beyond = w * (w + 1) / 2 + (n - w) * w
        return np.where(n <= w, inside, beyond)

    def flops(self, n: np.ndarray) -> np.ndarray:
        """Mixer FLOPs of a causal prefill of n tokens (all layers of the group)."""
        if self.kind in STATE:
            return self.count * self.token_flops * n
        if self.kind in FULL and self.topk is None:
            out = self.count * self.pair_flops * n * (n + 1) / 2
        else:
            out = self.count * self.pair_flops * self.pairs(n)
        if self.aux_pair_flops:
            out = out + self.count * self.aux_pair_flops * n * (n + 1) / 2
        return out

    def flops_at(self, context: float) -> float:
        """FLOPs of the token at position `context` (it sees `context` keys, fewer in a window,
        its chunk so far, or top-k)."""
        if self.kind in STATE:
            return self.count * self.token_flops
        if self.kind == "chunked":
            seen = (context - 1) % self.window + 1 if context >= 1 else context
        elif self.kind == "swa":
            seen = min(context, self.window)
        else:
            seen = min(context, self.topk) if self.topk else context
        return self.count * (self.pair_flops * seen + self.aux_pair_flops * context)


def gqa_group(g: dict, count: int, nbytes: int, kind: str = "gqa", window: int | None = None,
              gate: bool = False, bias: bool = False) -> tuple[LayerGroup, float]:
    """A GQA/MHA layer group from its geometry (hidden, heads, kv, head_dim, v_dim) and its
    projection parameters (q with an output gate when `gate`; biases on q, k, v, o)."""
    kv_bytes = g["kv"] * (g["head_dim"] + g["v_dim"]) * nbytes
    q_width = g["heads"] * g["head_dim"]
    kv_width = g["kv"] * (g["head_dim"] + g["v_dim"])
    params = g["hidden"] * (q_width * (2 if gate else 1) + kv_width) + g["heads"] * g["v_dim"] * g["hidden"]
    if bias:
        params += q_width + kv_width + g["hidden"]
    pair = 2.0 * g["heads"] * (g["head_dim"] + g["v_dim"])
    return LayerGroup(kind, count, kv_bytes, window, 0.0, pair), float(params * count)


def linear_group(count: int, heads_k: int, heads_v: int, d_k: int, d_v: int, conv_channels: int,
                 conv_kernel: int, state_bytes: int, nbytes: int, kind: str = "linear") -> LayerGroup:
    """A linear-attention layer: state heads_v x d_k x d_v (state dtype) plus short-conv states
    of (kernel - 1) x channels (model dtype); FLOPs per token from the chunked algorithm: state
    update and read-out (4 x heads x d_k x d_v) and the intra-chunk products."""
    state = heads_v * d_k * d_v * state_bytes + max(conv_kernel - 1, 0) * conv_channels * nbytes
    flops = 4.0 * heads_v * d_k * d_v + 2.0 * CHUNK * max(heads_k, heads_v) * (d_k + d_v)
    return LayerGroup(kind, count, 0.0, None, float(state), 0.0, flops)


def ssm_group(count: int, ssm_elements: int, conv_channels: int, conv_kernel: int,
              state_bytes: int, nbytes: int, chunk_width: int = 0) -> LayerGroup:
    """A Mamba layer: SSM state of `ssm_elements` (state dtype) plus the conv state (model dtype).
    FLOPs per token from the state: update and read-out 4 x state elements, the causal conv
    2 x kernel x channels, and for Mamba-2's chunked scan (SSD) the intra-chunk products
    2 x CHUNK x `chunk_width` (B, C and x widths)."""
    state = ssm_elements * state_bytes + max(conv_kernel - 1, 0) * conv_channels * nbytes
    flops = 4.0 * ssm_elements + 2.0 * conv_kernel * conv_channels + 2.0 * CHUNK * chunk_width
    return LayerGroup("ssm", count, 0.0, None, float(state), 0.0, flops)
