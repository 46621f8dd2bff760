"""Issue 12, item 10: the UI's wall-clock rate limits (prfaas_tui.throttle) on asyncio-throttle.
The throttle's own clock (`time.monotonic` in asyncio_throttle) is replaced by a fake one and
its retry sleep by a bare yield, so nothing here waits on the wall clock."""

from __future__ import annotations

import asyncio
import types

import asyncio_throttle.throttler as throttler_module
import pytest

from prfaas_tui.throttle import Coalesced, Toasts

pytestmark = pytest.mark.asyncio

_sleep = asyncio.sleep


@pytest.fixture
def clock(monkeypatch):
    """The throttle's clock, moved by hand (`clock.now`)."""
    fake = types.SimpleNamespace(now=0.0)
    fake.monotonic = lambda: fake.now
    monkeypatch.setattr(throttler_module, "time", fake)
    monkeypatch.setattr(throttler_module, "asyncio",
                        types.SimpleNamespace(sleep=lambda _s: _sleep(0)))
    return fake


async def settle(n: int = 20) -> None:
    """Let the loop run a few rounds (no wall time passes in the throttle)."""
    for _ in range(n):
        await _sleep(0)


async def test_a_burst_is_one_call_that_sees_the_latest_state(clock):
    seen, state = [], {"v": 0}
    gate = Coalesced(lambda: seen.append(state["v"]), rate=5, period=1.0)
    for i in range(100):
        state["v"] = i
        gate()
    await settle()
    assert seen == [99] and gate.calls == 1 and not gate.pending


async def test_asks_spread_out_are_capped_at_the_rate_then_the_latest_follows(clock):
    seen, state = [], {"v": 0}
    gate = Coalesced(lambda: seen.append(state["v"]), rate=3, period=1.0)
    for i in range(50):  # 50 ticks, each with the loop turning in between, at one instant
        state["v"] = i
        gate()
        await settle(3)
    assert gate.calls == 3 and gate.pending  # the rest wait for the window to move on
    assert seen == [0, 1, 2]
    clock.now = 1.01  # the window has moved on: one call, with the state as it is now
    await settle()
    assert seen == [0, 1, 2, 49] and not gate.pending
    gate.cancel()


async def test_toasts_show_the_first_few_and_then_only_the_latest(clock):
    shown = []
    toasts = Toasts(lambda text, kw: shown.append((text, kw)), rate=2, period=2.0)
    for i in range(10):
        toasts(f"refused {i}", severity="warning")
        await settle(3)
    assert shown == [("refused 0", {"severity": "warning"}),
                     ("refused 1", {"severity": "warning"})]
    clock.now = 2.5
    await settle()
    assert shown[-1] == ("refused 9", {"severity": "warning"}) and len(shown) == 3
    toasts.gate.cancel()
