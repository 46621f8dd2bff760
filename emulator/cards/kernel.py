"""The prefill kernel time of one request on one instance: a sum over operation classes, each at
its own measured efficiency on the GPU (emulator/cards/gpus/*.toml, [calibration]).

Why by class: a dense GEMM, a grouped MoE GEMM, flash attention, a linear-attention state
kernel, an HBM-bound norm and an NVLink all-reduce run at very different fractions of peak, and
a model's mix of them is what differs between models. One efficiency per class and GPU,
calibrated on measured operators, predicts a model it has never seen; one overall MFU fitted on
one model does not.

Per GPU, for a prefill of n tokens on `gpus` GPUs (TP `tp` for attention and dense layers, EP
`ep` for routed experts, the remaining gpus/ep as expert-tensor parallel):

    gemm       2 n dense/tp / (peak x gemm)           | dense/tp weight bytes / (HBM x memory)
    moe        2 n routed_active/gpus / (peak x moe) x imbalance
               + routed_total/gpus weight bytes / (HBM x memory)
    attention  pair FLOPs / tp / (bf16 peak x attention, attention_mla for MLA layers)
               + attention_us per attention layer (full, sliding-window, chunked, MLA)
    linear     state-kernel FLOPs / tp / (bf16 peak x linear) + linear_ns per token and layer
               + attention_us per recurrent layer (linear attention, Mamba, lightning)
    memory     norms and activations: 16 B x hidden per token and layer + 6 B x FFN width / tp
    collective 2 all-reduces of n x hidden x 2 B per layer (ring: 2 (tp-1)/tp of it over NVLink)
               + collective_us each; attention-DP (tp = 1) with ep > 1: an all-to-all instead
    layer      layer_us per layer (launches, small kernels)

(a | b: the slower of the two, a GEMM streams its weights while it computes.) A grouped expert
GEMM does not hide its weights: each expert's GEMM is only its share of the tokens (k n / E
rows, 32-1,000 at 1K-32K for fine-grained experts), too short to stream one expert's weights
behind the math on them, so the two add. `imbalance` is the busiest GPU's expert load over
the average under skewed routing, relative to the calibration's (moe_imbalance). Every term is a
polynomial of degree <= 2 in n on pieces split at sliding windows and at the lengths where a
GEMM turns compute-bound, so a profile
built from it keeps the model's exact mode. The serving overhead (scheduling, tokenization,
sampling, the first decode step) is not in here: it is a setting of the deployment
(roofline.Setup.overhead_s).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from emulator.cards import CardError
from emulator.cards.gpu import GpuCard
from emulator.cards.layers import STATE
from emulator.cards.model_card import KV_DTYPES, MXFP4_BYTES, NVFP4_BYTES, ModelCard

# int4: 4-bit routed experts dequantized into bf16 GEMMs (W4A16); mxfp4: gpt-oss's MXFP4 experts
# (the rest bf16); nvfp4: every GEMM's weights in NVFP4. The 4-bit formats run as W4A16 (the GPU
# cards carry no FP4 peak): their weights stream at their own size, their math at bf16.
DTYPES = ("bf16", "fp8", "int4", "mxfp4", "nvfp4")
FOUR_BIT = ("int4", "mxfp4", "nvfp4")
NORM_BYTES = 16.0  # two fused add+norms per layer, each reading and writing x and the residual (bf16)
ACT_BYTES = 6.0  # gated activation: read gate and up, write one (bf16), per FFN-width element
ACT_DTYPE_BYTES = 2.0  # activations and collectives travel in bf16


@dataclass(frozen=True)
class Setup:
    """How one instance serves the model: GPUs, parallelism, dtypes and the serving overhead."""

    gpus: int
    tp: int
    ep: int
    dtype: str = "bf16"  # GEMM weights and inputs
    kv_dtype: str = "bf16"
    overhead_s: float = 0.0

    def describe(self) -> str:
        return (f"{self.gpus} GPUs, TP{self.tp}" + (f" EP{self.ep}" if self.ep > 1 else "")
                + f", {self.dtype} GEMMs, {self.kv_dtype} KV, overhead {self.overhead_s:g} s")


def weight_bytes(dtype: str) -> tuple[float, float]:
    """Bytes per parameter of (dense, routed-expert) weights in this GEMM dtype (MXFP4: 4 bits
    and an 8-bit scale per 32; NVFP4: 4 bits and an FP8 scale per 16)."""
    return {"fp8": (1.0, 1.0), "int4": (2.0, 0.5), "mxfp4": (2.0, MXFP4_BYTES),
            "nvfp4": (NVFP4_BYTES, NVFP4_BYTES)}.get(dtype, (2.0, 2.0))


# Skewed routing: per-expert token loads spread with this coefficient of variation (fitted on
# Mixtral-8x22B's one-expert-per-GPU cells against the calibration models' 16 and 32 per GPU)
MOE_LOAD_CV = 0.35
CALIBRATION_EP, CALIBRATION_EXPERTS_PER_GPU = 8, 24.0  # EP8, 16 and 32 experts per GPU


@cache
def _expected_max_normal(n: int) -> float:
    """E[max of n standard normals] (0 for one): how far the busiest of n GPUs sits above the
    mean, in standard deviations."""
    from scipy.special import ndtr

    x = np.linspace(-12.0, 12.0, 48001)
    pdf = np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    return float(np.trapezoid(x * n * pdf * ndtr(x) ** (n - 1), x)) if n > 1 else 0.0


def _busiest_over_mean(experts: int, ep: int) -> float:
    e = experts / ep
    return 1 + _expected_max_normal(ep) * MOE_LOAD_CV / np.sqrt(e)


def moe_imbalance(experts: int, ep: int) -> float:
    """The factor on the expert GEMMs' time for `experts` spread over `ep` GPUs.

    Why: under EP the step waits for the busiest GPU. Its load is the sum of the token loads of
    its experts/ep experts; with skewed routing the loads vary (MOE_LOAD_CV), so the busiest of
    ep GPUs sits E[max of ep normals] standard deviations above the mean, a deviation that
    shrinks as 1/sqrt(experts per GPU). The measured `moe` efficiency already carries the
    calibration models' imbalance (EP8, about 24 experts per GPU), so the factor is relative to
    it: Mixtral-8x22B on EP8 (one expert per GPU) 1.36, DeepSeek-V3 (32) 0.99, one GPU or
    expert-tensor parallel only 0.91."""
    if not experts:
        return 1.0
    return (_busiest_over_mean(experts, ep)
            / _busiest_over_mean(int(CALIBRATION_EP * CALIBRATION_EXPERTS_PER_GPU), CALIBRATION_EP))


def _moe_eff(c, dtype: str) -> float:
    return c.moe_fp8 if dtype == "fp8" else c.moe_int4 if dtype in FOUR_BIT else c.moe


def _peak(gpu: GpuCard, dtype: str) -> float:
    if dtype == "fp8":
        if gpu.fp8_tflops is None:
            raise CardError(gpu.path or gpu.name, "fp8_tflops",
                            f"{gpu.name} has no FP8 peak: serve in bf16 (--dtype bf16)")
        return gpu.fp8_tflops * 1e12
    return gpu.bf16_tflops * 1e12


def kernel_parts(card: ModelCard, gpu: GpuCard, setup: Setup, length: float | np.ndarray,
                 mixer: Callable[[ModelCard], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Seconds per operation class for a prefill of `length` tokens (arrays like `length`).
    `mixer(sub_card)` gives the attention/state FLOPs of those tokens when they are not one
    prompt from position 0 (a batch of prompts, a chunk after its prefix: cards.prefill_batch);
    the default is one causal prompt of `length` tokens."""
    c, m = gpu.calibration, card.matmul
    if m is None:
        raise CardError(card.path or card.name, "", "card has no matmul accounting")
    n = np.asarray(length, dtype=float)
    flops = mixer or (lambda sub: sub.attn_flops(n))
    tp, gpus = setup.tp, setup.gpus
    wb, wb_moe = weight_bytes(setup.dtype)
    peak = _peak(gpu, setup.dtype)
    bf16 = gpu.bf16_tflops * 1e12
    hbm = gpu.hbm_tbps * 1e12 * c.memory
    g_eff = c.gemm_fp8 if setup.dtype == "fp8" else c.gemm
    moe_eff = _moe_eff(c, setup.dtype)

    # a GEMM streams its weights while it computes: the slower of the two (weight-bound short
    # prompts, compute-bound long ones; the crossover is a break of the profile's pieces)
    gemm = np.maximum(2 * n * m.dense / tp / (peak * g_eff), m.dense / tp * wb / hbm)
    moe = np.zeros_like(n)
    if m.routed_active:
        moe = (2 * n * m.routed_active / gpus / (peak * moe_eff) * moe_imbalance(m.experts, setup.ep)
               + m.routed_total / gpus * wb_moe / hbm)
    attn_layers = sum(g.count for g in card.groups if g.kind not in STATE)
    lin_layers = sum(g.count for g in card.groups if g.kind in STATE)
    only_lin, full, mla = _only(card, STATE), _only(card, ("gqa", "swa", "chunked")), _only(card, ("mla",))
    attention = (flops(full) / tp / (bf16 * c.attention) + flops(mla) / tp / (bf16 * c.attention_mla)
                 + attn_layers * c.attention_us * 1e-6)
    linear = np.zeros_like(n)
    if lin_layers:
        linear = (flops(only_lin) / tp / (bf16 * c.linear)
                  + lin_layers * (n * c.linear_ns * 1e-9 + c.attention_us * 1e-6))
    memory = (card.num_layers * n * m.hidden * NORM_BYTES + n * m.act_width / tp * ACT_BYTES) / hbm
    collective = np.zeros_like(n)
    if gpus > 1:
        nv = gpu.nvlink_gbps / 8 * 1e9 * c.collective
        act = n * m.hidden * ACT_DTYPE_BYTES
        if tp > 1:
            collective = card.num_layers * 2 * (2 * (tp - 1) / tp * act / nv + c.collective_us * 1e-6)
        elif setup.ep > 1 and m.moe_layers:
            a2a = act * m.top_k * (setup.ep - 1) / setup.ep / nv
            collective = m.moe_layers * 2 * (a2a + c.collective_us * 1e-6)
    layer = np.full_like(n, card.num_layers * c.layer_us * 1e-6)
    out = {"gemm": gemm, "moe": moe, "attention": attention, "linear": linear, "memory": memory,
           "collective": collective, "layer": layer}
    return {k: np.broadcast_to(v, n.shape).astype(float) for k, v in out.items()}


def kernel_breaks(card: ModelCard, gpu: GpuCard, setup: Setup) -> list[float]:
    """Lengths where the dense GEMMs turn from weight-bound to compute-bound (pieces of the
    profile), besides the model's sliding windows; the expert GEMMs add, so they have none."""
    c = gpu.calibration
    peak, hbm = _peak(gpu, setup.dtype), gpu.hbm_tbps * 1e12 * c.memory
    wb, _ = weight_bytes(setup.dtype)
    fp8 = setup.dtype == "fp8"
    out = [wb / hbm * peak * (c.gemm_fp8 if fp8 else c.gemm) / 2]
    return sorted({round(x, 6) for x in out if x > 0})


def kernel_seconds(card: ModelCard, gpu: GpuCard, setup: Setup, length: float | np.ndarray):
    """The kernel time of a prefill of `length` tokens (float for a float)."""
    total = sum(kernel_parts(card, gpu, setup, length).values())
    return float(total) if np.ndim(total) == 0 else total


def _only(card: ModelCard, kinds: tuple[str, ...]) -> ModelCard:
    """The card with only the layer groups of these kinds (their attention FLOPs)."""
    from dataclasses import replace

    return replace(card, groups=tuple(g for g in card.groups if g.kind in kinds))


# -- the setup from flags and the card's defaults -------------------------------------------------
def resolve_setup(card: ModelCard, gpu: GpuCard, gpus: int, *, tp: int | None = None,
                  ep: int | None = None, dtype: str | None = None, kv_dtype: str | None = None,
                  overhead_s: float = 0.0) -> Setup:
    """A Setup with the defaults filled in: TP over all the instance's GPUs, EP over them for an
    MoE model (1 for a dense one), the checkpoint's dtype (quantization_config) and KV dtype.
    A combination that cannot run raises CardError naming the flag."""
    m = card.matmul
    where = card.path or card.name
    if dtype is None:
        if not card.weight_dtype:
            raise CardError(where, "", card.weight_dtype_problem)
        dtype = card.weight_dtype
    if dtype not in DTYPES:
        raise CardError(where, "--dtype", f"must be one of {', '.join(DTYPES)}, got {dtype!r}")
    kv = kv_dtype or (card.kv_dtype if card.kv_dtype in DTYPES else "bf16")
    if kv not in DTYPES or kv not in KV_DTYPES:
        raise CardError(where, "--kv-dtype", f"must be bf16 or fp8, got {kv!r}")
    moe = bool(m and m.routed_active)
    tp = gpus if tp is None else tp
    ep = (gpus if moe else 1) if ep is None else ep
    for flag, v in (("--tp", tp), ("--ep", ep)):
        if not 1 <= v <= gpus or gpus % v:
            raise CardError(where, flag, f"{v} must divide the instance's {gpus} GPUs")
    if m and m.heads % tp:
        raise CardError(where, "--tp", f"{tp} does not divide the model's {m.heads} attention heads")
    if ep > 1 and not moe:
        raise CardError(where, "--ep", f"{ep}: a dense model has no experts to spread")
    if moe and m.experts % ep:
        raise CardError(where, "--ep", f"{ep} does not divide the model's {m.experts} experts")
    _peak(gpu, dtype)
    return Setup(gpus=gpus, tp=tp, ep=ep, dtype=dtype, kv_dtype=kv, overhead_s=overhead_s)
