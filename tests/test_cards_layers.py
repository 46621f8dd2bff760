"""The per-layer cache model and the family registry: each reader's layout rules and defaults on
small configs written here, the refusals of bad layouts (also through the CLI: one line, exit
2), the prefill cost of windows, chunks and recurrent layers, and `models --json`'s fields."""

from __future__ import annotations

import json

import numpy as np
import pytest

from emulator.cards import CardError
from emulator.cards.families import READERS, reader_for
from emulator.cards.fields import Fields
from emulator.cards.gpu import load_gpu
from emulator.cards.kernel import kernel_parts, resolve_setup, weight_bytes
from emulator.cards.layers import KINDS, LayerGroup
from emulator.cards.model_card import from_dict, read_config
from prfaas_tui.cli import main

BASE = {"hidden_size": 1024, "num_hidden_layers": 12, "num_attention_heads": 8,
        "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 4096, "vocab_size": 1000}
PER_TOKEN = 2 * 2 * 128 * 2  # K and V, 2 KV heads of 128, bf16


def card(**fields):
    return from_dict({**BASE, **fields}, "cfg.json")


def refusal(**fields) -> str:
    with pytest.raises(CardError) as err:
        card(**fields)
    return str(err.value)


# -- the registry ----------------------------------------------------------------------------------
def test_every_family_is_found_by_model_type_and_by_architecture():
    for r in READERS:
        for mt in r.model_types:
            assert reader_for(Fields({"model_type": mt}, None)) is r, mt
        for a in r.arch:
            found = reader_for(Fields({"architectures": [a.title() + "ForCausalLM"]}, None))
            assert found.family == r.family or a in found.arch, (a, found.family)


def test_a_family_is_found_by_a_field_only_it_has():
    assert reader_for(Fields({"hybrid_override_pattern": "M*"}, None)).family == "nemotron-h"
    assert reader_for(Fields({"attn_type_list": [1]}, None)).family == "minimax-lightning"
    assert reader_for(Fields({"index_head_dim": 128}, None)).family == "deepseek-v3.2"


def test_an_unknown_architecture_lists_the_families():
    msg = refusal(model_type="rwkv7")
    assert msg.startswith("cfg.json: model_type: unknown architecture 'rwkv7'")
    assert "gemma3" in msg and "nemotron-h" in msg


def test_kinds_are_the_agreed_names():
    assert KINDS == ("gqa", "mla", "swa", "chunked", "linear", "ssm", "lightning")


# -- attention layouts -----------------------------------------------------------------------------
def test_gemma2_alternates_local_and_global_with_no_pattern_field():
    c = card(model_type="gemma2", sliding_window=4096)
    assert c.layers == {"swa": 6, "gqa": 6}
    assert c.kv_bytes(10_000) == 6 * PER_TOKEN * 10_000 + 6 * PER_TOKEN * 4096
    assert c.family == "gemma2"


def test_gemma3_globals_every_pattern_th_layer_and_defaults_its_window():
    c = card(model_type="gemma3_text", sliding_window_pattern=4)
    assert c.layers == {"swa": 9, "gqa": 3}
    assert c.breaks() == [4096.0]  # Gemma-3's default window


def test_gemma3_defaults_vocab_and_ties_the_embeddings():
    cfg = {k: v for k, v in BASE.items() if k != "vocab_size"}
    c = from_dict({**cfg, "model_type": "gemma3_text"}, "cfg.json")
    assert c.matmul.embed == 262_208 * 1024


def test_gemma4_last_layer_is_global_with_its_own_head_size_and_kv_heads():
    c = card(model_type="gemma4_text", layer_types=["sliding_attention"] * 12, global_head_dim=256,
             num_global_key_value_heads=1, attention_k_eq_v=True)
    assert c.layers == {"swa": 11, "gqa": 1}
    assert c.kv_bytes_per_token == 11 * PER_TOKEN + 1 * 2 * 1 * 256 * 2


def test_gemma4_kv_shared_layers_keep_no_kv():
    full = card(model_type="gemma4_text", global_head_dim=128)
    shared = card(model_type="gemma4_text", global_head_dim=128, num_kv_shared_layers=4)
    assert shared.layers == full.layers
    # layers 8..11 reuse earlier KV: 3 sliding (8, 9, 10) and one global (11) keep none
    assert full.kv_bytes_per_token - shared.kv_bytes_per_token == 4 * PER_TOKEN


def test_gemma4_experts_beside_the_dense_mlp_read_top_k_experts():
    c = card(model_type="gemma4_text", global_head_dim=128, enable_moe_block=True, num_experts=8,
             top_k_experts=2, moe_intermediate_size=256)
    assert c.matmul.top_k == 2 and c.matmul.experts == 8
    assert c.matmul.routed_active == 12 * 2 * 3 * 1024 * 256
    assert c.matmul.act_width == 12 * 4096  # the dense MLP runs in every layer


def test_mistral_slides_every_layer_when_a_window_is_set_and_reads_layer_types_when_given():
    assert card(model_type="mistral", sliding_window=4096).layers == {"swa": 12}
    assert card(model_type="mistral", sliding_window=None).layers == {"gqa": 12}
    types = ["full_attention", "sliding_attention", "sliding_attention"] * 4
    assert card(model_type="mistral", sliding_window=32768, layer_types=types).layers == \
        {"gqa": 4, "swa": 8}


def test_qwen_slides_only_with_use_sliding_window_from_max_window_layers():
    assert card(model_type="qwen2", sliding_window=4096).layers == {"gqa": 12}
    c = card(model_type="qwen2", sliding_window=4096, use_sliding_window=True, max_window_layers=8)
    assert c.layers == {"gqa": 8, "swa": 4}


def test_llama4_interleaved_moe_and_nope_layers():
    c = card(model_type="llama4_text", attention_chunk_size=1024, num_local_experts=4,
             num_experts_per_tok=1, interleave_moe_layer_step=2, intermediate_size_mlp=8192)
    assert c.layers == {"chunked": 9, "gqa": 3}
    m = c.matmul
    assert m.moe_layers == 6 and m.experts == 4
    # dense layers of intermediate_size_mlp, a shared expert of intermediate_size in each MoE layer
    assert m.act_width == 6 * 8192 + 6 * 4096


def test_llama4_without_a_chunk_is_all_full_attention():
    assert card(model_type="llama4_text").layers == {"gqa": 12}


def test_chunked_layers_hold_at_most_one_chunk():
    c = card(model_type="llama4_text", attention_chunk_size=1000)
    per = PER_TOKEN
    assert c.kv_bytes(999) == 12 * per * 999
    assert c.kv_bytes(5000) == 3 * per * 5000 + 9 * per * 1000
    assert c.to_dict()["chunks"] == {"1000": 9} and c.to_dict()["windows"] == {}


def test_deepseek_v32_indexer_keys_keep_their_own_dtype():
    cfg = {**BASE, "model_type": "deepseek_v32", "kv_lora_rank": 512, "qk_rope_head_dim": 64,
           "qk_nope_head_dim": 128, "v_head_dim": 128, "q_lora_rank": 256, "index_n_heads": 4,
           "index_head_dim": 128, "index_topk": 256}
    c = from_dict(cfg, "cfg.json")
    assert c.kv_bytes_per_token == 12 * ((512 + 64) * 2 + 132)
    assert c.with_kv_dtype("fp8").kv_bytes_per_token == 12 * ((512 + 64) + 132)
    assert c.layers == {"mla": 12} and c.breaks() == [256.0]


# -- state-space and lightning layouts --------------------------------------------------------------
MAMBA2 = {"mamba_num_heads": 16, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 2,
          "conv_kernel": 4}
SSM_STATE = 16 * 64 * 128 * 4 + 3 * (16 * 64 + 2 * 2 * 128) * 2


def test_nemotron_h_pattern_counts_only_the_layers_that_keep_something():
    c = card(model_type="nemotron_h", hybrid_override_pattern="M-M*M-M-M*M-", **MAMBA2)
    assert c.layers == {"ssm": 6, "gqa": 2} and c.num_layers == 12
    assert c.state_bytes == 6 * SSM_STATE
    assert c.kv_bytes(100) == 6 * SSM_STATE + 2 * PER_TOKEN * 100


def test_a_named_state_dtype_replaces_fp32():
    c = card(model_type="nemotron_h", hybrid_override_pattern="M*" * 6, mamba_ssm_cache_dtype="bfloat16",
             **MAMBA2)
    assert c.state_bytes == 6 * (16 * 64 * 128 * 2 + 3 * (16 * 64 + 2 * 2 * 128) * 2)


def test_jamba_attention_period_and_offset():
    c = card(model_type="jamba", num_hidden_layers=16, attn_layer_period=8, attn_layer_offset=4,
             num_experts=4, num_experts_per_tok=2, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2)
    assert c.layers == {"ssm": 14, "gqa": 2}
    d_inner = 2 * 1024
    assert c.state_bytes == 14 * (d_inner * 16 * 4 + 3 * d_inner * 2)  # Mamba-1
    assert c.matmul.moe_layers == 8


def test_falcon_h1_keeps_a_kv_and_a_state_in_every_layer():
    c = card(model_type="falcon_h1", mamba_d_ssm=1024, mamba_n_heads=16, mamba_d_head=64,
             mamba_d_state=64, mamba_n_groups=1, time_step_limit=[0.0, float("inf")])
    assert c.layers == {"ssm": 12, "gqa": 12} and c.num_layers == 12
    assert c.kv_bytes_per_token == 12 * PER_TOKEN


def test_zamba2_default_layout_is_the_architectures():
    c = card(model_type="zamba2", num_hidden_layers=54)
    assert c.layers == {"ssm": 54, "gqa": 9}


def test_zamba2_shared_blocks_run_at_each_hybrid_layer_but_are_stored_once():
    types = ["mamba", "hybrid"] * 6
    c = card(model_type="zamba2", layers_block_type=types, num_mem_blocks=2, mamba_d_state=64,
             mamba_headdim=64, num_key_value_heads=8)
    assert c.layers == {"ssm": 12, "gqa": 6}
    m = c.matmul
    assert m.reused > 0 and c.total_params == m.dense - m.reused + m.embed
    assert c.kv_bytes_per_token == 6 * 2 * 8 * 256 * 2  # attention over 2 x hidden, 8 heads of 256


def test_minimax_lightning_state_is_heads_x_head_dim_squared_in_fp32():
    c = card(model_type="minimax_m1", attn_type_list=[0, 0, 0, 1] * 3, num_local_experts=4,
             num_experts_per_tok=2)
    assert c.layers == {"lightning": 9, "gqa": 3}
    assert c.state_bytes == 9 * 8 * 128 * 128 * 4


# -- bad layouts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fields, key", [
    ({"model_type": "gemma3_text", "layer_types": ["sliding_attention"] * 11},
     "layer_types: has 11 entries for 12 layers"),
    ({"model_type": "mistral", "layer_types": ["full_attention"] * 11 + ["local"]},
     "layer_types: unknown layer kind 'local'"),
    ({"model_type": "gemma2", "sliding_window": 0}, "sliding_window: must be between 1"),
    ({"model_type": "gemma3_text", "sliding_window_pattern": 13}, "sliding_window_pattern: names no"),
    ({"model_type": "llama4_text", "attention_chunk_size": 64, "no_rope_layers": [1] * 12},
     "no_rope_layers: names no"),
    ({"model_type": "jamba", "attn_layer_period": 4, "attn_layer_offset": 4}, "attn_layer_offset"),
    ({"model_type": "zamba2", "layers_block_type": ["mamba"] * 11 + ["transformer"]},
     "layers_block_type: unknown layer kind 'transformer'"),
    ({"model_type": "gemma4_text", "num_kv_shared_layers": 12}, "num_kv_shared_layers"),
    ({"model_type": "falcon_h1", "mamba_d_ssm": 256, "mamba_n_heads": 4, "mamba_d_head": 64,
      "mamba_d_state": float("nan")}, "mamba_d_state: must be a whole number"),
    ({"model_type": "falcon_h1", "mamba_n_heads": 4, "mamba_d_head": 64}, "mamba_d_head: 64 x 4 heads"),
])
def test_bad_layouts_name_their_key(fields, key):
    assert key in refusal(**fields)


def test_gemma_text_config_keys_are_named_in_full():
    data = {"model_type": "gemma3", "text_config": {**BASE, "model_type": "gemma3_text",
                                                    "sliding_window": -1}}
    with pytest.raises(CardError) as err:
        from_dict(data, "cfg.json")
    assert str(err.value).startswith("cfg.json: text_config.sliding_window: must be between 1")


def write(tmp_path, **fields):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**BASE, **fields}))
    return p


def test_a_bad_layout_is_one_line_and_exit_2_on_the_cli(tmp_path, capsys):
    p = write(tmp_path, model_type="gpt_oss", layer_types=["sliding_attention"] * 12,
              num_local_experts=4, num_experts_per_tok=2)
    assert main(["models", "--config", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "layer_types: names no full_attention layer" in err[0]


def test_infinity_is_refused_only_in_a_field_that_is_read(tmp_path, capsys):
    p = tmp_path / "config.json"
    text = json.dumps({**BASE, "model_type": "mistral", "sliding_window": 4096, "rope_scaling": {
        "factor": 1.0}, "max_position_embeddings": 1}).replace('"factor": 1.0', '"factor": Infinity')
    p.write_text(text)
    assert main(["models", "--config", str(p)]) == 0
    p.write_text(text.replace('"sliding_window": 4096', '"sliding_window": Infinity'))
    assert main(["models", "--config", str(p)]) == 2
    assert "sliding_window: must be a whole number, got inf" in capsys.readouterr().err


# -- quantized checkpoints --------------------------------------------------------------------------
def test_mxfp4_and_nvfp4_checkpoints_get_their_own_weight_sizes():
    oss = card(model_type="gpt_oss", num_local_experts=4, num_experts_per_tok=2,
               quantization_config={"quant_method": "mxfp4"})
    assert oss.weight_dtype == "mxfp4" and weight_bytes("mxfp4") == (2.0, 4.25 / 8)
    nv = card(model_type="llama", quantization_config={"quant_method": "modelopt", "quant_algo": "NVFP4"})
    assert nv.weight_dtype == "nvfp4" and weight_bytes("nvfp4") == (4.5 / 8, 4.5 / 8)


def test_an_unmodelled_quantization_is_named_and_the_hint_says_what_dtype_means(tmp_path, capsys):
    c = card(model_type="llama", quantization_config={"quant_method": "awq", "bits": 4})
    assert c.weight_dtype == "" and "awq at 4 bits is not a modelled dtype" in c.weight_dtype_problem
    assert "here nvfp4 (4-bit weights in every GEMM" in c.weight_dtype_problem
    p = write(tmp_path, model_type="llama", quantization_config={"quant_method": "awq"})
    assert main(["models", "--config", str(p), "--gpu", "h200"]) == 2
    err = capsys.readouterr().err
    assert "awq is not a modelled dtype" in err and "--dtype" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("q, dtype", [
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}, "nvfp4"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}, "nvfp4"),
    ({"quant_method": "gptq", "bits": 8}, "fp8"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "nvfp4"),
])
def test_a_weight_only_quantized_checkpoint_names_the_dtype_that_serves_it(tmp_path, capsys, q,
                                                                          dtype):
    """AWQ, GPTQ and bitsandbytes checkpoints: one line naming the --dtype nearest to how they
    store their weights, and that --dtype reads them."""
    p = write(tmp_path, model_type="llama", quantization_config=q)
    assert main(["models", "--config", str(p), "--gpu", "h200"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"here {dtype} (" in err, err
    assert main(["models", "--config", str(p), "--gpu", "h200", "--dtype", dtype]) == 0


# -- prefill cost of the new kinds ------------------------------------------------------------------
def test_chunked_attention_pairs_are_exact_at_every_multiple_of_the_chunk():
    g = LayerGroup("chunked", 1, 1.0, 100, 0.0, 1.0)
    n = np.array([50.0, 100.0, 300.0, 1000.0])
    exact = [sum((i - 1) % 100 + 1 for i in range(1, int(x) + 1)) for x in n]
    assert list(g.flops(n)) == exact
    between = sum((i - 1) % 100 + 1 for i in range(1, 251))
    assert between < g.flops(np.array(250.0)) <= between + 100**2 / 8


def test_window_and_chunk_costs_grow_linearly_past_their_size():
    for kind in ("swa", "chunked"):
        g = LayerGroup(kind, 1, 1.0, 128, 0.0, 1.0)
        a, b, c = g.flops(np.array([1000.0, 2000.0, 3000.0]))
        assert b - a == pytest.approx(c - b)


def test_recurrent_layers_cost_linear_in_l_from_their_state():
    c = card(model_type="nemotron_h", hybrid_override_pattern="M" * 12, **MAMBA2)
    ssm = c.groups[0]
    assert ssm.token_flops >= 4 * 16 * 64 * 128  # update and read-out of the state
    gpu = load_gpu("h200")
    setup = resolve_setup(c, gpu, 1)
    lin = [float(kernel_parts(c, gpu, setup, n)["linear"]) for n in (1e4, 2e4, 3e4)]
    assert lin[1] - lin[0] == pytest.approx(lin[2] - lin[1], rel=1e-9)
    att = float(kernel_parts(c, gpu, setup, 1e4)["attention"])
    assert att == 0.0


def test_a_sliding_window_model_prefills_faster_than_its_full_attention_twin():
    gpu = load_gpu("h200")
    full, swa = card(model_type="mistral"), card(model_type="mistral", sliding_window=1024)
    t = [float(kernel_parts(c, gpu, resolve_setup(c, gpu, 1), 131072)["attention"]) for c in (full, swa)]
    assert t[1] < t[0] / 10


# -- where the numbers show -------------------------------------------------------------------------
def test_models_json_has_the_layer_table_and_s_kv_per_length(tmp_path, capsys):
    p = write(tmp_path, model_type="llama4_text", attention_chunk_size=1024)
    assert main(["models", "--config", str(p), "--json", "--lengths", "1K,8K"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["layers"] == {"chunked": 9, "gqa": 3}
    rows = {g["kind"]: g for g in d["layer_groups"]}
    assert rows["chunked"]["chunk"] == 1024 and rows["chunked"]["window"] is None
    assert rows["chunked"]["kv_bytes_per_token"] == PER_TOKEN and rows["gqa"]["state_bytes"] == 0
    assert d["chunks"] == {"1024": 9}
    assert d["s_kv"] == [{"length": 1024, "kv_bytes": 12 * PER_TOKEN * 1024},
                         {"length": 8192, "kv_bytes": 3 * PER_TOKEN * 8192 + 9 * PER_TOKEN * 1024}]


def test_models_text_shows_the_kinds_and_the_state(tmp_path, capsys):
    p = write(tmp_path, model_type="nemotron_h", hybrid_override_pattern="M*" * 6, **MAMBA2)
    assert main(["models", "--config", str(p)]) == 0
    out = capsys.readouterr().out
    assert "cache per layer kind" in out and "ssm" in out and "S_kv:" in out


def test_the_published_nemotron_config_reads_through_read_config():
    from tests.hybrid_reference import CONFIGS
    c = read_config(CONFIGS / "nemotron-h-56b.json")
    assert c.family == "nemotron-h" and c.state_bytes > 0


def test_aiconfigurator_is_not_asked_for_a_4_bit_float_mode_it_is_not_given():
    from emulator.cards.aic import AicUnavailable, kernel_curve
    oss = card(model_type="gpt_oss", num_local_experts=4, num_experts_per_tok=2,
               quantization_config={"quant_method": "mxfp4"})
    gpu = load_gpu("h200")
    with pytest.raises(AicUnavailable, match="no mxfp4 GEMM mode"):
        kernel_curve(oss, gpu, resolve_setup(oss, gpu, 1))


def test_the_prefix_cache_sees_an_ssm_state_as_a_snapshot_and_the_kv_per_token():
    """The prefix cache splits S_kv into a fixed state (reusable only at the exact length it was
    saved at) and a per-token KV: for a Mamba hybrid those are its states and its attention KV."""
    from emulator.cards.kernel import Setup
    from emulator.cards.roofline import roofline_profile
    from emulator.sim.routing.prefix_cache import kv_layout
    c = card(model_type="nemotron_h", hybrid_override_pattern="M*" * 6, **MAMBA2)
    layout = kv_layout(roofline_profile(c, load_gpu("h200"), Setup(gpus=1, tp=1, ep=1)))
    assert layout.state_bytes == pytest.approx(c.state_bytes, rel=1e-6)
    assert layout.per_token_bytes == pytest.approx(6 * PER_TOKEN, rel=1e-9)


def test_granite_4_h_small_total_from_its_published_fields():
    """ibm-granite/granite-4.0-h-small (32.2B total, 9B active): 72 experts of 768, top-10, a
    1,536-wide shared MLP in all 40 layers, 4 attention layers, the Mamba-2 defaults."""
    c = from_dict({"model_type": "granitemoehybrid", "hidden_size": 4096, "num_hidden_layers": 40,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 72,
                   "num_experts_per_tok": 10, "shared_intermediate_size": 1536,
                   "intermediate_size": 768, "mamba_d_state": 128, "mamba_d_conv": 4,
                   "mamba_expand": 2, "tie_word_embeddings": True, "vocab_size": 100352,
                   "layer_types": ["mamba"] * 36 + ["attention"] * 4}, "cfg.json")
    assert c.total_params == pytest.approx(32.2e9, rel=0.02)
    assert c.active_params == pytest.approx(9e9, rel=0.1)
    assert c.state_bytes == 36 * (128 * 64 * 128 * 4 + 3 * (8192 + 2 * 128) * 2)
