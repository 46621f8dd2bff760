"""Model and GPU cards are total parsers: any config.json or GPU TOML either loads or is one
line naming the file and the key, with exit 2 (never a traceback, a hang or a silent answer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from emulator.cards import CardError
from emulator.cards.gpu import read_gpu
from emulator.cards.model_card import read_config, shipped_dir
from prfaas_tui.cli import main

GPUS = shipped_dir().parent / "gpus"


def config(tmp_path: Path, card: str = "qwen3-235b-a22b", **edits) -> Path:
    data = json.loads((shipped_dir() / f"{card}.json").read_text())
    for k, v in edits.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    p = tmp_path / "config.json"
    p.write_text(json.dumps(data))
    return p


def one_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_json_nested_50000_deep_is_one_line(tmp_path, capsys):
    p = tmp_path / "deep.json"
    p.write_text('{"a": ' * 50_000 + "1" + "}" * 50_000)
    assert "nested deeper than 32 levels" in one_line(capsys, ["models", "--config", str(p)])
    p.write_text('{"a": ' * 40 + "1" + "}" * 40)  # under the recursion limit, over ours
    assert "nested deeper than 32 levels" in one_line(capsys, ["models", "--config", str(p)])


def test_toml_nested_inline_tables_are_one_line(tmp_path, capsys):
    p = tmp_path / "deep.toml"
    p.write_text("x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n")
    assert "nested deeper than" in one_line(capsys, ["models", "--gpu", str(p)])
    assert "nested deeper than" in one_line(capsys, ["solve", "--preset", str(p)])


def test_a_400_digit_layer_count_is_refused_not_overflowed(tmp_path, capsys):
    p = config(tmp_path)
    p.write_text(p.read_text().replace('"num_hidden_layers": 94', '"num_hidden_layers": '
                                       + "9" * 400))
    line = one_line(capsys, ["models", "--config", str(p)])
    assert "num_hidden_layers: must be between 1 and" in line and "400-digit" in line


def test_huge_integer_gpu_fields_are_refused(tmp_path, capsys):
    text = (GPUS / "h200.toml").read_text().replace("bf16_tflops = 989.4",
                                                    "bf16_tflops = " + "9" * 400)
    p = tmp_path / "g.toml"
    p.write_text(text)
    assert "bf16_tflops: must be >=" in one_line(capsys, ["models", "--gpu", str(p)])


def test_layer_types_holding_objects(tmp_path, capsys):
    p = config(tmp_path, "qwen3.5-397b-a17b")
    data = json.loads(p.read_text())
    tc = data.get("text_config", data)
    tc["layer_types"] = [{"x": 1}] * len(tc.get("layer_types", [0] * 60))
    p.write_text(json.dumps(data))
    assert "layer_types: must list" in one_line(capsys, ["models", "--config", str(p)])


def test_top_k_above_the_experts(tmp_path, capsys):
    p = config(tmp_path, num_experts=8, num_experts_per_tok=16)
    line = one_line(capsys, ["models", "--config", str(p)])
    assert "num_experts_per_tok: 16 experts per token for 8 experts" in line


def test_more_kv_heads_than_query_heads(tmp_path, capsys):
    p = config(tmp_path, num_attention_heads=32, num_key_value_heads=64)
    assert "num_key_value_heads: 64 KV heads for 32 query heads" in one_line(
        capsys, ["models", "--config", str(p)])


def kimi(tmp_path: Path, full: list[int]) -> Path:
    p = config(tmp_path, "kimi-linear-48b-a3b")
    data = json.loads(p.read_text())
    data["linear_attn_config"]["full_attn_layers"] = full
    data["linear_attn_config"].pop("kda_layers", None)
    p.write_text(json.dumps(data))
    return p


def test_kimi_layer_indices_unique_and_in_range(tmp_path, capsys):
    line = one_line(capsys, ["models", "--config", str(kimi(tmp_path, [4, 4, 8, 12]))])
    assert "full_attn_layers: lists layer 4 more than once" in line
    line = one_line(capsys, ["models", "--config", str(kimi(tmp_path, [4, 8, 999]))])
    assert "full_attn_layers: entries must be between 1 and 27" in line


def test_a_linear_head_dimension_of_zero(tmp_path, capsys):
    """Ring/Bailing: no head_dim and more heads than hidden units gave linear layers 0 bytes."""
    p = config(tmp_path, "ring-2.5-1t", head_dim=None, linear_head_dim=None)
    data = json.loads(p.read_text())
    data["num_attention_heads"] = data["hidden_size"] * 2
    data["num_key_value_heads"] = data["num_attention_heads"]
    p.write_text(json.dumps(data))
    line = one_line(capsys, ["models", "--config", str(p)])
    assert "derived from the other fields is 0" in line


def test_latin1_config_is_refused(tmp_path, capsys):
    p = config(tmp_path)
    data = json.loads(p.read_text())
    data["_card"] = {"name": "modèle", "source": "x"}
    p.write_bytes(json.dumps(data, ensure_ascii=False).encode("latin-1"))
    assert "expected UTF-8 text, found byte 0xe8" in one_line(capsys, ["models", "--config", str(p)])


def test_control_characters_in_a_gpu_name_stay_on_one_line(tmp_path, capsys):
    text = (GPUS / "h200.toml").read_text()
    p = tmp_path / "g.toml"
    p.write_text('name = "H\\nX\\u001b[31m"\n' + "\n".join(
        line for line in text.splitlines() if not line.startswith("name")))
    line = one_line(capsys, ["models", "--gpu", str(p)])
    assert "name: must be at most 100 printable characters" in line and "\\n" in line


def test_zero_throughput_gpu_never_warns_nor_writes_nan(tmp_path, capsys):
    """A GPU whose peak times its MFU underflows to 0 divided by zero in the roofline."""
    text = (GPUS / "h200.toml").read_text()
    p = tmp_path / "g.toml"
    p.write_text(text.replace("bf16_tflops = 989.4", "bf16_tflops = 1e-300"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CardError, match="bf16_tflops: must be >= 0.001"):
            read_gpu(p)
    r = subprocess.run([sys.executable, "-m", "prfaas_tui.cli", "new", "--model", "qwen3-235b-a22b",
                        "--prefill-gpu", str(p), "--out", str(tmp_path / "x.toml"), "--json"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONWARNINGS": "default"})
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Warning" not in r.stderr


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo", "dir"])
def test_devices_fifos_and_folders_are_refused_unread(tmp_path, capsys, special):
    if special == "fifo":
        special = str(tmp_path / "f.json")
        os.mkfifo(special)  # opening it would block: it must never be opened
    elif special == "dir":
        special = str(tmp_path / "d.json")
        os.mkdir(special)
    for argv in (["models", "--config", special], ["models", "--gpu", special],
                 ["solve", "--preset", special], ["solve", "--trace", special]):
        line = one_line(capsys, argv)
        assert special in line and ("regular" in line or "no such preset file" in line), line


def test_a_card_over_its_cap_is_refused(tmp_path, capsys):
    p = config(tmp_path)
    data = json.loads(p.read_text())
    data["padding"] = "x" * (9 << 20)
    p.write_text(json.dumps(data))
    assert "over the 8 MiB a model card may take" in one_line(capsys, ["models", "--config", str(p)])


def test_every_shipped_card_still_loads():
    for card in shipped_dir().glob("*.json"):
        read_config(card)
    for gpu in GPUS.glob("*.toml"):
        read_gpu(gpu)
