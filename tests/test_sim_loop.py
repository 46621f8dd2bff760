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


def test_a_moved_timer_fires_once_at_its_new_deadline_and_never_on_the_way():
    loop = VirtualTimeLoop()
    seen = []
    moved = loop.call_at(1.0, lambda: seen.append(("moved", loop.time())))
    loop.call_at(2.0, lambda: seen.append(("other", loop.time())))
    loop.call_at(0.5, lambda: loop.move_later(moved, 3.0))
    loop.call_at(2.0 - 1e-9, lambda: loop.move_later(moved, 4.0))  # moved again, queued deep
    loop.run_until(10.0)
    assert seen == [("other", 2.0), ("moved", 4.0)]
    assert loop.pending_timers() == 0


def test_a_timer_moved_while_others_share_its_old_deadline_runs_after_them():
    loop = VirtualTimeLoop()
    seen = []
    loop.call_at(1.0, lambda: seen.append("same"))
    moved = loop.call_at(1.0, lambda: seen.append("moved"))
    loop.call_at(1.0, lambda: seen.append("same2"))
    loop.move_later(moved, 1.5)
    loop.run_until(2.0)
    assert seen == ["same", "same2", "moved"]
