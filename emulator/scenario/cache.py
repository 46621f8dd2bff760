"""Preset keys of the hybrid prefix cache (`[cache]`) and of multi-turn chat sessions
(`[workload] sessions = { ... }`), read strictly like the rest of `emulator.scenario.sim`.

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

from emulator.distributions import Discrete, LengthDistribution
from emulator.scenario.lengths import parse_lengths
from emulator.scenario.reader import (
    Reader,
    at_least,
    between,
    non_negative,
    one_of,
    positive,
    read_fields,
    setting,
)
from emulator.traces import MOONCAKE_BLOCK_TOKENS
from emulator.units import parse_bytes, parse_duration, parse_tokens

ROUTING = ("auto", "scarce", "abundant")


@dataclass(frozen=True)
class CacheConfig:
    prfaas_capacity: float  # bytes of the PrfaaS cluster's block pool
    pd_capacity: float  # bytes of the PD cluster's block pool
    block_tokens: int = setting(MOONCAKE_BLOCK_TOKENS, parse=int, check=positive)
    routing: str = setting("auto", parse=str, check=one_of(*ROUTING))
    scarce_at: float = setting(0.85, check=between(0.0, 1.0))  # egress utilization: scarce
    abundant_at: float = setting(0.65, check=between(0.0, 1.0))  # ... back to abundant
    scarcity_window: float = setting(5.0, parse=parse_duration, check=positive)  # seconds


@dataclass(frozen=True)
class SessionWorkload:
    """Multi-turn chat sessions arriving as a Poisson process."""

    session_rate: float = setting(key="rate", check=positive)  # sessions per second
    first_turn: LengthDistribution  # new user tokens of turn 1 (after the system prompt)
    user_tokens: LengthDistribution  # new user tokens of every later turn
    output_tokens: LengthDistribution  # decoded tokens per turn
    # turns per session: geometric on {1, 2, ...} with this mean
    mean_turns: float = setting(4.0, key="turns", check=at_least(1))
    # mean seconds between a turn's arrival and the next (exponential)
    think_time: float = setting(30.0, parse=parse_duration, check=non_negative)
    system_prompt_blocks: int = 0  # shared by all sessions (the key `system_prompt` is tokens)
    # a session ends before a turn's input would exceed this
    max_context: int = setting(128 * 1024, parse=lambda v: int(parse_tokens(v)), check=positive)
    block_tokens: int = MOONCAKE_BLOCK_TOKENS

    def __post_init__(self) -> None:
        if not self.session_rate > 0:
            raise ValueError("session_rate must be > 0")
        if not self.mean_turns >= 1:
            raise ValueError("mean_turns must be >= 1")
        if self.think_time < 0 or self.system_prompt_blocks < 0 or self.block_tokens <= 0:
            raise ValueError("think_time and system_prompt_blocks must be >= 0, block_tokens > 0")
        if self.system_prompt_blocks * self.block_tokens >= self.max_context:
            raise ValueError("the system prompt alone reaches max_context")


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
    cfg = CacheConfig(prfaas_capacity=caps["prfaas"], pd_capacity=caps["pd"],
                      **read_fields(CacheConfig, c))
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
            **read_fields(SessionWorkload, s),
            first_turn=table("first_turn", lengths),
            user_tokens=table("user_tokens", None),
            output_tokens=table("output_tokens", output_lengths or Discrete.of([l_out], [1.0])),
            system_prompt_blocks=int(system // block_tokens),
            block_tokens=block_tokens)
    except ValueError as exc:
        raise s.error("", str(exc)) from None
    s.finish()
    return work
