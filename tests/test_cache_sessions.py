"""Workloads with reuse: multi-turn sessions, Mooncake hash_ids replay, and what prefix reuse does
to the threshold the model re-solves."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict

import numpy as np
import pytest

from emulator.distributions import Empirical, TruncatedLogNormal
from emulator.model import ceilings, split_stats
from emulator.optimizer import search
from emulator.scenario.cache import SessionWorkload
from emulator.scenario.presets import load
from emulator.sim.arrivals.sessions import (
    Request,
    block_reuse,
    constant,
    from_trace,
    generate_sessions,
)
from emulator.sim.routing.prefix_cache import KvLayout, PrefixCache, kv_layout
from emulator.traces import read_mooncake
from tests import shared_data
from tests.shared_data import shared_file

B = 512
MOONCAKE = shared_file(*shared_data.MOONCAKE)  # None when the shared traces are absent


def workload(**kw) -> SessionWorkload:
    base = dict(session_rate=1.0, first_turn=TruncatedLogNormal(9.4, 1.0, 128, 64 * 1024),
                user_tokens=TruncatedLogNormal(8.5, 1.0, 16, 32 * 1024),
                output_tokens=TruncatedLogNormal(6.5, 0.8, 1, 4096), mean_turns=3.0,
                think_time=60.0, system_prompt_blocks=2)
    return SessionWorkload(**(base | kw))


def by_session(reqs: list[Request]) -> dict[int, list[Request]]:
    out: dict[int, list[Request]] = defaultdict(list)
    for r in reqs:
        out[r.session].append(r)
    return out


# -- sessions -----------------------------------------------------------------------------------
def test_turns_extend_the_previous_context():
    reqs = generate_sessions(workload(), np.random.default_rng(1), n_sessions=200)
    sessions = by_session(reqs)
    assert any(len(turns) >= 3 for turns in sessions.values())
    for turns in sessions.values():
        for r in turns:
            assert len(r.hash_ids) == -(-r.length // B)
            assert r.hash_ids[:2] == (0, 1)  # the shared system prompt
        for prev, nxt in zip(turns, turns[1:], strict=False):
            assert nxt.arrival >= prev.arrival
            assert nxt.length > prev.length + prev.output_length  # + new user tokens
            full = prev.length // B
            assert nxt.hash_ids[:full] == prev.hash_ids[:full]  # the chain extends
            if prev.length % B:  # the partial block changed content: a new id
                assert nxt.hash_ids[full] != prev.hash_ids[full]
    owner: dict[int, int] = {}
    for r in reqs:  # apart from the system prompt no block is shared between sessions
        for h in r.hash_ids[2:]:
            assert owner.setdefault(h, r.session) == r.session


def test_sessions_are_deterministic_for_a_seed_and_bounded():
    w = workload(max_context=64 * 1024)
    a = generate_sessions(w, np.random.default_rng(5), duration=120.0)
    b = generate_sessions(w, np.random.default_rng(5), duration=120.0)
    c = generate_sessions(w, np.random.default_rng(6), duration=120.0)
    assert a == b and a != c
    assert all(r.arrival < 120.0 and r.length <= 64 * 1024 for r in a)
    assert [r.arrival for r in a] == sorted(r.arrival for r in a)
    assert len(by_session(a)) == pytest.approx(120, rel=0.35)  # Poisson, 1 session/s
    with pytest.raises(ValueError):
        generate_sessions(w, np.random.default_rng(5))


def test_a_cache_reuses_each_previous_turn():
    """With room for everything, turn k+1 reuses exactly the full blocks of turn k: the snapshot
    of turn k sits at its last full-block boundary, which is where turn k+1 diverges."""
    reqs = generate_sessions(workload(output_tokens=constant(300)), np.random.default_rng(2),
                             n_sessions=100)
    c = PrefixCache(1e15, kv_layout(load("paper-case-study").system.prfaas))
    last: dict[int, Request] = {}
    for r in reqs:
        hit = c.lookup(r.hash_ids, r.length)
        prev = last.get(r.session)
        assert hit == (prev.length // B * B if prev else 0)
        c.insert(r.hash_ids, r.length)
        last[r.session] = r


# -- Mooncake replay ----------------------------------------------------------------------------
def test_mooncake_replay_and_reuse_fraction(tmp_path):
    rows = [
        {"timestamp": 0, "input_length": 1500, "output_length": 10, "hash_ids": [0, 1, 2]},
        {"timestamp": 500, "input_length": 2000, "output_length": 0, "hash_ids": [0, 1, 3, 4]},
        {"timestamp": 1500, "input_length": 300, "output_length": 7, "hash_ids": [5]},
        {"timestamp": 2000, "input_length": 1800, "output_length": 9, "hash_ids": [0, 1, 2, 6]},
    ]
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    reqs = from_trace(read_mooncake(path))
    assert reqs[1] == Request(0.5, 2000, 0, (0, 1, 3, 4), -1)
    assert block_reuse(reqs) == pytest.approx(5 / 12)  # 0, 1 again in #2; 0, 1, 2 in #4
    c = PrefixCache(1e9, KvLayout(0.0, 1.0))
    hits = []
    for r in reqs:
        hits.append(c.lookup(r.hash_ids, r.length))
        c.insert(r.hash_ids, r.length)
    assert hits == [0, 2 * B, 0, 2 * B]  # #1 cached only its 2 full blocks (1500 tokens)


@pytest.mark.skipif(MOONCAKE is None, reason="the shared Mooncake trace is absent (set PRFAAS_SHARED)")
def test_real_mooncake_trace_reuses_about_37_percent_of_blocks():
    reqs = from_trace(read_mooncake(MOONCAKE))
    assert block_reuse(reqs) == pytest.approx(0.37, abs=0.02)


# -- what prefix reuse does to t ----------------------------------------------------------------
def _eq7_crossing(system, n_p: int, n_d: int) -> tuple[float, float]:
    """Lowest t where the PrfaaS ceiling reaches the PD-P ceiling at a fixed split (Eq. 7)."""
    tv = system.lengths.threshold_grid()
    st = split_stats(system.lengths, system.prfaas, system.local, tv, "paper")
    *_, stack, _ = ceilings(st, system.n_prfaas, np.array([n_p]), np.array([n_d]),
                            system.bandwidth, system.decode)
    i = int(np.flatnonzero(stack[0, :, 0] >= stack[1, :, 0])[0])
    return float(tv[i]), float(st.p[i])


@pytest.mark.parametrize("mode", ["paper", "exact"])
def test_prefix_reuse_shortens_lengths_and_moves_t_down(mode):
    """Reasoning first. Eq. 7, N_prfaas / (p T_h200(l_long)) = N_p / ((1 - p) T_h20(l_short)),
    fixes the routed SHARE p: p / (1 - p) = (N_prfaas / N_p) T_h20(l_short) / T_h200(l_long). On
    the paper's profiles that time ratio barely changes when all lengths shrink (both curves keep
    their fixed costs, T_h20 = -0.69 + 3.09 T_h200), so at a fixed split p stays put and t, the
    (1 - p) quantile, falls with the distribution: a shorter incremental distribution means a
    lower t in absolute tokens. Re-solving Eq. 8 as well pushes further the same way: decode
    work (L_out) is unchanged while prefill got cheaper, so the optimizer moves local instances
    from prefill to decode (N_p down); Eq. 7 with fewer N_p needs a larger p, i.e. an even lower
    t. Lambda_max rises because less is prefilled.

    Verified here on chat sessions (about half the prompt tokens reused): at the paper's split
    3/5 the Eq. 7 balance moves from about 18K to about 7.6K tokens with p ~0.54 -> ~0.55; the
    full re-solve moves t from about 18K (N_p 3) to about 4.5K (N_p 1, p ~0.78). With heavier
    reuse (~73% of tokens) it goes all the way to t at the bottom, N_p = 0: naive heterogeneous.
    """
    reqs = generate_sessions(workload(mean_turns=2.0, output_tokens=constant(1024)),
                             np.random.default_rng(7), n_sessions=600)
    sc = load("paper-case-study")
    cache = PrefixCache.for_profile(sc.system.local, 1e15)  # room for everything
    raw, inc = [], []
    for r in reqs:
        hit = cache.lookup(r.hash_ids, r.length)
        cache.insert(r.hash_ids, r.length)
        raw.append(r.length)
        inc.append(r.length - hit)
    raw_a, inc_a = np.asarray(raw), np.asarray(inc)
    assert np.all(inc_a <= raw_a) and np.all(inc_a > 0)
    assert inc_a.mean() < 0.7 * raw_a.mean()
    assert 0.3 < cache.stats.token_hit_rate < 0.7

    raw_sys = dataclasses.replace(sc.system, lengths=Empirical.of(raw_a, "raw"))
    inc_sys = dataclasses.replace(sc.system, lengths=Empirical.of(inc_a, "incremental"))
    r_best, i_best = search(raw_sys, mode).best, search(inc_sys, mode).best
    assert i_best.knobs.t < 0.5 * r_best.knobs.t  # t drops in absolute tokens
    assert i_best.knobs.n_p < r_best.knobs.n_p  # local instances move to decode (Eq. 8)
    assert i_best.p > r_best.p + 0.1  # so a larger share goes to PrfaaS
    assert i_best.lambda_max > r_best.lambda_max

    (t_raw, p_raw), (t_inc, p_inc) = _eq7_crossing(raw_sys, 3, 5), _eq7_crossing(inc_sys, 3, 5)
    assert t_inc < 0.6 * t_raw  # at the paper's split: Eq. 7 alone moves t down ...
    assert p_inc == pytest.approx(p_raw, abs=0.05)  # ... while keeping the share p
