"""Hybrid prefix cache of one cluster (the router peeks both clusters' caches).

A hybrid model keeps two kinds of reusable state (paper, "hybrid prefix cache pool"):
- full-attention KV, which grows with the prompt: cached per block of `block_tokens` tokens and
  matched on FULL blocks only, as a chain of block hashes (Mooncake `hash_ids`);
- the linear-attention recurrent state, whose size is fixed: a snapshot is only valid at the
  exact length it was taken at. It is keyed by (prefix block chain, length). A prefill saves
  one snapshot, at its last full-block boundary floor(L / block) * block (as block-aligned chunked
  prefill does), not at L itself: resuming at a length also needs the full-attention KV of every
  token before it, and only full blocks are cached. A request can therefore reuse a prefix of j blocks
  only when blocks 1..j are cached AND a state snapshot of exactly j * block_tokens tokens is.
  A dense model (state_bytes 0) needs no snapshot: every matched block is reusable.

Both share one block pool: a snapshot costs ceil(state_bytes / block_bytes) blocks. Blocks are
prefix-cache blocks (reusable, evicted LRU) or transfer-cache blocks (the tail KV of a prefill
waiting to cross the link: pinned, never matched, never evicted, freed when the transfer ends).

Data structures, all O(blocks of the request) per call: a trie stored flat in a dict
(parent node, hash id) -> node, and one OrderedDict LRU over block nodes (key node > 0) and
snapshots (key -node). Every access touches a chain from its deepest block up to the root, so a
parent is always more recently used than its children: LRU eviction only ever removes leaves and
the cached blocks stay prefix-closed (no unreachable orphans).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from emulator.profiles import Profile
from emulator.sim.routing.kv_index import KvIndex
from emulator.traces import MOONCAKE_BLOCK_TOKENS
from emulator.units import K_TOKENS

CLUSTERS = ("prfaas", "pd")


@dataclass(frozen=True)
class KvLayout:
    """S_kv(l) = state_bytes + per_token_bytes * l: the fixed linear-attention state (a) and the
    full-attention KV per token (b)."""

    state_bytes: float
    per_token_bytes: float

    def block_bytes(self, block_tokens: int = MOONCAKE_BLOCK_TOKENS) -> float:
        return self.per_token_bytes * block_tokens

    def kv_bytes(self, tokens: float, *, with_state: bool = True) -> float:
        """Bytes of the KV of `tokens` tokens (plus the state): what a transfer of them moves."""
        return self.per_token_bytes * tokens + (self.state_bytes if with_state else 0.0)


def kv_layout(profile: Profile, l1: float = K_TOKENS, l2: float = 32 * K_TOKENS) -> KvLayout:
    """(a, b) of a profile's S_kv from the chord between two lengths (default 1K and 32K, both
    printed points of the paper's and the toy's tables). A negative intercept (a dense model's
    fit noise) means no state."""
    if not 0 < l1 < l2:
        raise ValueError(f"need 0 < l1 < l2, got {l1}, {l2}")
    s1, s2 = float(profile.s_kv(l1)), float(profile.s_kv(l2))
    b = (s2 - s1) / (l2 - l1)
    if not b > 0:
        raise ValueError(f"{profile.name}: S_kv does not grow between {l1:.0f} and {l2:.0f} tokens")
    return KvLayout(state_bytes=max(s1 - b * l1, 0.0), per_token_bytes=b)


@dataclass(frozen=True)
class CacheStats:
    """Counters of one cache at one moment (immutable: safe to hand to another thread)."""

    lookups: int = 0
    hits: int = 0  # lookups that reused a non-empty prefix
    lookup_tokens: int = 0  # prompt tokens looked up
    hit_tokens: int = 0  # of which served from the cache
    inserted_blocks: int = 0
    evicted_blocks: int = 0
    evicted_states: int = 0
    transfers: int = 0
    transfer_failures: int = 0  # allocations refused: the pool is full of pinned blocks
    used_blocks: int = 0  # prefix blocks + snapshots + pinned transfer blocks
    pinned_blocks: int = 0
    capacity_blocks: int = 0

    @property
    def misses(self) -> int:
        return self.lookups - self.hits

    @property
    def hit_rate(self) -> float:
        """Share of lookups that reused anything."""
        return self.hits / self.lookups if self.lookups else 0.0

    @property
    def token_hit_rate(self) -> float:
        """Share of looked-up prompt tokens not recomputed: the prefill work saved."""
        return self.hit_tokens / self.lookup_tokens if self.lookup_tokens else 0.0


class PrefixCache:
    """One cluster's hybrid block pool (see the module docstring for the rules)."""

    def __init__(self, capacity_bytes: float, layout: KvLayout,
                 block_tokens: int = MOONCAKE_BLOCK_TOKENS, name: str = "") -> None:
        if block_tokens <= 0:
            raise ValueError("block_tokens must be > 0")
        if capacity_bytes < 0:
            raise ValueError("capacity_bytes must be >= 0")
        self.name = name
        self.layout = layout
        self.block_tokens = block_tokens
        self.block_bytes = layout.block_bytes(block_tokens)
        self.capacity_blocks = int(capacity_bytes // self.block_bytes)
        self.state_blocks = math.ceil(layout.state_bytes / self.block_bytes) if layout.state_bytes > 0 else 0
        self._children: dict[tuple[int, int], int] = {}  # (parent node, hash id) -> node
        self._nodes: dict[int, tuple[int, int]] = {}  # node -> (parent node, hash id)
        self._lru: OrderedDict[int, int] = OrderedDict()  # node or -node (snapshot) -> blocks
        self._next_node = 1  # 0 is the root (the empty prefix)
        self._transfers: dict[int, int] = {}  # handle -> pinned blocks
        self._next_handle = 1
        self._used = 0
        self._pinned = 0
        self._index: KvIndex | None = None  # a topology's global index, told of every change
        self._bit = 0
        self._gnode: dict[int, int] = {}  # node -> the index's node
        self._c = dict.fromkeys(("lookups", "hits", "lookup_tokens", "hit_tokens", "inserted_blocks",
                                 "evicted_blocks", "evicted_states", "transfers",
                                 "transfer_failures"), 0)

    @classmethod
    def for_profile(cls, profile: Profile, capacity_bytes: float,
                    block_tokens: int = MOONCAKE_BLOCK_TOKENS, name: str = "") -> PrefixCache:
        return cls(capacity_bytes, kv_layout(profile), block_tokens, name)

    def attach_index(self, index: KvIndex) -> None:
        """Report every block and snapshot to `index` from now on (the cache must be empty)."""
        if self._lru or self._index is not None:
            raise ValueError(f"{self.name}: attach the index to an empty cache, once")
        if index.block_tokens != self.block_tokens:
            raise ValueError(f"{self.name}: the index counts {index.block_tokens}-token blocks, "
                             f"this cache {self.block_tokens}")
        self._index = index
        self._bit = index.register(self.name, needs_state=self.state_blocks > 0)

    # -- occupancy -----------------------------------------------------------------------------
    @property
    def used_blocks(self) -> int:
        return self._used

    @property
    def pinned_blocks(self) -> int:
        return self._pinned

    @property
    def free_blocks(self) -> int:
        return self.capacity_blocks - self._used

    @property
    def used_bytes(self) -> float:
        return self._used * self.block_bytes

    @property
    def stats(self) -> CacheStats:
        return CacheStats(**self._c, used_blocks=self._used, pinned_blocks=self._pinned,
                          capacity_blocks=self.capacity_blocks)

    # -- prefix cache --------------------------------------------------------------------------
    def _match(self, hash_ids: Sequence[int], length: int) -> tuple[list[int], int]:
        """The matched chain (nodes of full blocks, root first) and how many of its blocks are
        reusable. At most (length - 1) // block_tokens blocks: the last prompt token is always
        computed (its logits start decoding), so a partial last block never matches and a fully
        cached block-aligned prompt reuses all but its last block."""
        n = min(len(hash_ids), (length - 1) // self.block_tokens) if length > 0 else 0
        chain = self._walk(hash_ids, n)
        if not self.state_blocks:
            return chain, len(chain)
        lru = self._lru
        usable = next((i + 1 for i in range(len(chain) - 1, -1, -1) if -chain[i] in lru), 0)
        return chain, usable

    def _walk(self, hash_ids: Sequence[int], n: int) -> list[int]:
        """Nodes of the cached chain that match the first `n` block ids, root first."""
        children = self._children
        chain: list[int] = []
        parent = 0
        for i in range(n):
            node = children.get((parent, hash_ids[i]))
            if node is None:
                break
            chain.append(node)
            parent = node
        return chain

    def peek(self, hash_ids: Sequence[int], length: int) -> int:
        """Reusable prefix in tokens, without touching the LRU or the counters (router's view)."""
        return self._match(hash_ids, length)[1] * self.block_tokens

    def lookup(self, hash_ids: Sequence[int], length: int) -> int:
        """Reusable prefix in tokens for a request this cluster now prefills: counts a hit or a
        miss and marks the reused blocks (and snapshot) most recently used."""
        chain, usable = self._match(hash_ids, length)
        tokens = usable * self.block_tokens
        c = self._c
        c["lookups"] += 1
        c["lookup_tokens"] += length
        if usable:
            c["hits"] += 1
            c["hit_tokens"] += tokens
            lru = self._lru
            if self.state_blocks:
                lru.move_to_end(-chain[usable - 1])
            for node in reversed(chain[:usable]):
                lru.move_to_end(node)
        return tokens

    def insert(self, hash_ids: Sequence[int], length: int, *, states_at: Iterable[int] = ()) -> int:
        """Cache a finished prefill: its full blocks and a state snapshot at its last full-block
        boundary (plus any block-aligned lengths in `states_at`, e.g. a shared system prompt).
        Evicts LRU entries for room but never the chain being inserted; when the pool is too
        small (or pinned), a prefix of the chain is kept. Returns the tokens now reusable by a
        request that extends this one."""
        bt = self.block_tokens
        n = min(len(hash_ids), length // bt)
        if n == 0 or self.capacity_blocks == 0:
            return 0
        children, nodes, lru = self._children, self._nodes, self._lru
        chain = self._walk(hash_ids, n)
        parent = chain[-1] if chain else 0
        new = n - len(chain)
        keep = len(chain)
        snap_needed = self.state_blocks > 0
        if not new and snap_needed and -chain[-1] in lru:  # already snapshotted: just refresh
            lru.move_to_end(-chain[-1])
            keep += 1
            snap_needed = False
        for node in reversed(chain):  # protect the existing part while evicting
            lru.move_to_end(node)
        self._evict(new + (self.state_blocks if snap_needed else 0), keep=keep)
        add = min(new, self.free_blocks)
        for i in range(len(chain), len(chain) + add):
            node = self._next_node
            self._next_node += 1
            children[(parent, hash_ids[i])] = node
            nodes[node] = (parent, hash_ids[i])
            if self._index is not None:
                g = self._index.node(self._gnode[parent] if parent else 0, hash_ids[i])
                self._gnode[node] = g
                self._index.added(g, self._bit)
            chain.append(node)
            parent = node
        for node in reversed(chain):  # parents end more recent than their children
            if node in lru:
                lru.move_to_end(node)
            else:
                lru[node] = 1
        self._used += add
        self._c["inserted_blocks"] += add
        if not self.state_blocks or not chain:
            return len(chain) * bt
        depths = {d // bt for d in states_at if d % bt == 0 and 0 < d // bt <= len(chain)}
        if len(chain) == n:  # the request-level snapshot, at the last full-block boundary
            depths.add(n)
        for depth in sorted(depths):
            key = -chain[depth - 1]
            if key in lru:
                lru.move_to_end(key)
            elif self.free_blocks >= self.state_blocks:
                lru[key] = self.state_blocks
                self._used += self.state_blocks
                if self._index is not None:
                    self._index.added(self._gnode[-key], self._bit, state=True)
        for depth in range(len(chain), 0, -1):
            if -chain[depth - 1] in lru:
                return depth * bt
        return 0

    def _evict(self, want_free: int, keep: int = 0) -> None:
        """Evict LRU entries until `want_free` blocks are free, sparing the `keep` most recent
        entries (the chain being inserted)."""
        lru, c = self._lru, self._c
        while self.free_blocks < want_free and len(lru) > keep:
            key, blocks = lru.popitem(last=False)
            self._used -= blocks
            index = self._index
            if key < 0:
                c["evicted_states"] += 1
                if index is not None:
                    index.removed(self._gnode[-key], self._bit, state=True)
                continue
            parent, h = self._nodes.pop(key)
            del self._children[(parent, h)]
            c["evicted_blocks"] += 1
            snap = lru.pop(-key, None)  # a snapshot is useless without its KV blocks
            if snap is not None:
                self._used -= snap
                c["evicted_states"] += 1
            if index is not None:
                g = self._gnode.pop(key)
                if snap is not None:
                    index.removed(g, self._bit, state=True)
                index.removed(g, self._bit)

    def clear(self) -> int:
        """A cache flush: drop every prefix block and snapshot (counted as evictions); pinned
        transfer blocks stay. Returns the blocks freed."""
        before = self._used
        self._evict(self.capacity_blocks + 1)
        return before - self._used

    # -- transfer cache ------------------------------------------------------------------------
    def transfer_blocks(self, tokens: int, *, with_state: bool = True) -> int:
        """Blocks pinned to hold the KV of `tokens` tokens (partial last block included)."""
        return -(-tokens // self.block_tokens) + (self.state_blocks if with_state else 0)

    def allocate_transfer(self, tokens: int, *, with_state: bool = True) -> int | None:
        """Pin blocks for the tail KV of a finished prefill until its transfer ends; returns a
        handle for `free_transfer`. Evicts prefix blocks for room. Returns None (and counts a
        failure) when pinned blocks leave too little room even with the prefix cache emptied:
        the caller must hold the request and retry after a `free_transfer` (or report it)."""
        blocks = self.transfer_blocks(tokens, with_state=with_state)
        if blocks > self.capacity_blocks - self._pinned:
            self._c["transfer_failures"] += 1
            return None
        self._evict(blocks)
        handle = self._next_handle
        self._next_handle += 1
        self._transfers[handle] = blocks
        self._used += blocks
        self._pinned += blocks
        self._c["transfers"] += 1
        return handle

    def free_transfer(self, handle: int) -> None:
        """The transfer finished (or was abandoned): its blocks return to the pool."""
        blocks = self._transfers.pop(handle, None)
        if blocks is None:
            raise ValueError(f"unknown or already freed transfer handle {handle}")
        self._used -= blocks
        self._pinned -= blocks

    # -- introspection (tests, UI) --------------------------------------------------------------
    def lru_keys(self) -> list[int]:
        """LRU order, oldest first: node ids of blocks (> 0) and -node of snapshots (< 0)."""
        return list(self._lru)

    def block(self, node: int) -> tuple[int, int]:
        """(parent node, hash id) of a cached block node."""
        return self._nodes[node]

    def check(self) -> None:
        """Assert the invariants (tests): occupancy adds up, the cache is prefix-closed, a parent
        is more recent than its children, every snapshot sits on a cached block."""
        lru = self._lru
        assert self._used == sum(lru.values()) + self._pinned <= self.capacity_blocks
        assert self._pinned == sum(self._transfers.values())
        assert len(self._nodes) == len(self._children) == sum(1 for k in lru if k > 0)
        pos = {k: i for i, k in enumerate(lru)}
        for node, (parent, h) in self._nodes.items():
            assert self._children[(parent, h)] == node
            if parent:
                assert parent in self._nodes and pos[parent] > pos[node]
        for k in lru:
            assert k > 0 or -k in self._nodes
