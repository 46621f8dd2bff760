"""`prfaas-tui profile --import`: measured prefill latencies (a CSV, vLLM's benchmark JSON,
SGLang's JSON lines) become a table profile with exactly their points, the card's S_kv, and
what it was measured on; the profile loads in a preset and solves; malformed files are one
line naming file and line."""

import json
import tomllib

import pytest

from emulator.cards.model_card import load_card
from emulator.optimizer import search
from emulator.scenario import presets
from prfaas_tui.cli import main

CARD = "qwen3-235b-a22b"


def _import(tmp_path, capsys, name: str, text: str, *extra: str) -> dict:
    src = tmp_path / name
    src.write_text(text)
    out = tmp_path / "measured.toml"
    assert main(["profile", "--import", str(src), "--card", CARD, "--out", str(out), *extra]) == 0
    capsys.readouterr()
    return tomllib.loads(out.read_text())["profile"]


def _one_error_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_csv_points_exactly_with_the_median_of_repeats(tmp_path, capsys):
    prof = _import(tmp_path, capsys, "lat.csv",
                   "input_tokens,seconds\n8192,0.70\n1024,0.45\n8192,0.74\n8192,0.90\n32768,1.9\n",
                   "--measured-on", "8xH200, vLLM, TP8")
    assert prof["prefill_time"] == {"lengths": [1024, 8192, 32768], "seconds": [0.45, 0.74, 1.9]}
    card = load_card(CARD)
    assert prof["kv_size"]["bytes"] == [card.kv_bytes(n) for n in (1024, 8192, 32768)]
    assert "8xH200, vLLM, TP8" in prof["description"] and "5 request(s)" in prof["description"]


def test_csv_with_a_column_map_in_milliseconds(tmp_path, capsys):
    prof = _import(tmp_path, capsys, "x.csv", "prompt,ttft_ms,other\n2048,500,a\n4096,800,b\n",
                   "--columns", "input=prompt,ms=ttft_ms")
    assert prof["prefill_time"] == {"lengths": [2048, 4096], "seconds": [0.5, 0.8]}


def test_vllm_benchmark_json(tmp_path, capsys):
    result = {"date": "20260101-120000", "backend": "vllm", "model_id": "Qwen/Qwen3-235B-A22B",
              "max_concurrency": 1, "request_rate": "inf", "num_prompts": 4,
              "input_lens": [1024, 8192, 32768, 8192, 4096], "output_lens": [1, 1, 1, 1, 1],
              "ttfts": [0.41, 0.55, 1.50, 0.57, 0.0]}  # the last request failed
    prof = _import(tmp_path, capsys, "vllm.json", json.dumps(result), "--kv-dtype", "fp8")
    assert prof["prefill_time"] == {"lengths": [1024, 8192, 32768], "seconds": [0.41, 0.56, 1.5]}
    assert "vLLM benchmark vllm.json" in prof["description"]
    assert "model_id Qwen/Qwen3-235B-A22B" in prof["description"] and "1 failed" in prof["description"]
    card = load_card(CARD).with_kv_dtype("fp8")
    assert prof["kv_size"]["bytes"][0] == card.kv_bytes(1024)


def test_sglang_json_lines(tmp_path, capsys):
    runs = [{"backend": "sglang", "max_concurrency": 1, "input_lens": [1000, 2000], "ttfts": [0.4, 0.5]},
            {"backend": "sglang", "max_concurrency": 1, "input_lens": [2000, 3000], "ttfts": [0.7, 0.9]}]
    prof = _import(tmp_path, capsys, "sgl.jsonl", "\n".join(json.dumps(r) for r in runs) + "\n")
    assert prof["prefill_time"] == {"lengths": [1000, 2000, 3000], "seconds": [0.4, 0.6, 0.9]}
    assert prof["description"].startswith("measured: SGLang benchmark sgl.jsonl")


def test_the_imported_profile_is_usable_by_a_preset(tmp_path, capsys):
    _import(tmp_path, capsys, "lat.csv", "input_tokens,seconds\n1024,0.45\n8192,0.72\n32768,1.84\n131072,7.4\n")
    text = (presets.presets_dir() / "paper-case-study.toml").read_text()
    start = text.index("[profiles.h200]")
    end = text.index("# ASSUMPTION: the paper prints no H20")
    text = text[:start] + '[profiles.h200]\nfile = "measured.toml"\n\n' + text[end:]
    p = tmp_path / "p.toml"
    p.write_text(text)
    sc = presets.load(p)
    assert sc.system.prfaas.t_prefill(8192) == pytest.approx(0.72)
    assert sc.system.prfaas.description.startswith("measured: CSV lat.csv")
    assert search(sc.system, sc.mode).best.lambda_max > 0


@pytest.mark.parametrize("name,text,where", [
    ("bad.csv", "input_tokens,seconds\n1024,0.4\n2048,fast\n", "bad.csv:3: latency 'fast'"),
    ("bad.csv", "input_tokens,seconds\n1024.5,0.4\n", "bad.csv:2: input length"),
    ("bad.csv", "input_tokens,seconds\n1024,0.4,9\n", "bad.csv:2: 3 fields"),
    ("bad.csv", "tokens,s\n1024,0.4\n", "bad.csv:1: no column 'input_tokens'"),
    ("bad.json", '{"input_lens": [1, 2],\n "ttfts": [0.1,}', "bad.json:2: malformed JSON"),
    ("bad.json", '{"input_lens": [1, 2], "ttfts": [0.1]}', "bad.json:1: input_lens has 2"),
    ("bad.jsonl", '{"input_lens": [1], "ttfts": [0.1]}\n{"input_lens": [1], "ttfts": [-1]}\n',
     "bad.jsonl:2: latency -1"),
    ("bad.json", '{"results": []}', "bad.json:1: no input_lens / ttfts"),
])
def test_malformed_measurements_are_one_line_with_file_and_line(tmp_path, capsys, name, text, where):
    src = tmp_path / name
    src.write_text(text)
    line = _one_error_line(capsys, ["profile", "--import", str(src), "--card", CARD,
                                    "--out", str(tmp_path / "o.toml")])
    assert where in line, line
    assert not (tmp_path / "o.toml").exists()


def test_import_needs_a_card_and_an_out(tmp_path, capsys):
    src = tmp_path / "a.csv"
    src.write_text("input_tokens,seconds\n1024,0.4\n")
    assert "--card" in _one_error_line(capsys, ["profile", "--import", str(src), "--out", str(tmp_path / "o.toml")])
    assert "--out" in _one_error_line(capsys, ["profile", "--import", str(src), "--card", CARD])
