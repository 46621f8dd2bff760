"""Real prefills inside the emulator: the prefill worker asks for a service time and the KV size,
and gets them by running the model now, synchronously, so its virtual clock stays exact.

Only the model is kept between calls; every call runs (and times) a fresh prefill.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from emulator.torch_prefill import TorchUnavailable
from emulator.torch_prefill.models import build_model, resolve_device
from emulator.torch_prefill.prefill import make_tokens, prefill

try:
    import torch
except (ImportError, OSError) as exc:
    raise TorchUnavailable() from exc


@dataclass(frozen=True)
class Measurement:
    length_tokens: int  # the length asked for
    tokens_run: int  # what actually ran: max(1, round(length_tokens * length_scale))
    measured_seconds: float  # wall time of that prefill
    seconds: float  # measured_seconds * length_tokens / tokens_run
    kv_bytes: int  # full-layer KV per token (measured) * length_tokens + linear states


class TorchPrefillBackend:
    """Prefill service times from a real torch model.

    `length_scale` shrinks what runs (say 1/32, to emulate 32K prompts with 1K-token prefills on
    a CPU): a request of L tokens runs n = max(1, round(L * length_scale)) tokens, and both
    results are scaled back to L linearly:

    * service_time(L) = measured seconds * L / n  (~ measured / length_scale); exact at scale 1,
      and it ignores attention's quadratic term, so it underestimates long prompts when < 1;
    * kv_bytes(L) = (full-attention KV bytes / n) * L + linear-state bytes, which is exact for
      any scale (KV grows per token, the states do not).

    `warmup` untimed prefills of `warmup_tokens` run once at construction, so the first request
    does not pay one-time costs (allocator, kernel selection).
    """

    def __init__(self, model_name: str, device: str | None = None, length_scale: float = 1.0,
                 seed: int = 0, *, warmup: int = 1, warmup_tokens: int = 128):
        if not length_scale > 0:
            raise ValueError(f"length_scale must be > 0, got {length_scale}")
        self.model_name = model_name
        self.device = resolve_device(device)
        self.length_scale = float(length_scale)
        self.seed = seed
        self.model = build_model(model_name, self.device, seed)
        for _ in range(warmup):
            prefill(self.model, warmup_tokens, seed=seed)
        self._sync()

    def tokens_run(self, length_tokens: int) -> int:
        return max(1, round(length_tokens * self.length_scale))

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def measure(self, length_tokens: int) -> Measurement:
        """Run one prefill now (synchronously) and return both scaled results."""
        if length_tokens < 1:
            raise ValueError(f"length_tokens must be >= 1, got {length_tokens}")
        n = self.tokens_run(length_tokens)
        tokens = make_tokens(self.model.cfg.vocab_size, n, self.seed, device=self.device)
        self._sync()
        t0 = time.perf_counter()
        result = prefill(self.model, tokens=tokens)
        self._sync()
        elapsed = time.perf_counter() - t0
        kv = result.full_attention_bytes * length_tokens // n + result.state_bytes
        return Measurement(length_tokens, n, elapsed, elapsed * length_tokens / n, kv)

    def service_time(self, length_tokens: int) -> float:
        """Seconds to prefill `length_tokens` (measured now; see the class doc for scaling)."""
        return self.measure(length_tokens).seconds

    def kv_bytes(self, length_tokens: int) -> int:
        """S_kv(length_tokens) in bytes, from the tensors of a prefill run now."""
        return self.measure(length_tokens).kv_bytes
