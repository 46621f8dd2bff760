"""One real prefill and S_kv(l): the bytes a decode node needs, counted from the tensors.

S_kv is measured, not assumed: the sum of numel * element_size over the full-attention layers'
KV and the linear layers' states that the forward pass returned. `kv_bytes_from_config` gives
the same number from the shape alone (the tests hold the two equal).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from emulator.torch_prefill import TorchUnavailable
from emulator.torch_prefill.config import kv_bytes_from_config
from emulator.torch_prefill.linear_attention import (
    chunked_linear_attention,
    recurrent_linear_attention,
)
from emulator.torch_prefill.models import Cache, PrefillLM

try:
    import torch
    from torch import Tensor
except (ImportError, OSError) as exc:
    raise TorchUnavailable() from exc

__all__ = ["PrefillResult", "prefill", "make_tokens", "tensor_bytes", "kv_bytes_from_config",
           "chunked_linear_attention", "recurrent_linear_attention"]


def tensor_bytes(tensors: Iterable[Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@dataclass
class PrefillResult:
    """What a prefill hands to decode: per layer ("full", (kv tensors...)) or
    ("linear", (state,)), plus the last position's logits (for the first token)."""

    tokens: int
    logits: Tensor
    caches: list[tuple[str, Cache]]

    def tensors(self, kind: str | None = None) -> list[Tensor]:
        return [t for k, ts in self.caches if kind in (None, k) for t in ts]

    @property
    def kv_bytes(self) -> int:
        """S_kv(l): all of it (full-layer KV grows with l, linear states do not)."""
        return tensor_bytes(self.tensors())

    @property
    def full_attention_bytes(self) -> int:
        return tensor_bytes(self.tensors("full"))

    @property
    def state_bytes(self) -> int:
        return tensor_bytes(self.tensors("linear"))


def make_tokens(vocab_size: int, length: int, seed: int = 0, batch: int = 1,
                device: torch.device | str = "cpu") -> Tensor:
    """Random token ids from a seeded CPU generator (same ids on every device)."""
    if length < 1:
        raise ValueError(f"length must be >= 1, got {length}")
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (batch, length), generator=gen).to(device)


def prefill(model: PrefillLM, length: int | None = None, *, seed: int = 0, batch: int = 1,
            tokens: Tensor | None = None) -> PrefillResult:
    """Prefill `length` random tokens (or the given `tokens`, shape (batch, l)) under
    inference_mode. Asynchronous on GPU: synchronize before reading a clock."""
    if tokens is None:
        if length is None:
            raise ValueError("give a length or tokens")
        tokens = make_tokens(model.cfg.vocab_size, length, seed, batch,
                             next(model.parameters()).device)
    with torch.inference_mode():
        logits, caches = model(tokens)
    return PrefillResult(int(tokens.shape[1]), logits, caches)
