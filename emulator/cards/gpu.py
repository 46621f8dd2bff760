"""GPU cards: peak dense throughput, memory, NIC and an editable price, in TOML a user copies.

Why: the roofline needs the peak FLOPS and a per-GPU efficiency; `new` needs prices for the
equal-cost comparison. Shipped cards live in emulator/cards/gpus/NAME.toml; any path works too.
Every number is checked: finite, > 0, and below an absurd ceiling; one line names file and key.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from emulator.cards import CardError, card_text, load_named, shipped_cards

# key -> (unit for messages, absurd ceiling)
_SPEC = {"bf16_tflops": ("TFLOPS", 1e6), "fp8_tflops": ("TFLOPS", 1e6),
         "hbm_tbps": ("TB/s", 1e3), "hbm_gb": ("GB", 1e5), "nic_gbps": ("Gbps", 1e5),
         "price_per_hour": ("per GPU-hour", 1e6)}
_OPTIONAL = {"fp8_tflops"}


@dataclass(frozen=True)
class Calibration:
    """How far below peak a prefill runs on this GPU: matmuls at `mfu`, attention kernels at
    `attn_mfu`, plus a fixed `overhead_s` per prefill (scheduling, launch, sampling)."""

    mfu: float
    attn_mfu: float
    overhead_s: float
    source: str = ""


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

    @property
    def peak_flops(self) -> float:
        """Dense BF16 FLOP/s (the prefill dtype of every shipped card)."""
        return self.bf16_tflops * 1e12

    def to_dict(self) -> dict:
        c = self.calibration
        return {"name": self.name, "bf16_tflops": self.bf16_tflops, "fp8_tflops": self.fp8_tflops,
                "hbm_tbps": self.hbm_tbps, "hbm_gb": self.hbm_gb, "nic_gbps": self.nic_gbps,
                "price_per_hour": self.price_per_hour,
                "calibration": {"mfu": c.mfu, "attn_mfu": c.attn_mfu, "overhead_s": c.overhead_s,
                                "source": c.source}}


def _num(data: dict, path, key: str, lo: float, hi: float, what: str, *, strict_lo: bool = True,
         optional: bool = False) -> float | None:
    if key not in data:
        if optional:
            return None
        raise CardError(path, key, "missing (required)")
    v = data[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise CardError(path, key, f"must be a finite number, got {v!r}")
    if (v <= lo if strict_lo else v < lo) or v > hi:
        rel = ">" if strict_lo else ">="
        raise CardError(path, key, f"must be {rel} {lo:g} and at most {hi:g} {what}, got {v!r}")
    return float(v)


def from_dict(data: dict, path: str | Path | None = None, name: str | None = None) -> GpuCard:
    known = set(_SPEC) | {"name", "description", "calibration"}
    extra = sorted(set(data) - known)
    if extra:
        raise CardError(path, extra[0], "unknown key")
    vals = {k: _num(data, path, k, 0, hi, unit, optional=k in _OPTIONAL)
            for k, (unit, hi) in _SPEC.items()}
    cal = data.get("calibration")
    if not isinstance(cal, dict):
        raise CardError(path, "calibration", "missing section (mfu, attn_mfu, overhead_s)")
    extra = sorted(set(cal) - {"mfu", "attn_mfu", "overhead_s", "source"})
    if extra:
        raise CardError(path, f"calibration.{extra[0]}", "unknown key")
    try:
        cdata = {k: _num(cal, path, k, 0, 1, "(a fraction of peak)") for k in ("mfu", "attn_mfu")}
        overhead = _num(cal, path, "overhead_s", 0, 60, "seconds", strict_lo=False)
    except CardError as exc:
        raise CardError(path, f"calibration.{exc.key}", exc.message) from None
    src = cal.get("source", "")
    label = name or str(data.get("name") or (Path(path).stem if path else "gpu"))
    return GpuCard(name=label, description=str(data.get("description", "")),
                   bf16_tflops=vals["bf16_tflops"], fp8_tflops=vals["fp8_tflops"],
                   hbm_tbps=vals["hbm_tbps"], hbm_gb=vals["hbm_gb"], nic_gbps=vals["nic_gbps"],
                   price_per_hour=vals["price_per_hour"],
                   calibration=Calibration(cdata["mfu"], cdata["attn_mfu"], overhead, str(src)),
                   path=str(path) if path else None)


def read_gpu(path: str | Path, name: str | None = None) -> GpuCard:
    p = Path(path)
    text = card_text(p)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CardError(p, "", f"malformed TOML: {exc}") from None
    return from_dict(data, p, name)


def shipped() -> list[str]:
    return shipped_cards("gpus", ".toml")


def load_gpu(name_or_path: str | Path) -> GpuCard:
    """A shipped GPU card by name (case-insensitive: h200, H20...) or a TOML path."""
    s = str(name_or_path)
    return load_named(s if Path(s).suffix or "/" in s or Path(s).exists() else s.lower(), "gpus", ".toml",
                      read_gpu, "GPU card")
