"""Output redirected to a file or a pipe is plain text: no escape bytes from any command's
tables (`plan`'s chart is checked in test_plan_cli_output.py)."""

from __future__ import annotations

import pytest

from prfaas_tui.cli import main


@pytest.fixture(autouse=True)
def _no_forced_colour(monkeypatch):
    """FORCE_COLOR / TTY_COMPATIBLE ask rich for colour on purpose: not what is tested here."""
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)



@pytest.mark.parametrize("argv", [["solve"], ["solve", "--slo-ttft", "6s"], ["presets"],
                                  ["models", "--gpu", "h200"], ["drill"],
                                  ["run", "--preset", "toy", "--duration", "30"]])
def test_no_escape_bytes_off_a_terminal(capsys, argv):
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out and "\x1b" not in out and "\x1b" not in err
