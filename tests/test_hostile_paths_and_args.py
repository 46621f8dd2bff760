"""Hostile command lines: a file name past the system's limit, bytes that are not UTF-8 in an
argument, an empty --out, integers of hundreds of digits in a knob flag. Each is one line on
stderr naming the flag or file, and exit 2; never a traceback."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from emulator.files import short_path
from prfaas_tui.cli import main

LONG = "x" * 5000


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
