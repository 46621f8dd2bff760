"""Issue 11: a stage's counts are kept incrementally (emulator.sim.stages.stage.Stage._update), so
start-up is linear in instances and a role change, failure or restore costs the same in a pool
of 10N instances as in one of N. Measured in operations (Python lines executed in the
emulator's sim package, under sys.settrace), never in wall-clock time; and the incremental
counts are checked against a full recount all through a run with random live changes."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from emulator.scenario.presets import load
from emulator.sim.engine import Emulation

SIM = str(Path(__file__).resolve().parents[1] / "emulator" / "sim")


def operations(fn: Callable[[], object]) -> int:
    """Lines of emulator/sim code that fn() executes (comprehensions included)."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def trace(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(SIM) else None

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def scenario(n: int, delay: float = 30.0):
    """The paper preset with n PrfaaS and n local instances (n/2 prefill, n/2 decode), a tiny
    rate (the cost measured is the pools', not the requests') and a role-change delay."""
    sc = load("paper-case-study")
    sc = replace(sc, system=replace(sc.system, n_prfaas=n, local_pool=n), n_p=n // 2,
                 n_d=n // 2)
    return replace(sc, sim=replace(sc.sim, conversion_delay=delay))


N = 200


def startup(n: int) -> int:
    return operations(lambda: Emulation(scenario(n), duration=600, rate=1e-3).close())


def test_startup_is_linear_in_instances():
    small, large = startup(N), startup(10 * N)
    assert 8 < large / small < 12, (small, large)  # quadratic would be ~100


def conversions(n: int, k: int = 4) -> tuple[int, int, int]:
    """(operations of a live change moving k local instances from decode to prefill, of their
    conversions k x `delay` later, of one failure and restore)."""
    emu = Emulation(scenario(n), duration=600, rate=1e-3)
    emu.run_until(10.0)
    change = operations(lambda: emu.change(n_p=n // 2 + k, n_d=n // 2 - k))
    assert emu.pdp.n_accepting == n // 2  # still converting
    convert = operations(lambda: emu.run_until(45.0))
    assert (emu.pdp.n_accepting, emu.pdd.n_accepting) == (n // 2 + k, n // 2 - k)

    def fail_restore() -> None:
        emu.fail_instance("pd-d", n - 1)
        emu.restore_instance("pd-d", n - 1)

    failure = operations(fail_restore)
    emu.close()
    return change, convert, failure


def test_role_changes_failures_and_restores_do_not_grow_with_the_pool():
    small, large = conversions(N), conversions(10 * N)
    change, convert, failure = (b / a for a, b in zip(small, large, strict=True))
    # the change itself plans over the pool once (O(pool)); what each instance's conversion,
    # failure and restore costs is independent of the pool (a recount per conversion: ~10x)
    assert change < 12
    assert convert < 1.5, (small, large)
    assert failure < 1.5, (small, large)


def full_counts(stage) -> tuple:
    """The counts recomputed from every worker (what Stage kept before it was incremental)."""
    up = [w for w in stage.workers if w.machine.alive]
    accepting = [w for w in up if w.accepting]
    online = sum(stage._slots(w) for w in up if w.accepting or w.busy)
    draining = sum(1 for w in stage.workers if not w.accepting and w.busy)
    return len(accepting), online, draining, [w.idx for w in accepting]


def kept_counts(stage) -> tuple:
    accepting = getattr(stage, "_accepting", None)
    idx = [w.idx for w in accepting] if accepting is not None else full_counts(stage)[3]
    return stage.n_accepting, stage.n_online, stage.n_draining, idx


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_counts_match_a_full_recount(seed):
    """Random splits, failures and restores while the paper load runs: after every change and
    every simulated second, the kept counts equal a recount over all workers."""
    rng = random.Random(seed)
    sc = load("paper-case-study")
    sc = replace(sc, sim=replace(sc.sim, conversion_delay=rng.choice([0.0, 5.0, 30.0])))
    emu = Emulation(sc, duration=900, seed=seed)
    checks = [0]

    def check(e: Emulation) -> None:
        for stage in e.stages.values():
            assert kept_counts(stage) == full_counts(stage), (stage.name, e.now)
        checks[0] += 1

    def poke(e: Emulation) -> None:
        action = rng.choice(["split", "fail", "restore", "remote"])
        pool = len(e.local.machines)
        if action == "split":
            n_p = rng.randint(1, pool - 1)
            e.change(n_p=n_p, n_d=pool - n_p)
        elif action == "fail":
            stage = rng.choice(["prfaas", "pd-p", "pd-d"])
            live = e.live_instances(stage)
            if len(live) > 1:
                e.fail_instance(stage, rng.choice(live))
        elif action == "restore":
            for pool_ in (e.local, e.remote):
                for m in pool_.machines:
                    if not m.alive and rng.random() < 0.5:
                        pool_.restore(m.idx)
        else:
            e.change(n_prfaas=rng.randint(1, 6))
        check(e)

    emu.every(1.0, check)
    emu.every(17.0, poke)
    emu.run()
    assert emu.accounting.lost == 0
    assert checks[0] > 900
    emu.close()
