"""The virtual-time loop: the clock jumps to deadlines, coroutines run in simulated time, ties
go first-come, errors surface, and it runs inside another running loop."""

import asyncio

import pytest

from emulator.sim.core.loop import VirtualLoopStalled, VirtualTimeLoop


def test_clock_jumps_to_each_deadline_exactly():
    loop = VirtualTimeLoop()
    seen = []
    for when in (3.0, 0.1, 1e6, 2.5):
        loop.call_at(when, lambda: seen.append(loop.time()))
    loop.run_until(1e7)
    assert seen == [0.1, 2.5, 3.0, 1e6]
    assert loop.time() == 1e7
    assert loop.timer_events == 4


def test_coroutines_sleep_in_simulated_time():
    loop = VirtualTimeLoop()
    out = []

    async def ticker():
        for _ in range(3):
            await asyncio.sleep(1.5)
            out.append(loop.time())

    loop.create_task(ticker())
    loop.run_until(100.0)
    assert out == [1.5, 3.0, 4.5]


def test_ties_run_first_come_whatever_else_is_scheduled():
    orders = []
    for extra_stops in (0, 3):
        loop = VirtualTimeLoop()
        order = []
        for i in range(20):
            loop.call_at(5.0, order.append, i)
        for k in range(extra_stops):  # slicing the run must not reorder same-time events
            loop.run_until(1.0 + k)
        loop.run_until(10.0)
        orders.append(order)
    assert orders[0] == orders[1] == list(range(20))


def test_a_failing_callback_stops_the_run_with_its_error():
    loop = VirtualTimeLoop()
    loop.call_at(1.0, lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        loop.run_until(5.0)


def test_waiting_on_nothing_is_an_error_not_a_hang():
    loop = VirtualTimeLoop()
    with pytest.raises(VirtualLoopStalled):
        loop.run_until_complete(loop.create_future())


def test_large_clock_values_still_advance():
    loop = VirtualTimeLoop()
    loop.call_at(1e12, lambda: None)
    loop.run_until(1e15)
    assert loop.time() == 1e15


@pytest.mark.asyncio
async def test_runs_inside_another_running_loop():
    loop = VirtualTimeLoop()
    hit = []
    loop.call_at(60.0, hit.append, 1)
    loop.run_until(120.0)
    assert hit == [1]
    assert asyncio.get_running_loop() is not loop
