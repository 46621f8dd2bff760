"""Hostile command lines: a file name past the system's limit, bytes that are not UTF-8 in an
argument, an empty --out, integers of hundreds of digits in a knob flag. Each is one line on
stderr naming the flag or file, and exit 2; never a traceback."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from emulator.files import short_path
from prfaas_tui.cli import main

LONG = "x" * 5000
ROOT = Path(__file__).resolve().parents[1]


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv) or 0
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, err.getvalue()


def _bench(tmp_path) -> str:
    src = tmp_path / "bench.json"
    src.write_text(json.dumps({"input_lens": [1024, 2048], "ttfts": [0.3, 0.6]}), encoding="utf-8")
    return str(src)


@pytest.mark.parametrize("argv", [
    ["solve", "--preset", LONG],
    ["drill", LONG],
    ["new", "--model", "kimi-linear-48b-a3b", "--force", "--out", LONG],
    ["snapshot", "--preset", "toy", "--at", "1", "--format", "txt", "--out", LONG],
    ["profile", "--import", "{bench}", "--card", LONG, "--out", "p.toml"],
])
def test_a_file_name_past_the_limit_is_one_short_line(tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    rc, err = _cli([a.replace("{bench}", _bench(tmp_path)) for a in argv])
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and len(err) < 300, err
    assert "too long" in err and short_path(LONG) in err


@pytest.mark.parametrize("argv", [
    ["profile", "--import", "{bench}", "--card", "kimi-linear-48b-a3b", "--out", "p.toml",
     "--name", "fast\udcff"],
    ["profile", "--import", "{bench}", "--card", "kimi-linear-48b-a3b", "--out", "p.toml",
     "--measured-on", "\udcffH200"],
    ["new", "--model", "kimi-linear-48b-a3b", "--out", "n.toml", "--name", "a\udcffb"],
])
def test_an_argument_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path,
                                                                           monkeypatch, argv):
    """Bytes that are not UTF-8 reach Python as lone surrogates, which no file can hold: the
    argument is refused at the door (a written TOML would be cut short at the name)."""
    monkeypatch.chdir(tmp_path)
    rc, err = _cli([a.replace("{bench}", _bench(tmp_path)) for a in argv])
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "is not UTF-8 text" in err and argv[-2] in err
    assert not (tmp_path / "p.toml").exists() and not (tmp_path / "n.toml").exists()


@pytest.mark.parametrize("name", ["", "   "])
def test_a_blank_profile_name_is_refused_not_replaced(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    rc, err = _cli(["profile", "--import", _bench(tmp_path), "--card", "kimi-linear-48b-a3b",
                    "--out", "p.toml", "--name", name])
    assert rc == 2 and "--name" in err and not (tmp_path / "p.toml").exists(), err


def test_an_empty_out_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, err = _cli(["snapshot", "--preset", "toy", "--at", "1", "--format", "txt", "--out", ""])
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--out" in err, err


@pytest.mark.parametrize("flag", ["--n-prfaas", "--np", "--nd", "--t", "--bandwidth"])
@pytest.mark.parametrize("command", ["solve", "run"])
def test_a_knob_of_hundreds_of_digits_is_refused_at_its_flag(command, flag):
    rc, err = _cli([command, "--preset", "toy", "--duration" if command == "run" else "--json",
                    *(["5"] if command == "run" else []), flag, "9" * 400])
    assert rc == 2 and len(err.strip().splitlines()) == 1 and flag in err, err


NUMBER_LINE = re.compile(r'^(\s*)([A-Za-z_]+)(\s*=\s*)"?[0-9][^"\n]*"?\s*$', re.M)
FILES = {"preset": ["presets/toy.toml", "presets/paper-case-study.toml",
                    "presets/two-regions.toml"],
         "drill": ["presets/drills/site-loss.toml"],
         "gpu": ["emulator/cards/gpus/h200.toml"]}


def _numeric_keys() -> list[tuple[str, str, int]]:
    out = []
    for kind, paths in FILES.items():
        for path in paths:
            text = (ROOT / path).read_text(encoding="utf-8")
            out += [(kind, path, i) for i, _ in enumerate(NUMBER_LINE.finditer(text))]
    return out


@pytest.mark.parametrize("big", [10**19, 10**400], ids=["20-digits", "401-digits"])
@pytest.mark.parametrize("kind, path, i", _numeric_keys())
def test_an_integer_past_64_bits_in_any_numeric_key_is_refused_at_the_key(tmp_path, kind,
                                                                           path, i, big):
    """TOML integers are 64-bit, Python reads any length: 10**19 or 10**400 where a number goes (a
    duration, a count, a load, a GPU's FLOPS) is refused naming its key, never an
    OverflowError from the arithmetic after it."""
    text = (ROOT / path).read_text(encoding="utf-8")
    m = list(NUMBER_LINE.finditer(text))[i]
    dest = tmp_path / Path(path).name
    dest.write_text(text[:m.start()] + f"{m[1]}{m[2]}{m[3]}{big}" + text[m.end():],
                    encoding="utf-8")
    argv = {"preset": ["solve", "--preset", str(dest), "--json"],
            "drill": ["drill", str(dest), "--json"],
            "gpu": ["new", "--model", "kimi-linear-48b-a3b", "--prefill-gpu", str(dest),
                    "--out", str(tmp_path / "n.toml")]}[kind]
    rc, err = _cli(argv)
    assert rc in (0, 1, 2) and (rc != 1 or kind == "drill" and "missed" in err), err
    if rc == 2:  # (1: a drill that ran and missed its [expect])
        assert len(err.strip().splitlines()) == 1 and m[2] in err, err


@pytest.mark.parametrize("flag", ["--n-prfaas", "--pool", "--homogeneous-pool", "--max-runs"])
def test_a_plan_flag_of_hundreds_of_digits_is_refused_at_its_flag(flag):
    rc, err = _cli(["plan", "--preset", "toy", "--duration", "5", "--seeds", "1", "--workers",
                    "1", flag, "9" * 400])
    assert rc == 2 and len(err.strip().splitlines()) == 1 and flag in err, err


DEEP = "[" * 100_000 + "]" * 100_000 + "\n"


@pytest.mark.parametrize("name, argv", [
    ("c.json", ["models", "--config", "{f}"]),
    ("c.json", ["new", "--model", "{f}", "--out", "n.toml"]),
    ("b.json", ["profile", "--import", "{f}", "--card", "kimi-linear-48b-a3b", "--out", "p.toml"]),
    ("b.jsonl", ["profile", "--import", "{f}", "--card", "kimi-linear-48b-a3b", "--out", "p.toml"]),
    ("t.jsonl", ["solve", "--preset", "toy", "--trace", "{f}"]),
    ("plan.jsonl", ["plan", "--preset", "toy", "--out", "{f}", "--workers", "1"]),
    ("s.json", ["snapshot", "--preset", "toy", "--at", "1", "--format", "json", "--check", "{f}"]),
])
def test_json_nested_past_the_recursion_limit_is_exit_2_on_every_reader(tmp_path, monkeypatch,
                                                                          name, argv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(DEEP, encoding="utf-8")
    rc, err = _cli([a.replace("{f}", name) for a in argv])
    assert rc == 2 and len(err.strip().splitlines()) == 1 and name in err, err


@pytest.mark.parametrize("typed", ["x" * 300 + ".toml", "a/" + "b" * 5000, "", "   ",
                                   "bad\udcffname.toml"])
def test_a_typed_file_name_no_system_can_hold_is_refused_not_raised(tmp_path, monkeypatch, typed):
    """The dashboard's save, export-folder and new-preset prompts check a typed name before they
    stat() it (exists() raises on a name too long instead of answering)."""
    from emulator.files import unusable
    from prfaas_tui.screens.dashboard import _parent_exists
    from prfaas_tui.screens.run_keys import new_file as _new_file

    monkeypatch.chdir(tmp_path)
    assert unusable(typed) is not None
    assert _new_file(typed) is not None and _parent_exists(typed) is not None
