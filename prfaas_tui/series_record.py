"""The whole run's time series for export, in bounded memory. Textual-free.

The driver keeps only the last HISTORY snapshots for the charts; an export must hold the run
from its start. `SeriesRecord` keeps one row per recorded snapshot up to `capacity` rows; when
full it drops every other row and from then on records every 2nd snapshot (then 4th, ...), so a
run of any length keeps its whole span, evenly thinned, in at most `capacity` rows. The newest
snapshot is always the last row. Rows are tuples of the columns (no per-row dict).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

CAPACITY = 8192  # rows kept: about 1 KB each at the export's 30 columns, 8 MB at most


class SeriesRecord:
    def __init__(self, capacity: int = CAPACITY) -> None:
        if capacity < 2:
            raise ValueError(f"capacity must be >= 2 rows, got {capacity}")
        self.capacity = capacity
        self.columns: tuple[str, ...] = ()
        self.rows: list[tuple[Any, ...]] = []
        self.stride = 1  # snapshots per kept row
        self.seen = 0  # snapshots offered so far
        self._tail: tuple[Any, ...] | None = None  # the newest row when the stride skipped it

    def add(self, row: dict[str, Any]) -> None:
        """One snapshot's row (every row has the same keys, in the same order)."""
        if not self.columns:
            self.columns = tuple(row)
        values = tuple(row.values())
        if self.seen % self.stride == 0:
            self.rows.append(values)
            self._tail = None
            if len(self.rows) >= self.capacity:
                self.rows = self.rows[::2]
                self.stride *= 2
                if self.rows[-1] is not values:  # thinned away: still the newest
                    self._tail = values
        else:
            self._tail = values
        self.seen += 1

    def extend(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.add(row)

    def dicts(self) -> list[dict[str, Any]]:
        """The kept rows, oldest first, and the newest snapshot last."""
        rows = self.rows + ([self._tail] if self._tail is not None else [])
        return [dict(zip(self.columns, r, strict=True)) for r in rows]

    def __len__(self) -> int:
        return len(self.rows) + (self._tail is not None)
