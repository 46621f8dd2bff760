"""Piped and narrow output keeps words whole: a table's title and caption are lines of their
own, not wrapped to the table's width."""

from __future__ import annotations

import io

from rich.table import Table

from prfaas_tui import console as console_mod


def _printed(monkeypatch, columns: str) -> str:
    monkeypatch.setenv("COLUMNS", columns)
    con = console_mod.make_console()
    con.file = io.StringIO()
    t = Table(title="a title much wider than the narrow table below it, kept on one line",
              caption="see emulator/cards/prefill_batch.py for the rule")
    t.add_column("n")
    t.add_row("1")
    con.print(t)
    return con.file.getvalue()


def test_a_narrow_tables_title_and_caption_stay_whole(monkeypatch):
    out = _printed(monkeypatch, "160")
    lines = out.splitlines()
    assert lines[0] == "a title much wider than the narrow table below it, kept on one line"
    assert lines[-1] == "see emulator/cards/prefill_batch.py for the rule"
    assert "│ 1 │" in out


def test_the_table_printed_is_not_changed(monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    con = console_mod.make_console()
    con.file = io.StringIO()
    t = Table(title="kept")
    t.add_column("n")
    con.print(t)
    assert t.title == "kept"  # the caller's table keeps its title for a second print
