"""`profile --backend torch --config`: a published config, shrunk, built from the card's layer
groups, timed by two depths, its cache checked against the card, the TOML used by a preset."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from emulator.cards.model_card import from_dict, load_card, read_config, shipped  # noqa: E402
from emulator.torch_prefill import architecture as arch_mod  # noqa: E402
from emulator.torch_prefill.architecture import architecture, expected_kv_bytes  # noqa: E402
from emulator.torch_prefill.blocks import _local_attention  # noqa: E402
from emulator.torch_prefill.depth import (  # noqa: E402
    KvMismatch,
    profile_config,
    profile_document,
)
from emulator.torch_prefill.linear_attention import (  # noqa: E402
    chunked_linear_attention,
    decayed_scan,
    recurrent_linear_attention,
)
from prfaas_tui.commands import profile as profile_cmd  # noqa: E402

pytestmark = [pytest.mark.torch]

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "configs"
RUN = {"repeats": 1, "warmup": 0, "threads": 1}
TIMED = {"repeats": 7, "warmup": 1, "threads": 1}  # the median of 7: a busy machine moves few
LENGTHS = [64, 512]  # 8x apart: some 80x the time on a quiet CPU


def tiny_llama() -> dict:
    """Llama-3.1-8B's config with few layers and a small hidden size."""
    data = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    data.update(hidden_size=128, intermediate_size=384, num_hidden_layers=4,
                num_attention_heads=4, num_key_value_heads=2, vocab_size=1024)
    return data


def tiny_qwen35() -> dict:
    """Qwen3.5-35B-A3B (Gated DeltaNet 3:1 gated attention, MoE) shrunk the same way."""
    data = json.loads((CONFIGS / "qwen3.5-35b-a3b.json").read_text())
    tc = data["text_config"]
    tc.update(hidden_size=128, head_dim=32, num_attention_heads=4, num_key_value_heads=2,
              num_hidden_layers=8, layer_types=tc["layer_types"][:8], linear_key_head_dim=32,
              linear_value_head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
              num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64,
              shared_expert_intermediate_size=64, vocab_size=1024)
    return data


def tiny_gemma3() -> dict:
    """Gemma-3 layout (5 sliding : 1 global) with a 32-token window, small."""
    return {"model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 6, "num_attention_heads": 2, "num_key_value_heads": 1,
            "head_dim": 32, "sliding_window": 32, "vocab_size": 512}


@pytest.fixture(scope="module")
def llama_profile():
    card = from_dict(tiny_llama(), None, "tiny-llama")
    return card, profile_config(card, LENGTHS, **TIMED)


@pytest.fixture(scope="module")
def hybrid_profile():
    card = from_dict(tiny_qwen35(), None, "tiny-qwen35")
    return card, profile_config(card, LENGTHS, **TIMED)


def test_units_follow_the_card():
    card = from_dict(tiny_llama(), None, "x")
    a = architecture(card)
    assert [(u.kind, u.count) for u in a.units] == [("gqa", 4), ("ffn", 4)]
    assert a.units[0].dims == {"heads": 4, "kv_heads": 2, "qk": 32, "v": 32, "window": None,
                               "keeps": True}
    assert a.units[1].dims == {"width": 384} and a.vocab == 1024 and not a.slow_kernels
    h = architecture(from_dict(tiny_qwen35(), None, "y"))
    assert [(u.label or u.kind, u.count) for u in h.units] == [
        ("linear", 6), ("gqa", 2), ("ffn", 8), ("moe", 8)]
    assert h.units[0].dims["heads"] * h.units[0].dims["d"] ** 2 == 4 * 32 * 32  # the card's state
    assert h.slow_kernels == ("linear", "moe")


@pytest.mark.parametrize(("name", "dims"), [
    ("qwen3.5-35b-a3b.json", {"heads": 32, "d": 128, "conv_bytes": 3 * (2 * 16 + 32) * 128 * 2}),
    ("minimax-m1.json", {"heads": 64, "d": 128, "conv_bytes": 0}),
    ("kimi-linear-48b-a3b", {"heads": 32, "d": 128, "conv_bytes": 3 * 3 * 32 * 128 * 2}),
])
def test_a_state_unit_takes_the_published_heads_where_flops_tell_them(name, dims):
    card = read_config(CONFIGS / name) if name.endswith(".json") else load_card(name)
    (unit,) = (u for u in architecture(card).units if u.kind == "state")
    assert {k: unit.dims[k] for k in dims} == dims


@pytest.mark.parametrize("name", sorted(p.name for p in CONFIGS.glob("*.json")) + shipped())
def test_every_family_builds_to_the_cards_bytes(name):
    """Published configs and the shipped cards (full size, meta tensors: nothing is allocated):
    the cache a layer of each unit returns is what the card counts per layer."""
    from emulator.torch_prefill.blocks import UnitBlock
    from emulator.torch_prefill.models import rope_tables

    card = read_config(CONFIGS / name) if name.endswith(".json") else load_card(name)
    a = architecture(card)
    n = 40
    total = 0
    for unit in a.mixers:
        with torch.device("meta"):
            block = UnitBlock(a.hidden, unit).to(torch.bfloat16)
            x = torch.empty(1, n, a.hidden, dtype=torch.bfloat16)
            rope = rope_tables(n, block.rope_dim, 1e4, x.device, x.dtype)
            _, cache = block(x, rope)
        total += unit.count * sum(t.numel() * t.element_size() for ts in cache.values() for t in ts)
    assert total == expected_kv_bytes(card, n, 2)


def test_kv_bytes_equal_the_card_and_time_rises(llama_profile, hybrid_profile):
    for card, prof in (llama_profile, hybrid_profile):
        for p in prof.points:
            assert p.kv_bytes == expected_kv_bytes(card, p.length, 4)  # fp32 on the CPU
        assert prof.dtype == "fp32" and prof.device == "cpu"
        short, long = prof.points
        assert long.seconds > short.seconds
    hyb_card, hyb = hybrid_profile
    assert [p.state_bytes for p in hyb.points] == [int(hyb_card.state_bytes)] * 2
    assert [p.state_bytes for p in llama_profile[1].points] == [0, 0]
    # per token: the dense model's KV grows with l, the hybrid's states do not
    llama_card = llama_profile[0]
    assert llama_profile[1].points[1].kv_bytes == 8 * llama_profile[1].points[0].kv_bytes
    assert llama_card.kv_bytes_per_token * 2 == llama_profile[1].points[0].kv_bytes / 64


def test_time_is_base_plus_counts_times_per_layer(llama_profile):
    _, prof = llama_profile
    for p in prof.points:
        assert p.seconds == pytest.approx(p.base_seconds + sum(
            u.count * t for u, t in zip(prof.arch.units, p.unit_seconds, strict=True)))


def test_upper_bound_said_for_the_hybrid(hybrid_profile, llama_profile):
    _, hyb = hybrid_profile
    assert "linear attention" in hyb.upper_bound and "grouped GEMM" in hyb.upper_bound
    doc = tomllib.loads(profile_document(hyb))["profile"]
    assert doc["upper_bound"] is True and doc["upper_bound_reason"] == hyb.upper_bound
    assert "UPPER BOUND" in doc["description"]
    dense = tomllib.loads(profile_document(llama_profile[1]))["profile"]
    assert "upper_bound" not in dense


def test_toml_says_what_and_loads_in_a_preset_that_solves(tmp_path, llama_profile, capsys):
    card, prof = llama_profile
    text = profile_document(prof)
    doc = tomllib.loads(text)["profile"]
    m = doc["measured"]
    assert (m["device"], m["dtype"], m["depths"]) == ("cpu", "fp32", [1, 2])
    assert m["torch"] == torch.__version__.split("+")[0] and "two-depth" in m["method"]
    assert "tensor parallelism" in m["scaling"] and m["date"]
    assert doc["kv_size"]["bytes"] == [expected_kv_bytes(card, n, 4) for n in LENGTHS]
    (tmp_path / "measured.toml").write_text(text)
    preset = (ROOT / "presets" / "toy.toml").read_text()
    head, rest = preset.split("[profiles.fast]", 1)
    rest = rest.split("\n\n", 1)[1]
    preset = head + '[profiles.fast]\nfile = "measured.toml"\n\n' + rest
    preset = preset.replace('threshold = "8K"', 'threshold = "128"').replace(
        'values = ["1K", "32K"]', f"values = {LENGTHS}")
    (tmp_path / "p.toml").write_text(preset)
    from prfaas_tui import cli

    rc = cli.main(["solve", "--preset", str(tmp_path / "p.toml"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc in (0, None) and out["scenario"]
    assert math.isfinite(out["operating_point"]["lambda_max"])


def test_a_cache_the_card_does_not_count_is_refused(monkeypatch):
    card = from_dict(tiny_llama(), None, "x")
    monkeypatch.setattr("emulator.torch_prefill.depth.expected_kv_bytes",
                        lambda c, n, b: expected_kv_bytes(c, n, b) + 1)
    with pytest.raises(KvMismatch, match="card's per-layer model"):
        profile_config(card, [16], **RUN)


def test_windowed_attention_matches_a_masked_reference():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 50, 8) for _ in range(3))
    i = torch.arange(50)[:, None]
    j = torch.arange(50)[None, :]
    for chunked, allowed in ((False, (j <= i) & (i - j < 16)), (True, (j <= i) & (i // 16 == j // 16))):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        got = _local_attention(q, k, v, 16, chunked)
        assert torch.allclose(got, ref, atol=1e-5), chunked


def test_gemma_sliding_layers_keep_the_window(capsys):
    card = from_dict(tiny_gemma3(), None, "g")
    prof = profile_config(card, [16, 96], **RUN)
    assert [p.kv_bytes for p in prof.points] == [expected_kv_bytes(card, n, 4) for n in (16, 96)]
    assert {u.kind for u in prof.arch.units} == {"swa", "gqa", "ffn"}


def test_decayed_scan_in_blocks_equals_the_recurrence():
    torch.manual_seed(1)
    u = torch.randn(1, 2, 11, 3, 4)
    a = -torch.rand(1, 2, 11)
    s0 = torch.randn(1, 2, 3, 4)
    want, s = [], s0.clone()
    for n in range(11):
        s = a[:, :, n, None, None].exp() * s + u[:, :, n]
        want.append(s)
    got = decayed_scan(u, a, s0, block=4)
    assert torch.allclose(got, torch.stack(want, 2), atol=1e-5)


def test_chunked_linear_attention_over_many_blocks():
    torch.manual_seed(2)
    q, k, v = (torch.randn(1, 2, 300, 8) / 3 for _ in range(3))
    g = -torch.rand(1, 2, 300) * 0.1
    o, s = chunked_linear_attention(q, k, v, g, chunk_size=4)  # 75 chunks: two scan blocks
    o_ref, s_ref = recurrent_linear_attention(q, k, v, g)
    assert torch.allclose(o.float(), o_ref, atol=1e-4) and torch.allclose(s, s_ref, atol=1e-4)


# --- the CLI -------------------------------------------------------------------------------
def _cli(argv: list[str]) -> int:
    return profile_cmd.main(["--backend", "torch", *argv])


def test_cli_profiles_a_config_compares_the_card_and_writes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(tiny_llama()))
    out = tmp_path / "m.toml"
    rc = _cli(["--config", str(cfg), "--lengths", "32,128", "--repeats", "1", "--warmup", "0",
               "--threads", "1", "--compare-card", "--gpu", "h200", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "roofline h200" in text and "measured/roofline" in text and "fp32" in text
    assert "tensor parallelism" in text and "UPPER BOUND" not in text
    prof = tomllib.loads(out.read_text())["profile"]
    assert prof["name"] == "llama-3.1-8b@cpu" and prof["measured"]["threads"] == 1
    assert prof["measured"]["roofline_gpu"] == "h200"
    assert len(prof["measured"]["roofline_kernel_seconds"]) == 2


@pytest.mark.parametrize(("argv", "needle"), [
    (["--config", "nope.json"], "--config:"),
    (["--config", "CFG", "--dtype", "fp64"], "--dtype: must be one of bf16, fp16, fp32"),
    (["--config", "CFG", "--depths", "2,1"], "--depths:"),
    (["--config", "CFG", "--gpu", "h200"], "--gpu: names the card"),
    (["--config", "CFG", "--compare-card", "--gpu", "nosuch"], "--gpu:"),
    (["--config", "CFG", "--compare-card"], "--compare-card: name the GPU card"),
    (["--config", "CFG", "--model", "dense-tiny"], "--model: not with --config"),
    (["--model", "dense-tiny", "--dtype", "bf16"], "--dtype: only with --config"),
    (["--depths", "1,3"], "--depths: only with --config"),
    (["--config", "CFG", "--depths", "1"], "--depths: expected two depths"),
    (["--config", "CFG", "--lengths", "0"], "--lengths:"),
])
def test_cli_bad_input_is_one_line(tmp_path, capsys, argv, needle):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(tiny_llama()))
    rc = _cli(["--lengths", "16", "--device", "cpu"] + [str(cfg) if a == "CFG" else a for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and err.count("\n") == 1, err


def test_without_torch_one_line_and_exit_2(tmp_path):
    script = ("import sys; sys.modules['torch'] = None\n"
              "from prfaas_tui.commands import profile\n"
              f"sys.exit(profile.main(['--config', {str(CONFIGS / 'llama-3.1-8b.json')!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "pip install" in proc.stderr


def test_architecture_refuses_an_impossible_geometry():
    card = from_dict(tiny_llama(), None, "x")
    from dataclasses import replace

    bad = replace(card.groups[0], pair_flops=2.0 * 7, kv_bytes_per_token=2.0 * 5)
    with pytest.raises(arch_mod.CardError, match="no attention geometry"):
        architecture(replace(card, groups=(bad,)))


@pytest.mark.slow  # three processes that import torch: about 10 s
def test_gpu_script_parses_and_its_cpu_path_runs(tmp_path):
    script = ROOT / "benchmarks" / "gpu_profile.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    cfg = tmp_path / "tiny" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps(tiny_llama()))
    env = {"PATH": "/usr/bin:/bin", "DEVICE": "cpu", "SIZE": "tiny", "LENGTHS": "32,64",
           "CONFIG": str(cfg), "CONFIG_LENGTHS": "32,64", "HYBRID_CONFIG": "", "REPEATS": "1",
           "WARMUP": "0", "THREADS": "1", "PYTHON": sys.executable, "OUT": str(tmp_path / "out")}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "dense-tiny.toml", "gpu_profile.log", "hybrid-tiny.toml", "tiny.toml"]


def test_experts_weight_each_tokens_top_k():
    from emulator.torch_prefill.blocks import Experts

    torch.manual_seed(0)
    e = Experts(16, 4, 2, 8)
    x = torch.randn(1, 10, 16)
    flat = x.reshape(-1, 16)
    w, c = e.router(flat).softmax(-1).topk(2, -1)
    ref = torch.stack([sum(w[t, s] * e.experts[c[t, s]](flat[t:t + 1])[0] for s in range(2))
                       for t in range(10)])
    assert torch.allclose(e(x).reshape(-1, 16), ref, atol=1e-6)


@pytest.mark.parametrize(("extra", "needle"), [
    ("upper_bound = \"yes\"", "profile.upper_bound: must be true or false"),
    ("upper_bond = true", "profile.upper_bond: unknown key"),
])
def test_a_profile_file_stays_strict_beside_its_record(tmp_path, extra, needle):
    from emulator.scenario import presets

    path = tmp_path / "m.toml"
    path.write_text("[profile]\nname = \"m\"\n" + extra + "\n"
                    "prefill_time = { lengths = [1, 2], seconds = [0.1, 0.2] }\n"
                    "kv_size = { lengths = [1, 2], bytes = [10, 20] }\n"
                    "[profile.measured]\nanything = [1, \"x\"]\n")
    r = presets.Reader({"file": str(path)}, tmp_path / "x.toml", "profiles.m")
    with pytest.raises(presets.PresetError, match=needle):
        presets._profile_file(r, tmp_path)
