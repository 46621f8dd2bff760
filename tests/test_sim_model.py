"""The emulator agrees with the closed-form model (exact mode): below Lambda_max everything keeps
up, above it the binding stage saturates at its Theta, the bisected capacity equals Lambda_max,
the stage that saturates first is the model's binding one, and a small enough B_out makes the
link that stage (the min() of Eq. 3 emerges from pipelined transfers)."""

import pytest

from emulator.scenario.presets import load
from emulator.sim.engine import Emulation
from emulator.sim.runs.capacity import find_capacity, saturating_stage
from emulator.units import GBPS

CASES = {
    "toy": lambda: load("toy"),
    "paper": lambda: load("paper-case-study"),
    "toy-link": lambda: load("toy").with_knobs(bandwidth=500e6),
    "paper-link": lambda: load("paper-case-study").with_knobs(bandwidth=8 * GBPS),
}


def run(sc, load_factor, duration, **kw):
    with Emulation(sc, load=load_factor, duration=duration, seed=3, **kw) as emu:
        op = emu.model_point("exact")
        return emu.run().json, op


def thetas(op):
    return {"prfaas": op.theta_prfaas, "pd-p": op.theta_pdp, "pd-d": op.theta_pdd}


@pytest.mark.parametrize("case", ["toy", "paper"])
def test_below_lambda_max_every_stage_keeps_up(case):
    j, op = run(CASES[case](), 0.9, 6000)
    half = j["second_half"]
    assert half["served_rate"] == pytest.approx(half["offered_rate"], rel=0.03)
    assert j["offered_rate"] == pytest.approx(0.9 * op.lambda_max, rel=0.03)
    for name, st in j["stages"].items():
        assert st["served_rate"] == pytest.approx(st["offered_rate"], rel=0.03), name
        assert abs(st["queue_growth"]) < 0.01 * op.lambda_max, name
        assert st["queue"] < 100, name
    assert j["accounting"]["rejected"] == 0


@pytest.mark.parametrize("case", ["toy", "paper", "toy-link", "paper-link"])
def test_above_lambda_max_the_binding_stage_runs_at_its_theta(case):
    j, op = run(CASES[case](), 1.3, 8000)
    th = thetas(op)
    saturated = 0
    for name, st in j["stages"].items():
        offered = st["offered_rate"]
        if offered > 1.05 * th[name]:  # this stage is overloaded: it serves at its Theta...
            saturated += 1
            assert st["served_rate"] == pytest.approx(th[name], rel=0.03), name
            # ...and its queue grows at what it is offered minus its ceiling
            assert st["queue_growth"] == pytest.approx(offered - th[name], abs=0.03 * th[name])
        else:  # the others keep up with their shares
            assert st["served_rate"] == pytest.approx(offered, rel=0.03), name
            assert abs(st["queue_growth"]) < 0.01 * offered, name
    assert saturated >= 1
    assert j["stages"][op.binding]["queue_growth"] > 0
    # requests of the other side still finish: the total served rate exceeds Lambda_max
    served = j["second_half"]["served_rate"]
    expected = sum(min(j["stages"][s]["offered_rate"], th[s]) for s in ("prfaas", "pd-p"))
    assert served == pytest.approx(expected, rel=0.03)
    assert served > op.lambda_max
    expected = "link" if op.prfaas_term == "bandwidth" else op.binding
    assert j["bottleneck"] == expected


@pytest.mark.slow
@pytest.mark.parametrize("case", ["toy", "paper", "toy-link", "paper-link"])
def test_bisected_capacity_is_lambda_max_and_saturates_the_binding_stage(case):
    sc = CASES[case]()
    with Emulation(sc, duration=1) as emu:
        op = emu.model_point("exact")
    cap = find_capacity(sc, op.lambda_max, duration=6000, seed=1)
    assert cap.rate == pytest.approx(op.lambda_max, rel=0.03)
    first, _ = saturating_stage(sc, 1.3 * op.lambda_max, duration=4000)
    assert first == ("link" if op.prfaas_term == "bandwidth" else op.binding)


def test_shrinking_bandwidth_moves_the_binding_term_to_the_link():
    sc = load("paper-case-study")
    for gbps, term in ((100, "compute"), (8, "bandwidth")):
        with Emulation(sc.with_knobs(bandwidth=gbps * GBPS), duration=1) as emu:
            assert emu.model_point("exact").prfaas_term == term


@pytest.mark.parametrize("paradigm", ["homogeneous", "naive-heterogeneous"])
def test_baseline_paradigms_saturate_at_their_model_ceiling(paradigm):
    sc = load("paper-case-study")
    j, op = run(sc, 1.3, 6000, paradigm=paradigm)
    th = thetas(op)
    binding = op.binding
    assert j["stages"][binding]["served_rate"] == pytest.approx(th[binding], rel=0.03)
    assert j["bottleneck"] == binding
    idle = "prfaas" if paradigm == "homogeneous" else "pd-p"
    assert j["stages"][idle]["entered"] == 0
