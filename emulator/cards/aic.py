"""The optional kernel source: NVIDIA aiconfigurator's operator database (pip install -e '.[aic]').

Its package holds its data and its estimator; this module only asks it, for the model, GPU,
backend and parallelism given, the context-phase time of one request (static_ctx, batch 1) at a
few lengths, and returns them as a table curve of kernel seconds. The deployment's overhead is
added by the caller, as for the built-in model.
"""

from __future__ import annotations

import json
import logging
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from emulator.cards import CardError
from emulator.cards.gpu import GpuCard
from emulator.cards.kernel import Setup
from emulator.cards.model_card import ModelCard
from emulator.profiles import Curve

VERSION = "0.12.0"
BACKEND = "trtllm"
INSTALL = f"pip install -e '.[aic]' (aiconfigurator=={VERSION})"
SAMPLE_LENGTHS = (1024, 4096, 16384, 32768, 65536, 131072)
SYSTEMS = {"h200": "h200_sxm", "h100": "h100_sxm", "b200": "b200_sxm", "a100": "a100_sxm"}


class AicUnavailable(CardError):
    """aiconfigurator is missing or cannot answer; str() is the one line."""

    def __init__(self, message: str):
        ValueError.__init__(self, message)
        self.path, self.key, self.message = "<aiconfigurator>", "--profile-source", message

    def __str__(self) -> str:
        return f"--profile-source aiconfigurator: {self.message}"


def _api():
    try:
        import aiconfigurator
        from aiconfigurator.cli.api import cli_estimate
    except ImportError:
        raise AicUnavailable(f"aiconfigurator is not installed: {INSTALL}") from None
    version = getattr(aiconfigurator, "__version__", VERSION)
    if version != VERSION:
        raise AicUnavailable(f"aiconfigurator {version} is installed; this adapter is pinned to "
                             f"{VERSION}: {INSTALL}")
    return cli_estimate


def kernel_curve(card: ModelCard, gpu: GpuCard, setup: Setup) -> Curve:
    """Kernel seconds at SAMPLE_LENGTHS from aiconfigurator, piecewise linear between them."""
    system = SYSTEMS.get(gpu.name.lower())
    if system is None:
        raise AicUnavailable(f"no aiconfigurator database for GPU {gpu.name!r} (it has "
                             f"{', '.join(sorted(SYSTEMS))})")
    if setup.dtype in ("mxfp4", "nvfp4"):
        raise AicUnavailable(f"this adapter passes no {setup.dtype} GEMM mode to aiconfigurator: "
                             "use --profile-source builtin")
    config = {k: v for k, v in card.config.items() if k != "_card"}
    moe = bool(card.matmul and card.matmul.routed_active)
    key = (json.dumps(config, sort_keys=True), system, setup.gpus, setup.tp, setup.ep,
           setup.dtype, setup.kv_dtype, moe, tuple(SAMPLE_LENGTHS))
    seconds = _estimate(*key)
    return Curve.table(SAMPLE_LENGTHS, seconds)


@lru_cache(maxsize=64)
def _estimate(config_json: str, system: str, gpus: int, tp: int, ep: int, dtype: str,
              kv_dtype: str, moe: bool, lengths: tuple[int, ...]) -> tuple[float, ...]:
    cli_estimate = _api()
    config = json.loads(config_json)
    q = "bfloat16" if dtype == "bf16" else (
        "fp8_block" if (config.get("quantization_config") or {}).get("weight_block_size") else "fp8")
    extra = {"moe_tp_size": gpus // ep, "moe_ep_size": ep, "moe_quant_mode": q} if moe else {}
    out = []
    logging.getLogger("aiconfigurator").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(config), encoding="utf-8")
        for n in lengths:
            try:
                r = cli_estimate(tmp, system, mode="static_ctx", backend_name=BACKEND, isl=n, osl=1,
                                 batch_size=1, tp_size=tp, attention_dp_size=gpus // tp,
                                 gemm_quant_mode=q,
                                 kvcache_quant_mode="bfloat16" if kv_dtype == "bf16" else "fp8",
                                 fmha_quant_mode="bfloat16", **extra)
            except Exception as exc:  # its errors are many and its own: one line
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise AicUnavailable(f"aiconfigurator cannot estimate this model on {system} "
                                     f"({BACKEND}): {first}") from None
            out.append(float(r.ttft) / 1e3)
    if not all(np.isfinite(out)) or min(out) <= 0:
        raise AicUnavailable(f"aiconfigurator returned no usable time on {system}")
    return tuple(out)
