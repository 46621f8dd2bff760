"""Card-made profiles: T_prefill(l) = overhead + kernel(l), S_kv(l) from the model card.

The kernel time is emulator.cards.kernel's sum over operation classes at the GPU's measured
efficiencies; the overhead is the serving stack's per-request cost (scheduling, tokenization,
sampling, the first decode step), a setting of the deployment with a stated default, not a
property of the GPU. Neither is fitted per model: a new model gets a prediction.

The result is a `Profile` like a table profile: T and S_kv are piecewise polynomials of degree
<= 2 (pieces split at the sliding windows), so the model's exact mode keeps working.
"""

from __future__ import annotations

import numpy as np

from emulator.cards.gpu import GpuCard
from emulator.cards.kernel import Setup, kernel_breaks, kernel_seconds
from emulator.cards.model_card import ModelCard
from emulator.profiles import Curve, Profile

# Paper Table 5: the case-study model prefilled on one 8xH200 instance (lengths K = 1024)
TABLE5_LENGTHS = (1024, 8192, 32768, 131072)
TABLE5_SECONDS = (0.44, 0.72, 1.84, 7.40)
TABLE5_SKV_MIB = (190.8, 308.9, 701.3, 2316.3)

DEFAULT_OVERHEAD_S = 0.39
DEFAULT_OVERHEAD_SOURCE = ("0.39 s: the paper's single-request measurements, its seven 1K prefill "
                           "times (Tables 3 and 5) less the kernel time (0.25-0.44 s, median 0.37 s); "
                           "the H20 card's fit to Table 6 is made with it; docs/profiles.md")


def prefill_seconds(card: ModelCard, gpu: GpuCard, setup: Setup, length: float | np.ndarray):
    """T_prefill(l) on one instance: the setup's overhead plus the kernel time."""
    out = setup.overhead_s + kernel_seconds(card.with_kv_dtype(setup.kv_dtype), gpu, setup, length)
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


def roofline_profile(card: ModelCard, gpu: GpuCard, setup: Setup, name: str | None = None,
                     kernel: Curve | None = None, source: str = "kernel model") -> Profile:
    """A Profile for `card` on one instance of `setup`, usable wherever a table profile is.
    `kernel` replaces the built-in kernel model with measured or estimated kernel seconds (the
    aiconfigurator source, named by `source`); the overhead is added either way."""
    served = card.with_kv_dtype(setup.kv_dtype)
    breaks = served.breaks()
    if kernel is None:
        breaks = sorted({*breaks, *kernel_breaks(served, gpu, setup)})
        t = _piecewise(lambda x: prefill_seconds(served, gpu, setup, x), breaks)
    else:
        t = kernel.affine(setup.overhead_s, 1.0)
    s = _piecewise(lambda x: served.kv_bytes(x), served.breaks())
    mark = f", {gpu.mark}" if gpu.mark else ""
    desc = f"{source}: {card.name} on {gpu.name}{mark} ({setup.describe()})"
    return Profile(name or f"{gpu.name}", t, s, desc)


COMPUTE_CLASSES = ("gemm", "gemm_fp8", "moe", "moe_fp8", "moe_int4", "attention", "attention_mla",
                   "linear")
EFFICIENCY_CAP = 0.95


def scaled(gpu: GpuCard, k: float) -> GpuCard:
    """The GPU with its compute-class efficiencies times `k`, each at most EFFICIENCY_CAP."""
    from dataclasses import replace

    c = gpu.calibration
    new = {name: min(getattr(c, name) * k, EFFICIENCY_CAP) for name in COMPUTE_CLASSES}
    return replace(gpu, calibration=replace(c, **new))


def scale_fit(card: ModelCard, gpu: GpuCard, setup: Setup, lengths, seconds) -> float:
    """The one factor on a borrowed calibration's compute efficiencies (capped) that best meets
    a few known prefill times, least squares in relative error: how a GPU with no measured
    operators but a couple of known points (the H20, from the paper's Table 6) is set."""
    from scipy.optimize import minimize_scalar

    n_tok = np.asarray(lengths, dtype=float)
    t = np.asarray(seconds, dtype=float)

    def loss(log_k: float) -> float:
        pred = prefill_seconds(card, scaled(gpu, float(np.exp(log_k))), setup, n_tok)
        return float(np.sum((pred / t - 1) ** 2))

    res = minimize_scalar(loss, bounds=(np.log(0.2), np.log(10.0)), method="bounded",
                          options={"xatol": 1e-6})
    return float(np.exp(res.x))
