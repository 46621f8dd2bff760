"""Preset keys of the hybrid prefix cache (`[cache]`) and of multi-turn chat sessions
(`[workload] sessions = { ... }`), read strictly like the rest of `emulator.sim.config`.

[cache]   enabled (default true), capacity (block pool per cluster, e.g. "2 TiB"; or
          prfaas_capacity / pd_capacity), block_tokens (512, the Mooncake block), routing
          ("auto": a hysteresis detector on PrfaaS egress utilization decides scarce vs
          abundant; "scarce" / "abundant" pin the rule), scarce_at / abundant_at (utilization
          thresholds of the detector, 0.85 / 0.65), scarcity_window (seconds of utilization
          behind each detector step, 5 s)
sessions  rate (sessions/s), turns (mean, geometric), think_time (mean seconds between a
          session's arrivals), user_tokens (length table of later turns' new tokens), and
          optionally first_turn (default [workload] lengths), output_tokens (default
          [workload] output_lengths, else decode.l_out), system_prompt (tokens shared by all
          sessions, whole blocks), max_context (128K)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from emulator.config import Reader, between, non_negative, one_of, positive
from emulator.distributions import LengthDistribution
from emulator.lengths_config import parse_lengths
from emulator.sim.sessions import SessionWorkload, constant
from emulator.traces import MOONCAKE_BLOCK_TOKENS
from emulator.units import parse_bytes, parse_duration, parse_tokens

ROUTING = ("auto", "scarce", "abundant")


@dataclass(frozen=True)
class CacheConfig:
    prfaas_capacity: float  # bytes of the PrfaaS cluster's block pool
    pd_capacity: float  # bytes of the PD cluster's block pool
    block_tokens: int = MOONCAKE_BLOCK_TOKENS
    routing: str = "auto"
    scarce_at: float = 0.85
    abundant_at: float = 0.65
    scarcity_window: float = 5.0


def parse_cache(root: Reader) -> CacheConfig | None:
    """The `[cache]` section, or None when absent or `enabled = false` (still validated)."""
    c = root.section("cache")
    if c is None:
        return None
    enabled = c.get("enabled", bool, True)
    both = c.get("capacity", parse_bytes, None, check=non_negative)
    caps = {}
    for cluster in ("prfaas", "pd"):
        key = f"{cluster}_capacity"
        if both is None and not c.has(key):
            raise c.error("capacity", "missing (required: the block pool per cluster, e.g. "
                          "\"2 TiB\"; or prfaas_capacity and pd_capacity)")
        caps[cluster] = c.get(key, parse_bytes, both, check=non_negative)
    cfg = CacheConfig(
        prfaas_capacity=caps["prfaas"], pd_capacity=caps["pd"],
        block_tokens=c.get("block_tokens", int, MOONCAKE_BLOCK_TOKENS, check=positive),
        routing=c.get("routing", str, "auto", check=one_of(*ROUTING)),
        scarce_at=c.get("scarce_at", float, 0.85, check=between(0.0, 1.0)),
        abundant_at=c.get("abundant_at", float, 0.65, check=between(0.0, 1.0)),
        scarcity_window=c.get("scarcity_window", parse_duration, 5.0, check=positive))
    if cfg.abundant_at >= cfg.scarce_at:
        raise c.error("abundant_at", f"must be below scarce_at ({cfg.scarce_at:g}): the gap is "
                      "the hysteresis that keeps the routing mode from flapping")
    c.finish()
    return cfg if enabled else None


def parse_sessions(s: Reader, base_dir: Path, *, lengths: LengthDistribution | None,
                   output_lengths: LengthDistribution | None, l_out: float,
                   block_tokens: int) -> SessionWorkload:
    """`[workload] sessions = { ... }` as a SessionWorkload (blocks of the cache's size)."""
    def table(key: str, default: LengthDistribution | None) -> LengthDistribution:
        sec = s.section(key, required=default is None)
        return default if sec is None else parse_lengths(sec, base_dir)

    system = s.get("system_prompt", parse_tokens, 0.0, check=non_negative)
    try:
        work = SessionWorkload(
            session_rate=s.get("rate", float, check=positive),
            first_turn=table("first_turn", lengths),
            user_tokens=table("user_tokens", None),
            output_tokens=table("output_tokens", output_lengths or constant(l_out)),
            mean_turns=s.get("turns", float, 4.0,
                             check=lambda x: None if x >= 1 else "must be >= 1"),
            think_time=s.get("think_time", parse_duration, 30.0, check=non_negative),
            system_prompt_blocks=int(system // block_tokens),
            max_context=int(s.get("max_context", parse_tokens, 128 * 1024, check=positive)),
            block_tokens=block_tokens)
    except ValueError as exc:
        raise s.error("", str(exc)) from None
    s.finish()
    return work
