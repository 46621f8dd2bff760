"""numpy's floating-point warnings off for the latency layer, entered once per outermost call."""

from __future__ import annotations

import functools
from contextvars import ContextVar

import numpy as np

_QUIET: ContextVar[bool] = ContextVar("latency_quiet", default=False)


def _quiet(fn):
    """Runs `fn` with numpy's floating-point warnings off, entering np.errstate only in the
    outermost such call: the queueing formulas divide by zero and overflow on purpose (inf
    and nan mark unstable queues and empty sides, masked right after), and a search makes
    thousands of nested calls where an errstate per formula cost ~60 us per tail evaluation."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if _QUIET.get():
            return fn(*args, **kwargs)
        token = _QUIET.set(True)
        try:
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        finally:
            _QUIET.reset(token)
    return run
