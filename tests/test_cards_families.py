"""Every hybrid family's cache, exactly: published config.json files (tests/configs) read by the
cards, against a hand computation from each config's own fields (tests/hybrid_reference.py, which
shares no code with the cards) of S_kv(l) at 8K, 32K and 128K, the fixed state per request, the
layers by cache kind and the parameter counts; and broken configs refused in one line naming
the key.

S_kv(l) is what a request holds after a prefill of l tokens, which is what crosses the link:
a full-attention (gqa) or latent (mla) layer keeps all l tokens, a sliding-window (swa) layer the
last min(l, window), a Llama-4 chunked layer at most one chunk, so min(l, chunk) is the bound
the transfer must carry; state-space (ssm), linear and lightning layers a fixed state.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from emulator.cards import CardError
from emulator.cards.gpu import load_gpu
from emulator.cards.kernel import resolve_setup
from emulator.cards.memory import memory_per_gpu
from emulator.cards.model_card import read_config
from prfaas_tui.cli import main
from tests.hybrid_reference import CONFIGS, FAMILIES, MXFP4_BITS, hand, load, mistral

K8, K32, K128 = 8 * 1024, 32 * 1024, 128 * 1024
NAMES = sorted(FAMILIES)


def card(name: str):
    return read_config(CONFIGS / f"{name}.json")


def written(tmp_path: Path, data: dict, name: str = "config.json") -> Path:
    """A config written as JSON (json.dumps writes float('inf') as Infinity, as published)."""
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


# -- the cache, per family -------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_layers_by_cache_kind(name):
    assert card(name).layers == hand(name).layers


@pytest.mark.parametrize("name", NAMES)
def test_fixed_state_per_request(name):
    assert card(name).state_bytes == pytest.approx(hand(name).state, rel=1e-9, abs=0.5)


@pytest.mark.parametrize("length", [K8, K32, K128], ids=["8K", "32K", "128K"])
@pytest.mark.parametrize("name", NAMES)
def test_s_kv_after_a_prefill_is_what_the_config_holds(name, length):
    assert float(card(name).kv_bytes(length)) == pytest.approx(hand(name).kv(length), rel=1e-9)


def test_hand_s_kv_at_128k_for_the_two_mixed_attention_examples():
    """Pins the reference itself: Gemma-3 27B holds 11.2 GB at 128K (10 global layers x 8 KiB x
    128K tokens + 52 local layers x 8 KiB x 1024), Llama-4-Scout 7.7 GB (12 NoPE layers x
    4 KiB x 128K + 36 chunked layers x 4 KiB x 8192)."""
    assert hand("medgemma-27b-it").kv(K128) == 10 * 8192 * K128 + 52 * 8192 * 1024 == 11_173_625_856
    assert hand("llama-4-scout-17b-16e-instruct").kv(K128) \
        == 12 * 4096 * K128 + 36 * 4096 * 8192 == 7_650_410_496


def test_sliding_window_layers_hold_every_token_below_the_window():
    """gpt-oss at 100 tokens (window 128): all 24 layers still hold every token."""
    c = load("gpt-oss-20b")
    per_token = c["num_hidden_layers"] * 2 * c["num_key_value_heads"] * c["head_dim"] * 2
    assert float(card("gpt-oss-20b").kv_bytes(100)) == pytest.approx(100 * per_token, rel=1e-9)


@pytest.mark.parametrize("length", [1000, 8192, 8193, 20000])
def test_chunked_layers_carry_min_l_chunk_tokens(length):
    """Llama-4's chunked layers hold the current chunk only: the transfer bound is min(l, chunk)
    tokens per chunked layer, all l in the NoPE (global) layers."""
    t = load("llama-4-scout-17b-16e-instruct")["text_config"]
    per = 2 * t["num_key_value_heads"] * t["head_dim"] * 2
    rope = [int((i + 1) % 4 != 0) for i in range(t["num_hidden_layers"])]  # interval 4 when absent
    expected = (len(rope) - sum(rope)) * per * length \
        + sum(rope) * per * min(length, t["attention_chunk_size"])
    assert float(card("llama-4-scout-17b-16e-instruct").kv_bytes(length)) == pytest.approx(expected)


def test_llama4_no_rope_layers_as_published_give_the_same_layers(tmp_path):
    """The published Scout config lists no_rope_layers [1, 1, 1, 0] x 12: the same as the
    architecture's default every-4th NoPE layer."""
    data = load("llama-4-scout-17b-16e-instruct")
    data["text_config"]["no_rope_layers"] = [1, 1, 1, 0] * 12
    got = read_config(written(tmp_path, data))
    assert got.layers == {"gqa": 12, "chunked": 36}
    assert float(got.kv_bytes(K128)) == pytest.approx(hand("llama-4-scout-17b-16e-instruct").kv(K128))


def test_ministral_without_layer_types_slides_every_layer_over_its_window():
    """Ministral-8B-Instruct-2410 as first published names no layer_types: all 36 layers slide
    over 32,768 tokens (8 KV heads x 128 x 2 x 2 B = 4 KiB a token a layer). Below the window
    they hold every token; past it, 36 x 4 KiB x 32,768 = 4.83 GB however long the prompt."""
    got = card("ministral-8b-instruct-2410")
    assert got.layers == {"swa": 36}
    per_token = 36 * 4096
    assert float(got.kv_bytes(K8)) == pytest.approx(per_token * K8, rel=1e-9)
    assert float(got.kv_bytes(K32)) == pytest.approx(per_token * 32_768, rel=1e-9) == 4_831_838_208
    assert float(got.kv_bytes(100_000)) == pytest.approx(per_token * 32_768, rel=1e-9)
    assert float(got.kv_bytes(K128)) == pytest.approx(hand("ministral-8b-instruct-2410").kv(K128))


def test_ministral_with_layer_types_follows_the_list(tmp_path):
    """A revision that lists layer_types (here one full-attention layer in four, built from the
    published config) keeps every token in the full layers and the window in the others."""
    data = load("ministral-8b-instruct-2410")
    data["layer_types"] = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(36)]
    got = read_config(written(tmp_path, data))
    assert got.layers == {"gqa": 9, "swa": 27}
    assert float(got.kv_bytes(K128)) == pytest.approx(9 * 4096 * K128 + 27 * 4096 * 32_768, rel=1e-9)
    assert float(got.kv_bytes(K128)) == pytest.approx(mistral(data).kv(K128), rel=1e-9)


def test_gemma3_without_layer_types_globals_every_sixth_layer(tmp_path):
    """gemma-3-27b-it's own config names no layer_types: every sliding_window_pattern-th layer
    (default 6) is global, as MedGemma's explicit list says."""
    data = load("medgemma-27b-it")
    del data["text_config"]["layer_types"]
    got = read_config(written(tmp_path, data))
    assert got.layers == {"gqa": 10, "swa": 52}
    assert float(got.kv_bytes(K128)) == pytest.approx(hand("medgemma-27b-it").kv(K128), rel=1e-9)


def test_gemma3_text_config_without_its_own_vocab_takes_the_default(tmp_path):
    """A text_config that leaves vocab_size out has Gemma-3's 262,208 (and tied embeddings):
    the total stays within 2% of the published 27.4B."""
    data = load("medgemma-27b-it")
    del data["text_config"]["vocab_size"]
    got = read_config(written(tmp_path, data))
    assert got.total_params == pytest.approx(27.4e9, rel=0.02)


def test_jamba_attention_every_eighth_layer_and_a_mamba1_state_in_the_others():
    """Jamba 1.5 Mini: attention at layers 4, 12, 20, 28 (i % 8 == 4), Mamba-1 in the other 28,
    each holding (4 - 1) x 8192 conv channels x 2 B + 8192 x 16 fp32 = 573,440 B; the four
    attention layers keep 8 KV heads x 128 x 2 (K and V) x 2 B = 4 KiB a token each. At 32K:
    16 KiB x 32,768 + 28 x 573,440 = 552,927,232 B."""
    h = hand("ai21-jamba-1.5-mini")
    assert h.layers == {"gqa": 4, "ssm": 28}
    assert h.extra["state_per_layer"] == 3 * 8192 * 2 + 8192 * 16 * 4 == 573_440
    assert h.kv(K32) == 16_384 * K32 + 28 * 573_440 == 552_927_232
    assert float(card("ai21-jamba-1.5-mini").kv_bytes(K32)) == pytest.approx(552_927_232, rel=1e-9)


def test_jamba_layers_block_type_as_listed_gives_the_same_layers(tmp_path):
    """The config may list layers_block_type itself (transformers derives it from the period
    and offset): the same list read from the config gives the same cache."""
    data = load("ai21-jamba-1.5-mini")
    data["layers_block_type"] = ["attention" if i % 8 == 4 else "mamba" for i in range(32)]
    got = read_config(written(tmp_path, data))
    assert got.layers == {"gqa": 4, "ssm": 28}
    assert float(got.kv_bytes(K128)) == pytest.approx(hand("ai21-jamba-1.5-mini").kv(K128), rel=1e-9)


def test_deepseek_v32_indexer_keys_cross_with_the_latent():
    """Per token and layer: the latent (kv_lora_rank + qk_rope_head_dim) x 2 B, and the
    indexer's key, index_head_dim fp8 bytes plus a 4 B fp32 scale."""
    c, h = load("deepseek-v3.2"), hand("deepseek-v3.2")
    n = c["num_hidden_layers"]
    assert h.extra["indexer_per_token"] == n * (c["index_head_dim"] + 4)
    got = float(card("deepseek-v3.2").kv_bytes(K32))
    assert got == pytest.approx((h.extra["latent_per_token"] + h.extra["indexer_per_token"]) * K32)


# -- parameters --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_total_params_within_2pct_of_the_published_count(name):
    published, source = FAMILIES[name][1], FAMILIES[name][3]
    assert card(name).total_params == pytest.approx(published, rel=0.02), source


@pytest.mark.parametrize("name", NAMES)
def test_active_params_equal_the_hand_count(name):
    assert card(name).active_params == pytest.approx(hand(name).active, rel=0.02)


@pytest.mark.parametrize("name", NAMES)
def test_hand_counts_agree_with_the_published_counts(name):
    """The hand computation itself against the publishers' figures (no card involved). Active
    counts differ in what they include: Meta's 17B counts Scout's input embedding, MiniMax's
    45.9B leaves the LM head out; the hand count keeps the cards' convention (LM head in)."""
    _, total, active, source = FAMILIES[name]
    h, c = hand(name), load(name)
    t = c.get("text_config", c)
    embed = t.get("vocab_size", 262208) * t["hidden_size"]
    assert h.total == pytest.approx(total, rel=0.02), source
    if active is not None:
        adjust = {"llama-4-scout-17b-16e-instruct": embed, "minimax-m1": -embed}.get(name, 0)
        assert h.active + adjust == pytest.approx(active, rel=0.02), source


def test_gemma4_top_k_experts_is_the_experts_per_token():
    got = card("gemma-4-26b-a4b")
    assert got.matmul.top_k == load("gemma-4-26b-a4b")["text_config"]["top_k_experts"] == 8
    assert got.active_params == pytest.approx(hand("gemma-4-26b-a4b").active, rel=0.02)


@pytest.mark.parametrize("name", ["gpt-oss-20b", "gpt-oss-120b"])
def test_gpt_oss_experts_are_read_as_mxfp4_at_4_25_bits(name):
    """The published checkpoint keeps its experts in mxfp4 (attention, router and embeddings in
    bf16): the card reads that dtype itself, and the memory check holds the experts at 4.25
    bits a parameter (gpt-oss-120b: about 65 GB in all, one H200)."""
    got = card(name)
    assert got.weight_dtype in ("mxfp4", "fp4")
    assert not got.weight_dtype_problem
    gpu = load_gpu("h200")
    setup = resolve_setup(got, gpu, 1)
    assert setup.dtype == got.weight_dtype
    h = hand(name)
    expected = (h.extra["dense_params"] + h.extra["embed_params"]) * 2 \
        + h.extra["expert_params"] * MXFP4_BITS / 8
    assert memory_per_gpu(got, gpu, setup, K8).weights == pytest.approx(expected, rel=0.02)


# -- fields the cache does not read, and broken configs ------------------------------------------
def test_infinity_in_a_field_the_cache_does_not_read_is_accepted():
    """Nemotron-H's published config says time_step_limit [0.0, Infinity]: not a cache field."""
    assert load("nemotron-h-56b")["time_step_limit"][1] == float("inf")
    assert card("nemotron-h-56b").layers == hand("nemotron-h-56b").layers


def test_a_config_with_infinity_in_an_unread_field_runs_through_the_cli(capsys):
    assert main(["models", "--config", str(CONFIGS / "nemotron-h-56b.json")]) == 0
    assert capsys.readouterr().err == ""


def _edit(name: str, key: str, value, *, text: bool = False) -> dict:
    data = copy.deepcopy(load(name))
    (data["text_config"] if text else data)[key] = value
    return data


def _bad() -> dict[str, tuple[dict, str]]:
    """case -> (a published config with one field broken, the key the refusal must name)."""
    oss = load("gpt-oss-20b")
    types = oss["layer_types"]
    gemma = load("medgemma-27b-it")["text_config"]
    nem = load("nemotron-h-56b")["hybrid_override_pattern"]
    mm = load("minimax-m1")["attn_type_list"]
    return {
        "layer_types shorter than num_hidden_layers":
            (_edit("gpt-oss-20b", "layer_types", types[:-1]), "layer_types"),
        "an unknown layer kind":
            (_edit("gpt-oss-20b", "layer_types", ["banana_attention"] + types[1:]), "layer_types"),
        "a sliding window of 0": (_edit("gpt-oss-20b", "sliding_window", 0), "sliding_window"),
        "a sliding window of -1": (_edit("gpt-oss-20b", "sliding_window", -1), "sliding_window"),
        "gpt-oss layer_types naming no full-attention layer":
            (_edit("gpt-oss-20b", "layer_types", ["sliding_attention"] * len(types)), "layer_types"),
        "gemma-3 layer_types naming no full-attention layer":
            (_edit("medgemma-27b-it", "layer_types", ["sliding_attention"] * len(gemma["layer_types"]),
                   text=True), "layer_types"),
        "a Ministral sliding window of 0":
            (_edit("ministral-8b-instruct-2410", "sliding_window", 0), "sliding_window"),
        "gemma-3 sliding window of 0":
            (_edit("medgemma-27b-it", "sliding_window", 0, text=True), "sliding_window"),
        "llama-4 attention chunk of 0":
            (_edit("llama-4-scout-17b-16e-instruct", "attention_chunk_size", 0, text=True),
             "attention_chunk_size"),
        "a hybrid_override_pattern shorter than num_hidden_layers":
            (_edit("nemotron-h-56b", "hybrid_override_pattern", nem[:-1]), "hybrid_override_pattern"),
        "an unknown character in hybrid_override_pattern":
            (_edit("nemotron-h-56b", "hybrid_override_pattern", "X" + nem[1:]), "hybrid_override_pattern"),
        "attn_type_list shorter than num_hidden_layers":
            (_edit("minimax-m1", "attn_type_list", mm[:-1]), "attn_type_list"),
        "an unknown attention type in attn_type_list":
            (_edit("minimax-m1", "attn_type_list", [2] + mm[1:]), "attn_type_list"),
        "jamba attn_layer_offset not below attn_layer_period":
            (_edit("ai21-jamba-1.5-mini", "attn_layer_offset", 8), "attn_layer_offset"),
        "Infinity as the Jamba mamba_d_state":
            (_edit("ai21-jamba-1.5-mini", "mamba_d_state", float("inf")), "mamba_d_state"),
        "Infinity as the SSM state size": (_edit("nemotron-h-56b", "ssm_state_size", float("inf")),
                                           "ssm_state_size"),
        "Infinity as the sliding window": (_edit("gpt-oss-20b", "sliding_window", float("inf")),
                                           "sliding_window"),
    }


BAD = _bad()


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_broken_config_is_refused_naming_the_key(tmp_path, case):
    data, key = BAD[case]
    with pytest.raises(CardError) as err:
        read_config(written(tmp_path, data))
    assert key in str(err.value)


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_broken_config_is_one_line_and_exit_2_on_the_cli(tmp_path, capsys, case):
    data, key = BAD[case]
    assert main(["models", "--config", str(written(tmp_path, data))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert key in err[0]
