"""`prfaas-tui new` and `prfaas-tui models`: a preset from cards that loads and solves, the
case-study deployment reproduced from its card, and bad input as one line and exit 2."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cards.model_card import shipped_dir
from emulator.optimizer import search
from emulator.scenario import presets
from emulator.scenario.reader import PresetError
from prfaas_tui.cli import main

CONFIGS = Path(__file__).parent / "configs"

CASE = ["new", "--model", "prfaas-case-study-1t", "--prefill-gpu", "h200", "--local-gpu", "h20",
        "--parallelism", "8", "--prfaas-gpus", "32", "--local-gpus", "64",
        "--bandwidth", "100 Gbps", "--lengths", "lognormal:9.9,1.0"]


def _one_error_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_new_case_study_solves_within_5pct_of_the_shipped_preset(tmp_path, capsys):
    out = tmp_path / "cs.toml"  # the paper's decode constants: the prefill side is what is compared
    assert main([*CASE, "--t-decode", "25 ms", "--bs-max", "20", "--out", str(out), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    shipped = search(presets.load("paper-case-study").system, "paper").best
    assert answer["optimum"]["lambda_max"] == pytest.approx(shipped.lambda_max, rel=0.05)
    assert (answer["optimum"]["n_prfaas"], answer["optimum"]["n_p"], answer["optimum"]["n_d"]) == (4, 3, 5)
    assert set(answer["paradigms"]) == {"prfaas-pd", "homogeneous", "naive-heterogeneous"}
    text = out.read_text()
    assert "# T_prefill = prefill_overhead + kernel" in text and "# the model's optimum" in text
    assert text.count('prefill_overhead = "0.39 s"') == 2 and "[UNCALIBRATED GPU]" in text  # the H20
    sc = presets.load(out)  # what --preset PATH opens
    assert sc.t == pytest.approx(answer["optimum"]["t"], abs=1)
    assert (sc.n_p, sc.n_d) == (3, 5)


def test_new_refuses_to_overwrite_without_force(tmp_path, capsys):
    out = tmp_path / "cs.toml"
    out.write_text("keep me")
    line = _one_error_line(capsys, [*CASE, "--out", str(out)])
    assert line.startswith("prfaas-tui: --out:") and "exists" in line
    assert out.read_text() == "keep me"


def test_new_from_a_config_json_and_a_burstgpt_trace(tmp_path, capsys):
    cfg_dir = tmp_path / "my-model"
    cfg_dir.mkdir()
    shutil.copy(shipped_dir() / "qwen3-235b-a22b.json", cfg_dir / "config.json")
    trace = tmp_path / "burst.csv"
    rows = [f"{i * 0.25},ChatGPT,{500 + 97 * i % 20000},{100 + i % 50},0,Conversation log"
            for i in range(400)]
    trace.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                     + "\n".join(rows) + "\n")
    out = tmp_path / "presets" / "mine.toml"
    out.parent.mkdir()
    assert main(["new", "--model", str(cfg_dir / "config.json"), "--trace", str(trace),
                 "--out", str(out), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["optimum"]["lambda_max"] > 0
    sc = presets.load(out)
    assert sc.system.lengths.kind == "empirical"
    assert sc.sim.rate == pytest.approx(399 / 99.75)
    assert '"../my-model/config.json"' in out.read_text()  # relative to the preset


def test_models_json_has_the_promised_fields(capsys):
    assert main(["models", "--gpu", "h200", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 7
    for d in rows:
        assert {"name", "family", "dtype", "layers", "kv_bytes_per_token", "state_bytes",
                "active_params", "profile", "memory_per_gpu", "memory_error"} <= set(d)
        assert [p["length"] for p in d["profile"]] == [1024, 8192, 32768, 131072]
    # a 1T model in bf16 does not fit 8xH200: listed, with the reason, not a failure
    ring = next(d for d in rows if d["name"] == "ring-2.5-1t")
    assert "does not fit 8 x h200" in ring["memory_error"]


def test_models_reads_one_config(capsys):
    path = shipped_dir() / "mimo-v2-flash.json"
    assert main(["models", "--config", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)  # one object for one config
    assert d["layers"] == {"swa": 39, "gqa": 9} and d["windows"] == {"128": 39}


CONTRACT = ["models", "--config", str(CONFIGS / "qwen3-32b.json"), "--gpu", "h200", "--parallelism", "8",
            "--lengths", "8K,32K,128K"]


def test_models_contract_kernel_and_overhead_apart(capsys):
    assert main([*CONTRACT, "--dtype", "bf16", "--kv-dtype", "bf16", "--overhead", "0s", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kv_bytes_per_token"] == 64 * 2 * 8 * 128 * 2
    assert [p["length"] for p in d["profile"]] == [8192, 32768, 131072]
    for p in d["profile"]:
        assert set(p) == {"length", "kernel_s", "overhead_s", "t_prefill_s", "kv_bytes", "phi_kv_gbps"}
        assert p["overhead_s"] == 0 and p["t_prefill_s"] == pytest.approx(p["kernel_s"], rel=1e-9)
        assert p["kv_bytes"] == pytest.approx(d["kv_bytes_per_token"] * p["length"])
        assert p["phi_kv_gbps"] == pytest.approx(p["kv_bytes"] * 8 / p["t_prefill_s"] / 1e9)
    assert 20 < d["profile"][0]["phi_kv_gbps"] < 200  # about 99 Gbps at 8K (measured operators)
    assert main([*CONTRACT, "--kv-dtype", "fp8", "--json"]) == 0
    e = json.loads(capsys.readouterr().out)
    assert e["kv_bytes_per_token"] == d["kv_bytes_per_token"] / 2
    assert e["overhead_s"] == 0.39 and e["profile"][0]["t_prefill_s"] == pytest.approx(
        e["profile"][0]["kernel_s"] + 0.39)
    assert e["gpu_calibrated"] is True and e["tp"] == 8 and e["ep"] == 1


def test_models_marks_an_uncalibrated_gpu(capsys):
    assert main(["models", "--config", str(CONFIGS / "qwen3-32b.json"), "--gpu", "h20"]) == 0
    assert "UNCALIBRATED" in capsys.readouterr().out


def test_models_refuses_deepseek_v3_on_one_h200(capsys):
    line = _one_error_line(capsys, ["models", "--config", str(CONFIGS / "deepseek-v3.json"), "--gpu", "h200",
                                    "--parallelism", "1", "--lengths", "8K"])
    assert "deepseek-v3.json: does not fit 1 x h200" in line and "needs 6" in line and "of 141 GB" in line


@pytest.mark.parametrize("flag,value,needle", [("--overhead", "61s", "--overhead"),
                                                ("--tp", "3", "--tp"), ("--ep", "0", "--ep")])
def test_models_bad_setup_flags_are_one_line(capsys, flag, value, needle):
    line = _one_error_line(capsys, [*CONTRACT, flag, value])
    assert needle in line


def test_new_overhead_flag_is_written_and_used(tmp_path, capsys):
    out = tmp_path / "o.toml"
    assert main([*CASE, "--overhead", "0.1s", "--out", str(out), "--json"]) == 0
    fast = json.loads(capsys.readouterr().out)["optimum"]["lambda_max"]
    assert out.read_text().count('prefill_overhead = "0.1 s"') == 2
    assert main([*CASE, "--out", str(out), "--force", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["optimum"]["lambda_max"] < fast


def test_new_refuses_a_model_that_does_not_fit(tmp_path, capsys):
    line = _one_error_line(capsys, ["new", "--model", str(CONFIGS / "deepseek-v3.json"), "--parallelism", "1",
                                    "--prfaas-gpus", "4", "--local-gpus", "4", "--out", str(tmp_path / "x.toml")])
    assert "does not fit 1 x h200" in line
    assert not (tmp_path / "x.toml").exists()


def _config(tmp_path, **edits) -> str:
    cfg = json.loads((shipped_dir() / "qwen3-235b-a22b.json").read_text())
    for k, v in edits.items():
        if v is None:
            del cfg[k]
        else:
            cfg[k] = v
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return str(p)


@pytest.mark.parametrize("edits,key", [
    ({"num_hidden_layers": None}, "num_hidden_layers"),
    ({"model_type": "rwkv7", "architectures": ["Rwkv7ForCausalLM"]}, "model_type"),
    ({"num_key_value_heads": -4}, "num_key_value_heads"),
])
def test_bad_configs_are_one_line_naming_file_and_key(tmp_path, capsys, edits, key):
    path = _config(tmp_path, **edits)
    line = _one_error_line(capsys, ["models", "--config", path])
    assert line.startswith(f"prfaas-tui: {path}: {key}: ")


def test_gpu_card_with_zero_tflops(tmp_path, capsys):
    text = (shipped_dir().parent / "gpus" / "h200.toml").read_text()
    p = tmp_path / "broken.toml"
    p.write_text(text.replace("bf16_tflops = 989.4", "bf16_tflops = 0"))
    line = _one_error_line(capsys, ["models", "--gpu", str(p)])
    assert line.startswith(f"prfaas-tui: {p}: bf16_tflops: must be >= 0.001")


def test_csv_with_a_wrong_column_map(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("ts,prompt\n1,100\n")
    line = _one_error_line(capsys, ["solve", "--trace", str(p), "--columns", "time=ts,input=nope"])
    assert line.startswith(f"prfaas-tui: {p}:1: --columns input=nope: no column 'nope'")


def test_bad_input_never_prints_a_traceback(tmp_path):
    path = _config(tmp_path, num_hidden_layers=None)
    r = subprocess.run([sys.executable, "-m", "prfaas_tui.cli", "models", "--config", path],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"prfaas-tui: {path}: num_hidden_layers: missing (required for this architecture)"


def test_a_preset_can_name_a_roofline_profile(tmp_path):
    """`roofline = {...}` is a profile source like a table: relative paths resolve from the
    preset, and a bad card is one error naming the preset key."""
    shutil.copy(shipped_dir() / "kimi-linear-48b-a3b.json", tmp_path / "config.json")
    toy = (presets.presets_dir() / "toy.toml").read_text()
    text = toy.replace("[profiles.slow]", '[profiles.roof]\nroofline = { model = "config.json", '
                       'gpu = "h200", gpus = 8 }\n\n[profiles.slow]', 1)
    text = text.replace('prfaas_profile = "fast"', 'prfaas_profile = "roof"', 1)
    p = tmp_path / "p.toml"
    p.write_text(text)
    sc = presets.load(p)
    assert sc.system.prfaas.name == "roof"
    assert sc.system.prfaas.description.startswith("kernel model: kimi-linear-48b-a3b")  # dir name
    p.write_text(text.replace('gpu = "h200"', 'gpu = "h999"'))
    with pytest.raises(PresetError, match=r"profiles\.roof\.roofline\.gpu: h999: no GPU card"):
        presets.load(p)


def _roof_preset(tmp_path, roofline: str, extra: str = "") -> Path:
    toy = (presets.presets_dir() / "toy.toml").read_text()
    text = toy.replace("[profiles.slow]", f"[profiles.roof]\nroofline = {{ {roofline} }}\n{extra}\n"
                       "[profiles.slow]", 1)
    text = text.replace('prfaas_profile = "fast"', 'prfaas_profile = "roof"', 1)
    p = tmp_path / "p.toml"
    p.write_text(text)
    return p


def test_preset_prefill_overhead_and_setup_keys(tmp_path):
    base = 'model = "qwen3-235b-a22b", gpu = "h200", gpus = 8'
    default = presets.load(_roof_preset(tmp_path, base)).system.prfaas
    zero = presets.load(_roof_preset(tmp_path, base, 'prefill_overhead = "0 s"')).system.prfaas
    assert default.t_prefill(8192) - zero.t_prefill(8192) == pytest.approx(0.39)
    fp8kv = presets.load(_roof_preset(tmp_path, base + ', kv_dtype = "fp8", dtype = "fp8", tp = 8, ep = 4'))
    assert fp8kv.system.prfaas.s_kv(8192) == pytest.approx(default.s_kv(8192) / 2)
    assert fp8kv.system.prfaas.t_prefill(8192) < default.t_prefill(8192)


@pytest.mark.parametrize("roofline,extra,match", [
    ('model = "qwen3-235b-a22b", gpu = "h200", tp = 3', "", r"profiles\.roof\.roofline\.tp: 3 must divide"),
    ('model = "qwen3-235b-a22b", gpu = "h200", dtype = "fp4"', "", r"profiles\.roof\.roofline\.dtype: must be"),
    ('model = "qwen3-235b-a22b", gpu = "h200", source = "magic"', "", r"roofline\.source: must be"),
    ('model = "qwen3-235b-a22b", gpu = "h200"', 'prefill_overhead = "-1 s"', r"profiles\.roof\.prefill_overhead"),
    ('model = "qwen3-235b-a22b", gpu = "h200", gpus = 1', "", r"profiles\.roof\.roofline\.model: .*does not fit"),
])
def test_preset_bad_setup_keys_name_the_key(tmp_path, roofline, extra, match):
    with pytest.raises(PresetError, match=match):
        presets.load(_roof_preset(tmp_path, roofline, extra))
