"""A fixed-memory histogram with logarithmic buckets, for latency percentiles.

A simulated day at 10x overload records millions of latencies; keeping them would grow memory
without bound. Buckets of constant ratio (1% wide by default) hold any positive value between
`lo` and `hi` in a few thousand counters, and a percentile read from the bucket's geometric
middle is within half a bucket (0.5%) of the exact one. The mean is exact (a running sum).
"""

from __future__ import annotations

import math

import numpy as np

_log = math.log


class LogHistogram:
    __slots__ = ("lo", "hi", "ratio", "_inv_log", "_log_lo", "counts", "_top", "n", "total", "min",
                 "max")

    def __init__(self, lo: float = 1e-6, hi: float = 1e7, ratio: float = 1.01):
        if not (0 < lo < hi and ratio > 1):
            raise ValueError("need 0 < lo < hi and ratio > 1")
        self.lo, self.hi, self.ratio = lo, hi, ratio
        self._inv_log = 1.0 / math.log(ratio)
        self._log_lo = math.log(lo)
        # bucket 0: <= lo; bucket i: (lo r^(i-1), lo r^i]; the last one also takes > hi
        self.counts = [0] * (int(math.ceil((math.log(hi) - self._log_lo) * self._inv_log)) + 2)
        self._top = len(self.counts) - 1  # add() is hot: the last bucket's index, once
        self.n = 0
        self.total = 0.0
        self.min = math.inf
        self.max = -math.inf

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        if x < self.min:
            self.min = x
        if x > self.max:
            self.max = x
        if x > self.lo:
            i = int((_log(x) - self._log_lo) * self._inv_log) + 1
            top = self._top
            self.counts[i if i <= top else top] += 1
        else:
            self.counts[0] += 1

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else math.nan

    def snapshot_counts(self) -> list[int]:
        """The bucket counts now, as a list: a copy of 3,000 counters costs about 7 us (an array
        about 50), and topology runs take one per region every sample. Subtract two with
        `np.subtract(later, earlier)` for the values recorded in between."""
        return self.counts.copy()

    def quantiles(self, qs: tuple[float, ...] | list[float],
                  counts: np.ndarray | list[int] | None = None) -> list[float]:
        """The q-quantiles (0 <= q <= 1) of everything recorded, or of `counts` (a difference
        of two `snapshot_counts()`: the values recorded in between); nan when empty."""
        whole = counts is None
        c = self.counts if whole else counts
        cum = np.cumsum(c)
        total = int(cum[-1])
        out = []
        for q in qs:
            if total == 0:
                out.append(math.nan)
                continue
            i = int(np.searchsorted(cum, max(1, math.ceil(q * total))))
            value = self.lo if i == 0 else math.exp(self._log_lo + (i - 0.5) / self._inv_log)
            if whole:  # the exact extremes are known for the whole record
                value = min(max(value, self.min), self.max)
            out.append(value)
        return out

    def quantile(self, q: float, counts: np.ndarray | None = None) -> float:
        return self.quantiles((q,), counts)[0]
