"""The planner's SLO bound (emulator/planner/bound.py): it skips emulations yet leaves the best
candidate and the cost/goodput Pareto front exactly as the plain sweep finds them."""

from emulator.planner.bound import MARGIN, model_rate, upper_bound
from emulator.planner.goodput import SLO, Settings
from emulator.planner.prune import prune
from emulator.planner.space import AUTO_T, Space
from emulator.planner.sweep import Plan, run_plan


def _plan(sc, analytic: bool) -> Plan:
    sp = Space.around(sc, n_prfaas=(2, 4, 6), thresholds=(AUTO_T,),
                      paradigms=("prfaas-pd", "homogeneous"))
    return Plan(sc, sp, Settings(SLO(10.0), seeds=(1,), duration=1200.0, steps=4),
                per_config=2, margin=1.0, analytic=analytic)


def _result(out: dict) -> tuple:
    return ((out["best"]["key"], out["best"]["goodput"]),
            [(r["key"], r["goodput"]) for r in out["pareto"]])


def test_bound_skips_emulations_but_not_the_answer(paper, tmp_path):
    plain = run_plan(_plan(paper, False), out=tmp_path / "a.jsonl")
    bounded = run_plan(_plan(paper, True), out=tmp_path / "b.jsonl")
    assert bounded["skipped_by_slo_bound"] > 0
    assert bounded["emulated"] < plain["emulated"]
    assert (bounded["emulated"] + bounded["skipped_by_slo_bound"] + bounded["stopped_early"]
            == plain["emulated"])
    assert _result(bounded) == _result(plain)
    # every skipped candidate really is beaten at its cost in the plain sweep
    done = {r["key"]: r for r in bounded["ranked"]}
    for r in plain["ranked"]:
        if r["key"] not in done:
            assert any(o["cost_per_hour"] <= r["cost_per_hour"] and o["goodput"] > r["goodput"]
                       for o in done.values())


def test_bound_is_below_the_bisection_ceiling_and_tracks_the_slo(paper):
    plan = _plan(paper, True)
    survivors = [s for s in prune(paper.system, plan.space.candidates(), per_config=2, margin=1.0)
                 if s.pruned is None]
    for s in survivors:
        rate = model_rate(paper, s, plan.settings)
        ub = upper_bound(s, rate, plan.settings)
        assert 0 <= ub <= s.lambda_max * (1 - 2 ** -plan.settings.steps)
        assert ub <= (1 + MARGIN) * rate + 1e-12
    loose = Settings(SLO(60.0), seeds=(1,), duration=300.0, steps=4)
    s = max(survivors, key=lambda s: s.lambda_max)
    assert model_rate(paper, s, loose) > model_rate(paper, s, plan.settings)


def test_a_bisection_stops_only_where_its_goodput_cannot_matter(paper):
    """`slo_goodput(beaten=...)` asks with an upper bound of the goodput it would return: a
    test true only below the real goodput never stops it (and the record is the plain one),
    a test true just above it stops it before the last probe."""
    from emulator.planner.goodput import slo_goodput

    settings = Settings(SLO(10.0), seeds=(1, 2), duration=600.0, steps=4)
    s = max((s for s in prune(paper.system, _plan(paper, True).space.candidates(),
                              per_config=2, margin=1.0) if s.pruned is None),
            key=lambda s: s.lambda_max)
    plain = slo_goodput(paper, s, settings)
    asked: list[float] = []

    def below(bound: float) -> bool:
        asked.append(bound)
        return bound < plain["goodput"]

    assert slo_goodput(paper, s, settings, below) == plain
    assert asked and min(asked) >= plain["goodput"]
    assert slo_goodput(paper, s, settings, lambda b: b < min(asked) * (1 + 1e-12)) is None
