"""The global KVCache index agrees with every cache it covers, whatever they hold and evict."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.sim.routing.kv_index import KvIndex
from emulator.sim.routing.prefix_cache import KvLayout, PrefixCache

BT = 4
DENSE = KvLayout(state_bytes=0.0, per_token_bytes=1.0)
HYBRID = KvLayout(state_bytes=6.0, per_token_bytes=1.0)  # a snapshot costs 2 blocks of 4 B


def _caches(kinds: list[bool], capacity: int) -> tuple[KvIndex, list[PrefixCache]]:
    index = KvIndex(BT)
    caches = []
    for i, hybrid in enumerate(kinds):
        c = PrefixCache(capacity * BT, HYBRID if hybrid else DENSE, BT, name=f"c{i}")
        c.attach_index(index)
        caches.append(c)
    return index, caches


# a small id alphabet and short chains, so prefixes are shared and evictions happen
chains = st.lists(st.integers(0, 3), min_size=0, max_size=6)
ops = st.lists(st.tuples(st.sampled_from(["insert", "lookup", "clear"]), st.integers(0, 2),
                         chains, st.integers(1, 6 * BT + 3)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(kinds=st.lists(st.booleans(), min_size=1, max_size=3), capacity=st.integers(0, 12),
       ops=ops, probes=st.lists(st.tuples(chains, st.integers(0, 6 * BT + 3)), max_size=8))
def test_the_index_answers_what_each_cache_answers(kinds, capacity, ops, probes):
    """Brute force: ask every cache itself (peek); the index must give the same prefix per cache
    after any sequence of inserts, lookups (LRU moves) and flushes."""
    index, caches = _caches(kinds, capacity)
    for op, which, ids, length in ops:
        cache = caches[which % len(caches)]
        if op == "insert":
            cache.insert(ids, length)
        elif op == "lookup":
            cache.lookup(ids, length)
        else:
            cache.clear()
        cache.check()
    for ids, length in probes + [(ids, length) for _, _, ids, length in ops]:
        truth = {c.name: c.peek(ids, length) for c in caches}
        got = index.usable(ids, length)
        assert {n: got.get(n, 0) for n in truth} == truth
        assert all(v > 0 for v in got.values())  # only caches that hold something
        mask = caches[0]._bit
        assert index.usable(ids, length, mask) == ({"c0": truth["c0"]} if truth["c0"] else {})
    # nothing outlives its caches: the index holds at most the blocks they hold
    assert len(index) <= sum(len(c._nodes) for c in caches)
    for c in caches:
        c.clear()
    assert len(index) == 0


def test_a_hybrid_cache_reuses_only_up_to_its_deepest_snapshot():
    index, (dense, hybrid) = _caches([False, True], 64)
    dense.insert([1, 2, 3], 3 * BT)
    hybrid.insert([1, 2, 3], 3 * BT)  # a snapshot at 3 blocks only
    assert index.usable([1, 2, 3, 4], 4 * BT + 1) == {"c0": 3 * BT, "c1": 3 * BT}
    assert index.usable([1, 2, 9], 3 * BT + 1) == {"c0": 2 * BT}  # c1 has no snapshot at 2
    assert index.usable([1, 2, 3], 3 * BT) == {"c0": 2 * BT}  # the last token is always computed


def test_an_index_is_attached_once_to_an_empty_cache_of_its_block_size():
    index = KvIndex(BT)
    c = PrefixCache(64, DENSE, BT, name="a")
    c.insert([1], BT)
    with pytest.raises(ValueError, match="empty"):
        c.attach_index(index)
    with pytest.raises(ValueError, match="8-token"):
        PrefixCache(64, DENSE, 4, name="b").attach_index(KvIndex(8))
