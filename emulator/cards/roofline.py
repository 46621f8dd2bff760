"""Roofline prefill: T_prefill(l) = FLOPs(l) / (P x peak x MFU) + overhead.

FLOPs(l) has two parts with different efficiencies: the matmuls (2 x active parameters per
token, MoE counting only the activated experts) and attention (quadratic for full layers, capped
for windowed ones, linear for linear-attention layers). Both efficiencies and the overhead are a
per-GPU calibration, fitted once (the H200's on the paper's Table 5 with the case-study card),
never per model: a new model gets a prediction, not a fit.

The result is a `Profile` like a table profile: T and S_kv are piecewise polynomials of degree
<= 2 (pieces split at the sliding windows), so the model's exact mode keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from emulator.cards.gpu import Calibration, GpuCard
from emulator.cards.model_card import ModelCard
from emulator.profiles import Curve, Profile

# Paper Table 5: the case-study model prefilled on one 8xH200 instance (lengths K = 1024)
TABLE5_LENGTHS = (1024, 8192, 32768, 131072)
TABLE5_SECONDS = (0.44, 0.72, 1.84, 7.40)
TABLE5_SKV_MIB = (190.8, 308.9, 701.3, 2316.3)


def prefill_seconds(card: ModelCard, gpu: GpuCard, parallelism: int,
                    length: float | np.ndarray, calibration: Calibration | None = None):
    """T_prefill(l) on one instance of `parallelism` GPUs."""
    c = calibration or gpu.calibration
    peak = parallelism * gpu.peak_flops
    n_tok = np.asarray(length, dtype=float)
    out = c.overhead_s + card.gemm_flops(n_tok) / (peak * c.mfu) + card.attn_flops(n_tok) / (peak * c.attn_mfu)
    return float(out) if np.ndim(out) == 0 else out


def _piecewise(fn, breaks: list[float]) -> Curve:
    """The exact piecewise quadratic through `fn` (which is one on each piece): three samples
    per piece determine it."""
    edges = [0.0, *breaks, max(breaks[-1] * 4, 1e6) if breaks else 1e6]
    coefs = []
    for i in range(len(edges) - 1):
        lo, hi = edges[i], edges[i + 1]
        x = np.array([lo + (hi - lo) * f for f in (0.25, 0.5, 0.75)]) if i < len(edges) - 2 \
            else np.array([lo + 1.0, lo + 2.0e4, lo + 4.0e4])
        coefs.append(np.polyfit(x, fn(x), 2)[::-1])
    return Curve(np.asarray(breaks, dtype=float), np.asarray(coefs, dtype=float))


def roofline_profile(card: ModelCard, gpu: GpuCard, parallelism: int, name: str | None = None,
                     calibration: Calibration | None = None) -> Profile:
    """A Profile for `card` on `parallelism` x `gpu`, usable wherever a table profile is."""
    breaks = card.breaks()
    t = _piecewise(lambda x: prefill_seconds(card, gpu, parallelism, x, calibration), breaks)
    s = _piecewise(lambda x: card.kv_bytes(x), breaks)
    c = calibration or gpu.calibration
    desc = (f"roofline: {card.name} on {parallelism}x{gpu.name} (MFU {c.mfu:.3f}, attention "
            f"{c.attn_mfu:.3f}, overhead {c.overhead_s:.3f} s)")
    return Profile(name or f"{gpu.name}", t, s, desc)


@dataclass(frozen=True)
class Fit:
    calibration: Calibration
    max_rel_error: float


def fit_calibration(card: ModelCard, gpu: GpuCard, parallelism: int,
                    lengths=TABLE5_LENGTHS, seconds=TABLE5_SECONDS) -> Fit:
    """Least squares in relative error for (overhead, 1/mfu, 1/attn_mfu): T is linear in them.
    This is how the shipped H200 calibration was obtained (once, from Table 5)."""
    n_tok = np.asarray(lengths, dtype=float)
    t = np.asarray(seconds, dtype=float)
    peak = parallelism * gpu.peak_flops
    a = np.stack([np.ones_like(n_tok), card.gemm_flops(n_tok) / peak, card.attn_flops(n_tok) / peak], axis=1)
    w = 1.0 / t
    sol, *_ = np.linalg.lstsq(a * w[:, None], t * w, rcond=None)
    o, inv_m, inv_a = sol
    cal = Calibration(mfu=float(1 / inv_m), attn_mfu=float(1 / inv_a), overhead_s=float(o),
                      source="fit_calibration")
    pred = a @ sol
    return Fit(cal, float(np.max(np.abs(pred / t - 1))))


def scale_fit(card: ModelCard, gpu: GpuCard, parallelism: int, base: Calibration,
              lengths, seconds) -> Fit:
    """One factor on both efficiencies (their ratio and the overhead kept from `base`): how a
    GPU with only a couple of known points (the H20, from Table 6) is calibrated."""
    n_tok = np.asarray(lengths, dtype=float)
    t = np.asarray(seconds, dtype=float)
    peak = parallelism * gpu.peak_flops
    work = card.gemm_flops(n_tok) / (peak * base.mfu) + card.attn_flops(n_tok) / (peak * base.attn_mfu)
    w = 1.0 / t
    k = float(np.sum(w * w * work * (t - base.overhead_s)) / np.sum(w * w * work * work))
    cal = Calibration(base.mfu / k, base.attn_mfu / k, base.overhead_s, "scale_fit")
    pred = base.overhead_s + work * k
    return Fit(cal, float(np.max(np.abs(pred / t - 1))))
