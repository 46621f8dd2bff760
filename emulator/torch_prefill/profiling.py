"""Measure T_prefill(l), S_kv(l) and Phi_kv(l) = S_kv*8/T on this machine; write a profile TOML.

Timing: the tokens are made first, then `warmup` untimed prefills at each length (allocator,
kernel selection), then the median of `repeats` timed ones; on GPU the clock is read only after
`torch.cuda.synchronize()`, so queued kernels are counted.
"""

from __future__ import annotations

import datetime as _dt
import gc
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from emulator.torch_prefill import TorchUnavailable
from emulator.torch_prefill.config import get_config
from emulator.torch_prefill.models import PrefillLM, build_model, resolve_device
from emulator.torch_prefill.prefill import make_tokens, prefill
from emulator.torch_prefill.profile_file import profile_toml

try:
    import torch
except (ImportError, OSError) as exc:
    raise TorchUnavailable() from exc


@dataclass(frozen=True)
class ProfilePoint:
    length: int  # tokens
    seconds: float  # median T_prefill
    kv_bytes: int  # S_kv measured from the tensors

    @property
    def phi_gbps(self) -> float:
        """Phi_kv = S_kv * 8 / T_prefill / 1e9."""
        return self.kv_bytes * 8 / self.seconds / 1e9


@dataclass
class ModelProfile:
    model: str
    device: str  # "cpu" or "cuda"
    device_name: str  # "cpu" or the GPU's name
    dtype: str  # "fp32" / "bf16"
    repeats: int
    warmup: int
    points: list[ProfilePoint] = field(default_factory=list)
    torch_version: str = field(default_factory=lambda: torch.__version__.split("+")[0])
    threads: int | None = None  # CPU intra-op threads when set explicitly

    @property
    def name(self) -> str:
        return f"{self.model}@{self.device}"

    @property
    def family(self) -> str:
        return get_config(self.model).family

    def point(self, length: int) -> ProfilePoint:
        return next(p for p in self.points if p.length == length)

    @property
    def upper_bound(self) -> str:
        """Why the times are upper bounds ('' for the dense family: its kernels are torch's)."""
        if self.family != "hybrid":
            return ""
        return ("linear attention runs the project's chunked torch kernel, not a fused one "
                "(fla): the hybrid's time is an upper bound")

    def to_toml(self, date: str | None = None) -> str:
        """The profile file the project's loader reads (lengths tokens, seconds, bytes)."""
        date = date or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        where = self.dtype if self.device == "cpu" else f"{self.device_name}, {self.dtype}"
        if self.threads is not None:
            where += f", {self.threads} thread{'' if self.threads == 1 else 's'}"
        desc = (f"measured: {self.model} on {self.device} ({where}), "
                f"median of {self.repeats} after {self.warmup} warm-up{'' if self.warmup == 1 else 's'}")
        return profile_toml(
            f"written by prfaas-tui profile --backend torch (model {self.model}, "
            f"device {self.device}, torch {self.torch_version}, {date})",
            self.name, desc, None, [p.length for p in self.points],
            [float(f"{p.seconds:.6g}") for p in self.points], [p.kv_bytes for p in self.points],
            upper_bound=self.upper_bound)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_prefill(model: PrefillLM, length: int, *, repeats: int = 5, warmup: int = 2,
                 seed: int = 0) -> ProfilePoint:
    """Median wall time of `repeats` prefills of `length` tokens after `warmup` untimed ones."""
    if repeats < 1 or warmup < 0:
        raise ValueError("repeats must be >= 1 and warmup >= 0")
    device = next(model.parameters()).device
    tokens = make_tokens(model.cfg.vocab_size, length, seed, device=device)
    for _ in range(warmup):
        prefill(model, tokens=tokens)
    times, kv = [], 0
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        result = prefill(model, tokens=tokens)
        _sync(device)
        times.append(time.perf_counter() - t0)
        kv = result.kv_bytes
        del result
    return ProfilePoint(length, statistics.median(times), kv)


def profile_model(model: str, lengths: Sequence[int], *, device: str | None = None,
                  repeats: int = 5, warmup: int = 2, seed: int = 0,
                  threads: int | None = None) -> ModelProfile:
    """Build `model` (random weights, seeded) and time it at each length, shortest first.
    `threads` pins torch's CPU intra-op threads for the run (steadier on a shared machine:
    one busy neighbour stalls every parallel region when all cores are in use)."""
    get_config(model)  # unknown names fail before any work
    dev = resolve_device(device)
    net = build_model(model, dev, seed)
    dtype = {torch.float32: "fp32", torch.bfloat16: "bf16"}.get(net.embed.weight.dtype, "?")
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    prof = ModelProfile(model, dev.type, name, dtype, repeats, warmup, threads=threads)
    saved_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        for length in sorted(set(lengths)):
            prof.points.append(time_prefill(net, length, repeats=repeats, warmup=warmup,
                                            seed=seed))
    finally:
        torch.set_num_threads(saved_threads)
        del net
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return prof


def write_profile(profile: ModelProfile, path: str | Path, date: str | None = None) -> Path:
    path = Path(path)
    path.write_text(profile.to_toml(date))
    return path


@dataclass
class Comparison:
    """Two profiles on the same hardware; ratio = Phi_kv(dense) / Phi_kv(hybrid) per length
    (if both are the same family: Phi_kv(second) / Phi_kv(first))."""

    first: ModelProfile
    second: ModelProfile

    @property
    def pair(self) -> tuple[ModelProfile, ModelProfile]:
        """(hybrid, dense) when the families differ, else (first, second)."""
        if self.first.family == "dense" and self.second.family == "hybrid":
            return self.second, self.first
        return self.first, self.second

    @property
    def ratios(self) -> dict[int, float]:
        lo, hi = self.pair
        return {p.length: hi.point(p.length).phi_gbps / p.phi_gbps for p in lo.points}

    def __str__(self) -> str:
        lo, hi = self.pair
        rows = [f"Phi_kv {hi.model} / {lo.model} on {lo.device_name}:"]
        for length, r in self.ratios.items():
            rows.append(f"  {length:>7} tokens: {hi.point(length).phi_gbps:9.4f} / "
                        f"{lo.point(length).phi_gbps:9.4f} Gbps = {r:6.2f}x")
        return "\n".join(rows)


def compare(models: Sequence[str] = ("hybrid-tiny", "dense-tiny"),
            lengths: Sequence[int] = (1024, 4096), device: str | None = None, *,
            repeats: int = 5, warmup: int = 2, seed: int = 0, threads: int | None = None,
            verbose: bool = False) -> Comparison:
    """Profile two models on the same device and lengths; `verbose` prints the ratio table."""
    if len(models) != 2:
        raise ValueError(f"compare takes two model names, got {list(models)}")
    for m in models:
        get_config(m)
    first, second = (profile_model(m, lengths, device=device, repeats=repeats, warmup=warmup,
                                   seed=seed, threads=threads) for m in models)
    result = Comparison(first, second)
    if verbose:
        print(result)
    return result
