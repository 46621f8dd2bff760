"""Overload: with admission control a simulated day at 10 x Lambda_max keeps memory flat and
counts every rejected request with its reason; without it queues grow (and the CLI warns)."""

import gc
import tomllib
import tracemalloc

import pytest

from emulator.scenario.presets import from_dict
from emulator.sim.engine import Emulation

# The toy, 100 x slower, so that 10 x Lambda_max for a day is ~17,000 requests.
SLOW = """
name = "slow-toy"
[profiles.slow]
prefill_time = { lengths = ["1K", "32K"], seconds = [50, 200] }
kv_size = { lengths = ["1K", "32K"], bytes = ["100 MB", "800 MB"] }
[deployment]
prfaas_profile = "slow"
local_profile = "slow"
n_prfaas = 2
local_pool = 3
n_p = 1
n_d = 2
threshold = "8K"
bandwidth = "10 MB/s"
[decode]
t_decode = "2.5 s"
bs_max = 10
l_out = 100
[workload]
lengths = { kind = "discrete", values = ["1K", "32K"], probs = [0.5, 0.5] }
[emulator]
sample_interval = "10 s"
timeseries_rows = 256
"""


def scenario(bound: str):
    return from_dict(tomllib.loads(SLOW.replace("[emulator]", "[emulator]\n" + bound)))


def memory_by_half(sc, hours: float) -> tuple[int, int, int, int, Emulation]:
    """Traced memory (after a collection) retained at half time and at the end of one run, and
    the peak of each half. Both points share the run's one-off allocations (imports, caches,
    warm-up), and gc.collect() removes garbage whose collection time depends on what ran before
    in this process, so the comparison measures only what the emulation keeps as time passes."""
    gc.collect()
    tracemalloc.start()
    try:
        emu = Emulation(sc, load=10.0, duration=hours * 3600, seed=1)
        emu.run_until(hours * 3600 / 2)
        gc.collect()
        half, first_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        emu.run_until(hours * 3600)
        gc.collect()
        end, second_peak = tracemalloc.get_traced_memory()
        return half, end, first_peak, second_peak, emu
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_a_day_at_ten_times_lambda_max_keeps_memory_flat():
    half, end, first_peak, second_peak, emu = memory_by_half(scenario("max_queue = 20"), 24)
    with emu:
        acc = emu.run().accounting
    assert acc.arrived > 15_000
    assert end < 1.1 * half, (half, end)
    assert second_peak < 1.1 * first_peak, (first_peak, second_peak)
    assert acc.rejected_total > 0.8 * acc.arrived
    assert acc.arrived == acc.completed + acc.in_flight + acc.rejected_total


def test_the_memory_measure_sees_an_unbounded_queue_grow():
    """The same measure on the unbounded toy: its retained memory grows with the queue, so the
    flat-memory test above would fail if admission control stopped bounding it."""
    half, end, _, _, emu = memory_by_half(scenario(""), 4)
    emu.close()
    assert end > 1.2 * half, (half, end)


@pytest.mark.parametrize("bound, reasons", [
    ("max_queue = 20", {"queue-full:prfaas", "queue-full:pd-p"}),
    ('max_queue_seconds = "10 min"', {"queue-time:prfaas", "queue-time:pd-p"}),
])
def test_every_rejection_is_counted_with_its_reason(bound, reasons):
    with Emulation(scenario(bound), load=10.0, duration=6 * 3600, seed=2) as emu:
        result = emu.run()
        acc = result.accounting
        assert set(acc.rejected) == reasons
        assert acc.arrived == acc.completed + acc.in_flight + acc.rejected_total
        assert result.json["accounting"]["rejected_reasons"] == dict(sorted(acc.rejected.items()))
        assert max(len(emu.prfaas.queue), len(emu.pdp.queue)) <= 20
        # what is admitted is served at the model's ceiling
        op = emu.model_point("exact")
        assert result.json["stages"]["prfaas"]["served_rate"] == pytest.approx(
            op.theta_prfaas, rel=0.1)


def test_without_a_bound_the_queue_grows_with_time():
    with Emulation(scenario(""), load=3.0, duration=6 * 3600, seed=3) as emu:
        emu.run_until(3 * 3600)
        first = emu.in_flight
        emu.run()
        assert emu.in_flight > 1.8 * first
        assert emu.accounting.rejected_total == 0


def test_decode_kv_budget_rejects_what_can_never_fit():
    text = SLOW.replace("l_out = 100", 'l_out = 100\nkv_budget = "500 MB"')
    with Emulation(from_dict(tomllib.loads(text)), load=0.5, duration=3600, seed=1) as emu:
        acc = emu.run().accounting
    assert set(acc.rejected) == {"kv-exceeds-decode-budget"}
    assert acc.rejected_total == pytest.approx(acc.arrived / 2, rel=0.25)
