"""GPU cards: peak dense throughput, memory, NVLink, NIC and an editable price, in TOML a user
copies, with the per-operation efficiencies the kernel model runs at (emulator.cards.kernel).

Why: the kernel model needs peaks and measured efficiencies per operation class; `new` needs
prices for the equal-cost comparison. Shipped cards live in emulator/cards/gpus/NAME.toml; any path works too.
Every number is checked: finite, > 0, and below an absurd ceiling; one line names file and key.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from emulator.cards import (
    MAX_DEPTH,
    CardError,
    card_text,
    check_depth,
    check_name,
    load_named,
    shipped_cards,
)

# key -> (unit for messages, floor, absurd ceiling): the floors keep every derived time finite
# (a 1e-300 TFLOPS card would make prefill times overflow to inf and rates 0/0)
_SPEC = {"bf16_tflops": ("TFLOPS", 1e-3, 1e6), "fp8_tflops": ("TFLOPS", 1e-3, 1e6),
         "hbm_tbps": ("TB/s", 1e-6, 1e3), "hbm_gb": ("GB", 1e-3, 1e5),
         "nic_gbps": ("Gbps", 1e-3, 1e5), "price_per_hour": ("per GPU-hour", 1e-9, 1e6),
         "nvlink_gbps": ("Gbps", 1e-3, 1e6)}
MIN_EFFICIENCY = 1e-4  # a calibration below 0.01% of peak is a typo
_OPTIONAL = {"fp8_tflops", "nvlink_gbps"}
PCIE_GBPS = 512.0  # PCIe Gen5 x16, one direction: the scale-up link of a card that names none


# [calibration] key -> what it is (efficiencies are fractions of the peak named)
CALIBRATION = {
    "gemm": "dense BF16 GEMM, of bf16_tflops", "gemm_fp8": "dense FP8 GEMM, of fp8_tflops",
    "moe": "grouped MoE GEMM in BF16, of bf16_tflops", "moe_fp8": "grouped MoE GEMM in FP8, of fp8_tflops",
    "moe_int4": "grouped MoE GEMM with 4-bit weights (W4A16), of bf16_tflops",
    "attention": "flash-attention prefill (GQA/MHA, sliding windows), of bf16_tflops",
    "attention_mla": "MLA prefill attention (d_qk 192, d_v 128), of bf16_tflops",
    "linear": "linear-attention / state kernels, of bf16_tflops",
    "memory": "HBM-bound kernels (norms, activations, weight reads), of hbm_tbps",
    "collective": "TP all-reduce / EP all-to-all, of nvlink_gbps",
    # the decode step (emulator.cards.decode): small batches, CUDA-graphed, its own kernels
    "decode_attention": "decode attention's KV and state read, of hbm_tbps",
    "decode_collective": "a decode step's small all-reduces, bytes over nvlink_gbps",
}
FIXED_US = {"attention_us": "per attention layer", "collective_us": "per collective",
            "layer_us": "per layer (launches, small kernels)",
            "linear_ns": "per token and linear-attention layer (the chunk loop's floor), ns",
            "decode_collective_us": "per decode all-reduce / all-to-all (its latency)",
            "decode_mixer_us": "per attention or state layer of a decode step",
            "decode_block_us": "per decode sublayer (mixer or FFN block: launches, norms)",
            "decode_moe_us": "per MoE layer of a decode step (routing, permute)"}
OLD_KEYS = {"mfu", "attn_mfu", "overhead_s"}
# keys added to [calibration] after its per-operation format first shipped: a card written
# before them reads with the older key's efficiency, and says so (Calibration.derived)
LATER_KEYS = {"moe_int4": "moe", "attention_mla": "attention", "decode_attention": "memory",
              "decode_collective": "collective", "decode_collective_us": "collective_us"}


@dataclass(frozen=True)
class Calibration:
    """How far below peak each operation class runs on this GPU (emulator.cards.kernel), the
    fixed microseconds some pay per call, and where the numbers come from. `measured` is False
    for a GPU whose numbers are borrowed: models, new and the dashboard mark it uncalibrated."""

    gemm: float
    gemm_fp8: float
    moe: float
    moe_fp8: float
    moe_int4: float
    attention: float
    attention_mla: float
    linear: float
    memory: float
    collective: float
    attention_us: float = 0.0
    collective_us: float = 0.0
    layer_us: float = 0.0
    linear_ns: float = 0.0
    decode_attention: float = 0.79
    decode_collective: float = 1.0
    decode_collective_us: float = 0.0
    decode_mixer_us: float = 0.0
    decode_block_us: float = 0.0
    decode_moe_us: float = 0.0
    measured: bool = False
    source: str = ""
    derived: tuple[str, ...] = ()  # LATER_KEYS the card did not give (taken from older keys)

    def notes(self, gpu: str) -> list[str]:
        """One line per key the card was written without, and what stood in for it."""
        return [f"GPU card {gpu}: calibration.{k} not given (a card from before it): "
                f"{LATER_KEYS[k]}'s {getattr(self, k):g} stands in; add {k} to silence this"
                for k in self.derived]

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in (*CALIBRATION, *FIXED_US, "measured", "source",
                                              "derived")}


@dataclass(frozen=True)
class GpuCard:
    name: str
    description: str
    bf16_tflops: float  # dense, no sparsity
    fp8_tflops: float | None
    hbm_tbps: float
    hbm_gb: float
    nic_gbps: float
    price_per_hour: float
    calibration: Calibration
    path: str | None = None
    nvlink_gbps: float = PCIE_GBPS  # scale-up bandwidth per GPU, one direction

    @property
    def calibrated(self) -> bool:
        return self.calibration.measured

    @property
    def mark(self) -> str:
        """'' for a GPU with measured numbers, else the word users see next to it."""
        return "" if self.calibrated else "uncalibrated"


    def to_dict(self) -> dict:
        return {"name": self.name, "bf16_tflops": self.bf16_tflops, "fp8_tflops": self.fp8_tflops,
                "hbm_tbps": self.hbm_tbps, "hbm_gb": self.hbm_gb, "nic_gbps": self.nic_gbps,
                "nvlink_gbps": self.nvlink_gbps, "price_per_hour": self.price_per_hour,
                "calibrated": self.calibrated, "calibration": self.calibration.to_dict()}


def _num(data: dict, path, key: str, lo: float, hi: float, what: str, *, strict_lo: bool = True,
         optional: bool = False) -> float | None:
    if key not in data:
        if optional:
            return None
        raise CardError(path, key, "missing (required)")
    v = data[key]
    if isinstance(v, bool) or not isinstance(v, int | float) \
            or (isinstance(v, float) and not math.isfinite(v)):
        raise CardError(path, key, f"must be a finite number, got {_shown(v)}")
    if (v <= lo if strict_lo else v < lo) or v > hi:  # exact for ints of any size
        rel = ">" if strict_lo else ">="
        raise CardError(path, key, f"must be {rel} {lo:g} and at most {hi:g} {what}, got "
                        f"{_shown(v)}")
    return float(v)


def _shown(v: object) -> str:
    text = repr(v) if not isinstance(v, int) or abs(v) < 10**30 else f"a {len(str(abs(v)))}-digit number"
    return text if len(text) <= 60 else text[:57] + "..."


def from_dict(data: dict, path: str | Path | None = None, name: str | None = None) -> GpuCard:
    known = set(_SPEC) | {"name", "description", "calibration"}
    extra = sorted(set(data) - known)
    if extra:
        raise CardError(path, extra[0], "unknown key")
    vals = {k: _num(data, path, k, lo, hi, unit, optional=k in _OPTIONAL, strict_lo=False)
            for k, (unit, lo, hi) in _SPEC.items()}
    cal = data.get("calibration")
    if not isinstance(cal, dict):
        raise CardError(path, "calibration", "missing section (" + ", ".join(CALIBRATION) + ")")
    old = sorted(set(cal) & OLD_KEYS)
    if old:
        raise CardError(path, f"calibration.{old[0]}", "replaced by per-operation efficiencies ("
                        + ", ".join(CALIBRATION) + ") and the deployment's prefill_overhead: "
                        "see docs/profiles.md")
    extra = sorted(set(cal) - set(CALIBRATION) - set(FIXED_US) - {"measured", "source"})
    if extra:
        raise CardError(path, f"calibration.{extra[0]}", "unknown key")
    derived = tuple(k for k, older in LATER_KEYS.items() if k not in cal and older in cal)
    cal = {**cal, **{k: cal[LATER_KEYS[k]] for k in derived}}
    try:
        eff = {k: _num(cal, path, k, MIN_EFFICIENCY, 1, "(a fraction of peak)", strict_lo=False)
               for k in CALIBRATION}
        fixed = {k: _num(cal, path, k, 0, 1e5, "microseconds", strict_lo=False, optional=True) or 0.0
                 for k in FIXED_US}
    except CardError as exc:
        raise CardError(path, f"calibration.{exc.key}", exc.message) from None
    measured = cal.get("measured", False)
    if not isinstance(measured, bool):
        raise CardError(path, "calibration.measured", f"must be true or false, got {measured!r}")
    src = cal.get("source", "")
    for key, value in (("description", data.get("description", "")), ("calibration.source", src)):
        if not isinstance(value, str):
            raise CardError(path, key, f"must be a string, got {_shown(value)}")
    if name is None and "name" in data:
        check_name(data["name"], path, "name")
    label = name or str(data.get("name") or (Path(path).stem if path else "gpu"))
    return GpuCard(name=label, description=str(data.get("description", "")),
                   bf16_tflops=vals["bf16_tflops"], fp8_tflops=vals["fp8_tflops"],
                   hbm_tbps=vals["hbm_tbps"], hbm_gb=vals["hbm_gb"], nic_gbps=vals["nic_gbps"],
                   price_per_hour=vals["price_per_hour"],
                   calibration=Calibration(**eff, **fixed, measured=measured, source=src,
                                           derived=derived),
                   path=str(path) if path else None,
                   nvlink_gbps=vals["nvlink_gbps"] or PCIE_GBPS)


def read_gpu(path: str | Path, name: str | None = None) -> GpuCard:
    p = Path(path)
    text = card_text(p, "GPU card")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CardError(p, "", f"malformed TOML: {exc}") from None
    except RecursionError:
        raise CardError(p, "", f"nested deeper than {MAX_DEPTH} levels") from None
    check_depth(data, p)
    return from_dict(data, p, name)


def shipped() -> list[str]:
    return shipped_cards("gpus", ".toml")


def load_gpu(name_or_path: str | Path) -> GpuCard:
    """A shipped GPU card by name (case-insensitive: h200, H20...) or a TOML path."""
    s = str(name_or_path)
    return load_named(s if Path(s).suffix or "/" in s or Path(s).exists() else s.lower(), "gpus", ".toml",
                      read_gpu, "GPU card")
