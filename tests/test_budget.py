"""Bounded work (issue 11): the estimator and the caps as pure functions. Every hang of the
issue's list is refused here in one line naming the flag or key, the cap and how to raise it;
ordinary work passes."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator import budget
from emulator.budget import CAPS, BudgetError, Caps

RAISE = r"lower it or raise the cap with --max-[a-z-]+ N$"


def refused(fn, *args, source: str, **kw) -> str:
    with pytest.raises(BudgetError) as info:
        fn(*args, **kw)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(source), msg
    assert re.search(RAISE, msg), msg
    return msg


@pytest.mark.parametrize(("rate", "duration", "source"), [
    (1e30, 600.0, "--rate x --duration"),  # run --rate/--load 1e30
    (1e300, 600.0, "--rate x --duration"),  # preset rate = 1e300
    (3.0, 1e30, "--rate x --duration"),  # --duration 1e30
    (3.0, 1e12 * 3600, "--rate x --duration"),  # duration = "1e12 h"
    (3.0, 1e9, "--rate x --duration"),  # drill duration = "1e9 s"
    (math.inf, 600.0, "--rate x --duration"),
    (math.nan, 600.0, "--rate x --duration"),
])
def test_runs_too_big_are_refused(rate, duration, source):
    msg = refused(budget.check_run, rate, duration, source=source)
    assert "over the cap of 5,000,000" in msg and "--max-requests" in msg


def test_an_ordinary_run_passes_and_the_estimate_is_rate_times_duration():
    assert budget.check_run(3.2, 600.0, periods={"scheduler.period": 10}) == pytest.approx(1920)
    assert budget.check_run(20.0, 86400.0) == pytest.approx(1_728_000)  # a busy day fits


@pytest.mark.parametrize(("source", "period"), [
    ("emulator.sample_interval", None),
    ("scheduler.period", 1e-9),
])
def test_periods_of_a_nanosecond_are_refused(source, period):
    if period is None:  # sample_interval = 1e-9
        refused(budget.check_run, 1.0, 600.0, sample_interval=1e-9, source="--duration / " + source)
    else:
        refused(budget.check_run, 1.0, 600.0, periods={source: period}, source=source)


@pytest.mark.parametrize(("kind", "params", "source"), [
    ("flap", {"down": 1e-9, "up": 1e-9}, "incidents[0] (flap).down"),
    ("diurnal", {"step": 1e-9}, "incidents[0] (diurnal).step"),
])
def test_incident_periods_of_a_nanosecond_are_refused(kind, params, source):
    msg = refused(budget.check_incidents, [(source, kind, math.inf, params)], 600.0, source=source)
    assert "--max-events" in msg


def test_ordinary_incidents_pass_and_add_up():
    total = budget.check_incidents([("a", "flap", 300.0, {"down": 10, "up": 20}),
                                    ("b", "brownout", math.inf, {}),
                                    ("c", "diurnal", math.nan, {"step": 30})], 600.0)
    assert total == pytest.approx(20 + 2 + 20)


def test_a_surge_of_a_million_is_refused_through_the_peak_rate():
    peak = budget.peak_rate(3.0, [1e6, 0.5])
    assert peak == 3e6
    refused(budget.check_run, peak, 600.0, source="--rate x --duration")
    assert budget.peak_rate(3.0, [1.5, 2.0]) == pytest.approx(9.0)


@pytest.mark.parametrize(("rate", "source"), [
    (1e-9 * 3.4, "--rate/--load (the replay spans"),  # run --trace X --load 1e-9
])
def test_a_replay_stretched_to_a_billion_hours_is_refused(rate, source):
    msg = refused(budget.check_trace, 12_000, 3537.0, rate, None, source=source)
    assert "--max-events" in msg


def test_a_replay_at_its_own_pace_or_cut_by_a_duration_passes():
    assert budget.check_trace(12_000, 3537.0, None, None) == 3537.0
    assert budget.check_trace(12_000, 3537.0, 1e-9, 600.0) == 600.0
    refused(budget.check_trace, 10**8, 3600.0, None, None, source="--trace")


def test_instances_are_capped_per_pool():
    budget.check_instances({"deployment.n_prfaas": 4, "deployment.local_gpus / parallelism": 8})
    msg = refused(budget.check_instances, {"deployment.n_prfaas": 100_000},
                  source="deployment.n_prfaas")
    assert "instances = 100,000, over the cap of 10,000" in msg
    refused(budget.check_instances, {"deployment.local_gpus": 2**62}, source="deployment.local_gpus")


def test_plan_ranges_are_counted_without_being_built():
    huge = range(0, 100_000_001)  # --nprfaas 0:100000000
    assert budget.int_range_size(0, 100_000_000) == 100_000_001
    n = budget.space_size(n_prfaas=huge, pools=(8,), homogeneous_pools=(12,), thresholds=1,
                          bandwidths=1, paradigms=("prfaas-pd", "naive-heterogeneous",
                                                   "homogeneous"))
    assert n == 100_000_000 * 7 + 100_000_000 + 11
    msg = refused(budget.check_plan, candidates=n, seeds=3, steps=7, requests_per_run=2000,
                  source="--nprfaas x --pool")
    assert "--max-candidates" in msg


@pytest.mark.parametrize("pools", [range(2, 40), (1, 2, 5, 9), range(0, 3), ()])
def test_space_size_matches_the_enumeration(toy, pools):
    from emulator.planner.space import AUTO_T, Space

    sp = Space.around(toy, n_prfaas=(0, 1, 3), pools=tuple(pools), homogeneous_pools=(4, 1),
                      thresholds=(AUTO_T, 8192.0), bandwidths=(1e9, 2e9))
    if not pools:
        sp = Space(sp.n_prfaas, (), sp.homogeneous_pools, sp.thresholds, sp.bandwidths)
    assert budget.space_size(n_prfaas=sp.n_prfaas, pools=pools,
                             homogeneous_pools=sp.homogeneous_pools,
                             thresholds=len(sp.thresholds), bandwidths=len(sp.bandwidths),
                             paradigms=sp.paradigms) == len(sp.candidates())


@given(st.integers(-5, 60), st.integers(-5, 60))
def test_range_counts_match_the_built_range(a, b):
    r = range(a, b + 1)
    assert budget._positives(r) == sum(1 for x in r if x > 0)
    assert budget._splits(r) == sum(max(x - 1, 0) for x in r)
    assert budget.int_range_size(a, b) == len(r)


def test_plan_seeds_and_pool_are_capped():
    refused(budget.check_plan, candidates=50, seeds=1_000_000, steps=7, requests_per_run=2000,
            source="--seeds x --steps")  # plan --seeds 1000000
    refused(budget.check_instances, {"--pool": 100_000}, source="--pool")  # plan --pool 100000
    assert budget.check_plan(candidates=2_000, seeds=3, steps=7, requests_per_run=200,
                             per_config=3, configs=100) == 300 * 3 * 8
    # the plan command's own caps: its runs' requests together (each run alone would pass)
    plan = budget.caps_for("plan")
    msg = refused(budget.check_plan, candidates=2_000, seeds=3, steps=7, requests_per_run=2000,
                  per_config=3, configs=10, caps=plan, source="--duration x --seeds")
    assert "over the cap of 300,000" in msg and "--max-requests" in msg
    assert budget.check_plan(candidates=3, seeds=3, steps=7, requests_per_run=2000,
                             per_config=3, configs=2, caps=plan) == 72  # the default plan


@pytest.mark.parametrize(("lengths", "repeats", "warmup"), [
    ([1024, 4096], 1e20, 1),  # profile --repeats 1e20
    ([1024], 3, 1e20),  # --warmup 1e20
    ([1_000_000_000], 3, 1),  # --lengths 1000000000
    ([1e30], 3, 1),  # --lengths 1e30
])
def test_profiles_too_big_are_refused(lengths, repeats, warmup):
    refused(budget.check_profile, lengths, repeats, warmup, source="--lengths x (--warmup")


def test_an_ordinary_profile_passes():
    assert budget.check_profile([1024, 4096, 16384], 5, 2) == 7 * (1024 + 4096 + 16384)


def test_caps_are_raised_by_their_flags_and_checked():
    big = CAPS.raised(requests=1e12, candidates=None)
    assert big.requests == 1e12 and big.candidates == CAPS.candidates
    assert budget.check_run(1e3, 1e6, caps=big) == 1e9
    with pytest.raises(BudgetError, match=r"^--max-requests: expected a finite number > 0"):
        CAPS.raised(requests=math.inf)
    with pytest.raises(BudgetError, match=r"^--max-candidates: expected"):
        CAPS.raised(candidates=0)
    assert Caps().events == CAPS.events


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True,
                                                                 allow_infinity=True))
def test_no_input_escapes_as_anything_but_a_budget_error(rate, duration):
    try:
        n = budget.check_run(rate, duration)
    except BudgetError as exc:
        assert "\n" not in str(exc)
    else:
        assert 0 <= n <= CAPS.requests
