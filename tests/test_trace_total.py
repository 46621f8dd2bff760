"""Total trace readers (issue 11): every Mooncake/Azure input either loads exactly what it says
or ends in one line `file:line: key: expected ..., found ...`; nothing is dropped silently."""

from __future__ import annotations

import json
import re

import pytest

from emulator.traces import (
    MAX_SPAN_S,
    MAX_TOKENS,
    TraceError,
    check_record,
    read_trace,
)
from prfaas_tui import cli

OK = '{"timestamp": 0, "input_length": 10, "output_length": 5}\n'
HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"

BAD = [
    # (file name, text, expected message after "name:")
    ("inf.jsonl", OK + '{"timestamp": Infinity, "input_length": 1, "output_length": 1}',
     r"2: timestamp: expected a number of ms in \[0, 1000000000000000\], found inf"),
    ("nan.jsonl", OK + '{"timestamp": NaN, "input_length": 1, "output_length": 1}',
     r"2: timestamp: expected .*, found nan"),
    ("e308.jsonl", OK + '{"timestamp": 1e308, "input_length": 1, "output_length": 1}',
     r"2: timestamp: expected .*, found 1e\+308"),
    ("neg.jsonl", OK + '{"timestamp": -1, "input_length": 1, "output_length": 1}',
     r"2: timestamp: expected .*, found -1"),
    ("span.jsonl", OK + '{"timestamp": 1e14, "input_length": 1, "output_length": 1}',
     r"2: timestamp: expected arrivals spanning at most 366 days, found a span of .* days"),
    ("leninf.jsonl", OK + '{"timestamp": 1, "input_length": Infinity, "output_length": 1}',
     r"2: input_length: expected a whole number in \[1, 16777216\], found inf"),
    ("lennan.jsonl", OK + '{"timestamp": 1, "input_length": NaN, "output_length": 1}',
     r"2: input_length: expected .*, found nan"),
    ("len30.jsonl", OK + '{"timestamp": 1, "input_length": 1e30, "output_length": 1}',
     r"2: input_length: expected .*, found 1e\+30"),
    ("len1e9.jsonl", OK + '{"timestamp": 1, "input_length": 1000000000, "output_length": 1}',
     r"2: input_length: expected .*, found 1000000000"),
    ("frac.jsonl", OK + '{"timestamp": 1, "input_length": 1.5, "output_length": 1}',
     r"2: input_length: expected a whole number .*, found 1.5"),
    ("bool.jsonl", OK + '{"timestamp": 1, "input_length": true, "output_length": 1}',
     r"2: input_length: expected .*, found True"),
    ("out.jsonl", OK + '{"timestamp": 1, "input_length": 1, "output_length": -1}',
     r"2: output_length: expected a whole number in \[0, 16777216\], found -1"),
    ("miss.jsonl", OK + '{"timestamp": 1, "input_length": 1}',
     r"2: output_length: expected a number, found no such key"),
    ("arr.jsonl", OK + "[1, 2]", r"2: expected a JSON object, found list"),
    ("json.jsonl", OK + "{nope", r"2: not valid JSON"),
    ("deep.jsonl", OK + "[" * 100_000, r"2: not valid JSON"),
    ("digits.jsonl", OK + '{"timestamp": 1, "input_length": ' + "9" * 5000 + "}",
     r"2: not valid JSON \(an integer too long to read\)"),
    ("hash.jsonl", OK + '{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [-1]}',
     r"2: hash_ids: expected a list of whole numbers"),
    ("empty.jsonl", "\n\n", r" no requests in the trace"),
    ("a0001.csv", HEAD + "0001-01-01 00:00:00,5,5\n",
     r"3: TIMESTAMP: expected arrivals spanning at most 366 days, found a span of 738840 days"),
    ("a9999.csv", HEAD + "9999-12-31 23:59:59,5,5\n",
     r"3: TIMESTAMP: expected arrivals spanning at most 366 days"),
    ("azero.csv", HEAD + "2023-11-16 18:15:47,0,5\n",
     r"3: ContextTokens: expected a whole number in \[1, 16777216\], found '0'"),
    ("aneg.csv", HEAD + "2023-11-16 18:15:47,5,-5\n",
     r"3: GeneratedTokens: expected a whole number in \[0, 16777216\], found '-5'"),
    ("ainf.csv", HEAD + "2023-11-16 18:15:47,inf,5\n", r"3: ContextTokens: expected .*'inf'"),
    ("adate.csv", HEAD + "yesterday,5,5\n", r"3: TIMESTAMP: expected a date-time"),
    ("atz.csv", HEAD + "0001-01-01T00:00:00+05:00,5,5\n", r"3: TIMESTAMP: expected a date-time"),
    ("acols.csv", HEAD + "2023-11-16 18:15:47,5\n", r"3: row: expected 3 columns, found 2"),
    ("ahead.csv", "time,in,out\n", r"1: header: expected TIMESTAMP,ContextTokens,GeneratedTokens"),
    ("ahead0.csv", "", r"1: header: expected"),
]


@pytest.mark.parametrize(("name", "text", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_trace_is_one_line_naming_file_line_and_key(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError) as info:
        read_trace(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert re.fullmatch(re.escape(str(path)) + ":?" + message + ".*", msg), msg


@pytest.mark.parametrize(("name", "data", "line"), [
    ("binary.jsonl", OK.encode() + b"\x00\x01\xff\xfe" * 64, 2),
    ("latin1.csv", HEAD.encode() + "2023-11-16 18:15:47,5,5 caf\xe9\n".encode("latin-1"), 3),
    ("nul.csv", HEAD.encode() + b"2023-11-16 18:15:47,5,5\x00\n", 3),
])
def test_non_utf8_or_binary_trace_names_its_line(tmp_path, name, data, line):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(TraceError, match=rf"^{re.escape(str(path))}:{line}: expected UTF-8 text"):
        read_trace(path)


def test_infinity_timestamp_no_longer_loses_every_request(tmp_path, capsys):
    """The issue's request-losing case: one `Infinity` among 200 lines used to make 0 of 200
    requests arrive with exit 0; now the run refuses the file (exit 2, one line)."""
    lines = [json.dumps({"timestamp": 1000 * i, "input_length": 100, "output_length": 10})
             for i in range(200)]
    lines[117] = '{"timestamp": Infinity, "input_length": 100, "output_length": 10}'
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    rc = cli.main(["run", "--preset", "toy", "--trace", str(path), "--json"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and f"{path}:118: timestamp: expected" in err


def test_valid_edges_load_exactly(tmp_path):
    """The stated ranges are inclusive and keep every record: unsorted rows sort stably,
    a BOM is dropped, offsets convert to UTC, 7 fraction digits are read."""
    path = tmp_path / "ok.jsonl"
    path.write_text(
        json.dumps({"timestamp": 5000, "input_length": MAX_TOKENS, "output_length": 0}) + "\n"
        + json.dumps({"timestamp": 1000, "input_length": 1, "output_length": MAX_TOKENS,
                      "hash_ids": [2**63 - 1]}) + "\n"
        + json.dumps({"timestamp": 1000 + MAX_SPAN_S * 1000, "input_length": 2.0,
                      "output_length": 3}) + "\n")
    tr = read_trace(path)
    assert tr.arrivals.tolist() == [0.0, 4.0, MAX_SPAN_S]
    assert tr.input_lengths.tolist() == [1, MAX_TOKENS, 2]
    assert tr.output_lengths.tolist() == [MAX_TOKENS, 0, 3]
    az = tmp_path / "ok.csv"
    az.write_text("\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\n"
                  "2023-11-16 18:00:10.0000005,10,1\n"
                  "2023-11-16T18:00:00,20,2\n"
                  "2023-11-16 18:00:05,30,3\n")
    tr = read_trace(az)
    assert tr.arrivals.tolist() == [0.0, 5.0, 10.0]
    assert tr.input_lengths.tolist() == [20, 30, 10]


def test_check_record_is_the_shared_rule_for_new_formats():
    assert check_record("x.csv", 7, "2.5", "100", "0", keys=("Timestamp", "Req", "Resp")) == \
        (2.5, 100, 0)
    with pytest.raises(TraceError, match=r"^x.csv:7: Req: expected a whole number in \[1, 16777216\], "
                                         r"found '0'$"):
        check_record("x.csv", 7, "2.5", "0", "1", keys=("Timestamp", "Req", "Resp"))
    with pytest.raises(TraceError, match=r"^x.csv:8: Timestamp: expected a number of s in "):
        check_record("x.csv", 8, float("inf"), 1, 1, keys=("Timestamp", "Req", "Resp"))


def test_the_token_range_is_the_one_the_length_configs_state():
    from emulator import traces
    from emulator.scenario import lengths

    assert lengths.MAX_TOKENS is traces.MAX_TOKENS
