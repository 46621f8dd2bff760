"""TTFT under batched prefill: a request's own steps (alone on an idle instance, or a step
shared with the others queued at the next boundary), how full steps run at the offered load, and
the model against the emulator in one run per case (docs/prefill-batching.md states the
accuracy measured over loads 0.3-0.9, both overhead modes, a dense and an MoE model)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from emulator.latency import predict
from emulator.latency.steps import Steps
from emulator.model import Knobs
from emulator.profiles import Curve, Profile, StepCost
from prfaas_tui.cli import main
from tests.test_prefill_batching import _batched, _load

FIXED = Curve.poly(0.02, 4e-6)  # a step of N tokens without attention: 20 ms + 4 us / token
MIXER = Curve.poly(0.0, 0.0, 1e-10)  # a prompt's own attention


def _profile(budget: float = 1000.0, per_step: float = 0.01, per_request: float = 0.3) -> Profile:
    share = Curve.poly(per_request, (FIXED(budget) + per_step) / budget, 1e-10)
    return Profile("steps", share, Curve.poly(0.0, 1000.0), token_budget=budget,
                   step=StepCost(FIXED, MIXER, per_step, per_request))


def test_a_prompt_rides_its_full_chunks_then_a_shared_last_step():
    sc = StepCost(FIXED, MIXER, 0.01, 0.3)
    # 2,500 tokens in 1,000-token steps: two full chunks, then 500 with 300 of others
    got = sc.ride(2500.0, 1000.0, others=300.0, per_other=1e-4)
    assert got == pytest.approx(2 * (FIXED(1000.0) + 0.01) + FIXED(800.0) + 0.01 + 300 * 1e-4
                                + 0.3 + MIXER(2500.0))
    # a prompt that ends on a chunk boundary shares no step; room caps the others
    assert sc.ride(2000.0, 1000.0, others=300.0, per_other=1e-4) == pytest.approx(
        2 * (FIXED(1000.0) + 0.01) + 0.3 + MIXER(2000.0))
    assert sc.ride(900.0, 1000.0, others=5000.0, per_other=0.0) == pytest.approx(
        FIXED(1000.0) + 0.01 + 0.3 + MIXER(900.0))


def test_alone_a_request_pays_its_own_part_full_step():
    prof = _profile()
    assert prof.latency_time(500.0) == pytest.approx(FIXED(500.0) + 0.01 + 0.3 + MIXER(500.0))
    assert prof.latency_time(500.0) > prof.t_prefill(500.0)  # more than its share of a full step
    x = np.linspace(1.0, 5000.0, 200)
    assert np.all(np.diff(prof.latency_time(x)) >= -1e-12)


def test_steps_fill_with_the_load():
    """At no load nobody waits for a boundary; once an instance keeps stepping, every arrival
    does: it waits D(N) / (c + 1) and shares its step with the tokens of that gap."""
    prof = _profile()
    lengths = np.array([[200.0, 400.0, 600.0, 800.0]])
    st = Steps.of(prof, lengths)
    assert st.mean_len[0] == 500.0 and st.first[0] == 500.0
    assert st.per_other[0] == pytest.approx((0.3 + MIXER(lengths).mean()) / 500.0)
    c = np.array([2.0])
    idle, _, _ = st.at_rate(np.array([0.0]), c)
    assert idle[0] == 0.0
    lam = np.array([20.0])  # 10,000 tokens/s on 2 instances
    u, ride, gap = st.at_rate(lam, c)
    n = 500.0
    for _ in range(100):
        n = min(1000.0, max(500.0, 10_000.0 * float(st.step_time(np.array([n]))[0]) / 2))
    d = float(st.step_time(np.array([n]))[0])
    assert u[0] >= 1.0  # it keeps stepping: every arrival waits for a boundary
    others = 10_000.0 * d / 3
    assert gap[0] == pytest.approx(d / 3)
    assert ride[0, 0] == pytest.approx(prof.step.ride(200.0, 1000.0, others, st.per_other[0]))
    light, _, _ = st.at_rate(np.array([0.5]), c)  # one prompt a step: its share of alone steps
    assert light[0] == pytest.approx(0.5 * 500.0 * float(st.step_time(np.array([500.0]))[0])
                                     / (500.0 * 2))


@pytest.mark.parametrize(("model", "overhead", "load", "mean_rel", "p90_rel"), [
    ("qwen3-30b-a3b", "per-step", 0.5, 0.10, 0.20),  # measured +1%, -14%
    ("qwen3-30b-a3b", "per-request", 0.5, 0.10, 0.20),  # +3%, -1%
    ("qwen3-32b", "per-request", 0.7, 0.10, 0.20),  # -3%, -17%
    ("qwen3-32b", "per-step", 0.9, 0.10, 0.20),  # -6%, -10%
])
def test_model_and_emulator_agree_on_a_batched_preset(tmp_path, capsys, model, overhead, load,
                                                      mean_rel, p90_rel):
    """20 simulated minutes: the model's mean TTFT and P90 at the run's offered rate and
    operating point against the emulator's, within what docs/prefill-batching.md states."""
    text = _batched("8K", overhead).replace("qwen3-30b-a3b.json", f"{model}.json")
    path = tmp_path / "b.toml"
    path.write_text(text)
    assert main(["run", "--preset", str(path), "--load", str(load), "--duration", "1200",
                 "--seed", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accounting"]["lost"] == 0
    k = out["model"]["exact"]
    sc = _load(text, tmp_path)
    knobs = Knobs(k["t"], k["n_p"], k["n_d"], k["n_prfaas"], sc.system.bandwidth)
    got = predict(sc.system, knobs, rate=out["target_rate"])
    assert got.mean == pytest.approx(out["ttft"]["mean"], rel=mean_rel)
    assert got.p90 == pytest.approx(out["ttft"]["p90"], rel=p90_rel)
