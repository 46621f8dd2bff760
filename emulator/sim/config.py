"""The emulator's settings from a scenario file: arrivals, output lengths, run length, seed,
admission control and link details. Parsed strictly through `emulator.config.Reader`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from emulator.config import Reader, non_negative, one_of, positive
from emulator.units import parse_bytes, parse_duration

ARRIVALS = ("poisson", "gamma", "onoff")


@dataclass(frozen=True)
class SimConfig:
    arrival: str = "poisson"
    rate: float | None = None  # req/s; None means `load` x the model's Lambda_max
    load: float = 0.9
    cv: float = 1.0  # gamma arrivals: coefficient of variation of inter-arrival times
    duration: float = 600.0  # simulated seconds
    seed: int = 0
    max_queue: int | None = None  # admission control: queued requests per stage
    max_queue_seconds: float | None = None  # admission control: expected queueing time
    link_burst: float = 0.0  # token-bucket burst, bytes
    link_latency: float = 0.0  # propagation delay, seconds


def parse_sim_config(root: Reader, work: Reader, dec: Reader, base_dir: Path) -> SimConfig:
    """Reads the emulator keys of [workload] and the optional [emulator] section."""
    kw: dict = {}
    kw["arrival"] = work.get("arrival", str, "poisson", check=one_of(*ARRIVALS))
    kw["rate"] = work.get("rate", float, None, check=positive)
    kw["load"] = work.get("load", float, 0.9, check=positive)
    kw["cv"] = work.get("cv", float, 1.0, check=positive)
    if (em := root.section("emulator")) is not None:
        kw["duration"] = em.get("duration", parse_duration, 600.0, check=positive)
        kw["seed"] = em.get("seed", int, 0, check=non_negative)
        kw["max_queue"] = em.get("max_queue", int, None, check=positive)
        kw["max_queue_seconds"] = em.get("max_queue_seconds", parse_duration, None, check=positive)
        kw["link_burst"] = em.get("link_burst", parse_bytes, 0.0, check=non_negative)
        kw["link_latency"] = em.get("link_latency", parse_duration, 0.0, check=non_negative)
        em.finish()
    return SimConfig(**kw)
