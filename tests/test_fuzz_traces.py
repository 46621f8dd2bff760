"""Fuzzed traces (issue 11): valid and almost-valid Mooncake JSONL and Azure CSV files (hostile
values, swapped types, missing keys, mutated bytes, truncation) either load exactly what they
hold or raise the project's one-line TraceError naming the file; nothing else, and no record is
ever dropped silently. `-m fuzz --fuzz-budget INPUTS` runs the long profile."""

from __future__ import annotations

import csv
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.traces import MAX_SPAN_S, MAX_TOKENS, TraceError, read_trace
from tests.fuzzing import (
    HOSTILE_VALUES,
    default_settings,
    fuzz_budget,
    long_profile,
    mutated_bytes,
)

SPAN_MS = int(MAX_SPAN_S * 1000)
HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def loads_or_one_line(path: Path, data: bytes, counter: list[int] | None = None):
    """The oracle: a Trace whose every record is one of the file's non-blank lines/rows and whose
    values are in range, or a one-line TraceError naming the file. Anything else fails."""
    if counter is not None:
        counter[0] += 1
    path.write_bytes(data)
    try:
        tr = read_trace(path)
    except TraceError as exc:
        msg = str(exc)
        assert "\n" not in msg and msg.startswith(str(path)), msg
        return None
    text = data.decode("utf-8").removeprefix("\ufeff")  # it loaded, so it is UTF-8
    if path.suffix == ".jsonl":
        expected = sum(1 for raw in data.split(b"\n") if raw.decode().strip())
    else:
        rows = list(csv.reader(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")))
        expected = sum(1 for r in rows[1:] if r and "".join(r).strip())
    assert len(tr) == expected  # nothing dropped silently
    assert np.isfinite(tr.arrivals).all() and tr.arrivals[0] == 0.0
    assert (np.diff(tr.arrivals) >= 0).all() and tr.arrivals[-1] <= MAX_SPAN_S
    assert tr.input_lengths.min() >= 1 and tr.input_lengths.max() <= MAX_TOKENS
    assert tr.output_lengths.min() >= 0 and tr.output_lengths.max() <= MAX_TOKENS
    return tr


# -- Mooncake --------------------------------------------------------------------------------------
RECORD = st.fixed_dictionaries({
    "timestamp": st.one_of(st.integers(0, SPAN_MS), st.floats(0, SPAN_MS)),
    "input_length": st.integers(1, MAX_TOKENS),
    "output_length": st.integers(0, MAX_TOKENS),
}, optional={"hash_ids": st.lists(st.integers(0, 2**63 - 1), max_size=4)})


def jsonl(records: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@st.composite
def almost_mooncake(draw) -> bytes:
    records = draw(st.lists(RECORD, min_size=1, max_size=8))
    i = draw(st.integers(0, len(records) - 1))
    rec = dict(records[i])
    how = draw(st.sampled_from(["value", "drop", "junk", "bytes"]))
    key = draw(st.sampled_from(["timestamp", "input_length", "output_length", "hash_ids"]))
    if how == "value":
        rec[key] = draw(HOSTILE_VALUES)
    elif how == "drop":
        rec.pop(key, None)
    elif how == "junk":
        rec = draw(HOSTILE_VALUES)
    records[i] = rec
    data = jsonl(records)
    return draw(mutated_bytes(data)) if how == "bytes" or draw(st.booleans()) else data


@default_settings(60)
@given(records=st.lists(RECORD, min_size=1, max_size=8))
def test_valid_mooncake_loads_exactly(workdir, records):
    tr = loads_or_one_line(workdir / "v.jsonl", jsonl(records))
    assert tr is not None
    ts = np.array([float(r["timestamp"]) / 1000 for r in records])
    order = np.argsort(ts, kind="stable")
    assert np.array_equal(tr.arrivals, ts[order] - ts.min())
    assert tr.input_lengths.tolist() == [records[k]["input_length"] for k in order]
    assert tr.hash_ids == [records[k].get("hash_ids", []) for k in order]


@default_settings(150)
@given(data=almost_mooncake())
def test_almost_valid_mooncake_loads_or_says_where(workdir, data):
    loads_or_one_line(workdir / "m.jsonl", data)


# -- Azure ---------------------------------------------------------------------------------------
BASE = datetime(2023, 11, 16, 18, 15, 46)
ROW = st.tuples(st.integers(0, int(MAX_SPAN_S * 1e6) - 1), st.integers(1, MAX_TOKENS),
                st.integers(0, MAX_TOKENS), st.sampled_from(["space", "T", "7digits", "tz"]))


def azure_cell(us: int, style: str) -> str:
    t = BASE + timedelta(microseconds=us)
    if style == "T":
        return t.isoformat()
    if style == "7digits":
        return t.strftime("%Y-%m-%d %H:%M:%S.%f") + "7"
    if style == "tz":  # the same instant, written at +02:00
        return (t + timedelta(hours=2)).replace(tzinfo=timezone(timedelta(hours=2))).isoformat()
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")


def azure(rows: list) -> bytes:
    """A valid file's rows all carry a time zone or none do (a column cannot mix them): the
    first row's style decides."""
    tz = rows[0][3] == "tz"
    rows = [(us, a, b, "tz" if tz else ("space" if st_ == "tz" else st_)) for us, a, b, st_ in rows]
    lines = [HEADER] + [f"{azure_cell(us, s)},{a},{b}" if isinstance(us, int) else
                        f"{us},{a},{b}" for us, a, b, s in rows]
    return ("\n".join(lines) + "\n").encode()


@st.composite
def almost_azure(draw) -> bytes:
    rows = [list(r) for r in draw(st.lists(ROW, min_size=1, max_size=8))]
    i = draw(st.integers(0, len(rows) - 1))
    how = draw(st.sampled_from(["tokens", "date", "bytes"]))
    if how == "tokens":
        rows[i][draw(st.integers(1, 2))] = draw(st.one_of(HOSTILE_VALUES.map(str),
                                                          st.text(max_size=6)))
    elif how == "date":
        rows[i][0] = draw(st.sampled_from(["0001-01-01 00:00:00", "9999-12-31 23:59:59",
                                           "2023-02-30 00:00:00", "", "nan", "1e308",
                                           "2023-11-16 25:00:00", "0001-01-01T00:00:00+05:00",
                                           "9999-12-31T23:59:59-05:00", "2023-11-16"]))
    data = azure([tuple(r) for r in rows])
    return draw(mutated_bytes(data)) if how == "bytes" or draw(st.booleans()) else data


@default_settings(60)
@given(rows=st.lists(ROW, min_size=1, max_size=8))
def test_valid_azure_loads_exactly(workdir, rows):
    tr = loads_or_one_line(workdir / "v.csv", azure(rows))
    assert tr is not None
    us = np.array([r[0] for r in rows])
    order = np.argsort(us, kind="stable")
    assert np.allclose(tr.arrivals, (us[order] - us.min()) / 1e6, rtol=0, atol=1e-6)
    assert tr.input_lengths.tolist() == [rows[k][1] for k in order]


@default_settings(150)
@given(data=almost_azure())
def test_almost_valid_azure_loads_or_says_where(workdir, data):
    loads_or_one_line(workdir / "a.csv", data)


@default_settings(60)
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".jsonl", ".csv"]))
def test_random_bytes_load_or_say_where(workdir, data, suffix):
    loads_or_one_line(workdir / ("r" + suffix), data)


# -- the long profile --------------------------------------------------------------------------------
@pytest.mark.fuzz
def test_fuzz_traces_for_a_budget(request, tmp_path):
    counter = [0]

    def make(s):
        @s
        @given(data=st.one_of(almost_mooncake(), st.binary(max_size=400)),
               az=almost_azure())
        def prop(data, az):
            loads_or_one_line(tmp_path / "m.jsonl", data, counter)
            loads_or_one_line(tmp_path / "a.csv", az, counter)
        return prop

    assert long_profile(request, "traces", make, counter) >= fuzz_budget(request.config)
