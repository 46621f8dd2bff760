"""Shared Hypothesis strategies for the fuzz tests (issue 11): values that are extreme, of the
wrong type or not finite, and byte-level mutations (flips, insertions, deletions, truncation)
of a valid file. `long_profile` runs a property over a fixed number of inputs (the long
`-m fuzz` profile: a count, not a wall-clock budget, so a loaded machine runs the same inputs)
and reports how many it tried."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st

# Values a field should never have, or only at its edge.
HOSTILE_NUMBERS = st.sampled_from([
    0, -0.0, -1, 1, 0.5, 1e-300, 2**24, 2**24 + 1, 2**53 + 1, 2**63, 2**64, 10**30, 1e308,
    -1e308, float("inf"), float("-inf"), float("nan"), 16 * 1024 * 1024, 1e15, 1e15 + 1,
])
HOSTILE_VALUES = st.one_of(
    HOSTILE_NUMBERS, st.none(), st.booleans(), st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=3),
                                                              st.integers(), max_size=2),
    st.integers(), st.floats(),
)


@st.composite
def mutated_bytes(draw, data: bytes) -> bytes:
    """`data` with 1-4 byte-level edits, or cut short at a random offset."""
    out = bytearray(data)
    if draw(st.integers(0, 4)) == 0:
        return bytes(out[: draw(st.integers(0, len(out)))])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "dup"]))
        i = draw(st.integers(0, max(len(out) - 1, 0)))
        if op == "flip" and out:
            out[i] = draw(st.sampled_from([0x00, 0xFF, 0xC3, 0x80, ord('"'), ord(","),
                                           ord("\n"), ord("9"), ord("-"), ord("e"), ord("{")]))
        elif op == "insert":
            out[i:i] = draw(st.sampled_from([b"\xff", b"\x00", b"\n", b'"', b",", b"e999",
                                             b"NaN", b"Infinity", b"\xe2\x82", b"\r\n", b"0"]))
        elif op == "delete" and out:
            del out[i: i + draw(st.integers(1, 8))]
        elif op == "dup" and out:
            j = draw(st.integers(i, len(out)))
            out[j:j] = out[i:j][:64]
    return bytes(out)


def default_settings(n: int) -> settings:
    """The default suite's profile: n examples, no deadline (CI machines are shared), no
    example database (the tests must not depend on earlier runs)."""
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def fuzz_budget(config) -> int | None:
    """Inputs for the long profile: --fuzz-budget, else $PRFAAS_FUZZ_BUDGET, else None (skip)."""
    value = config.getoption("--fuzz-budget") or os.environ.get("PRFAAS_FUZZ_BUDGET")
    return int(value) if value else None


def long_profile(request, what: str, make_test: Callable[[settings], Callable[[], None]],
                 counter: list[int], batch: int = 200) -> int:
    """Run `make_test(settings)()` in batches of `batch` examples with fresh seeds until the
    property has counted (`counter[0]`) the --fuzz-budget inputs; skips without a budget."""
    inputs = fuzz_budget(request.config)
    if inputs is None:
        pytest.skip("the long fuzz profile: pass --fuzz-budget INPUTS or set PRFAAS_FUZZ_BUDGET")
    n = 0
    while counter[0] < inputs:
        n += 1
        seed(n)(make_test(default_settings(batch)))()
    with request.config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
        print(f"\nfuzz {what}: {counter[0]:,} inputs, every one loaded or refused in one line",
              file=sys.stderr)
    return counter[0]
