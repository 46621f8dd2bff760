"""`prfaas-tui models` prints every model name whole, at any width and when piped: the name is
what the user types next (`new --model NAME`)."""

from __future__ import annotations

import pytest

from emulator.cards.model_card import shipped
from prfaas_tui.cli import main


@pytest.mark.parametrize("columns", ["80", "100"])
@pytest.mark.parametrize("extra", [[], ["--gpu", "h200"]])
def test_every_name_whole(monkeypatch, capsys, columns, extra):
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["models", *extra]) == 0
    out = capsys.readouterr().out
    # the cell may carry a note after the name ("ring-2.5-1t (does not fit)")
    names = {line.split("│")[1].split()[0] for line in out.splitlines()
             if line.startswith("│") and line.split("│")[1].strip()}
    assert names == set(shipped())
    assert max(len(x) for x in out.splitlines()) <= int(columns)
