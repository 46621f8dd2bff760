"""The planner's keeps-up rule judges what a run can show in its duration: the requests that
arrived early enough to finish. On a Kimi-Linear-like preset (32 H200 PrfaaS + 64 H20 local over
100 Gbps, `new`, decode 20 x 25 ms: 4/0/8 at Lambda_max 6.25, prfaas-pd 2/1/7 at 5.47, where a
served >= 95% of offered rule gives 2.93 and 1.88 at 10 min), more hardware never ranks lower, a candidate's goodput lands near its
Lambda_max, a probe's verdict does not flip with the rate, and a plan where nothing passes says
why per candidate instead of a table of zeros."""

from __future__ import annotations

import pytest

from emulator.paradigm import Paradigm
from emulator.planner.goodput import SLO, Settings, candidate_scenario, probe, slo_goodput, why_not
from emulator.planner.prune import prune
from emulator.planner.space import AUTO_T, Space
from emulator.scenario import presets
from prfaas_tui.cli import main

SLO5 = SLO(5.0)
SHORT = Settings(SLO5, seeds=(1, 2), duration=300.0, steps=5)  # the default's half: CI's budget


@pytest.fixture(scope="module")
def kimi(tmp_path_factory):
    path = tmp_path_factory.mktemp("kimi") / "kimi.toml"
    assert main(["new", "--model", "kimi-linear-48b-a3b", "--prefill-gpu", "h200",
                 "--local-gpu", "h20", "--prfaas-gpus", "32", "--local-gpus", "64",
                 "--homogeneous-gpus", "64", "--bandwidth", "100 Gbps",
                 "--t-decode", "25 ms", "--bs-max", "20",
                 "--out", str(path)]) == 0
    return presets.load(str(path))


def scored(sc, paradigm: str, n_prfaas: int):
    """The model stage's best candidate of `paradigm` at `n_prfaas` and a pool of 8."""
    space = Space.around(sc, n_prfaas=(n_prfaas,), pools=(8,), thresholds=(AUTO_T,),
                         bandwidths=(100e9 / 8,), paradigms=(Paradigm(paradigm),))
    return next(s for s in prune(sc.system, space.candidates(), per_config=1) if not s.pruned)


def test_more_prfaas_never_ranks_lower_and_lands_near_lambda_max(kimi, capsys):
    capsys.readouterr()
    three, four = scored(kimi, "naive-heterogeneous", 3), scored(kimi, "naive-heterogeneous", 4)
    assert (three.cand.n_prfaas, three.cand.n_p, three.cand.n_d) == (3, 0, 8)
    g3 = slo_goodput(kimi, three, SHORT)
    g4 = slo_goodput(kimi, four, SHORT)
    assert g4["goodput"] >= g3["goodput"]
    for s, g in ((three, g3), (four, g4)):
        assert g["goodput"] >= 0.9 * s.lambda_max, (s.cand.label(s.t), g)


def test_prfaas_pd_lands_near_its_lambda_max(kimi):
    s = scored(kimi, "prfaas-pd", 2)
    assert slo_goodput(kimi, s, SHORT)["goodput"] >= 0.85 * s.lambda_max


def test_a_probe_passes_below_capacity_and_fails_above_at_every_rate(kimi):
    s = scored(kimi, "naive-heterogeneous", 4)
    sc = candidate_scenario(kimi, s)
    verdicts = {f: why_not(probe(sc, f * s.lambda_max, 1, SHORT.duration, SLO5), SLO5)
                for f in (0.3, 0.5, 0.7, 0.8, 0.9, 1.2, 1.5)}
    assert [f for f, why in verdicts.items() if why is None] == [0.3, 0.5, 0.7, 0.8, 0.9]
    assert "falls behind" in verdicts[1.5] or "TTFT" in verdicts[1.5]


def test_a_run_too_short_for_any_request_to_finish_fails_and_says_so(kimi):
    s = scored(kimi, "naive-heterogeneous", 4)
    p = probe(candidate_scenario(kimi, s), 0.5 * s.lambda_max, 1, 20.0, SLO5)
    assert p["due"] == 0 and "--duration too short" in why_not(p, SLO5)


def test_no_best_table_of_zeros_but_a_reason_per_candidate(kimi, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # each reason on one line (xdist sets 80)
    capsys.readouterr()
    assert main(["plan", "--preset", kimi.path, "--n-prfaas", "3,4", "--pool", "8",
                 "--bandwidth", "100", "--paradigm", "naive-heterogeneous", "--slo-ttft", "0.2s",
                 "--seeds", "1", "--steps", "2", "--duration", "200", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "best candidates" not in out and "no candidate met the SLO" in out
    reasons = [x for x in out.splitlines() if "goodput 0: at " in x]
    assert len(reasons) == 2 and all("P90 TTFT" in x for x in reasons)
