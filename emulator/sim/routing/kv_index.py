"""A global KVCache index over a topology's prefix caches: which cluster (a site or a region)
holds how long a reusable prefix of a request, found in one walk of the request's blocks
whatever the number of clusters (the seed's router consults such an index to pick "the
best-cache cluster").

One trie over block chains, shared by every cache: a node per distinct chain of block ids held
anywhere, with a bit mask of the caches holding that block and one of the caches holding a
linear-attention state snapshot exactly there. Each `PrefixCache` reports its own blocks and
snapshots as they come and go (`added`/`removed`), so the index never disagrees with them. A
cache is prefix-closed (it evicts leaves only), so a node no cache holds has no held
descendants and is dropped at once: the index holds no more nodes than the caches together.
"""

from __future__ import annotations

from collections.abc import Sequence


class KvIndex:
    """See the module docstring. Caches register by name and get a bit (`register`)."""

    def __init__(self, block_tokens: int):
        if block_tokens <= 0:
            raise ValueError("block_tokens must be > 0")
        self.block_tokens = block_tokens
        self.names: list[str] = []
        self._needs_state: int = 0  # mask of caches whose reuse needs a state snapshot
        self._children: dict[tuple[int, int], int] = {}  # (parent node, hash id) -> node
        self._parent: dict[int, tuple[int, int]] = {}  # node -> (parent node, hash id)
        self._blocks: dict[int, int] = {}  # node -> mask of caches holding the block
        self._states: dict[int, int] = {}  # node -> mask of caches with a snapshot there
        self._next = 1  # 0 is the root (the empty prefix)

    def register(self, name: str, *, needs_state: bool) -> int:
        """A cache joins; returns its bit (its `index_bit`)."""
        if name in self.names:
            raise ValueError(f"cache {name!r} is already in the index")
        bit = 1 << len(self.names)
        self.names.append(name)
        if needs_state:
            self._needs_state |= bit
        return bit

    # -- what the caches report ---------------------------------------------------------------
    def node(self, parent: int, hash_id: int) -> int:
        """The index's node for block `hash_id` after the chain `parent` (created on first use)."""
        key = (parent, hash_id)
        node = self._children.get(key)
        if node is None:
            node = self._next
            self._next += 1
            self._children[key] = node
            self._parent[node] = key
            self._blocks[node] = 0
        return node

    def added(self, node: int, bit: int, *, state: bool = False) -> None:
        table = self._states if state else self._blocks
        table[node] = table.get(node, 0) | bit

    def removed(self, node: int, bit: int, *, state: bool = False) -> None:
        if state:
            mask = self._states.get(node, 0) & ~bit
            if mask:
                self._states[node] = mask
            else:
                self._states.pop(node, None)
            return
        mask = self._blocks[node] & ~bit
        if mask:
            self._blocks[node] = mask
            return
        del self._blocks[node]  # no cache holds it, so none holds a block below it either
        self._states.pop(node, None)
        del self._children[self._parent.pop(node)]

    # -- what the router asks -----------------------------------------------------------------
    def usable(self, hash_ids: Sequence[int], length: int, mask: int = -1) -> dict[str, int]:
        """Reusable prefix in tokens per cache among `mask` (default: all), by the caches' own
        rule (PrefixCache.peek): full blocks only, never the prompt's last token, and for a
        cache of a hybrid model only up to its deepest snapshot on the chain. Read-only."""
        bt = self.block_tokens
        n = min(len(hash_ids), (length - 1) // bt) if length > 0 else 0
        best: dict[int, int] = {}
        alive = mask & ((1 << len(self.names)) - 1)
        dense = alive & ~self._needs_state
        children, blocks, states = self._children, self._blocks, self._states
        parent = 0
        for depth in range(1, n + 1):
            node = children.get((parent, hash_ids[depth - 1]))
            if node is None:
                break
            alive &= blocks[node]
            if not alive:
                break
            reach = (alive & dense) | (alive & states.get(node, 0))
            while reach:
                low = reach & -reach
                best[low] = depth
                reach ^= low
            parent = node
        return {self.names[b.bit_length() - 1]: d * bt for b, d in best.items()}

    def bit(self, name: str) -> int:
        return 1 << self.names.index(name)

    def __len__(self) -> int:
        """Nodes held (tests: the index never outgrows its caches)."""
        return len(self._blocks)
