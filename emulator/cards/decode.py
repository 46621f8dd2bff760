"""One decode step from the cards, and the largest batch that meets a TPOT SLO.

Why: Eq. 5's Θ_pd-d = N_d x BS_max / (T_decode x L_out) needs a step time and a batch for the
user's own model and GPUs; a constant (25 ms, 20) is right for one model on one GPU at most.

Per GPU, for a batch of B requests each at `context` tokens, on one instance of `setup`:

    weights   dense/tp + LM head/tp, read once per step, plus the routed experts of the busiest
              EP rank: a rank holds E/ep experts, each touched by B tokens picking k of E with
              p = 1 - (1 - k/E)^B, and the step waits for the rank that touches the most
              (busiest_rank_experts), split over the expert-TP GPUs; at memory x HBM
    kv        B x S_kv(context) / min(tp, kv_heads): the per-layer cache model, so a full layer
              reads `context` tokens, a window min(context, window), a chunk at most a chunk,
              a state layer its state (what the memory check holds per request); at
              decode_attention x HBM (decode attention streams the cache near peak)
    compute   2 x active matmul params x B (dense and LM head /tp, routed /gpus) at the gemm /
              moe efficiency, plus B tokens' attention FLOPs against their contexts /tp at the
              attention efficiency
    comm      one TP all-reduce per sublayer (mixer, FFN: sublayers) of B x hidden x 2 bytes,
              ring 2 (tp-1)/tp of it at decode_collective x NVLink + decode_collective_us
              (small messages: latency-bound, far below a prefill collective); attention-DP with
              EP: an all-to-all per MoE layer each way instead
    overhead  decode_mixer_us per attention or state layer, decode_block_us per sublayer,
              decode_moe_us per MoE layer: the fixed latency of a step's small kernels

    T_step = max(weights + kv, compute) + comm + overhead

(max: a decode GEMM and attention stream their operands while they compute, so the slower of
the two bounds the step; collectives and launches do not overlap them.) The decode_* fields are
the GPU card's, fitted on measured-operator decode steps (tests/decode_reference.py); an
uncalibrated GPU gives an uncalibrated step (`DecodeStep.calibrated`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from emulator.cards import CardError
from emulator.cards.gpu import GpuCard
from emulator.cards.kernel import ACT_DTYPE_BYTES, Setup, _moe_eff, _peak, weight_bytes
from emulator.cards.memory import memory_per_gpu
from emulator.cards.model_card import ModelCard

DEFAULT_TPOT_S = 0.025  # the paper's 40 tokens/s per request
MAX_BATCH = 1_000_000  # the [decode] bs_max ceiling


def tpot_problem(seconds: float) -> str | None:
    """What is wrong with a TPOT SLO (a flag's check), or None."""
    return None if 0 < seconds <= 60 else "must be > 0 s and at most 60 s"


@dataclass(frozen=True)
class DecodeStep:
    """One decode step's terms in seconds, and the bytes read per GPU."""

    batch: int
    context: float
    weights_s: float
    kv_s: float
    compute_s: float
    comm_s: float
    overhead_s: float
    weight_bytes: float
    kv_bytes: float
    calibrated: bool

    @property
    def step_s(self) -> float:
        return max(self.weights_s + self.kv_s, self.compute_s) + self.comm_s + self.overhead_s

    def to_dict(self) -> dict:
        return {**asdict(self), "step_s": self.step_s}


def touched_experts(experts: int, top_k: int, batch: float) -> float:
    """Expected distinct experts B tokens touch in one MoE layer, each token picking top_k of
    `experts` (uniform routing): E x (1 - (1 - k/E)^B)."""
    if experts <= 0 or top_k <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - min(top_k, experts) / experts) ** batch)


@lru_cache(maxsize=4096)
def busiest_rank_experts(experts: int, top_k: int, batch: int, ep: int) -> float:
    """Expected distinct experts the busiest of `ep` ranks reads in one MoE layer: each rank
    holds E/ep experts, each touched with p = 1 - (1 - k/E)^B, so a rank's count is
    Binomial(E/ep, p) and the step waits for the largest of ep of them,
    E[max] = sum_j 1 - F(j - 1)^ep. One rank: the mean, touched_experts."""
    if experts <= 0 or top_k <= 0:
        return 0.0
    p = touched_experts(experts, top_k, batch) / experts
    if ep <= 1 or p >= 1.0:
        return experts / max(ep, 1) * p
    n = experts // ep
    j = np.arange(n + 1)
    log_pmf = (np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                         for i in range(n + 1)]) + j * math.log(p) + (n - j) * math.log1p(-p))
    cdf = np.minimum(np.cumsum(np.exp(log_pmf)), 1.0)
    return float(np.sum(1.0 - cdf[:-1] ** ep))


def sublayers(card: ModelCard) -> int:
    """Mixer and FFN blocks a token passes, one collective after each under TP: two per layer,
    or one per layer where a model's layers each hold a mixer or an FFN (Nemotron-H: fewer
    mixers than layers)."""
    mixers = sum(g.count for g in card.groups)
    return 2 * card.num_layers if mixers >= card.num_layers else card.num_layers


def step_time(card: ModelCard, gpu: GpuCard, setup: Setup, batch: int, context: float) -> DecodeStep:
    """The decode step of `batch` requests at `context` tokens each (module docstring)."""
    m = card.matmul
    if m is None:
        raise CardError(card.path or card.name, "", "card has no matmul accounting")
    served = card.with_kv_dtype(setup.kv_dtype)
    c = gpu.calibration
    b = float(batch)
    wb, wb_moe = weight_bytes(setup.dtype)
    hbm = gpu.hbm_tbps * 1e12
    peak, bf16 = _peak(gpu, setup.dtype), gpu.bf16_tflops * 1e12
    g_eff = c.gemm_fp8 if setup.dtype == "fp8" else c.gemm
    head = max(card.active_params - m.dense - m.routed_active, 0.0)  # the LM head
    routed = 0.0
    if m.routed_active and m.moe_layers and m.experts:
        per_expert = m.routed_total / (m.moe_layers * m.experts)
        lo = max(math.floor(b), 1)  # a fractional (mean) batch: between its neighbours
        busiest = busiest_rank_experts(m.experts, m.top_k, lo, setup.ep)
        if b > lo:
            up = busiest_rank_experts(m.experts, m.top_k, lo + 1, setup.ep)
            busiest += (b - lo) * (up - busiest)
        routed = busiest * per_expert * m.moe_layers / (setup.gpus // setup.ep)
    w_bytes = (m.dense + head) / setup.tp * wb + routed * wb_moe
    kv = b * float(served.kv_bytes(context)) / min(setup.tp, m.kv_heads)
    compute = 2 * b * (m.dense + head) / setup.tp / (peak * g_eff)
    if m.routed_active:
        compute += 2 * b * m.routed_active / setup.gpus / (peak * _moe_eff(c, setup.dtype))
    compute += b * served.attn_flops_per_token(context) / setup.tp / (bf16 * c.attention)
    comm = 0.0
    if setup.gpus > 1:
        nv = gpu.nvlink_gbps / 8 * 1e9 * c.decode_collective
        act = b * m.hidden * ACT_DTYPE_BYTES
        if setup.tp > 1:
            comm = sublayers(card) * (2 * (setup.tp - 1) / setup.tp * act / nv
                                      + c.decode_collective_us * 1e-6)
        elif setup.ep > 1 and m.moe_layers:
            a2a = act * m.top_k * (setup.ep - 1) / setup.ep / nv
            comm = m.moe_layers * 2 * (a2a + c.decode_collective_us * 1e-6)
    mixers = sum(g.count for g in card.groups)
    overhead = (mixers * c.decode_mixer_us + sublayers(card) * c.decode_block_us
                + m.moe_layers * c.decode_moe_us) * 1e-6
    return DecodeStep(batch=int(batch), context=float(context),
                      weights_s=w_bytes / (hbm * c.memory), kv_s=kv / (hbm * c.decode_attention),
                      compute_s=compute, comm_s=comm, overhead_s=overhead, weight_bytes=w_bytes,
                      kv_bytes=kv, calibrated=gpu.calibrated)


@dataclass(frozen=True)
class BatchLimit:
    """BS_max at one context, the limit that binds ('tpot' or 'memory'), and its step."""

    batch: int
    binds: str
    step: DecodeStep
    memory_batch: int  # the most requests whose KV and state fit the instance's HBM


def memory_batch(card: ModelCard, gpu: GpuCard, setup: Setup, context: float) -> int:
    """The most requests at `context` whose KV and state fit beside the weights, activations
    and runtime reserve (the memory check's accounting, per GPU)."""
    fit = memory_per_gpu(card, gpu, setup, context)
    free = fit.hbm - fit.weights - fit.activations - fit.reserve
    if fit.kv <= 0:
        return MAX_BATCH if free >= 0 else 0
    return int(max(min(free // fit.kv, MAX_BATCH), 0))


def bs_max(card: ModelCard, gpu: GpuCard, setup: Setup, context: float,
           tpot_slo: float = DEFAULT_TPOT_S) -> BatchLimit:
    """The largest B whose step meets `tpot_slo` and whose KV and state fit the
    instance's HBM; bisection on B (T_step is monotone in B). A batch of 1 that does not fit or
    misses the SLO raises CardError naming the flag or key."""
    if not (tpot_slo > 0 and math.isfinite(tpot_slo)):
        raise CardError(card.path or card.name, "--tpot", f"must be > 0 s, got {tpot_slo!r}")
    cap = memory_batch(card, gpu, setup, context)
    if cap < 1:
        fit = memory_per_gpu(card, gpu, setup, context)
        raise CardError(gpu.path or gpu.name, "hbm_gb", (
            f"{gpu.hbm_gb:g} GB per GPU holds no decode request of {card.name} at "
            f"{context:,.0f} tokens ({setup.gpus} GPUs, TP{setup.tp}: weights "
            f"{fit.weights / 1e9:.1f} GB, KV {fit.kv / 1e9:.2f} GB per request)"))
    one = step_time(card, gpu, setup, 1, context)
    if one.step_s > tpot_slo:
        raise CardError(card.path or card.name, "--tpot", (
            f"{tpot_slo * 1e3:g} ms is below one decode step of {card.name} on {setup.gpus} x "
            f"{gpu.name} at batch 1 and {context:,.0f} tokens ({one.step_s * 1e3:.2f} ms)"))
    lo, hi = 1, cap  # step(lo) meets the SLO; find the largest such B <= cap
    if step_time(card, gpu, setup, hi, context).step_s <= tpot_slo:
        lo = hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if step_time(card, gpu, setup, mid, context).step_s <= tpot_slo:
            lo = mid
        else:
            hi = mid
    # memory binds only when the SLO would allow one more request than the HBM holds
    binds = "memory" if lo == cap and cap < MAX_BATCH and \
        step_time(card, gpu, setup, cap + 1, context).step_s <= tpot_slo else "tpot"
    return BatchLimit(lo, binds, step_time(card, gpu, setup, lo, context), cap)
