"""Issue 12: Figure 5 drawn truthfully. 5b is a step function for discrete and empirical mixes
(flat between support points) and equals `solve` at any threshold; 5a's N_p* marker sits at the
maximum of the curve it is drawn on."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from emulator.distributions import Empirical
from emulator.effective import LiveState, StageCounts
from emulator.figure5 import effective_figure5, figure5a, figure5b
from emulator.model import MODES, evaluate
from emulator.optimizer import search


@pytest.mark.parametrize("mode", MODES)
def test_toy_5b_is_flat_between_support_points_and_equals_solve(toy, mode):
    f = figure5b(toy.system, toy.knobs, mode)
    assert f.flat.all()
    # `prfaas-tui solve --preset toy --t 16K` prints PrfaaS 2.000, PD-P 4.000
    assert f.at(16 * 1024) == (2.0, 4.0)
    for t in (1023.0, 1024.0, 4096.0, 16384.0, 30000.0, 32767.0, 32768.0):
        op = evaluate(toy.system, replace(toy.knobs, t=t), mode)
        assert f.at(t) == (op.ceilings["prfaas"], op.ceilings["pd-p"]), t
    # the drawable curve holds the corner: two points at 32K, the flat value then the jump
    i = np.flatnonzero(f.t == 32768.0)
    assert len(i) == 2 and f.prfaas[i[0]] == 2.0 and np.isinf(f.prfaas[i[1]])


def test_an_empirical_mix_steps_and_a_lognormal_does_not(toy, paper):
    emp = replace(toy.system, lengths=Empirical.of([500, 2000, 2000, 9000, 30000]))
    f = figure5b(emp, toy.knobs, "exact")
    assert f.flat.all() and len(f.t) == 2 * len(f.grid) - 1
    g = figure5b(paper.system, paper.knobs, "exact")
    assert not g.flat.any() and len(g.t) == len(g.grid)
    mid = 0.5 * (g.grid[100] + g.grid[101])  # linear between quantiles, close to the model
    op = evaluate(paper.system, replace(paper.knobs, t=mid), "exact")
    assert g.at(mid)[0] == pytest.approx(op.ceilings["prfaas"], rel=1e-3)


@pytest.mark.parametrize("mode", MODES)
def test_np_star_is_the_argmax_of_the_current_curve(paper, mode):
    best = search(paper.system, mode).best.knobs
    moved = 0
    for t in (2048.0, 8192.0, 19400.0, 65536.0):
        a = figure5a(paper.system, replace(paper.knobs, t=t), mode)
        assert a.best == a.lambda_max.max() and a.n_p_star == int(np.argmax(a.lambda_max))
        assert a.now == paper.knobs.n_p
        moved += a.n_p_star != best.n_p
    assert moved  # the global optimum's N_p is off the curve at some t: the old marker lied


def test_effective_figure5_counts_the_alive(paper):
    state = replace(LiveState.healthy(paper.system, paper.knobs), alive=StageCounts(2, 3, 5),
                    failed=StageCounts(2))
    a, b = effective_figure5(paper.system, state, "exact")
    healthy_a = figure5a(paper.system, paper.knobs, "exact")
    assert a.lambda_max[3] < healthy_a.lambda_max[3]
    i = int(np.searchsorted(b.grid, paper.knobs.t))
    nominal = figure5b(paper.system, paper.knobs, "exact")
    assert b.grid_prfaas[i] == pytest.approx(0.5 * nominal.grid_prfaas[i])
