"""The pictures' data (prfaas_tui.pictures), Textual-free: the heat map is the optimizer's grid
at the live state with its optimum, the topology names what binds, the CDFs mark t, p and the
SLO, the gauges carry the engine's utilizations."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from emulator.effective import (
    LiveState,
    StageCounts,
    effective_optimum,
    effective_point,
    effective_view,
)
from emulator.model import MODES
from emulator.optimizer import grid, search
from emulator.sim.books.histogram import LogHistogram
from emulator.sim.books.metrics import CDF_QUANTILES, Latencies
from prfaas_tui.pictures import (
    LABELS,
    Topology,
    axis_cells,
    bar,
    binding_of,
    gauges,
    heat_cells,
    heat_map,
    length_cdf,
    share_within,
    t_index,
    topology_segments,
    ttft_cdf,
)


def lost_prfaas(sc) -> LiveState:
    """Two of four PrfaaS instances down, as in the prfaas-loss drill."""
    s = LiveState.healthy(sc.system, sc.knobs)
    return replace(s, alive=StageCounts(s.n_prfaas - 2, s.n_p, s.n_d),
                   failed=StageCounts(2, 0, 0))


def brownout(sc, factor: float = 0.06) -> LiveState:
    s = LiveState.healthy(sc.system, sc.knobs)
    return replace(s, link_capacity=s.bandwidth * factor)


def test_grid_argmax_is_the_search_optimum(paper, toy):
    for sc in (paper, toy):
        for mode in MODES:
            g, best = grid(sc.system, mode), search(sc.system, mode).best.knobs
            it, ip = g.argmax
            assert (g.t_values[it], ip) == (best.t, best.n_p)
            assert g.lambda_max.shape == (len(g.t_values), sc.system.local_pool + 1)


@pytest.mark.parametrize("state_of", [lost_prfaas, brownout])
@pytest.mark.parametrize("mode", MODES)
def test_heat_map_optimum_is_the_effective_optimum(paper, state_of, mode):
    state = state_of(paper)
    hm = heat_map(paper.system, state, mode)
    want = effective_optimum(paper.system, state, mode)
    assert (hm.t_at(hm.best[0]), hm.best[1]) == (want.knobs.t, want.knobs.n_p)
    assert hm.best_value == pytest.approx(want.lambda_max)
    # the current point: the grid threshold in force at t, the alive N_p; its value the model's
    assert hm.now[1] == state.alive.pd_p
    assert hm.now_value == pytest.approx(effective_point(paper.system, replace(
        state, t=hm.t_at(hm.now[0])), mode).lambda_max)


def test_heat_map_current_point_follows_n_p(paper):
    state = LiveState.healthy(paper.system, paper.knobs)
    a = heat_map(paper.system, state, "exact")
    b = heat_map(paper.system, replace(state, n_p=state.n_p + 1, n_d=state.n_d - 1,
                                       alive=StageCounts(state.n_prfaas, state.n_p + 1,
                                                         state.n_d - 1)), "exact")
    assert b.now == (a.now[0], a.now[1] + 1)
    # a PD-P instance down: the point sits at what is alive, on the alive pool's grid
    down = replace(state, alive=StageCounts(state.n_prfaas, state.n_p - 1, state.n_d),
                   failed=StageCounts(0, 1, 0))
    c = heat_map(paper.system, down, "exact")
    assert c.now[1] == state.n_p - 1 and c.grid.pool == state.n_p + state.n_d - 1


def test_t_index_is_the_threshold_in_force():
    g = np.array([10.0, 20.0, 30.0])
    assert [t_index(g, t) for t in (5, 10, 19.9, 20, 29, 30, 99)] == [0, 0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("n,k", [(3, 10), (9, 9), (9, 40), (2049, 60), (2049, 7), (100, 99)])
def test_axis_cells_cover_every_item_once_in_order(n, k):
    cells = axis_cells(n, k)
    assert 0 < len(cells) <= k
    flat = [i for r in cells for i in r]
    assert sorted(set(flat)) == list(range(n))  # every item drawn
    assert flat == sorted(flat)  # in order
    if n > k:
        assert len(flat) == n and len(cells) == k and all(len(r) for r in cells)


def test_heat_cells_show_the_maximum_in_the_optimum_cell(paper):
    hm = heat_map(paper.system, lost_prfaas(paper), "exact")
    cells = heat_cells(hm, 50, 9)
    r, c = cells.best
    assert cells.values[r, c] == pytest.approx(hm.grid.lambda_max.max())
    assert cells.values.max() == pytest.approx(hm.grid.lambda_max.max())
    assert hm.best[0] in cells.t_cells[c] and hm.best[1] in cells.n_p_cells[r]
    assert hm.now[0] in cells.t_cells[cells.now[1]] and hm.now[1] in cells.n_p_cells[cells.now[0]]
    assert cells.n_p_cells[0].start > cells.n_p_cells[-1].start  # highest N_p on top


def test_topology_names_the_binding_stage_and_what_is_alive(paper):
    healthy = effective_view(paper.system, LiveState.healthy(paper.system, paper.knobs))
    lost = effective_view(paper.system, lost_prfaas(paper))
    out = effective_view(paper.system, brownout(paper))
    texts = {}
    for name, view in (("healthy", healthy), ("lost", lost), ("out", out)):
        segs = topology_segments(Topology.of(view), 78)
        texts[name] = "".join(t for t, _ in segs)
        assert len(texts[name]) <= 78
        binding = binding_of(view)  # its segments carry it, so the strip colours them
        assert f"{LABELS[binding]} binds" in [t for t, role in segs if role == binding]
    assert "prfaas 4/4" in texts["healthy"] and "link 100/100 Gbps" in texts["healthy"]
    assert "prfaas 2/4" in texts["lost"] and "PrfaaS binds" in texts["lost"]
    assert "link 6/100 Gbps" in texts["out"] and "link binds" in texts["out"]
    assert binding_of(out) == "link" and out.point.prfaas_term == "bandwidth"
    assert Topology.of(lost).down("prfaas") and not Topology.of(lost).down("link")


def test_topology_keeps_the_chain_when_narrow(paper):
    top = Topology.of(effective_view(paper.system, lost_prfaas(paper)))
    wide = "".join(t for t, _ in topology_segments(top, 200))
    narrow = "".join(t for t, _ in topology_segments(top, 50))
    assert "Λmax" in wide and "binds" in wide
    assert "req/s (exact)" in wide  # the mode beside the number
    assert narrow.startswith("prfaas 2/4") and "PD-D" in narrow
    # named as the 1x1 topology's elements: the kinds' words while what binds still fits
    assert wide.startswith("site prfaas 2/4") and "region pd PD-P" in wide


def test_length_cdf_marks_t_and_the_model_p(paper, toy):
    state = LiveState.healthy(paper.system, paper.knobs)
    d = length_cdf(paper.system.lengths, state.t)
    assert d.t == state.t
    assert d.p == pytest.approx(effective_point(paper.system, state, "exact").p)
    assert np.all(np.diff(d.cdf) >= -1e-12) and d.cdf[-1] == pytest.approx(1.0)
    # the toy (1K or 32K, half each): flat between its support points, jumping at them
    d = length_cdf(toy.system.lengths, 16384)
    assert d.p == pytest.approx(0.5)
    assert not ((d.x > 1024) & (d.x < 32768)).any()  # nothing invented between them
    assert list(d.cdf[d.x == 1024]) == [0.0, 0.5]  # level, then the jump at the support point
    assert list(d.cdf[d.x == 32768]) == [0.5, 1.0]


def test_share_within_reads_the_cdf():
    s, q = np.array([1.0, 2.0, 4.0]), np.array([0.1, 0.5, 0.99])
    assert share_within(s, q, 3.0) == pytest.approx(0.745)
    assert share_within(s, q, 0.5) == 0.0
    assert share_within(s, q, 9.0) == 0.99  # at least: the tail beyond the last point is unknown
    assert share_within(np.array([]), np.array([]), 1.0) is None


def test_ttft_cdf_from_a_snapshot():
    snap = SimpleNamespace(ttft_cdf=((0.5, 2.0), (0.01, 0.5), (0.9, 8.0), (0.99, 12.0)))
    d = ttft_cdf(snap, 10.0, (2.1, 7.5))
    assert list(d.q) == [0.01, 0.5, 0.9, 0.99] and list(d.seconds) == [0.5, 2.0, 8.0, 12.0]
    assert d.p90 == pytest.approx(8.0)
    assert d.met == pytest.approx(0.9 + 0.09 * 2 / 4)
    assert (d.model_p50, d.model_p90) == (2.1, 7.5)


def test_latencies_ttft_cdf_is_the_histogram_quantiles():
    lat = Latencies(window_seconds=60.0, slo_ttft=5.0, slo_tpot=None)
    rng = np.random.default_rng(1)
    values = rng.lognormal(1.0, 0.6, 2000)
    for v in values:
        lat.ttft.add(float(v))
    cdf = lat.ttft_cdf(10.0)
    assert [q for q, _ in cdf] == list(CDF_QUANTILES)
    ref = LogHistogram()
    for v in values:
        ref.add(float(v))
    for q, s in cdf:
        assert s == pytest.approx(ref.quantile(q))
        assert s == pytest.approx(np.quantile(values, q), rel=0.03)
    assert Latencies(60.0, None, None).ttft_cdf(1.0) == ()


def fake_snapshot(util: dict, link_util: float, capacity: float):
    stages = {k: SimpleNamespace(utilization=u, queue=i) for i, (k, u) in enumerate(util.items())}
    return SimpleNamespace(stages=stages,
                           link=SimpleNamespace(utilization=link_util, capacity=capacity))


def test_gauges_carry_the_engine_utilizations(paper):
    view = effective_view(paper.system, brownout(paper))
    snap = fake_snapshot({"prfaas": 0.41, "pd-p": 0.73, "pd-d": 0.2}, 0.97, 0.75e9)
    g = gauges(snap, Topology.of(view))
    assert [x.key for x in g] == ["prfaas", "link", "pd-p", "pd-d"]
    assert [x.utilization for x in g] == [0.41, 0.97, 0.73, 0.2]
    assert [x.binding for x in g] == [False, True, False, False]
    assert "5.8 of 6 Gbps" in g[1].note


def test_bar():
    assert bar(0.5, 4) == "██··"
    assert bar(1.7, 3) == "███"
    assert bar(0.0, 3) == "···"
    assert bar(float("nan"), 2) == "··"
    assert len(bar(0.33, 10)) == 10 and bar(0.33, 10).startswith("███▎")
