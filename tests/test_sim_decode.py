"""Decode: continuous batching on a step grid, slots and KV budget, the step-profile mode, and
decode-bound runs at the model's Theta_pdd."""

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from emulator.scenario.presets import from_dict, load, presets_dir
from emulator.scenario.sim import StepProfile
from emulator.sim.core.loop import VirtualTimeLoop
from emulator.sim.core.request import Request
from emulator.sim.stages.decode import DecodeStage
from emulator.sim.stages.pool import Pool


def stage(n=1, bs=2, td=0.025, budget=None, step=None):
    loop = VirtualTimeLoop()
    done = []
    st = DecodeStage(loop, td, bs, budget, lambda r, now: done.append((r.rid, now, r.t_first)),
                     mean_out=10, step=step)
    pool = Pool(loop, "local", {"pd-d": st})
    pool.resize(n)
    pool.set_counts({"pd-d": n}, immediate=True)
    return loop, st, done


def submit(loop, st, when, rid, out=10, kv=1.0, length=1000):
    def go():
        r = Request(rid, 0.0, length, out)
        r.kv = kv
        st.submit(r)
    loop.call_at(when, go)


def test_one_request_finishes_l_out_steps_after_it_joins():
    loop, st, done = stage()
    submit(loop, st, 1.0, 1, out=10)
    loop.run_until(10)
    assert done == [(1, pytest.approx(1.25), pytest.approx(1.025))]


def test_a_request_joins_at_the_next_step_boundary():
    loop, st, done = stage(bs=4)
    submit(loop, st, 1.0, 1, out=10)
    submit(loop, st, 1.01, 2, out=10)  # mid-step: joins at 1.025
    loop.run_until(10)
    assert dict((r, (t, f)) for r, t, f in done)[2] == (pytest.approx(1.275),
                                                       pytest.approx(1.05))


def test_batch_slots_limit_admission():
    loop, st, done = stage(bs=2)
    for rid in (1, 2, 3):
        submit(loop, st, 1.0, rid, out=10)
    loop.run_until(1.1)
    assert st.in_service == 2 and len(st.queue) == 1
    loop.run_until(10)
    assert [t for _, t, _ in done] == [pytest.approx(1.25)] * 2 + [pytest.approx(1.5)]


def test_kv_budget_limits_admission():
    loop, st, done = stage(bs=10, budget=1.5)
    for rid in (1, 2):
        submit(loop, st, 1.0, rid, out=10, kv=1.0)
    loop.run_until(10)
    assert [t for _, t, _ in done] == [pytest.approx(1.25), pytest.approx(1.5)]
    assert not st.fits(2.0)


def test_least_loaded_instance_takes_the_request():
    loop, st, done = stage(n=2, bs=4)
    for rid in (1, 2, 3):
        submit(loop, st, 1.0, rid)
    loop.run_until(1.0)
    assert sorted(w.n for w in st.workers) == [1, 2]


def test_step_profile_without_growth_matches_the_constant_grid():
    results = []
    for step in (None, StepProfile(a=0.025)):
        loop, st, done = stage(bs=3, step=step)
        for rid, when in enumerate((1.0, 1.01, 1.3, 1.31, 2.0)):
            submit(loop, st, when, rid, out=10 + rid)
        loop.run_until(20)
        results.append(sorted(done))
    assert results[0] == [(r, pytest.approx(t), pytest.approx(f)) for r, t, f in results[1]]


def test_step_profile_time_grows_with_batch_and_context():
    a, b, c = 0.02, 0.001, 1e-6
    loop, st, done = stage(bs=4, step=StepProfile(a, b, c))
    submit(loop, st, 0.0, 1, out=5, length=1000)
    loop.run_until(10)
    # one request: step j takes a + b + c (1000 + j)
    expect = sum(a + b + c * (1000 + j) for j in range(5))
    assert done[0][1] == pytest.approx(expect, rel=1e-12)
    assert done[0][2] == pytest.approx(a + b + c * 1000, rel=1e-12)


def test_step_profile_two_requests_share_steps():
    a, b, c = 0.02, 0.001, 1e-6
    loop, st, done = stage(bs=4, step=StepProfile(a, b, c))
    submit(loop, st, 0.0, 1, out=3, length=1000)
    submit(loop, st, 0.0, 2, out=5, length=2000)
    loop.run_until(10)
    ctx = 3000.0
    t = 0.0
    finish = {}
    for j in range(5):
        batch = 2 if j < 3 else 1
        t += a + b * batch + c * ctx
        ctx += batch
        if j == 2:
            finish[1] = t
            ctx -= 1000 + 3
    finish[2] = t
    assert {r: t for r, t, _ in done} == {1: pytest.approx(finish[1], rel=1e-12),
                                          2: pytest.approx(finish[2], rel=1e-12)}


def _one_step_at_a_time(arrivals, a, b, c):
    """One instance stepping through a + b * batch + c * context one step at a time: each
    request joins at the first boundary at or after its arrival, a millionth of a step early
    counting as on it, as the stage has it (an idle instance starts at once). Returns
    ({rid: finish time}, step count, mean batch, mean step, mean context)."""
    todo = sorted(arrivals)
    batch: list[list] = []  # [rid, length, decoded, out]
    finish, t, i, dur = {}, -1.0, 0, 0.0
    steps = batch_sum = context_sum = seconds = 0.0
    while i < len(todo) or batch:
        if not batch:  # idle: start with the next arrival, its step the measure of "on it"
            t = max(t, todo[i][0])
            dur = a + b + c * todo[i][2]
        while i < len(todo) and todo[i][0] <= t + 1e-6 * dur:
            when, rid, length, out = todo[i]
            batch.append([rid, length, 0, out])
            i += 1
        context = sum(r[1] + r[2] for r in batch)
        dur = a + b * len(batch) + c * context
        steps += 1
        batch_sum += len(batch)
        context_sum += context
        seconds += dur
        t += dur
        for r in batch:
            r[2] += 1
            if r[2] == r[3]:
                finish[r[0]] = t
        batch = [r for r in batch if r[2] < r[3]]
    return finish, steps, batch_sum / steps, seconds / steps, context_sum / batch_sum


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.tuples(hs.floats(0.0, 3.0), hs.integers(1, 40) | hs.integers(1, 5000),
                          hs.integers(1, 60)),
                min_size=1, max_size=25),
       hs.sampled_from([(0.02, 0.001, 1e-6), (0.01, 0.0, 2e-6), (0.005, 0.002, 0.0),
                        (0.0005, 0.0, 5e-4)]))  # the last: steps outgrow the first one
def test_the_stroke_and_its_step_statistics_match_stepping_one_step_at_a_time(reqs, abc):
    """Joins, completions and idle spells in any order: every finish time, and the step count,
    mean batch, step and context the run reports, are those of stepping one step at a time."""
    a, b, c = abc
    loop, st, done = stage(bs=64, step=StepProfile(a, b, c))
    arrivals = [(when, rid, length, out) for rid, (when, length, out) in enumerate(reqs)]
    for when, rid, length, out in arrivals:
        submit(loop, st, when, rid, out=out, length=length)
    loop.run_until(1e4)
    finish, steps, mean_batch, mean_step, mean_context = _one_step_at_a_time(arrivals, a, b, c)
    assert {r: t for r, t, _ in done} == {r: pytest.approx(t, rel=1e-9) for r, t in finish.items()}
    got = st.step_stats()
    assert got["steps"] == steps
    assert got["mean_batch"] == pytest.approx(mean_batch, rel=1e-12)
    assert got["mean_step"] == pytest.approx(mean_step, rel=1e-9)
    assert got["mean_context"] == pytest.approx(mean_context, rel=1e-12)


@pytest.mark.parametrize("when", [0.05, 0.5, 3.0])
def test_a_join_deep_into_a_segment_whose_steps_outgrow_the_first(when):
    """One request stepping alone for a long while, each step longer than the last by half the
    first: the second joins at the boundary stepping one step at a time finds."""
    a, b, c = 0.0005, 0.0, 5e-4
    loop, st, done = stage(bs=4, step=StepProfile(a, b, c))
    arrivals = [(0.0, 0, 1, 400), (when, 1, 1, 5)]
    for t, rid, length, out in arrivals:
        submit(loop, st, t, rid, out=out, length=length)
    loop.run_until(1e4)
    finish, steps, *_ = _one_step_at_a_time(arrivals, a, b, c)
    assert {r: t for r, t, _ in done} == {r: pytest.approx(t, rel=1e-9) for r, t in finish.items()}
    assert st.step_stats()["steps"] == steps


DECODE_BOUND = """
name = "decode-bound"
[profiles.p]
prefill_time = { lengths = ["1K", "32K"], seconds = [0.1, 0.4] }
kv_size = { lengths = ["1K", "32K"], bytes = ["100 MB", "800 MB"] }
[deployment]
n_prfaas = 4
local_pool = 4
n_p = 2
n_d = 2
threshold = "8K"
bandwidth = "10 GB/s"
[decode]
t_decode = "25 ms"
bs_max = 4
l_out = 100
[workload]
lengths = { kind = "discrete", values = ["1K", "32K"], probs = [0.5, 0.5] }
output_lengths = { kind = "discrete", values = [50, 150], probs = [0.5, 0.5] }
"""


def test_decode_bound_run_serves_at_theta_pdd():
    from emulator.sim.engine import Emulation

    sc = from_dict(tomllib.loads(DECODE_BOUND))
    with Emulation(sc, load=1.3, duration=6000, seed=1) as emu:
        op = emu.model_point("exact")
        j = emu.run().json
    assert op.binding == "pd-d" and op.theta_pdd == pytest.approx(2 * 4 / (0.025 * 100))
    assert j["stages"]["pd-d"]["served_rate"] == pytest.approx(op.theta_pdd, rel=0.03)
    assert j["bottleneck"] == "pd-d"


def test_output_length_mean_must_match_l_out(tmp_path):
    from emulator.scenario.reader import PresetError

    bad = DECODE_BOUND.replace("values = [50, 150]", "values = [50, 100]")
    with pytest.raises(PresetError, match="output_lengths: mean 75.0 differs from decode.l_out"):
        from_dict(tomllib.loads(bad), tmp_path / "x.toml")


def test_decode_keys_parse_strictly():
    from emulator.scenario.reader import PresetError

    text = (presets_dir() / "toy.toml").read_text()
    sc = from_dict(tomllib.loads(text.replace("l_out = 100", 'l_out = 100\nkv_budget = "10 GB"\n'
                                              'step = { a = "20 ms", b = "1 ms" }')))
    assert sc.sim.kv_budget == 1e10 and sc.sim.step == StepProfile(0.02, 0.001, 0.0)
    with pytest.raises(PresetError, match="decode.step.d: unknown key"):
        from_dict(tomllib.loads(text.replace("l_out = 100", 'l_out = 100\nstep = { a = 1, d = 2 }')))
    assert load("toy").sim.step is None



def _least_loaded(dec):
    """The pick rule before the load heap: min() over the accepting instances in index order."""
    if not dec._accepting:
        return None
    best = min(dec._accepting, key=lambda w: w.n)
    return best if best.n < dec.bs_max else None


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(hs.sampled_from(["submit", "step", "fail", "restore", "split"]),
                          hs.integers(0, 7), hs.integers(1, 40)), max_size=120))
def test_load_heap_picks_what_min_picked(ops):
    """The heap `_pick` reads (stale entries dropped lazily, compaction) picks the instance the
    old min() rule picked after any mix of admissions, completions, failures, restores and
    resizes."""
    loop = VirtualTimeLoop()
    dec = DecodeStage(loop, 0.025, 3, None, lambda r, now: None, mean_out=10)
    pool = Pool(loop, "local", {"pd-d": dec})
    pool.resize(8)
    pool.set_counts({"pd-d": 8}, immediate=True)
    rid = 0
    for op, k, out in ops:
        if op == "submit":
            rid += 1
            r = Request(rid, loop.now, 1000, out)
            r.kv = 1.0
            dec.submit(r)
        elif op == "step":
            loop.run_until(loop.now + 0.025 * out)
        elif op == "fail":
            pool.fail(k)
        elif op == "restore":
            pool.restore(k)
        else:
            pool.set_counts({"pd-d": k + 1}, immediate=k % 2 == 0)
        assert dec._pick(0.0) is _least_loaded(dec), (op, k, loop.now)
        assert len(dec._loads) <= 4 * len(dec._accepting) + 65
