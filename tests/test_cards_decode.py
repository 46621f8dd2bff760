"""The decode step from the cards (emulator/cards/decode.py): hand-computed roofline cells, the
experts a batch touches, windows capping the KV read, monotonicity, the SLO- or memory-bound
batch, and bad input as one line."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.cards import CardError
from emulator.cards.decode import bs_max, step_time, touched_experts
from emulator.cards.gpu import load_gpu
from emulator.cards.kernel import resolve_setup
from emulator.cards.model_card import load_card, read_config
from prfaas_tui.cli import main

QWEN = read_config(Path(__file__).parent / "configs" / "qwen3-32b.json")
H200 = load_gpu("h200")
TP8 = resolve_setup(QWEN, H200, 8)


def _qwen_cell(batch: int, context: int) -> float:
    """Qwen3-32B on 8 x H200 (TP8, bf16), written out from the card's fields."""
    hidden, layers, heads, kv_heads, head_dim, ffn, vocab = 5120, 64, 64, 8, 128, 25600, 151936
    attn = hidden * (heads * head_dim + 2 * kv_heads * head_dim) + heads * head_dim * hidden
    params = layers * (attn + 3 * hidden * ffn) + vocab * hidden  # + the LM head
    hbm = 4.8e12 * 0.79
    weights = params * 2 / 8 / hbm
    kv = batch * layers * 2 * kv_heads * head_dim * 2 * context / 8 / hbm  # 8 KV heads over TP8
    pair = 2 * heads * 2 * head_dim
    compute = (2 * batch * params / 8 / (989.4e12 * 0.78)
               + batch * layers * pair * context / 8 / (989.4e12 * 0.49))
    comm = layers * 2 * (2 * 7 / 8 * batch * hidden * 2 / (3600 / 8 * 1e9) + 45e-6)
    return max(weights + kv, compute) + comm  # layer_us = 0 on the H200


@pytest.mark.parametrize("batch", [1, 128])
def test_qwen3_32b_on_h200_tp8_matches_the_hand_cell(batch):
    assert step_time(QWEN, H200, TP8, batch, 32768).step_s == pytest.approx(_qwen_cell(batch, 32768), rel=1e-9)


def test_qwen3_32b_against_measured_operators():
    """aiconfigurator 0.12 (trtllm) estimates ~5 ms at batch 1 and ~40 ms at batch 128, 32K
    context. Batch 128 lands within 25%; batch 1 is 1.6x, the per-collective fixed cost the
    prefill calibration measured (45 us x 128 all-reduces = 5.8 ms) being what a CUDA-graphed
    decode step largely does not pay."""
    big = step_time(QWEN, H200, TP8, 128, 32768).step_s
    one = step_time(QWEN, H200, TP8, 1, 32768).step_s
    assert big / 0.040 == pytest.approx(1.12, abs=0.02)
    assert one / 0.005 == pytest.approx(1.63, abs=0.03)


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
        want = base + touched_experts(m.experts, m.top_k, b) * per_expert * m.moe_layers / 8
        assert step_time(card, H200, setup, b, 4096).weight_bytes == pytest.approx(want, rel=1e-12)
    # one token reads only its top-k experts; a large batch reads them all, never more
    assert step_time(card, H200, setup, 1, 4096).weight_bytes == pytest.approx(
        base + m.routed_active / 8 * 2, rel=1e-9)
    assert step_time(card, H200, setup, 100_000, 4096).weight_bytes == pytest.approx(
        base + m.routed_total / 8 * 2, rel=1e-9)


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
