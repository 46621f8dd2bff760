"""Profile a published config.json: batch-1 prefill times by the two-depth per-layer method and
S_kv from the cache the forward pass returns, checked against the card's per-layer model.

Two depths: for each unit of the architecture (a mixer group, the FFN, the experts) a stack of
the base and `depths[1]` layers of it is built; at each length the base alone (depth 0) and the
first `depths[0]` and `depths[1]` layers are timed, and

    T(l) = T_base(l) + sum over units of count x (T_d2(l) - T_d1(l)) / (d2 - d1)

so a model too big for the device is measured without building all of it (two layers of each
kind at a time). What one device measures is one device: batch 1, no tensor parallelism.
"""

from __future__ import annotations

import datetime as _dt
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from emulator.cards.model_card import ModelCard
from emulator.torch_prefill import TorchUnavailable
from emulator.torch_prefill.architecture import (
    Architecture,
    architecture,
    expected_kv_bytes,
    upper_bound_reason,
)
from emulator.torch_prefill.blocks import build_stack
from emulator.torch_prefill.prefill import make_tokens, tensor_bytes
from emulator.torch_prefill.profile_file import profile_toml

try:
    import torch
except (ImportError, OSError) as exc:
    raise TorchUnavailable() from exc

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
ITEMSIZE = {"bf16": 2, "fp16": 2, "fp32": 4}
SCALING = ("one device, batch 1, no tensor parallelism: an instance of several GPUs (TP) is "
           "not this time divided by its GPUs; use a card profile (roofline) for TP instances")


class KvMismatch(RuntimeError):
    """The cache a forward pass returned is not the size the card's per-layer model says."""


@dataclass(frozen=True)
class LengthPoint:
    length: int
    seconds: float  # T(l) by the two-depth method
    kv_bytes: int  # S_kv(l) from the returned cache
    state_bytes: int  # the part of it that does not grow with l (recurrent and conv states)
    base_seconds: float  # embedding, final norm and head
    unit_seconds: tuple[float, ...]  # per layer, one per unit


@dataclass
class ConfigProfile:
    """A measured profile of one config on one device."""

    arch: Architecture
    config: str  # the config's path
    device: str
    device_name: str
    dtype: str
    depths: tuple[int, int]
    repeats: int
    warmup: int
    threads: int | None = None
    points: list[LengthPoint] = field(default_factory=list)
    torch_version: str = field(default_factory=lambda: torch.__version__.split("+")[0])
    date: str = field(default_factory=lambda: _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))

    @property
    def name(self) -> str:
        return f"{self.arch.name}@{self.device_name if self.device == 'cuda' else 'cpu'}"

    @property
    def upper_bound(self) -> str:
        """Why the times are upper bounds of the architecture's ('' when they are not)."""
        return upper_bound_reason(self.arch)

    @property
    def method(self) -> str:
        d1, d2 = self.depths
        return (f"two-depth per-layer: each unit timed at depths {d1} and {d2}, the per-layer "
                f"difference times its layer count, plus the base (embedding, norm, head) timed "
                f"alone; median of {self.repeats} after {self.warmup} warm-up(s), batch 1")

    def where(self) -> str:
        threads = "" if self.threads is None else f", {self.threads} thread(s)"
        on = self.device_name if self.device == "cuda" else "cpu"
        return f"{on}, {self.dtype}{threads}, torch {self.torch_version}"

    def describe(self) -> str:
        bound = f"; UPPER BOUND: {self.upper_bound}" if self.upper_bound else ""
        return (f"measured: {self.arch.name} from its config.json on {self.where()} "
                f"(random weights, two-depth per-layer); {SCALING}{bound}")


def device_name(device: torch.device) -> str:
    """The GPU's name, or "cpu"."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(run: Callable[[], object], device: torch.device, repeats: int,
                   warmup: int) -> float:
    """Median wall time of `repeats` calls after `warmup` untimed ones (synchronized on GPU)."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        run()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _cache_bytes(caches: list[dict], kind: str | None = None) -> int:
    """Bytes of the returned caches ("kv", "state" or both)."""
    return sum(tensor_bytes(ts) for c in caches for k, ts in c.items() if kind in (None, k))


def profile_config(card: ModelCard, lengths: Sequence[int], *, device: str = "cpu",
                   dtype: str | None = None, depths: tuple[int, int] = (1, 2), repeats: int = 3,
                   warmup: int = 1, seed: int = 0, threads: int | None = None,
                   progress: Callable[[str], None] | None = None) -> ConfigProfile:
    """Measure `card`'s architecture at each length (see the module doc). `dtype` defaults to
    bf16 on a GPU and fp32 on a CPU (where bf16 matmuls are slow). Raises KvMismatch when the
    returned cache differs from the card's S_kv."""
    d1, d2 = depths
    if not 0 < d1 < d2:
        raise ValueError(f"depths must be 0 < d1 < d2, got {depths}")
    dev = torch.device(device)
    dtype = dtype or ("bf16" if dev.type == "cuda" else "fp32")
    arch = architecture(card)
    prof = ConfigProfile(arch, str(card.path or card.name), dev.type, device_name(dev), dtype, (d1, d2),
                         repeats, warmup, threads)
    lengths = sorted(set(lengths))
    per_unit: list[list[float]] = [[] for _ in arch.units]
    base: list[float] = []
    kv: list[int] = [0] * len(lengths)
    state: list[int] = [0] * len(lengths)
    saved = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        for u, unit in enumerate(arch.units):
            if progress:
                progress(f"{unit.name}: depths {d1} and {d2}")
            net = build_stack(arch, unit, d2, dev, DTYPES[dtype], seed)
            with torch.inference_mode():
                for i, n in enumerate(lengths):
                    tokens = make_tokens(arch.vocab, n, seed, device=dev)
                    def at(depth: int, net=net, tokens=tokens) -> float:
                        return median_seconds(lambda: net(tokens, depth), dev, repeats, warmup)

                    if u == 0:
                        base.append(at(0))
                    t1, t2 = at(d1), at(d2)
                    per_unit[u].append(max(t2 - t1, 0.0) / (d2 - d1))
                    caches = net(tokens, d1)[1]
                    kv[i] += unit.count * _cache_bytes(caches) // d1
                    state[i] += unit.count * _cache_bytes(caches, "state") // d1
                    del caches
            del net
            gc.collect()
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    finally:
        torch.set_num_threads(saved)
    for i, n in enumerate(lengths):
        want = expected_kv_bytes(card, n, ITEMSIZE[dtype])
        if kv[i] != want:
            raise KvMismatch(f"the measured cache at {n} tokens is {kv[i]:,} B, the card's "
                             f"per-layer model says {want:,} B ({dtype} KV)")
        units = tuple(per_unit[u][i] for u in range(len(arch.units)))
        total = base[i] + sum(unit.count * t for unit, t in zip(arch.units, units, strict=True))
        prof.points.append(LengthPoint(n, total, kv[i], state[i], base[i], units))
    return prof


def profile_document(prof: ConfigProfile, extra: dict | None = None) -> str:
    """The profile TOML: [profile] as the preset loader reads it, with what was measured, on
    what and how in [profile.measured] (plus `extra`, e.g. the roofline it was compared with)."""
    measured = {"model": prof.arch.name, "config": prof.config, "device": prof.device,
                "device_name": prof.device_name, "torch": prof.torch_version,
                "dtype": prof.dtype, "method": prof.method, "depths": list(prof.depths),
                "date": prof.date, "scaling": SCALING,
                "units": [f"{u.name}: " + ", ".join(f"{k} {v}" for k, v in u.dims.items())
                          for u in prof.arch.units],
                "notes": list(prof.arch.notes),
                "state_bytes": [p.state_bytes for p in prof.points],
                "kv_check": "the returned cache equals the card's per-layer S_kv at every length"}
    if prof.threads is not None:
        measured["threads"] = prof.threads
    measured.update(extra or {})
    return profile_toml(
        f"written by prfaas-tui profile --backend torch --config {prof.config} "
        f"({prof.where()}, {prof.date})",
        prof.name, prof.describe(), prof.config, [p.length for p in prof.points],
        [float(f"{p.seconds:.6g}") for p in prof.points], [p.kv_bytes for p in prof.points],
        upper_bound=prof.upper_bound, measured=measured)
