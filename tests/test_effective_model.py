"""Issue 12: the model at what is alive now. A brownout scales the bandwidth term, an instance
loss the compute term, and during the PrfaaS-loss drill the effective optimum beats the healthy
one at the state the drill leaves (the healthy one is what `o` used to apply)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from emulator.distributions import Discrete
from emulator.effective import (
    LiveState,
    StageCounts,
    effective_best_threshold,
    effective_optimum,
    effective_point,
    effective_view,
    nominal_point,
    point_summary,
    targets_for,
)
from emulator.model import MODES, evaluate
from emulator.optimizer import search
from emulator.units import GBPS
from tests.emu_probe import drill_state_at, drill_with_knobs_at, engine_point_and_state


@pytest.fixture(scope="module")
def healthy(paper) -> LiveState:
    return LiveState.healthy(paper.system, paper.knobs)


@pytest.mark.parametrize("mode", MODES)
def test_healthy_state_is_the_nominal_model(paper, healthy, mode):
    eff = effective_point(paper.system, healthy, mode)
    nom = nominal_point(paper.system, healthy, mode)
    assert eff.lambda_max == nom.lambda_max == evaluate(paper.system, paper.knobs, mode).lambda_max
    assert not effective_view(paper.system, healthy).differences


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [0.2, 0.5, 0.0])
def test_brownout_scales_the_bandwidth_ceiling(paper, healthy, mode, f):
    state = replace(healthy, link_capacity=f * healthy.bandwidth)
    eff = effective_point(paper.system, state, mode)
    nom = nominal_point(paper.system, state, mode)
    assert eff.theta_prfaas_bandwidth == pytest.approx(f * nom.theta_prfaas_bandwidth)
    assert eff.theta_prfaas_compute == pytest.approx(nom.theta_prfaas_compute)
    assert eff.lambda_max <= nom.lambda_max


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_losing_k_prfaas_instances_scales_the_compute_ceiling(paper, healthy, mode, k):
    n = healthy.n_prfaas
    state = replace(healthy, alive=replace(healthy.alive, prfaas=n - k),
                    failed=StageCounts(prfaas=k))
    eff = effective_point(paper.system, state, mode)
    nom = nominal_point(paper.system, state, mode)
    assert eff.theta_prfaas_compute == pytest.approx((n - k) / n * nom.theta_prfaas_compute)
    assert eff.theta_prfaas_bandwidth == pytest.approx(nom.theta_prfaas_bandwidth)
    assert eff.knobs.n_prfaas == n - k and nom.knobs.n_prfaas == n


def test_decode_loss_and_draining_count_zero(paper, healthy):
    state = replace(healthy, alive=StageCounts(4, 2, 4), failed=StageCounts(pd_d=1),
                    draining=StageCounts(pd_p=1))
    eff = effective_point(paper.system, state)
    nom = nominal_point(paper.system, state)
    assert eff.theta_pdd == pytest.approx(4 / 5 * nom.theta_pdd)
    assert eff.theta_pdp == pytest.approx(2 / 3 * nom.theta_pdp)
    texts = [d.text for d in effective_view(paper.system, state).differences]
    assert "PD-P 2 of 3 alive (1 draining, 1 reloading)" in texts
    assert "PD-D 4 of 5 alive (1 down)" in texts
    t, n_p, n_d = targets_for(effective_optimum(paper.system, state), state)
    assert n_p + n_d == 8 and n_d >= 1  # the failed decode instance keeps its stage


def test_a_length_shift_moves_p(toy):
    state = replace(LiveState.healthy(toy.system, toy.knobs),
                    lengths=Discrete.of([1024, 32768], [0.25, 0.75]))
    view = effective_view(toy.system, state)
    assert view.point.p == pytest.approx(0.75) and view.nominal["exact"].p == pytest.approx(0.5)
    assert any(d.what == "lengths" for d in view.differences)


def test_the_comparison_reads_like_the_operator_talks(paper, healthy):
    state = replace(healthy, alive=replace(healthy.alive, prfaas=2), failed=StageCounts(2),
                    link_capacity=6 * GBPS, bandwidth=30 * GBPS)
    texts = [d.text for d in effective_view(paper.system, state).differences]
    assert texts[0] == "PrfaaS 2 of 4 alive (2 down)"
    assert "link 6.0 of 30 Gbps" in texts
    assert texts[-1].startswith("Λmax ")


def test_prfaas_loss_drill_effective_optimum_beats_the_healthy_one(paper):
    """Mid-incident (2 of 4 alive, scheduler off): the optimum `o` must apply differs from the
    healthy optimum (t* 19.2K, 3/5) and sustains more at the state the drill leaves."""
    state, system = drill_state_at("prfaas-loss", 15 * 60)
    assert state.alive.prfaas == 2 and state.failed.prfaas == 2
    for mode in MODES:
        healthy_best = search(system, mode).best.knobs
        eff_best = effective_optimum(system, state, mode)
        applied_healthy = effective_point(system, replace(state, t=healthy_best.t,
                                                          n_p=healthy_best.n_p,
                                                          n_d=healthy_best.n_d,
                                                          alive=StageCounts(2, healthy_best.n_p,
                                                                            healthy_best.n_d)),
                                          mode)
        assert (eff_best.knobs.t, eff_best.knobs.n_p) != (healthy_best.t, healthy_best.n_p)
        assert eff_best.lambda_max > 1.3 * applied_healthy.lambda_max
        assert applied_healthy.binding == "prfaas"
        t_only = effective_best_threshold(system, state, mode)  # no conversion needed
        assert (t_only.knobs.n_p, t_only.knobs.n_d) == (state.n_p, state.n_d)
        assert t_only.knobs.t > state.t  # fewer, longer requests for the two survivors
        assert t_only.lambda_max > 1.15 * effective_point(system, state, mode).lambda_max


def test_brownout_drill_state_reads_the_link(paper):
    state, system = drill_state_at("link-brownout", 15 * 60)
    assert state.link_capacity == pytest.approx(0.2 * state.bandwidth)
    eff = effective_point(system, state)
    nom = nominal_point(system, state)
    assert eff.theta_prfaas_bandwidth == pytest.approx(0.2 * nom.theta_prfaas_bandwidth)
    s = point_summary(eff, state, effective=True)
    assert s["link_capacity_gbps"] == pytest.approx(6.0)
    assert s["alive"] == {"prfaas": 4, "pd-p": 3, "pd-d": 5}


@pytest.mark.slow
def test_pressing_o_mid_loss_with_the_effective_optimum_beats_the_healthy_one():
    """On the real emulator (seed 3, 30 s into the loss): the healthy optimum left P90 TTFT
    during the incident at about 90 s; the effective optimum brings it to about 11 s."""
    def healthy(state, system):
        k = search(system, "exact").best.knobs
        return k.t, k.n_p, k.n_d

    def effective(state, system):
        return targets_for(effective_optimum(system, state), state)

    h = drill_with_knobs_at("prfaas-loss", 630.0, healthy, seed=3)
    e = drill_with_knobs_at("prfaas-loss", 630.0, effective, seed=3)
    assert h["lost"] == e["lost"] == 0
    assert e["ttft_p90_during"] < 0.25 * h["ttft_p90_during"]
    assert e["peak_queue"]["prfaas"] < 0.25 * h["peak_queue"]["prfaas"]


@pytest.mark.parametrize("paradigm", ["prfaas-pd", "homogeneous", "naive-heterogeneous"])
def test_healthy_live_state_agrees_with_the_engines_model_point(paper, paradigm):
    engine, state = engine_point_and_state("paper-case-study", paradigm)
    assert state.paradigm == paradigm
    for fn in (effective_point, nominal_point):
        op = fn(paper.system, state, "exact")
        assert op.lambda_max == pytest.approx(engine.lambda_max) and op.binding == engine.binding


def test_an_outage_routes_nothing_remote_at_the_effective_optimum(paper, healthy):
    state = replace(healthy, link_capacity=0.0)
    assert effective_point(paper.system, state).lambda_max == 0.0
    best = effective_optimum(paper.system, state)
    assert best.p == 0.0 and best.lambda_max > 0
    gone = replace(healthy, alive=replace(healthy.alive, prfaas=0), failed=StageCounts(4))
    assert effective_optimum(paper.system, gone).p == 0.0
