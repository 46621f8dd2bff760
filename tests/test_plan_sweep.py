"""Planner stage 2 (SLO goodput by emulation) end to end: what it recommends, and that the
result does not depend on where it ran or whether it was interrupted."""

import pytest

from emulator.planner.goodput import SLO, Settings
from emulator.planner.space import AUTO_T, Space
from emulator.planner.sweep import Plan, run_plan

FAST = dict(seeds=(1, 2), duration=300.0, steps=5)


def _plan(sc, slo_ttft, paradigms=("prfaas-pd",), **space):
    sp = Space.around(sc, thresholds=(AUTO_T,), paradigms=paradigms, **space)
    return Plan(sc, sp, Settings(SLO(slo_ttft), **FAST), per_config=99, margin=1.0)


@pytest.mark.slow
def test_toy_loose_slo_picks_the_model_optimum_tight_slo_wants_headroom(toy, tmp_path):
    loose = run_plan(_plan(toy, 600.0, n_prfaas=(1, 2, 3)), out=tmp_path / "a.jsonl")
    best_model = max(r["lambda_max"] for r in loose["ranked"])
    assert loose["best"]["lambda_max"] == pytest.approx(best_model)
    assert loose["best"]["utilization"] >= 0.85  # a loose SLO lets it run near Lambda_max
    tight = run_plan(_plan(toy, 4.0, n_prfaas=(1, 2, 3)), out=tmp_path / "b.jsonl")
    assert tight["best"]["utilization"] < loose["best"]["utilization"] - 0.1
    assert tight["best"]["goodput"] < loose["best"]["goodput"]


@pytest.mark.slow
def test_paper_prfaas_pd_beats_homogeneous_within_the_slo(paper, tmp_path):
    plan = _plan(paper, 10.0, paradigms=("prfaas-pd", "homogeneous"))
    out = run_plan(plan, out=tmp_path / "p.jsonl")
    best = {}
    for r in out["ranked"]:
        best.setdefault(r["candidate"]["paradigm"], r)
    assert best["prfaas-pd"]["goodput"] > 1.2 * best["homogeneous"]["goodput"]


def test_paper_ttft_lower_than_homogeneous_at_equal_load(paper):
    from emulator.sim.engine import Emulation

    p90 = {}
    for paradigm in ("prfaas-pd", "homogeneous"):
        res = Emulation(paper, seed=3, rate=1.6, duration=1800.0, paradigm=paradigm).run().to_json()
        assert res["accounting"]["lost"] == 0
        p90[paradigm] = res["ttft"]["p90"]
    # the paper: 3.51 s against 9.73 s
    assert p90["prfaas-pd"] < 0.6 * p90["homogeneous"]
    assert 2.0 < p90["prfaas-pd"] < 6.0 and 6.0 < p90["homogeneous"] < 20.0


def _summary_core(s):
    return [(r["key"], r["goodput"], r["per_seed"]) for r in s["ranked"]]


@pytest.mark.slow
def test_same_results_on_one_worker_many_workers_and_dask(toy, tmp_path):
    distributed = pytest.importorskip("distributed")
    plan = _plan(toy, 8.0, n_prfaas=(1, 2))
    one = run_plan(plan, out=tmp_path / "1.jsonl", workers=1)
    two = run_plan(plan, out=tmp_path / "2.jsonl", workers=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask = run_plan(plan, out=tmp_path / "d.jsonl", dask=client)
    assert _summary_core(one) == _summary_core(two) == _summary_core(dask)
    assert one["emulated"] + one["skipped_by_slo_bound"] == 4  # the model stage's survivors


@pytest.mark.slow
def test_interrupted_sweep_resumes_without_redoing(toy, tmp_path):
    plan = _plan(toy, 8.0, n_prfaas=(1, 2, 3))
    path = tmp_path / "r.jsonl"
    seen = []

    def stop_after_two(rec):
        seen.append(rec["key"])
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_plan(plan, out=path, on_result=stop_after_two)
    again = []
    resumed = run_plan(plan, out=path, on_result=lambda r: again.append(r["key"]))
    assert not set(seen) & set(again)
    assert resumed["evaluated_now"] == resumed["emulated"] - 2
    full = run_plan(plan, out=tmp_path / "full.jsonl")
    assert _summary_core(resumed) == _summary_core(full)


def test_a_plan_record_loads_back_as_a_scenario(toy, tmp_path):
    from emulator.planner.goodput import scenario_from_record
    from emulator.planner.store import read_results

    run_plan(_plan(toy, 600.0), out=tmp_path / "x.jsonl")
    header, recs = read_results(tmp_path / "x.jsonl")
    assert header["scenario"] == "toy" and recs
    for rec in recs:
        sc = scenario_from_record(toy, rec)
        c = rec["candidate"]
        assert (sc.n_p, sc.n_d, sc.system.n_prfaas) == (c["n_p"], c["n_d"], c["n_prfaas"])


@pytest.mark.parametrize("load", [0.5, 0.97])
def test_a_probe_without_samples_reads_the_same_figures(paper, load):
    """`goodput.quiet` drops the periodic samples (windows, time series) a probe never reads:
    the figures of the SLO test are those of the scenario's own sampling, to the bit, and the
    run really took no sample on the way."""
    from emulator.model import evaluate
    from emulator.planner.goodput import quiet
    from emulator.sim.engine import Emulation

    rate = load * evaluate(paper.system, paper.knobs, "exact").lambda_max
    runs = {}
    for name, sc in (("sampled", paper), ("quiet", quiet(paper, 300.0))):
        emu = Emulation(sc, seed=3, rate=rate, duration=300.0)
        res = emu.run().to_json()
        runs[name] = (res["served_rate"], res["offered_rate"], res["ttft"], res["tpot"],
                      res["events"], emu.observer._n_samples)
    *figures, samples = runs["quiet"]
    assert figures == list(runs["sampled"][:-1])
    assert samples <= 1 and runs["sampled"][-1] >= 299  # one at the very end at most
