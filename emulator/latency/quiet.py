"""numpy's floating-point warnings off for the latency layer's formulas: they divide by zero
and overflow on purpose (inf and nan mark unstable queues and empty sides, masked right
after)."""

from __future__ import annotations

import functools

import numpy as np


def _quiet(fn):
    """Runs `fn` with numpy's floating-point warnings off."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return run
