"""The operating point at its edges, on the toy (1K/32K half and half; 0.5 s / 2.0 s prefill,
100 MB / 800 MB of KV): everything long (p = 1) or short (p = 0), the binding stage, egress and
link utilization at a given rate, the JSON keys `solve --json` prints, and split_stats / ceilings
called the way the optimizer calls them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emulator.model import Knobs, ceilings, evaluate, split_stats

GB = 1e9
JSON_KEYS = {"t", "n_prfaas", "n_p", "n_d", "bandwidth_gbps", "mode", "p", "l_long", "l_short",
             "lambda_max", "binding", "prfaas_term", "ceilings", "theta", "egress_gbps",
             "egress_demand_gbps", "link_utilization", "eq7_residual", "eq8_residual"}


def point(toy, t=8192.0, n_p=1, n_d=2, n_prfaas=2, bandwidth=1 * GB, mode="exact"):
    return evaluate(toy.system, Knobs(t, n_p, n_d, n_prfaas, bandwidth), mode)


def test_everything_long_leaves_pd_p_idle_and_unbounded(toy):
    op = point(toy, t=0.0)
    assert op.p == 1.0 and math.isnan(op.t_short)
    assert op.theta_pdp == 0.0 and op.ceilings["pd-p"] == math.inf
    assert op.to_dict()["ceilings"]["pd-p"] is None and op.to_dict()["l_short"] is None


def test_everything_short_leaves_prfaas_idle_and_unbounded(toy):
    op = point(toy, t=1e9)
    assert op.p == 0.0 and math.isnan(op.t_long) and math.isnan(op.s_long)
    assert op.theta_prfaas_compute == 0.0 and op.theta_prfaas_bandwidth == 0.0
    assert op.ceilings["prfaas"] == math.inf and op.binding == "pd-p"
    assert op.egress() == 0.0 and op.egress(5.0) == 0.0 and op.egress_demand == 0.0
    d = op.to_dict()
    assert d["ceilings"]["prfaas"] is None and d["t"] == 1e9 and d["egress_gbps"] == 0.0


def test_the_binding_stage_is_the_smallest_ceiling(toy):
    assert point(toy).binding == "prfaas"
    op = point(toy, n_p=2, n_d=1, n_prfaas=8, bandwidth=10 * GB)
    assert op.ceilings == pytest.approx({"prfaas": 8.0, "pd-p": 8.0, "pd-d": 4.0})
    assert op.binding == "pd-d" and op.lambda_max == pytest.approx(4.0)


def test_egress_and_link_utilization_at_a_given_rate(toy):
    op = point(toy)  # p = 0.5, 800 MB per long request, Lambda_max = 2 (not the rate asked)
    assert op.egress(1.5) == pytest.approx(0.5 * 1.5 * 800e6)
    assert op.egress() == pytest.approx(0.5 * 2.0 * 800e6)
    assert op.link_utilization(1.5) == pytest.approx(0.6)
    assert point(toy, bandwidth=0.0).link_utilization(1.0) == math.inf


def test_the_point_keeps_its_mode_and_json_keys(toy):
    for mode in ("paper", "exact"):
        op = point(toy, mode=mode)
        d = op.to_dict()
        assert op.mode == d["mode"] == mode
        assert set(d) == JSON_KEYS
        assert set(d["theta"]) == {"prfaas", "prfaas_compute", "prfaas_bandwidth", "pd-p", "pd-d"}
        assert set(d["ceilings"]) == {"prfaas", "pd-p", "pd-d"}
        assert (d["t"], d["n_prfaas"], d["n_p"], d["n_d"]) == (8192.0, 2, 1, 2)
        assert d["bandwidth_gbps"] == pytest.approx(8.0)
        assert (d["p"], d["binding"], d["prfaas_term"]) == (0.5, "prfaas", "compute")
        assert d["l_long"] == pytest.approx(32768) and d["l_short"] == pytest.approx(1024)
        assert d["theta"]["pd-d"] == pytest.approx(8.0)
        assert d["link_utilization"] == pytest.approx(op.link_utilization())
        assert d["eq7_residual"] == pytest.approx(op.eq7_residual)
        assert d["eq8_residual"] == pytest.approx(op.eq8_residual)
        assert d["egress_demand_gbps"] == pytest.approx(2 * 800e6 * 8 / 2.0 / 1e9)


def test_split_stats_defaults_to_the_paper_mode_and_names_the_modes(toy):
    s = toy.system
    t = np.array([0.0, 8192.0, 1e9])
    default = split_stats(s.lengths, s.prfaas, s.local, t)
    paper = split_stats(s.lengths, s.prfaas, s.local, t, "paper")
    np.testing.assert_array_equal(default.t_long, paper.t_long)
    np.testing.assert_array_equal(default.t, t)
    with pytest.raises(ValueError, match=r"^mode must be one of paper, exact, got 'fast'$"):
        split_stats(s.lengths, s.prfaas, s.local, t, "fast")


def test_ceilings_grid_or_elementwise_as_asked(toy):
    s = toy.system
    stats = split_stats(s.lengths, s.prfaas, s.local, np.array([0.0, 8192.0, 1e9]))
    n_p = np.array([0, 1, 2])
    grid = ceilings(stats, 2, n_p, 3 - n_p, 1 * GB, s.decode)[-1]
    flat = ceilings(stats, 2, n_p, 3 - n_p, 1 * GB, s.decode, outer=False)[-1]
    assert grid.shape == (3, 3) and flat.shape == (3,)
    np.testing.assert_allclose(flat, np.diagonal(grid))
