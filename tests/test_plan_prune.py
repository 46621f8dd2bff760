"""Planner stage 1 (model pruning) and its results file: no emulation needed."""

import json

import pytest

from emulator.model import Knobs, evaluate
from emulator.planner.prune import MODE, candidate_system, prune
from emulator.planner.space import AUTO_T, Space
from emulator.planner.store import ResultsFile
from emulator.units import GBPS


@pytest.fixture(scope="module")
def big_space(paper):
    sp = Space.around(paper, n_prfaas=tuple(range(1, 9)), pools=tuple(range(6, 11)),
                      bandwidths=tuple(b * GBPS for b in (25, 50, 100, 200)),
                      thresholds=(AUTO_T,) + tuple(float(t) for t in range(4096, 131072, 4096)))
    return sp.candidates()


def test_model_stage_prunes_90_percent_of_10k(paper, big_space):
    assert len(big_space) >= 10_000
    scored = prune(paper.system, big_space)
    alive = [s for s in scored if s.pruned is None]
    assert len(alive) <= 0.10 * len(big_space)
    # the model's own optimum for the preset's hardware survives
    best = max(alive, key=lambda s: s.lambda_max)
    assert best.lambda_max >= max(s.lambda_max for s in scored) - 1e-12


def test_scores_match_the_model(paper, big_space):
    scored = prune(paper.system, big_space[::97])
    for s in scored:
        sysc = candidate_system(paper.system, s.cand)
        op = evaluate(sysc, Knobs(s.t, s.cand.n_p, s.cand.n_d, sysc.n_prfaas, sysc.bandwidth), MODE)
        assert s.lambda_max == pytest.approx(op.lambda_max, rel=1e-9, abs=1e-12)


def test_auto_threshold_is_the_best_for_the_split(paper):
    sp = Space.around(paper, thresholds=(AUTO_T,), paradigms=("prfaas-pd",))
    for s in prune(paper.system, sp.candidates(), per_config=99, margin=1.0):
        sysc = candidate_system(paper.system, s.cand)
        grid = paper.system.lengths.threshold_grid()[::64]
        for t in grid:
            op = evaluate(sysc, Knobs(float(t), s.cand.n_p, s.cand.n_d, sysc.n_prfaas, sysc.bandwidth), MODE)
            assert s.lambda_max >= op.lambda_max - 1e-9


def _rec(key: str, goodput: float) -> dict:
    """A plan record with every field the store checks."""
    return {"key": key, "label": key, "binding": "prfaas", "goodput": goodput,
            "goodput_lo": goodput, "goodput_hi": goodput, "lambda_max": 4.0, "utilization": goodput / 4.0,
            "cost_per_hour": 10.0, "goodput_per_cost": goodput / 10,
            "candidate": {"paradigm": "prfaas-pd", "n_prfaas": 1, "n_p": 1, "n_d": 2,
                          "t": 8192.0, "bandwidth": 1e10}}


def test_results_file_resumes_and_rejects_another_plan(tmp_path):
    path = tmp_path / "plan.jsonl"
    with ResultsFile(path, {"scenario": "x", "seeds": [1]}) as rf:
        rf.append(_rec("a", 1.0))
        rf.append(_rec("b", 2.0))
    with path.open("a") as fh:
        fh.write('{"key": "c", "goo')  # an interrupt mid-write
    again = ResultsFile(path, {"scenario": "x", "seeds": [1]})
    assert set(again.done) == {"a", "b"}
    again.append(_rec("c", 3.0))
    again.close()
    lines = path.read_text().splitlines()
    assert [json.loads(x).get("key") for x in lines[1:]] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="another plan"):
        ResultsFile(path, {"scenario": "y", "seeds": [1]})
