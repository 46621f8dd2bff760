"""The model reproduces the seed's toy numbers and the paper's Tables 5 and 6 (tolerances from
the issue). The paper's own linearization ('paper' mode) is what its tables use."""

import numpy as np
import pytest

from emulator.model import Knobs, evaluate
from emulator.optimizer import homogeneous, naive, paradigms, search
from emulator.units import GBPS, to_gbps

# --- the seed's toy deployment ---------------------------------------------------------


def test_toy_phi_kv(toy):
    prof = toy.system.prfaas
    assert to_gbps(prof.phi_kv(32 * 1024)) == pytest.approx(3.2)
    assert to_gbps(prof.phi_kv(1024)) == pytest.approx(1.6)


def test_toy_operating_point(toy):
    op = evaluate(toy.system, toy.knobs)
    assert (op.knobs.t, op.knobs.n_p, op.knobs.n_d) == (8192, 1, 2)
    assert op.ceilings == pytest.approx({"prfaas": 2.0, "pd-p": 4.0, "pd-d": 8.0})
    assert op.lambda_max == pytest.approx(2.0)
    assert op.binding == "prfaas"
    assert op.theta_prfaas_compute == pytest.approx(1.0)
    assert op.theta_prfaas_bandwidth == pytest.approx(1.25)
    assert op.prfaas_term == "compute"
    assert op.link_utilization() == pytest.approx(0.8)  # "20% headroom"


def test_toy_allocations(toy):
    lams = [evaluate(toy.system, Knobs(8192, n, 3 - n, 2, toy.system.bandwidth)).lambda_max
            for n in range(4)]
    assert lams == pytest.approx([0, 2.0, 2.0, 0])
    found = search(toy.system)
    assert found.lambda_vs_np == pytest.approx([0, 2.0, 2.0, 0])
    assert found.best.lambda_max == pytest.approx(2.0)


def test_toy_paradigms(toy):
    nv = naive(toy.system)
    assert nv.lambda_max == pytest.approx(1.6)
    assert nv.l_long == pytest.approx(16.5 * 1024)
    assert nv.t_long == pytest.approx(1.25)
    assert nv.s_long == pytest.approx(450e6)
    homo = homogeneous(toy.system)
    assert homo.lambda_max == pytest.approx(2.1333, abs=1e-3)
    assert (homo.knobs.n_p, homo.knobs.n_d) == (4, 1)
    assert homo.t_short == pytest.approx(1.875)


# --- the paper's case study ------------------------------------------------------------

TABLE5 = {1024: 3.61, 8192: 3.59, 32768: 3.19, 131072: 2.62}


@pytest.mark.parametrize("length,gbps", TABLE5.items())
def test_table5_phi_kv(paper, length, gbps):
    assert to_gbps(paper.system.prfaas.phi_kv(length)) == pytest.approx(gbps, abs=0.05)


def test_length_distribution(paper):
    d = paper.system.lengths
    # The paper's "19.4K" is 19,400 tokens: p = 0.496 there (19.4 x 1024 would give 0.486).
    assert d.p_above(19400) == pytest.approx(0.496, abs=0.005)
    assert 44_000 <= d.mean_above(19400) <= 46_000
    assert d.mean == pytest.approx(27_500, rel=0.01)
    assert d.quantile(0.5) == pytest.approx(19_200, rel=0.01)
    assert d.quantile(0.9) == pytest.approx(62_000, rel=0.02)


def test_paper_optimum(paper):
    found = search(paper.system, "paper")
    best = found.best
    assert 17_000 <= best.knobs.t <= 22_000
    assert (best.knobs.n_prfaas, best.knobs.n_p, best.knobs.n_d) == (4, 3, 5)
    assert best.lambda_max == pytest.approx(3.24, rel=0.03)
    assert best.binding in ("prfaas", "pd-p")  # Eq. 7 balances them to within the grid step
    assert abs(best.eq7_residual) < 0.01
    assert best.prfaas_term == "compute"
    assert 11 <= to_gbps(best.egress()) <= 14
    assert best.theta_pdd == pytest.approx(3.91, abs=0.01)
    assert best.p == pytest.approx(0.496, abs=0.01)


def test_paper_paradigms(paper):
    out = paradigms(paper.system, "paper")
    assert out["homogeneous"]["lambda_max"] == pytest.approx(2.11, rel=0.03)
    assert (out["homogeneous"]["n_p"], out["homogeneous"]["n_d"]) == (9, 3)
    assert out["naive-heterogeneous"]["lambda_max"] == pytest.approx(2.45, rel=0.03)
    assert out["prfaas-pd"]["vs_homogeneous"] == pytest.approx(1.54, rel=0.03)
    # equal cost at a 2:1 H200:H20 price: "about 15% more throughput"
    assert out["prfaas-pd"]["per_cost_vs_homogeneous"] == pytest.approx(1.15, abs=0.03)


def test_exact_mode_is_below_paper_mode_for_convex_profiles(paper):
    """Jensen: E[T(L)] >= T(E[L]) for convex T, so 'exact' ceilings are lower."""
    knobs = paper.knobs
    a, b = evaluate(paper.system, knobs, "paper"), evaluate(paper.system, knobs, "exact")
    assert b.t_long >= a.t_long
    assert b.lambda_max < a.lambda_max
    assert b.lambda_max == pytest.approx(a.lambda_max, rel=0.05)


def test_modes_agree_on_linear_profiles(toy):
    for t in (0, 8192, 32768):
        k = Knobs(t, 1, 2, 2, toy.system.bandwidth)
        assert evaluate(toy.system, k, "exact").lambda_max == pytest.approx(
            evaluate(toy.system, k, "paper").lambda_max)


def test_dense_contrast_link_binds(dense):
    op = evaluate(dense.system, dense.knobs)
    assert op.prfaas_term == "bandwidth"
    assert op.egress_demand > dense.system.bandwidth
    best = search(dense.system).best
    assert best.prfaas_term == "bandwidth"
    assert best.egress_demand > dense.system.bandwidth


def test_figure5_curves(paper):
    found = search(paper.system)
    assert len(found.lambda_vs_np) == paper.system.local_pool + 1
    assert int(np.argmax(found.lambda_vs_np)) == found.best.knobs.n_p
    # the two producer ceilings cross near the best t (Eq. 7)
    i = int(np.argmax(found.lambda_vs_t))
    assert found.t_values[i] == pytest.approx(found.best.knobs.t)
    diff = found.prfaas_ceiling_vs_t - found.pdp_ceiling_vs_t
    finite = np.isfinite(diff)
    assert diff[finite][0] < 0 < diff[finite][-1] or diff[finite][0] > 0 > diff[finite][-1]


def test_gpus_and_instances(paper):
    assert paper.system.parallelism == 8
    assert paper.system.n_prfaas == 4 and paper.system.local_pool == 8
    assert paper.system.homogeneous_pool == 12
    assert paper.system.bandwidth == pytest.approx(100 * GBPS)
