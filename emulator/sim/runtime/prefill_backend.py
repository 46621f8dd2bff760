"""Where a prefill's service time and KV bytes come from: the stage's profile (default), or a
real torch model run at every prefill start (`[prefill] backend = "torch"`).

The torch mode measures synchronously inside the prefill-start callback, so virtual time stays
exact (the clock does not move while the model runs) in headless and paced runs alike; only the
numbers now vary from run to run. The measured seconds become the service time, the measured KV
bytes the flow's size; decode memory (`kv_budget`, admission) keeps using the profile's S_kv.

The `[prefill]` section is read by emulator.scenario.prefill.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from emulator.scenario.prefill import PrefillBackendConfig
from emulator.torch_prefill.config import get_config, kv_bytes_from_config

if TYPE_CHECKING:
    from emulator.sim.core.request import Request
    from emulator.sim.routing.cache_runtime import CacheRuntime
    from emulator.sim.stages.prefill import PrefillStage, PrefillWorker

class Measured(NamedTuple):
    seconds: float  # service time
    kv_bytes: float  # KV of the whole prompt (full-attention KV + linear states)
    per_token_bytes: float  # full-attention KV per token (what a cached prefix saves)


class TorchService:
    """One torch model; `measure(req)` prefills the request's uncached tokens now.
    Raises TorchUnavailable (the install hint) when torch is missing."""

    def __init__(self, cfg: PrefillBackendConfig, seed: int):
        from emulator.torch_prefill.backend import TorchPrefillBackend

        self.cfg = cfg
        self.backend = TorchPrefillBackend(cfg.model, cfg.device, cfg.length_scale, seed)
        self.state_bytes = float(kv_bytes_from_config(get_config(cfg.model), 0))
        self.prefills = 0
        self.measured_seconds = 0.0  # wall seconds spent in the model

    def measure(self, req: Request) -> Measured:
        m = self.backend.measure(max(1, round(req.incr)))
        self.prefills += 1
        self.measured_seconds += m.measured_seconds
        per_token = (m.kv_bytes - self.state_bytes) / m.length_tokens
        return Measured(m.seconds, self.state_bytes + per_token * req.length, per_token)

    def to_json(self) -> dict:
        c = self.cfg
        return {"backend": "torch", "model": c.model, "device": str(self.backend.device),
                "length_scale": c.length_scale, "stages": list(c.stages),
                "prefills": self.prefills, "model_seconds": self.measured_seconds}


class StartHook:
    """`PrefillStage.on_start` for a stage that measures with torch and/or has a prefix cache:
    returns the bytes its KV flow carries."""

    __slots__ = ("stage", "torch", "cache")

    def __init__(self, stage: PrefillStage, torch: TorchService | None,
                 cache: CacheRuntime | None):
        self.stage, self.torch, self.cache = stage, torch, cache

    def __call__(self, w: PrefillWorker, req: Request) -> float:
        if self.torch is not None:
            m = self.torch.measure(req)
            req.service = m.seconds
            kv, per_token = m.kv_bytes, m.per_token_bytes
        else:
            kv, per_token = req.kv, None
        if self.cache is None:
            return kv
        return self.cache.started(self.stage, w, req, kv, per_token)


def start_hook(stage: PrefillStage, torch: TorchService | None, cache: CacheRuntime | None,
               role: str | None = None) -> Callable[[PrefillWorker, Request], float] | None:
    """The stage's hook, or None when the profile alone decides (the fast path). `role`: the
    stage's kind as `[prefill] stages` names it ("prfaas" for any site's; default its name)."""
    if torch is not None and (role or stage.name) not in torch.cfg.stages:
        torch = None
    if torch is None and cache is None:
        return None
    return StartHook(stage, torch, cache)
