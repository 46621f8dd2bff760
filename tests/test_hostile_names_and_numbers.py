"""Hostile input at the edges where a user's file or name meets arithmetic or the file system:
benchmark imports with absurd integers and nesting, profile names that TOML must escape, solver
chatter on a piped `--json`, a BurstGPT replay with a byte-order mark, and names that try to
climb out of their folder."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.files import JsonRefused, escapes, file_stem, parse_json
from prfaas_tui.commands import profile
from prfaas_tui.metrics_export import fresh_base
from prfaas_tui.screens.run_keys import new_file as _new_file

ROOT = Path(__file__).resolve().parents[1]


def _import(tmp_path: Path, doc: str, *extra: str) -> tuple[int, str, Path]:
    src = tmp_path / "bench.json"
    src.write_text(doc, encoding="utf-8")
    out = tmp_path / "out.toml"
    rc = profile.main(["--import", str(src), "--card", "kimi-linear-48b-a3b", "--out", str(out),
                       *extra])
    return rc, str(src), out


@pytest.mark.parametrize("doc, words", [
    ('{"input_lens": [' + "9" * 400 + ', 100], "ttfts": [0.5, 0.2]}', "400-digit"),
    ('{"input_lens": [' + "9" * 5000 + ', 100], "ttfts": [0.5, 0.2]}', "too long"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper"),
    ('{"input_lens": [1024], "ttfts": [' + "1" * 400 + "]}", "latency"),
])
def test_an_absurd_benchmark_file_is_one_line_and_exit_2(tmp_path, capsys, doc, words):
    rc, src, out = _import(tmp_path, doc)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists()
    assert len(err.splitlines()) == 1 and "bench.json" in err and words in err


@pytest.mark.parametrize("name", ["fast 🚀", 'say "hi" \\ there', "tab\there", "\u0001ctl",
                                  "日本語"])
def test_an_imported_profile_is_valid_toml_whatever_its_name(tmp_path, capsys, name):
    doc = json.dumps({"input_lens": [1024, 2048, 1024], "ttfts": [0.3, 0.6, 0.31]})
    rc, _, out = _import(tmp_path, doc, "--name", name)
    assert rc == 0, capsys.readouterr().err
    prof = tomllib.loads(out.read_text(encoding="utf-8"))["profile"]
    assert prof["name"] == name
    assert prof["prefill_time"] == {"lengths": [1024, 2048], "seconds": [0.305, 0.6]}


def test_parse_json_refuses_each_way_the_parser_can_fail():
    for text in ("{", "1" * 5000, "[" * 50 + "]" * 50):
        with pytest.raises(JsonRefused):
            parse_json(text)
    assert parse_json('{"a": [1, 2]}') == {"a": [1, 2]}


def test_solver_output_on_file_descriptor_1_goes_to_stderr_when_stdout_is_a_pipe():
    code = ("import os, sys\n"
            "from emulator.topology.bound import _solver_quiet\n"
            "print('before', flush=True)\n"
            "with _solver_quiet():\n"
            "    os.write(1, b'HiGHS chatter\\n')\n"
            "print('after', flush=True)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["before", "after"]
    assert "HiGHS chatter" in res.stderr


def test_a_burstgpt_replay_with_a_byte_order_mark_runs(tmp_path, capsys):
    from prfaas_tui.cli import main

    trace = tmp_path / "bom.csv"
    trace.write_bytes("\ufeffTimestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                      "0,ChatGPT,1000,200,1200,Conversation log\n"
                      "1,ChatGPT,2000,300,2300,Conversation log\n"
                      "2,ChatGPT,500,100,600,Conversation log\n".encode())
    text = (ROOT / "presets" / "toy.toml").read_text(encoding="utf-8")
    preset = tmp_path / "replay.toml"
    preset.write_text(text.replace("[workload]", f'[workload]\nreplay = "{trace}"', 1),
                      encoding="utf-8")
    assert main(["run", "--preset", str(preset), "--duration", "60", "--json"]) in (0, None)
    books = json.loads(capsys.readouterr().out)["accounting"]
    assert books["arrived"] == 3
    assert books["arrived"] == books["completed"] + books["in_flight"] + books["rejected"]


@given(st.text(max_size=200))
def test_a_file_stem_never_leaves_its_folder(name):
    stem = file_stem(name)
    assert stem and "/" not in stem and "\\" not in stem and not stem.startswith(".")
    assert all(c.isalnum() or c in "._+-" for c in stem)


def test_an_export_named_by_a_climbing_scenario_stays_in_its_folder(tmp_path):
    base = fresh_base(tmp_path, "prfaas-../../../etc/x", (".csv",))
    assert base.parent == tmp_path


@pytest.mark.parametrize("typed", ["../x.toml", "a/../../x.toml", "/tmp/x.toml", "~/x.toml"])
def test_saving_a_preset_outside_the_working_folder_is_refused(typed):
    assert escapes(typed) is not None
    assert _new_file(typed) is not None


def test_saving_a_preset_in_the_working_folder_is_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    assert _new_file("mine.toml") is None
    assert _new_file("sub/mine.toml") is None


def test_an_unreachable_slo_names_no_point_at_zero(capsys):
    """An SLO no rate meets is said to be missed, not to 'hold up to 0.000 req/s'."""
    from prfaas_tui.cli import main

    assert main(["solve", "--preset", "toy", "--slo-ttft", "2s"]) in (0, None)
    out = capsys.readouterr().out
    assert "is missed at any rate here" in out and "0.000 req/s here" not in out
