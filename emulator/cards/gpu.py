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

from emulator.cards import (
    MAX_DEPTH,
    CardError,
    card_text,
    check_depth,
    check_name,
    load_named,
    shipped_cards,
)

# key -> (unit for messages, floor, absurd ceiling): the floors keep every derived rate finite
# (a 1e-300 TFLOPS card would make prefill times overflow to inf and rates 0/0)
_SPEC = {"bf16_tflops": ("TFLOPS", 1e-3, 1e6), "fp8_tflops": ("TFLOPS", 1e-3, 1e6),
         "hbm_tbps": ("TB/s", 1e-6, 1e3), "hbm_gb": ("GB", 1e-3, 1e5),
         "nic_gbps": ("Gbps", 1e-3, 1e5), "price_per_hour": ("per GPU-hour", 1e-9, 1e6)}
MIN_MFU = 1e-4  # a calibration below 0.01% of peak is a typo
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
        raise CardError(path, "calibration", "missing section (mfu, attn_mfu, overhead_s)")
    extra = sorted(set(cal) - {"mfu", "attn_mfu", "overhead_s", "source"})
    if extra:
        raise CardError(path, f"calibration.{extra[0]}", "unknown key")
    try:
        cdata = {k: _num(cal, path, k, MIN_MFU, 1, "(a fraction of peak)", strict_lo=False)
                 for k in ("mfu", "attn_mfu")}
        overhead = _num(cal, path, "overhead_s", 0, 60, "seconds", strict_lo=False)
    except CardError as exc:
        raise CardError(path, f"calibration.{exc.key}", exc.message) from None
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
                   calibration=Calibration(cdata["mfu"], cdata["attn_mfu"], overhead, str(src)),
                   path=str(path) if path else None)


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
