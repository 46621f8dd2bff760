"""The hybrid prefix cache: full-block matching, the exact-length rule for linear state, LRU,
byte capacity, and transfer-cache pinning."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.scenario.presets import load
from emulator.sim.routing.prefix_cache import (
    CacheStats,
    KvLayout,
    PrefixCache,
    kv_layout,
)
from emulator.units import MB, MiB

B = 512
DENSE = KvLayout(state_bytes=0.0, per_token_bytes=1.0)  # block = 512 bytes, no state
HYBRID = KvLayout(state_bytes=700.0, per_token_bytes=1.0)  # a snapshot costs 2 blocks


def cache(blocks: int, layout: KvLayout = DENSE) -> PrefixCache:
    return PrefixCache(blocks * layout.block_bytes(B), layout, B)


# -- the layout a profile implies ---------------------------------------------------------------
def test_layout_from_the_toy_profile_is_exact():
    lay = kv_layout(load("toy").system.prfaas)  # 100 MB at 1K, 800 MB at 32K
    b = 700 * MB / (31 * 1024)
    assert lay.per_token_bytes == pytest.approx(b)
    assert lay.state_bytes == pytest.approx(100 * MB - 1024 * b)
    assert lay.kv_bytes(32 * 1024) == pytest.approx(800 * MB)


def test_layout_from_the_paper_profile_matches_the_derived_fit():
    """paper-numbers.md: S_kv(l) ~= 172.0 MiB + 17,143 bytes * l (a least-squares fit; the 1K-32K
    chord lands within a few percent)."""
    lay = kv_layout(load("paper-case-study").system.prfaas)
    assert lay.state_bytes == pytest.approx(172.0 * MiB, rel=0.03)
    assert lay.per_token_bytes == pytest.approx(17_143, rel=0.03)


def test_a_dense_profile_has_no_state():
    lay = kv_layout(load("dense-contrast").system.prfaas)
    assert lay.state_bytes == pytest.approx(0.0, abs=1.0)
    assert lay.per_token_bytes == pytest.approx(253_952)
    with pytest.raises(ValueError):
        kv_layout(load("toy").system.prfaas, 32 * 1024, 1024)


def test_capacity_in_bytes_from_a_profile():
    prof = load("paper-case-study").system.prfaas
    lay = kv_layout(prof)
    c = PrefixCache.for_profile(prof, 64 * 2**30)
    assert c.block_bytes == pytest.approx(B * lay.per_token_bytes)
    assert c.capacity_blocks == int(64 * 2**30 // c.block_bytes)
    assert c.state_blocks == -(-lay.state_bytes // c.block_bytes) == 22  # 174 MiB / 8.2 MiB
    for i in range(400):  # 40 blocks each: far more than fits
        c.insert(tuple(range(i * 100, i * 100 + 40)), 40 * B)
    assert c.used_bytes <= 64 * 2**30
    assert c.used_blocks == c.capacity_blocks - c.free_blocks
    assert c.stats.evicted_blocks > 0
    c.check()


# -- matching -----------------------------------------------------------------------------------
def test_full_blocks_only_partial_last_block_not_matched():
    c = cache(100)
    c.insert((1, 2, 3, 4), 3 * B + 100)  # block 4 is partial: not cached
    assert c.used_blocks == 3
    assert c.peek((1, 2, 3, 4, 5), 5 * B) == 3 * B
    assert c.peek((1, 2, 7, 8), 4 * B) == 2 * B  # diverges at block 3
    assert c.peek((9, 2, 3), 3 * B) == 0  # chains match from the root only
    assert c.peek((1, 2, 3, 4), 3 * B + 100) == 3 * B  # the same prompt again: partial recomputed
    assert c.peek((1, 2), 2 * B) == B  # a fully cached aligned prompt still computes its last block


def test_linear_state_reusable_only_at_the_exact_length():
    c = cache(100, HYBRID)
    assert c.state_blocks == 2
    c.insert((1, 2, 3, 4), 4 * B)  # blocks 1-4 and one snapshot at exactly 4 blocks
    assert c.used_blocks == 4 + 2
    assert c.peek((1, 2, 3, 4, 9), 5 * B) == 4 * B  # extends it: the snapshot matches
    assert c.peek((1, 2, 3, 7, 8), 5 * B) == 0  # 3 blocks match but no state at 3 * 512
    assert c.peek((1, 2, 3, 4), 4 * B) == 0  # must recompute a token: needs the state at 3 blocks
    c.insert((1, 2, 3, 5), 4 * B, states_at=(3 * B, 100))  # unaligned checkpoints are ignored
    assert c.peek((1, 2, 3, 7, 8), 5 * B) == 3 * B
    # the same matches with a dense model reuse every matched block
    d = cache(100)
    d.insert((1, 2, 3, 4), 4 * B)
    assert d.peek((1, 2, 3, 7, 8), 5 * B) == 3 * B


def test_lru_evicts_least_recent_and_leaves_before_parents():
    c = cache(4)
    c.insert((1, 2), 2 * B)
    c.insert((3, 4), 2 * B)
    assert c.lookup((1, 2, 9), 3 * B) == 2 * B  # X becomes most recent
    c.insert((5, 6), 2 * B)  # evicts Y = (3, 4), not X
    assert c.peek((3, 4, 9), 3 * B) == 0
    assert c.peek((1, 2, 9), 3 * B) == 2 * B
    assert c.peek((5, 6, 9), 3 * B) == 2 * B
    assert c.stats.evicted_blocks == 2
    c = cache(3)
    c.insert((1, 2), 2 * B)
    c.insert((5,), B)
    c.insert((7,), B)  # one block must go: the leaf 2 of the oldest chain, not its parent 1
    assert c.peek((1, 2, 9), 3 * B) == B
    c.check()


def test_snapshots_go_with_their_blocks():
    c = cache(8, HYBRID)
    c.insert((1, 2), 2 * B)  # 2 blocks + 2 for the snapshot
    c.insert((3, 4), 2 * B)
    c.insert((5,), B)  # needs 3: evicts the oldest entries of (1, 2) and with them its snapshot
    assert c.peek((1, 2, 9), 3 * B) == 0
    assert c.peek((3, 4, 9), 3 * B) == 2 * B
    assert c.stats.evicted_states >= 1
    c.check()


def test_stats_count_hits_misses_and_tokens():
    c = cache(100)
    c.insert((1, 2, 3), 3 * B)
    assert c.lookup((1, 2, 3, 4), 4 * B) == 3 * B
    assert c.lookup((7, 8), 2 * B) == 0
    c.peek((1, 2, 3, 4), 4 * B)  # the router's look does not count
    s = c.stats
    assert isinstance(s, CacheStats)
    assert (s.lookups, s.hits, s.misses, s.hit_tokens, s.lookup_tokens) == (2, 1, 1, 3 * B, 6 * B)
    assert s.hit_rate == 0.5 and s.token_hit_rate == 0.5
    with pytest.raises(AttributeError):
        s.hits = 3  # immutable


# -- transfer cache -----------------------------------------------------------------------------
def test_transfer_blocks_are_pinned_unmatchable_and_freed():
    c = cache(10)
    for i in range(8):
        c.insert((i,), B)
    h = c.allocate_transfer(4 * B - 10, with_state=False)  # 4 blocks: evicts the 2 oldest
    assert h is not None and c.pinned_blocks == 4 and c.used_blocks == 10
    assert c.peek((0, 9), 2 * B) == 0 and c.peek((1, 9), 2 * B) == 0 and c.peek((7, 9), 2 * B) == B
    assert c.stats.evicted_blocks == 2
    h2 = c.allocate_transfer(6 * B, with_state=False)  # evicts every prefix block
    assert h2 is not None and c.pinned_blocks == 10
    assert c.insert((42, 43), 2 * B) == 0  # pool full of pinned blocks: nothing is cached
    assert c.allocate_transfer(1, with_state=False) is None  # the caller must wait
    assert c.stats.transfer_failures == 1
    c.free_transfer(h)
    assert c.pinned_blocks == 6 and c.free_blocks == 4
    assert c.allocate_transfer(1, with_state=False) is not None
    with pytest.raises(ValueError):
        c.free_transfer(h)
    c.check()


def test_a_refused_transfer_evicts_nothing_and_transfers_carry_the_state():
    c = cache(10, HYBRID)
    c.insert((1, 2), 2 * B)  # 2 blocks + a 2-block snapshot
    assert c.allocate_transfer(5 * B, with_state=False) is not None  # fits in the free room
    assert c.transfer_blocks(4 * B) == 4 + 2
    assert c.allocate_transfer(4 * B) is None  # 5 pinned + 6 > 10, whatever is evicted
    assert c.peek((1, 2, 3), 3 * B) == 2 * B  # nothing was evicted for the refused one
    assert c.allocate_transfer(3 * B, with_state=False) is not None  # evicts for room
    assert c.pinned_blocks == 8 and c.peek((1, 2, 3), 3 * B) == 0
    c.check()


# -- properties ---------------------------------------------------------------------------------
chains = st.lists(st.integers(0, 3), min_size=0, max_size=6).map(tuple)
ops = st.lists(st.tuples(st.sampled_from(["insert", "lookup", "alloc", "free"]), chains,
                         st.integers(0, 511), st.integers(0, 12)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(ops=ops, capacity=st.integers(0, 24), hybrid=st.booleans())
def test_random_operations_keep_capacity_and_lru_invariants(ops, capacity, hybrid):
    c = cache(capacity, HYBRID if hybrid else DENSE)
    handles: list[int] = []
    for op, chain, cut, n in ops:
        length = max(len(chain) * B - cut, 1)
        if op == "insert":
            got = c.insert(chain, length)
            assert got % B == 0 and got <= length
            if got:
                assert c.peek(chain + (99,), got + 1) == got  # what it stored is reusable
        elif op == "lookup":
            peek = c.peek(chain, length)
            assert c.lookup(chain, length) == peek
            assert peek == 0 or peek < length
        elif op == "alloc":
            h = c.allocate_transfer(n * 100, with_state=hybrid and n % 2 == 0)
            if h is not None:
                handles.append(h)
        elif handles:
            c.free_transfer(handles.pop(n % len(handles)))
        c.check()
        assert 0 <= c.used_blocks <= c.capacity_blocks


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=80), st.integers(1, 6))
def test_single_block_chains_behave_as_a_plain_lru(seq, capacity):
    """With one-block prompts and no state the cache is a textbook LRU: compare to a model."""
    c = cache(capacity)
    ref: OrderedDict[int, None] = OrderedDict()
    for is_insert, key in seq:
        if is_insert:
            c.insert((key,), B)
            ref[key] = None
            ref.move_to_end(key)
            while len(ref) > capacity:
                ref.popitem(last=False)
        else:
            hit = c.lookup((key, 100), 2 * B)
            assert hit == (B if key in ref else 0)
            if key in ref:
                ref.move_to_end(key)
    assert [c.block(k)[1] for k in c.lru_keys()] == list(ref)
