"""Workloads with prefix reuse: multi-turn sessions and Mooncake `hash_ids` replay.

Both produce `Request` records whose `hash_ids` name the prompt's blocks (one id per
`block_tokens` tokens, the last one possibly partial). Equal ids at equal positions of equal
chains mean equal content, which is all a prefix cache needs to know.

Sessions model chat: each turn's input is the previous turn's input + its output + new user
tokens, so the context only grows and every full block keeps its id from turn to turn; a block
that was partial gets a fresh id once it fills (its content changed). Distinct sessions share
an optional system prompt of `system_prompt_blocks` full blocks. Turns are open-loop: turn k+1
arrives a think time after turn k arrives (the think time includes the response), so the
workload does not depend on how fast the emulated system serves it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from emulator.distributions import Discrete, LengthDistribution
from emulator.scenario.cache import SessionWorkload
from emulator.traces import Trace


class Request(NamedTuple):
    """One request as the engine consumes it."""

    arrival: float  # seconds
    length: int  # input tokens (the whole prompt, cached or not)
    output_length: int  # tokens to decode
    hash_ids: tuple[int, ...]  # one id per block of the prompt, the last possibly partial
    session: int = -1  # session id, -1 when unknown (trace replay)


def generate_sessions(work: SessionWorkload, rng: np.random.Generator, *,
                      duration: float | None = None, n_sessions: int | None = None) -> list[Request]:
    """Requests of sessions starting in [0, duration) (or the first `n_sessions`), sorted by
    arrival; with `duration`, turns arriving after it are dropped. Deterministic for a seed."""
    if (duration is None) == (n_sessions is None):
        raise ValueError("give exactly one of duration or n_sessions")
    if n_sessions is None:
        n_sessions = int(rng.poisson(work.session_rate * duration))
        starts = np.sort(rng.uniform(0.0, duration, n_sessions))
    else:
        starts = np.cumsum(rng.exponential(1.0 / work.session_rate, n_sessions))
    turns = rng.geometric(1.0 / work.mean_turns, n_sessions)
    bt = work.block_tokens
    next_id = work.system_prompt_blocks  # ids below it are the shared system prompt
    system = list(range(work.system_prompt_blocks))
    out: list[Request] = []
    for sid in range(n_sessions):
        k = int(turns[sid])
        users = np.concatenate([work.first_turn.sample(rng, 1), work.user_tokens.sample(rng, k - 1)])
        outputs = work.output_tokens.sample(rng, k)
        gaps = rng.exponential(work.think_time, k - 1) if work.think_time > 0 else np.zeros(k - 1)
        arrival = float(starts[sid])
        full = list(system)  # ids of the context's full blocks, stable across turns
        length = len(system) * bt
        prev_out = 0
        for j in range(k):
            length += prev_out + max(int(users[j]), 1)
            if length > work.max_context or (duration is not None and arrival >= duration):
                break
            while len(full) < length // bt:
                full.append(next_id)
                next_id += 1
            ids = tuple(full)
            if length % bt:
                ids += (next_id,)  # the partial block: its content changes next turn
                next_id += 1
            prev_out = max(int(outputs[j]), 1)
            out.append(Request(arrival, length, prev_out, ids, sid))
            if j < k - 1:
                arrival += float(gaps[j])
    out.sort(key=lambda r: r.arrival)
    return out


def constant(tokens: float) -> LengthDistribution:
    """A length distribution that always gives `tokens` (e.g. a fixed output length)."""
    return Discrete.of([tokens], [1.0])


def from_trace(trace: Trace) -> list[Request]:
    """A trace as request records: Mooncake `hash_ids` as given (512-token blocks); a trace
    without them (Azure) gets empty chains, i.e. no reuse."""
    hashes = trace.hash_ids or [()] * len(trace)
    return [Request(float(a), int(n), int(o), tuple(h), -1)
            for a, n, o, h in zip(trace.arrivals, trace.input_lengths, trace.output_lengths, hashes,
                                  strict=True)]


def to_trace(requests: Sequence[Request], path: str = "sessions") -> Trace:
    """Request records as a `Trace` the engine replays (arrivals shifted to start at 0)."""
    if not requests:
        raise ValueError(f"{path}: no requests to replay")
    arrivals = np.array([r.arrival for r in requests], dtype=float)
    return Trace(path, arrivals - arrivals[0],
                 np.array([r.length for r in requests], dtype=np.int64),
                 np.array([r.output_length for r in requests], dtype=np.int64),
                 [list(r.hash_ids) for r in requests])


def block_reuse(requests: Iterable[Request]) -> float:
    """Share of blocks (over all requests, in arrival order) whose id appeared in an earlier
    request: the trace's reuse as the Mooncake release counts it (about 37% for its
    conversation trace). An upper bound on what any cache can hit."""
    seen: set[int] = set()
    total = reused = 0
    for r in requests:
        total += len(r.hash_ids)
        reused += sum(1 for h in r.hash_ids if h in seen)
        seen.update(r.hash_ids)
    return reused / total if total else 0.0
