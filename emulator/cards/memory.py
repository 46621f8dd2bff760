"""Does the model fit its GPUs? Weights, the KV of the longest request and the activations of a
prefill chunk, per GPU, against the card's HBM.

Why: a profile for a deployment that cannot load its weights is a silently wrong answer; the
user gets one line with the numbers instead (`models`, `new` and the dashboard's `n` form all
call `check_memory`).
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.cards import CardError
from emulator.cards.gpu import GpuCard
from emulator.cards.kernel import Setup, weight_bytes
from emulator.cards.model_card import ModelCard

GB = 1e9
RESERVE_GB = 4.0  # CUDA context, NCCL buffers, workspaces and graphs per GPU (what engines keep)
CHUNK_TOKENS = 8192  # activations are those of one chunked-prefill chunk
ACT_TENSORS = 8  # live hidden-size activations per token in a chunk (residual, norm, qkv, out...)


@dataclass(frozen=True)
class MemoryFit:
    """Bytes per GPU by use, and the GPU's HBM."""

    weights: float
    kv: float
    activations: float
    reserve: float
    hbm: float

    @property
    def needed(self) -> float:
        return self.weights + self.kv + self.activations + self.reserve

    @property
    def fits(self) -> bool:
        return self.needed <= self.hbm

    def to_dict(self) -> dict:
        return {"weights_gb": self.weights / GB, "kv_gb": self.kv / GB,
                "activations_gb": self.activations / GB, "reserve_gb": self.reserve / GB,
                "needed_gb": self.needed / GB, "hbm_gb": self.hbm / GB, "fits": self.fits}


def memory_per_gpu(card: ModelCard, gpu: GpuCard, setup: Setup, max_length: float) -> MemoryFit:
    """Per GPU: dense weights split by TP, routed experts over all GPUs (EP x expert-TP), the
    embeddings vocab-parallel in bf16; the KV of one `max_length` request split over the KV
    heads TP can split (an MLA latent is replicated); activations of one chunk."""
    m = card.matmul
    wb, wb_moe = weight_bytes(setup.dtype)
    weights = m.dense_held / setup.tp * wb + m.routed_total / setup.gpus * wb_moe + m.embed / setup.tp * 2.0
    served = card.with_kv_dtype(setup.kv_dtype)
    kv = float(served.kv_bytes(max_length)) / min(setup.tp, m.kv_heads)
    chunk = min(max_length, CHUNK_TOKENS)
    widest = max(m.act_width / max(card.num_layers, 1), m.hidden) / setup.tp
    activations = chunk * (ACT_TENSORS * m.hidden + 3 * widest) * 2.0
    return MemoryFit(weights, kv, activations, RESERVE_GB * GB, gpu.hbm_gb * GB)


def check_memory(card: ModelCard, gpu: GpuCard, setup: Setup, max_length: float) -> MemoryFit:
    """The fit, or CardError with the one line: needed vs available per GPU and what needs it."""
    fit = memory_per_gpu(card, gpu, setup, max_length)
    if not fit.fits:
        d = fit.to_dict()
        raise CardError(card.path or card.name, "", (
            f"does not fit {setup.gpus} x {gpu.name} (TP{setup.tp}, EP{setup.ep}, {setup.dtype}): "
            f"needs {d['needed_gb']:.1f} GB per GPU (weights {d['weights_gb']:.1f}, KV "
            f"{d['kv_gb']:.1f} at {max_length:,.0f} tokens, activations {d['activations_gb']:.1f}, "
            f"runtime {d['reserve_gb']:.1f}) of {d['hbm_gb']:.0f} GB"))
    return fit
