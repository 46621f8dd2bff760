"""Batched prefill in presets and the model: `[prefill] token_budget` / `overhead` and a
profile's own `token_budget`; Theta from tokens per second at full steps; the TTFT layer's step
latency; one line and exit 2 for what cannot be batched."""

import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from emulator.cards.gpu import load_gpu
from emulator.cards.kernel import resolve_setup
from emulator.cards.model_card import read_config
from emulator.cards.prefill_batch import fixed_step_seconds, mixer_seconds
from emulator.cards.roofline import prefill_seconds
from emulator.latency import predict
from emulator.model import Knobs, evaluate
from emulator.optimizer import homogeneous, search
from emulator.profiles import Curve, Profile
from emulator.scenario import presets
from emulator.scenario.presets import presets_dir
from prfaas_tui.cli import main

CONFIG = Path(__file__).parent / "configs" / "qwen3-30b-a3b.json"  # context 40,960
BASE = f"""
name = "batching"
mode = "paper"

[profiles.fast]
roofline = {{model = "{CONFIG}", gpu = "h200", gpus = 4}}

[profiles.slow]
roofline = {{model = "{CONFIG}", gpu = "h100", gpus = 4}}

[deployment]
prfaas_profile = "fast"
local_profile = "slow"
parallelism = 4
n_prfaas = 2
local_pool = 6
n_p = 2
n_d = 4
threshold = "4K"
bandwidth = "100 Gbps"

[decode]
t_decode = "20 ms"
bs_max = 64
l_out = 256

[workload]
lengths = {{kind = "lognormal", mu = 7.5, sigma = 1.0, lo = 64, hi = 32768}}
arrival = "poisson"
load = 0.9

[homogeneous]
gpus = 32
profile = "slow"
"""


def _load(text: str, tmp_path: Path):
    path = tmp_path / "p.toml"
    path.write_text(text)
    return presets.from_dict(tomllib.loads(text), path)


def _batched(budget: str = "8K", overhead: str = "per-step") -> str:
    return BASE + f'\n[prefill]\ntoken_budget = "{budget}"\noverhead = "{overhead}"\n'


def test_without_a_budget_the_profiles_are_the_card_profiles(tmp_path):
    sc = _load(BASE, tmp_path)
    assert sc.system.local.token_budget is None
    card, g = read_config(CONFIG), load_gpu("h100")
    setup = resolve_setup(card, g, 4, overhead_s=0.39)
    assert sc.system.local.t_prefill(3000.0) == pytest.approx(prefill_seconds(card, g, setup, 3000.0))
    assert sc.system.local.latency_time(3000.0) == sc.system.local.t_prefill(3000.0)


@pytest.mark.parametrize("overhead", ["per-request", "per-step"])
def test_theta_pdp_is_tokens_per_second_at_full_steps(tmp_path, overhead):
    """Eq. 4 under batching: Theta_pd-p x l_short = N_p x budget / (a full step of prompts of
    the conditional mean length), the step = fixed part + overhead(s) + their attention."""
    sc = _load(_batched("8K", overhead), tmp_path)
    card, g = read_config(CONFIG), load_gpu("h100")
    setup = resolve_setup(card, g, 4, overhead_s=0.39)
    op = evaluate(sc.system, Knobs(4096.0, 2, 4, 2, sc.system.bandwidth), "paper")
    lbar, b = op.l_short, 8192.0
    k = b / lbar  # prompts per step
    step = fixed_step_seconds(card, g, setup, b) + k * mixer_seconds(card, g, setup, lbar) + (
        0.39 if overhead == "per-step" else k * 0.39)
    assert op.theta_pdp * lbar == pytest.approx(2 * b / step, rel=1e-6)
    assert sc.system.local.token_budget == b


def test_per_step_batching_raises_short_prompt_capacity_and_per_request_barely(tmp_path):
    base = search(_load(BASE, tmp_path).system).best.lambda_max
    per_req = search(_load(_batched("8K", "per-request"), tmp_path).system).best.lambda_max
    per_step = search(_load(_batched("8K", "per-step"), tmp_path).system).best.lambda_max
    assert per_step > 2 * base  # the overhead was ~90% of a short request
    assert base < per_req < 1.2 * base  # only the kernel batches
    homo = homogeneous(_load(_batched("8K", "per-step"), tmp_path).system)
    assert homo is not None and homo.lambda_max > homogeneous(_load(BASE, tmp_path).system).lambda_max


def test_a_profile_key_overrides_the_preset_budget(tmp_path):
    text = _batched("8K").replace('roofline = {model = "' + str(CONFIG) + '", gpu = "h100", gpus = 4}',
                                  'roofline = {model = "' + str(CONFIG) + '", gpu = "h100", gpus = 4}'
                                  '\ntoken_budget = "2K"', 1)
    sc = _load(text, tmp_path)
    assert sc.system.local.token_budget == 2048 and sc.system.prfaas.token_budget == 8192
    only = _load(BASE.replace('gpu = "h200", gpus = 4}', 'gpu = "h200", gpus = 4}\ntoken_budget = 4096'),
                 tmp_path)
    assert only.system.prfaas.token_budget == 4096 and only.system.local.token_budget is None


def test_latency_time_rides_a_full_step():
    t = Curve.poly(0.4, 1e-4)
    flat = Profile("x", t, Curve.poly(1.0))
    batched = replace(flat, token_budget=1000.0)
    step = t(1000.0)
    assert flat.latency_time(500.0) == t(500.0)
    assert batched.latency_time(500.0) == pytest.approx(step * 1.5)
    assert batched.latency_time(3000.0) == pytest.approx(t(3000.0) + step / 2)
    assert np.all(np.diff(batched.latency_time(np.linspace(1, 5000, 50))) >= 0)
    derived = batched.derived("slower", time_scale=2.0)
    assert derived.token_budget == 1000.0


def test_the_ttft_layer_adds_the_step(tmp_path):
    sc = _load(_batched("8K", "per-step"), tmp_path)
    knobs = Knobs(4096.0, 2, 4, 2, sc.system.bandwidth)
    unbatched = replace(sc.system.local, token_budget=None)
    light = predict(sc.system, knobs, rate=0.01)
    flat = predict(replace(sc.system, local=unbatched, prfaas=replace(sc.system.prfaas, token_budget=None)),
                   knobs, rate=0.01)
    assert light.mean > flat.mean  # a request waits for and rides a whole step


CASES = [
    ("zero budget", _batched("0"), "prefill.token_budget", "whole number of tokens >= 1"),
    ("fractional budget", BASE + "\n[prefill]\ntoken_budget = 0.5\n", "prefill.token_budget", ">= 1"),
    ("above the context", _batched("64K"), "prefill.token_budget", "context of 40,960"),
    ("bad overhead", _batched("8K", "per-batch"), "prefill.overhead", "per-request, per-step"),
    ("aiconfigurator kernel", _batched().replace('gpu = "h200", gpus = 4}', 'gpu = "h200", gpus = 4, source = "aiconfigurator"}'),
     "prefill.token_budget", "built-in kernel model"),
    ("profile key on a card", BASE.replace('gpu = "h200", gpus = 4}', 'gpu = "h200", gpus = 4}\ntoken_budget = "1M"'),
     "profiles.fast.token_budget", "context"),
    ("torch backend", BASE + '\n[prefill]\nbackend = "torch"\ntoken_budget = "8K"\n', "prefill.token_budget",
     "torch backend"),
]


@pytest.mark.parametrize("name,text,key,phrase", CASES, ids=[c[0] for c in CASES])
def test_bad_batching_is_one_line_naming_the_key(tmp_path, capsys, name, text, key, phrase):
    path = tmp_path / "b.toml"
    path.write_text(text)
    assert main(["solve", "--preset", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and key in err and phrase in err, err


@pytest.mark.parametrize("edit", ["preset", "profile"])
def test_a_table_profile_cannot_be_batched(tmp_path, capsys, edit):
    toy = (presets_dir() / "toy.toml").read_text()
    if edit == "preset":
        text, key = toy + '\n[prefill]\ntoken_budget = "8K"\n', "prefill.token_budget"
    else:
        text = toy.replace("[profiles.fast]\n", '[profiles.fast]\ntoken_budget = "8K"\n', 1)
        key = "profiles.fast.token_budget"
        assert text != toy
    path = tmp_path / "t.toml"
    path.write_text(text)
    assert main(["solve", "--preset", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and key in err and "table" in err, err


def test_the_emulator_serves_a_batched_preset_at_0_9_lambda_max(tmp_path, capsys):
    """Capacity through the same seam: 0.9 x the model's exact Lambda_max is served within 3%,
    nothing lost (the instances serve each request's share of full steps)."""
    import json

    path = tmp_path / "b.toml"
    path.write_text(_batched("8K", "per-step"))
    assert main(["run", "--preset", str(path), "--load", "0.9", "--duration", "600",
                 "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    lam = out["model"]["exact"]["lambda_max"]
    assert out["target_rate"] == pytest.approx(0.9 * lam)
    assert out["served_rate"] == pytest.approx(0.9 * lam, rel=0.03)
    assert out["accounting"]["lost"] == 0 and out["accounting"]["rejected"] == 0


def test_a_topology_batches_its_card_profiles_and_refuses_tables(tmp_path, capsys):
    two = (presets_dir() / "two-regions.toml").read_text()
    path = tmp_path / "t.toml"
    path.write_text(two + '\n[prefill]\ntoken_budget = "8K"\n')
    assert main(["solve", "--preset", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "prefill.token_budget" in err and "table" in err
    card = f'roofline = {{model = "{CONFIG}", gpu = "h200", gpus = 4}}\n'
    text = two.split("[profiles.h200]")[0] + "[profiles.h200]\n" + card + "\n[profiles.h20]\n" \
        + card.replace("h200", "h100") + "\n[[site]]" + two.split("[[site]]", 1)[1]
    sc = presets.from_dict(tomllib.loads(text + '\n[prefill]\ntoken_budget = "4K"\n'), path,
                           topology=True)
    assert {p.token_budget for p in sc.profiles.values()} == {4096.0}
