"""Traces and `new`'s output: BurstGPT and mapped CSV read like every format (BOM and CRLF
accepted; NUL, empty cells, lengths over the cap, huge cells, mixed time zones refused in one
line), a degenerate trace's rate is undefined (null), never NaN, and `new` writes only where
it is told, never over a file unless asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator import traces
from emulator.trace_formats import load_trace, trace_workload
from emulator.traces import MAX_TOKENS, TraceError
from prfaas_tui.cli import main

HEAD = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"


def burst(tmp_path: Path, rows: list[str], *, bom: bool = False, crlf: bool = False) -> Path:
    nl = "\r\n" if crlf else "\n"
    p = tmp_path / "burst.csv"
    p.write_bytes((("\ufeff" if bom else "") + nl.join([HEAD, *rows]) + nl).encode())
    return p


ROWS = ["5,ChatGPT,472,18,490,Conversation log", "45,ChatGPT,1087,136,1223,Conversation log",
        "118,GPT-4,417,1042,1459,API log"]


def one_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("bom,crlf", [(True, False), (True, True), (False, True)])
def test_burstgpt_with_a_bom_or_crlf_loads(tmp_path, bom, crlf):
    tr = load_trace(burst(tmp_path, ROWS, bom=bom, crlf=crlf))
    assert tr.input_lengths.tolist() == [472, 1087, 417] and tr.arrivals.tolist() == [0, 40, 113]


def test_mapped_csv_with_a_bom_finds_its_first_column(tmp_path):
    p = tmp_path / "m.csv"
    p.write_bytes("\ufeffts,n_in,n_out\r\n0,10,1\r\n2,20,2\r\n".encode())
    tr = load_trace(p, "time=ts,input=n_in,output=n_out")
    assert tr.input_lengths.tolist() == [10, 20] and tr.output_lengths.tolist() == [1, 2]


@pytest.mark.parametrize("row,needle", [
    ("7,Chat\x00GPT,10,1,11,x", "NUL byte"),
    (",,,,,", "Timestamp: expected a number"),
    ("7,ChatGPT,,1,1,x", "Request tokens: expected a whole number"),
    (f"7,ChatGPT,10,{MAX_TOKENS + 1},1,x", "Response tokens: expected a whole number in [0, 16777216]"),
    ("7,ChatGPT," + "9" * 200_000 + ",1,1,x", "Request tokens: expected a whole number"),
])
def test_bad_burstgpt_rows_are_one_line(tmp_path, capsys, row, needle):
    p = burst(tmp_path, [ROWS[0], row])
    line = one_line(capsys, ["solve", "--trace", str(p), "--json"])
    assert line.startswith(f"prfaas-tui: {p}:3: ") and needle in line


def test_a_cell_over_the_csv_field_limit_is_one_line(tmp_path, capsys):
    p = burst(tmp_path, [ROWS[0], "7,ChatGPT,10,1,11," + "x" * 2_000_000])
    line = one_line(capsys, ["solve", "--trace", str(p)])
    assert "not valid CSV (a cell over 1,048,576 characters)" in line


def test_mixed_aware_and_naive_timestamps_are_one_line(tmp_path, capsys):
    p = tmp_path / "m.csv"
    p.write_text("ts,n\n2024-01-01T00:00:00,5\n2024-01-01T00:00:01+00:00,6\n")
    line = one_line(capsys, ["solve", "--trace", str(p), "--columns", "time=ts,input=n"])
    assert f"{p}:3: ts: expected a date-time without a time zone" in line


@pytest.mark.parametrize("rows", [ROWS[:1], [ROWS[0]] * 3])
def test_a_degenerate_trace_has_an_undefined_rate_not_nan(tmp_path, capsys, rows):
    p = burst(tmp_path, rows)
    assert trace_workload(load_trace(p)).rate is None
    assert main(["solve", "--trace", str(p), "--json"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and json.loads(text)["trace"]["rate"] is None
    assert main(["solve", "--trace", str(p)]) == 0
    assert "undefined rate" in capsys.readouterr().out


def test_new_from_a_degenerate_trace_writes_a_load(tmp_path, capsys):
    p = burst(tmp_path, ROWS[:1])
    out = tmp_path / "x.toml"
    assert main(["new", "--model", "qwen3-235b-a22b", "--trace", str(p), "--out", str(out),
                 "--json"]) == 0
    assert "NaN" not in capsys.readouterr().out and "load = 0.9" in out.read_text()


def test_a_trace_over_the_row_cap_is_refused_at_the_row(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(traces, "MAX_ROWS", 2)
    p = burst(tmp_path, ROWS)
    with pytest.raises(TraceError, match=r":4: more than 2 requests \(the trace cap\)"):
        load_trace(p)


def test_new_writes_the_preset_of_a_trace_by_reference(tmp_path, capsys, monkeypatch):
    """The preset names the trace (read the same way on load): `new` is linear in rows."""
    monkeypatch.chdir(tmp_path)
    p = burst(tmp_path, ROWS)
    assert main(["new", "--model", "qwen3-235b-a22b", "--trace", str(p), "--json"]) == 0
    written = Path(json.loads(capsys.readouterr().out)["preset"])
    text = written.read_text()
    assert 'trace = "burst.csv"' in text and "samples" not in text


@pytest.mark.parametrize("name", ["../../../../tmp/x", "/tmp/x", "a/../../b", "..", "x\x1b[2J\ty"])
def test_new_names_never_leave_the_folder(tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    rc = main(["new", "--model", "qwen3-235b-a22b", "--lengths", "lognormal:9.9,1.0",
               "--name", name, "--json"])
    if not name.isprintable():
        assert rc == 2 and "--name" in capsys.readouterr().err
        return
    assert rc == 0
    written = Path(json.loads(capsys.readouterr().out)["preset"])
    assert written.parent == tmp_path and written.name.endswith(".toml")
    assert ".." not in written.name and not written.name.startswith(".")


def test_a_card_name_never_chooses_the_folder(tmp_path, capsys, monkeypatch):
    from emulator.cards.model_card import shipped_dir
    data = json.loads((shipped_dir() / "qwen3-235b-a22b.json").read_text())
    data["_card"] = {"name": "../../../../tmp/evil", "source": "x"}
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)
    assert main(["new", "--model", str(cfg), "--lengths", "lognormal:9.9,1.0", "--json"]) == 0
    written = Path(json.loads(capsys.readouterr().out)["preset"])
    assert written.parent == tmp_path and written.name == "tmp-evil-h200-h20.toml"
    # the same again keeps the file: nothing is overwritten unless asked
    before = written.read_text()
    line = one_line(capsys, ["new", "--model", str(cfg), "--lengths", "lognormal:9.9,1.0"])
    assert "exists (pass --force" in line and written.read_text() == before


def test_azure_with_a_bom_and_crlf_loads(tmp_path):
    p = tmp_path / "a.csv"
    p.write_bytes("\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:00:00,10,1\r\n"
                  "2023-11-16 18:00:04,20,2\r\n".encode())
    tr = load_trace(p)
    assert tr.arrivals.tolist() == [0.0, 4.0] and tr.input_lengths.tolist() == [10, 20]


def test_a_trace_that_is_a_folder_or_fifo_is_refused_unopened(tmp_path, capsys):
    import os
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    line = one_line(capsys, ["new", "--model", "qwen3-235b-a22b", "--trace", str(fifo),
                             "--out", str(tmp_path / "x.toml")])
    assert "expected a regular trace file, found a FIFO" in line


def test_a_header_cell_with_a_newline_stays_one_line(tmp_path, capsys):
    """Found by the mapped-CSV fuzzer: a quoted header cell holding a newline split the line."""
    p = tmp_path / "m.csv"
    p.write_bytes(b'"s,n_in,n_out\n0,1,0\n')
    line = one_line(capsys, ["solve", "--trace", str(p), "--columns", "time=ts,input=n_in"])
    assert "no column 'ts' in the header" in line and "\\n" in line


def test_a_line_longer_than_any_record_is_refused_unread(tmp_path, monkeypatch):
    """A regular file of zeros without a newline was read whole as one line."""
    monkeypatch.setattr(traces, "MAX_LINE", 1000)
    p = tmp_path / "z.jsonl"
    p.write_bytes(b'{"timestamp": 0, "input_length": 5, "output_length": 1}\n' + b"0" * 5000)
    with pytest.raises(TraceError, match=r":2: a line over 1,000 bytes"):
        load_trace(p)
