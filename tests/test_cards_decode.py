"""The decode step from the cards (emulator/cards/decode.py): hand-computed roofline cells, every
cell of aiconfigurator's decode steps (tests/decode_reference.py) within 25%, the experts a batch
touches and the busiest EP rank, windows capping the KV read, monotonicity, the SLO- or
memory-bound batch, and bad input as one line."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.cards import CardError
from emulator.cards.decode import (
    bs_max,
    busiest_rank_experts,
    step_time,
    sublayers,
    touched_experts,
)
from emulator.cards.gpu import load_gpu
from emulator.cards.kernel import resolve_setup
from emulator.cards.model_card import load_card, read_config
from prfaas_tui.cli import main
from tests.decode_reference import AIC_DECODE_MS

QWEN = read_config(Path(__file__).parent / "configs" / "qwen3-32b.json")
H200 = load_gpu("h200")
TP8 = resolve_setup(QWEN, H200, 8)


def _qwen_cell(batch: int, context: int) -> float:
    """Qwen3-32B on 8 x H200 (TP8, bf16), written out from the card's fields and the H200's
    calibration (memory 0.79, gemm 0.78, attention 0.49; decode_attention 0.89,
    decode_collective 0.15 and 4.6 us, decode_mixer_us 14.5, decode_block_us 10.2)."""
    hidden, layers, heads, kv_heads, head_dim, ffn, vocab = 5120, 64, 64, 8, 128, 25600, 151936
    attn = hidden * (heads * head_dim + 2 * kv_heads * head_dim) + heads * head_dim * hidden
    params = layers * (attn + 3 * hidden * ffn) + vocab * hidden  # + the LM head
    weights = params * 2 / 8 / (4.8e12 * 0.79)
    # 8 KV heads over TP8, at decode attention's share of HBM
    kv = batch * layers * 2 * kv_heads * head_dim * 2 * context / 8 / (4.8e12 * 0.89)
    pair = 2 * heads * 2 * head_dim
    compute = (2 * batch * params / 8 / (989.4e12 * 0.78)
               + batch * layers * pair * context / 8 / (989.4e12 * 0.49))
    # an all-reduce after attention and after the FFN of every layer
    comm = layers * 2 * (2 * 7 / 8 * batch * hidden * 2 / (3600 / 8 * 1e9 * 0.15) + 4.6e-6)
    overhead = (layers * 14.5 + layers * 2 * 10.2) * 1e-6
    return max(weights + kv, compute) + comm + overhead


@pytest.mark.parametrize("batch", [1, 128])
def test_qwen3_32b_on_h200_tp8_matches_the_hand_cell(batch):
    assert step_time(QWEN, H200, TP8, batch, 32768).step_s == pytest.approx(_qwen_cell(batch, 32768), rel=1e-9)


CONFIGS = Path(__file__).parent / "configs"
CALIBRATED_ON = {"qwen3-32b", "llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                 "mixtral-8x22b"}  # their H200 rows; every other row is held out
TOLERANCE = 0.25
# aiconfigurator reads Nemotron's Mamba-2 state almost for free (mamba_ssm: 0.107 ms for 54
# layers x 128 requests at TP8, where the 16.9 MB state per layer and request is 3.4 ms of HBM
# at 0.89 x 4.8 TB/s): at batch 128 the step reads it and aiconfigurator does not
KNOWN_MISSES = {
    ("nemotron-h-56b", "h200", 8, "bf16", 128, 4096): (1.50, 1.60),
    ("nemotron-h-56b", "h200", 8, "bf16", 128, 32768): (1.36, 1.46),
    ("nemotron-h-56b", "h100", 8, "bf16", 128, 4096): (1.50, 1.60),
    ("nemotron-h-56b", "h100", 8, "bf16", 128, 32768): (1.32, 1.42),
    ("nemotron-3-nano-30b-a3b", "h100", 4, "bf16", 128, 4096): (1.22, 1.29),
    # its MLA kernel for one request reads the latent cache below the HBM rate (mla_block grows
    # 1.16 ms from 4K to 32K, where the cache read grows 0.47 ms)
    ("kimi-k2", "h200", 8, "fp8", 1, 32768): (0.71, 0.76),
    # its MoE at 128 tokens reads 38.8 of a rank's 48 experts (644 us a layer at 16.6 us an
    # expert), where uniform routing touches 44.8 on the mean rank and 47 on the busiest
    ("kimi-k2", "h100", 8, "fp8", 128, 4096): (1.22, 1.28),
}


def _reference_ratio(key: tuple) -> float:
    model, gpu, gpus, dtype, batch, context = key
    path = CONFIGS / f"{model}.json"
    card = read_config(path, model) if path.exists() else load_card(model)
    g = load_gpu(gpu)
    setup = resolve_setup(card, g, gpus, dtype=dtype, kv_dtype="bf16")
    return step_time(card, g, setup, batch, context).step_s * 1e3 / AIC_DECODE_MS[key]


@pytest.mark.parametrize("key", sorted(AIC_DECODE_MS), ids=lambda k: "-".join(map(str, k)))
def test_every_reference_cell_within_tolerance(key):
    ratio = _reference_ratio(key)
    if key in KNOWN_MISSES:
        lo, hi = KNOWN_MISSES[key]
        assert lo <= ratio <= hi, ratio
    else:
        assert abs(ratio - 1) <= TOLERANCE, ratio


def test_the_reference_covers_the_families_gpus_batches_and_contexts():
    assert {k[1] for k in AIC_DECODE_MS} == {"h200", "h100"}
    assert {k[4] for k in AIC_DECODE_MS} == {1, 8, 32, 128}
    assert {k[5] for k in AIC_DECODE_MS} == {4096, 32768}
    models = {k[0] for k in AIC_DECODE_MS}
    assert {"qwen3-32b", "qwen3-235b-a22b", "deepseek-v3", "kimi-k2", "qwen3.5-35b-a3b"} <= models
    assert all(abs(_reference_ratio(k) - 1) > TOLERANCE for k in KNOWN_MISSES)  # still misses


def test_calibrated_and_held_out_cells():
    """The fit (H200 dense and MoE) and the rows it never saw (H100, MLA, hybrid) land alike."""
    fit = [_reference_ratio(k) for k in AIC_DECODE_MS if k[1] == "h200" and k[0] in CALIBRATED_ON]
    held = [_reference_ratio(k) for k in AIC_DECODE_MS
            if not (k[1] == "h200" and k[0] in CALIBRATED_ON) and k not in KNOWN_MISSES]
    assert len(fit) == 48 and len(held) == 121
    for ratios in (fit, held):
        assert 0.9 <= sorted(ratios)[len(ratios) // 2] <= 1.1
    assert max(abs(r - 1) for r in fit) <= 0.15


def test_sublayers():
    assert sublayers(QWEN) == 128
    nemotron = read_config(CONFIGS / "nemotron-h-56b.json", "nemotron-h-56b")
    assert sublayers(nemotron) == nemotron.num_layers == 118  # a mixer or an FFN per layer


def test_the_busiest_rank():
    # Mixtral on EP8: one token's two experts sit on two ranks, one expert each
    assert busiest_rank_experts(8, 2, 1, 8) == pytest.approx(1 - 0.75 ** 8)
    # one rank reads the mean; a large batch every expert the rank holds
    assert busiest_rank_experts(128, 8, 3, 1) == pytest.approx(touched_experts(128, 8, 3))
    assert busiest_rank_experts(256, 8, 100_000, 8) == pytest.approx(32)
    # the busiest rank reads more than the mean rank, and more as the batch grows
    for b in (1, 8, 32):
        mean = touched_experts(128, 8, b) / 8
        assert mean < busiest_rank_experts(128, 8, b, 8) < busiest_rank_experts(128, 8, b + 1, 8)
    # Binomial(16, 1/16) per rank, max over 8 ranks: a seeded draw agrees
    import numpy as np
    draws = np.random.default_rng(7).binomial(16, 1 / 16, size=(20_000, 8)).max(axis=1).mean()
    assert busiest_rank_experts(128, 8, 1, 8) == pytest.approx(draws, rel=0.02)


def test_experts_a_batch_touches():
    assert touched_experts(8, 2, 1) == pytest.approx(2)
    assert touched_experts(8, 2, 2) == pytest.approx(8 * (1 - 0.75 ** 2))
    assert touched_experts(256, 8, 10_000) == pytest.approx(256)
    card = load_card("kimi-linear-48b-a3b")
    m = card.matmul
    setup = resolve_setup(card, H200, 8)
    head = card.active_params - m.dense - m.routed_active
    base = (m.dense + head) / setup.tp * 2
    per_expert = m.routed_total / (m.moe_layers * m.experts) * 2
    for b in (1, 32):
        want = base + busiest_rank_experts(m.experts, m.top_k, b, 8) * per_expert * m.moe_layers
        assert step_time(card, H200, setup, b, 4096).weight_bytes == pytest.approx(want, rel=1e-12)
    # one token reads more than its top-k / 8 on the busiest rank; a large batch every expert
    assert step_time(card, H200, setup, 1, 4096).weight_bytes > base + m.routed_active / 8 * 2
    assert step_time(card, H200, setup, 100_000, 4096).weight_bytes == pytest.approx(
        base + m.routed_total / 8 * 2, rel=1e-9)
    # a mean batch between two whole ones reads between them
    w = [step_time(card, H200, setup, b, 4096).weight_bytes for b in (3, 3.5, 4)]
    assert w[0] < w[1] < w[2] and w[1] == pytest.approx((w[0] + w[2]) / 2, rel=1e-12)


def test_a_windowed_model_reads_at_most_its_window():
    card = load_card("mimo-v2-flash")
    setup = resolve_setup(card, H200, 8)
    window = next(g for g in card.groups if g.kind == "swa")
    served = card.with_kv_dtype(setup.kv_dtype)
    full = sum(g.count * g.kv_bytes_per_token for g in served.groups if g.kind in ("gqa", "mla"))
    swa = sum(g.count * g.kv_bytes_per_token for g in served.groups if g.kind == "swa")
    per_gpu = min(setup.tp, card.matmul.kv_heads)
    for ctx in (window.window // 2, 32768):
        want = (full * ctx + swa * min(ctx, window.window) + served.state_bytes) / per_gpu
        assert step_time(card, H200, setup, 1, ctx).kv_bytes == pytest.approx(want, rel=1e-12)


CARDS = ("kimi-linear-48b-a3b", "mimo-v2-flash", "qwen3-235b-a22b")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CARDS), st.integers(1, 2000), st.integers(1, 2000),
       st.integers(1, 131072), st.integers(1, 131072))
def test_the_step_is_monotone_in_batch_and_context(name, b1, b2, c1, c2):
    card = load_card(name)
    setup = resolve_setup(card, H200, 8)
    (b1, b2), (c1, c2) = sorted((b1, b2)), sorted((c1, c2))
    assert step_time(card, H200, setup, b1, c1).step_s <= step_time(card, H200, setup, b2, c1).step_s
    assert step_time(card, H200, setup, b1, c1).step_s <= step_time(card, H200, setup, b1, c2).step_s


def test_bs_max_binds_on_memory_long_and_on_tpot_short():
    card, h20 = load_card("prfaas-case-study-1t"), load_gpu("h20")
    setup = resolve_setup(card, h20, 8)
    short, long = bs_max(card, h20, setup, 1024), bs_max(card, h20, setup, 131072)
    assert short.binds == "tpot" and short.batch < short.memory_batch
    assert short.step.step_s <= 0.025 < step_time(card, h20, setup, short.batch + 1, 1024).step_s
    assert long.binds == "memory" and long.batch == long.memory_batch
    assert step_time(card, h20, setup, long.batch + 1, 131072).step_s <= 0.025


def test_bs_max_refuses_a_batch_of_one_that_cannot_run():
    with pytest.raises(CardError, match="--tpot"):
        bs_max(QWEN, H200, TP8, 4096, tpot_slo=0.001)
    with pytest.raises(CardError, match="hbm_gb"):
        bs_max(QWEN, replace(H200, hbm_gb=13.0), TP8, 32768)
    with pytest.raises(CardError, match="--tpot"):
        bs_max(QWEN, H200, TP8, 4096, tpot_slo=0.0)


MODELS = ["models", "--config", str(Path(__file__).parent / "configs" / "qwen3-32b.json"),
          "--gpu", "h200"]


def test_models_decode_json(capsys):
    assert main([*MODELS, "--decode-batches", "1,128", "--contexts", "4K,32K", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["decode"]) == 4
    cell = next(x for x in d["decode"] if x["batch"] == 128 and x["context"] == 32768)
    assert cell["step_s"] == pytest.approx(_qwen_cell(128, 32768), rel=1e-9)
    assert set(cell) == {"batch", "context", "step_s", "weights_s", "kv_s", "compute_s",
                         "comm_s", "overhead_s"}
    assert [(x["context"], x["binds"]) for x in d["bs_max"]] == [(4096, "tpot"), (32768, "tpot")]
    assert d["bs_max"][0]["batch"] > d["bs_max"][1]["batch"] > 1


def test_models_decode_text(capsys):
    assert main([*MODELS, "--decode-batches", "1,8", "--contexts", "4K"]) == 0
    out = capsys.readouterr().out
    assert "decode step ms" in out and "BS_max @ 25 ms" in out and "(tpot)" in out


@pytest.mark.parametrize(("flags", "flag"), [
    (["--decode-batches", "1", "--tpot", "0"], "--tpot"),
    (["--decode-batches", "1", "--contexts", "64K"], "--contexts"),
    (["--decode-batches", "0"], "--decode-batches"),
    (["--decode-batches", "1", "--tpot", "1ms"], "--tpot"),
])
def test_models_decode_refusals(capsys, flags, flag):
    assert main([*MODELS, *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0], err


def test_models_decode_needs_a_gpu(capsys):
    assert main(["models", "--config", MODELS[2], "--decode-batches", "1"]) == 2
    assert "--decode-batches" in capsys.readouterr().err


NEW = ["new", "--model", "kimi-linear-48b-a3b", "--prefill-gpu", "h200", "--local-gpu", "h20",
       "--prfaas-gpus", "32", "--local-gpus", "64", "--bandwidth", "100 Gbps"]


def test_new_derives_decode_from_the_cards(tmp_path, capsys):
    from emulator.scenario import presets

    out = tmp_path / "k.toml"
    assert main([*NEW, "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    text = out.read_text()
    card, h20 = load_card("kimi-linear-48b-a3b"), load_gpu("h20")
    sc = presets.load(out)
    context = sc.system.lengths.mean + 1024 / 2
    lim = bs_max(card, h20, resolve_setup(card, h20, 8), context)
    assert sc.system.decode.bs_max == lim.batch > 20
    assert sc.system.decode.t_decode == pytest.approx(lim.step.step_s, rel=1e-3)
    assert "# derived from the cards" in text and "binds" in text
    # the comment's terms add up to the step it states (its overhead included)
    terms = re.search(r"= ([\d.]+) ms \(weights ([\d.]+), KV ([\d.]+), compute ([\d.]+), "
                      r"comm ([\d.]+), overhead ([\d.]+) ms\)", text)
    step, weights, kv, compute, comm, overhead = map(float, terms.groups())
    assert overhead > 0 and step == pytest.approx(max(weights + kv, compute) + comm + overhead,
                                                  abs=0.03)
    assert main([*NEW, "--out", str(out), "--force", "--bs-max", "20", "--t-decode", "25 ms"]) == 0
    sc = presets.load(out)
    assert (sc.system.decode.bs_max, sc.system.decode.t_decode) == (20, 0.025)


def test_new_refuses_an_slo_no_batch_meets(tmp_path, capsys):
    assert main([*NEW, "--out", str(tmp_path / "k.toml"), "--tpot", "1 ms"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("prfaas-tui: --tpot:"), err
    assert main([*NEW, "--out", str(tmp_path / "k.toml"), "--tpot", "0"]) == 2
    assert "--tpot" in capsys.readouterr().err


def test_the_shipped_list_shows_a_model_no_batch_of_one_fits(capsys):
    assert main(["models", "--gpu", "h20", "--decode-batches", "1", "--contexts", "4K", "--json"]) == 0
    rows = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    (big,) = rows["qwen3.5-397b-a17b"]["bs_max"]
    assert (big["batch"], big["binds"]) == (0, "none") and "hbm_gb" not in big["error"]
    assert "holds no decode request" in big["error"]
    assert rows["kimi-linear-48b-a3b"]["bs_max"][0]["batch"] > 1
