"""Traces as workloads: BurstGPT and column-mapped CSVs read strictly (line-numbered errors),
Mooncake incremental lengths after prefix reuse, and the empirical p(L > t) against a count."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.trace_formats import (
    incremental_lengths,
    load_trace,
    parse_columns,
    trace_workload,
)
from emulator.traces import TraceError
from tests.shared_data import MOONCAKE, shared_or_skip


def _csv(tmp_path, text: str, name: str = "t.csv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(1, 200_000), min_size=1, max_size=300),
       cuts=st.lists(st.integers(0, 250_000), min_size=5, max_size=5))
def test_empirical_p_above_equals_a_direct_count(tmp_path_factory, lengths, cuts):
    path = tmp_path_factory.mktemp("tr") / "gen.csv"
    rows = "\n".join(f"{i * 0.5},{n},7" for i, n in enumerate(lengths))
    path.write_text("ts,prompt,gen\n" + rows + "\n", encoding="utf-8")
    wl = trace_workload(load_trace(path, "time=ts,input=prompt,output=gen"))
    for t in cuts:
        assert wl.lengths.p_above(t) == pytest.approx(sum(n > t for n in lengths) / len(lengths), abs=1e-12)
    assert wl.rate == (pytest.approx(2.0) if len(lengths) > 1 else None)
    assert wl.mean_output == 7


def test_burstgpt_is_recognised_by_its_header(tmp_path):
    p = _csv(tmp_path, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                       "5,ChatGPT,472,18,490,Conversation log\n"
                       "7.5,GPT-4,1200,0,1200,API log\n")
    tr = load_trace(p)
    assert tr.input_lengths.tolist() == [472, 1200]
    assert tr.output_lengths.tolist() == [18, 0]
    assert tr.arrivals.tolist() == [0.0, 2.5]


@pytest.mark.parametrize("body,line,needle", [
    ("ts,prompt\n1,100\n2,abc\n", 3, "prompt: expected a whole number in [1, 16777216], found 'abc'"),
    ("ts,prompt\n1,100\nlater,5\n", 3, "column 'ts' mixes seconds and date-times"),
    ("ts,prompt\n1,100\n2,-4\n", 3, "prompt: expected a whole number in [1, "),
    ("ts,prompt\n1,100\n2,0\n", 3, "prompt: expected a whole number in [1, "),
    ("ts,prompt\n1,100\nnan,5\n", 3, "ts: expected a number of s in [0, "),
])
def test_bad_rows_name_file_and_line(tmp_path, body, line, needle):
    p = _csv(tmp_path, body)
    with pytest.raises(TraceError) as exc:
        load_trace(p, "time=ts,input=prompt")
    assert str(exc.value).startswith(f"{p}:{line}: ") and needle in str(exc.value)


def test_a_wrong_column_map_names_the_column_and_the_header(tmp_path):
    p = _csv(tmp_path, "ts,prompt\n1,100\n")
    with pytest.raises(TraceError, match=r":1: --columns input=tokens: no column 'tokens'"):
        load_trace(p, "time=ts,input=tokens")
    with pytest.raises(TraceError, match="unknown role 'size'"):
        parse_columns("time=ts,size=x")
    with pytest.raises(TraceError, match="missing input=COLUMN"):
        parse_columns("time=ts")


def test_incremental_lengths_drop_the_reused_prefix(tmp_path):
    recs = [{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]},
            {"timestamp": 10, "input_length": 1500, "output_length": 5, "hash_ids": [1, 2, 4]},
            {"timestamp": 20, "input_length": 600, "output_length": 5, "hash_ids": [9, 2]},
            {"timestamp": 30, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2]}]
    p = tmp_path / "m.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    tr = load_trace(p)
    # 2nd reuses blocks 1, 2 (1024 tokens); 3rd starts with a new block (no reuse even though
    # block 2 is known: a prefix must be contiguous); the 4th is fully cached but keeps 1 token
    assert incremental_lengths(tr).tolist() == [1100, 476, 600, 1]
    wl = trace_workload(tr, incremental=True)
    assert wl.lengths.support == (1.0, 1100.0)


def test_real_mooncake_trace_as_a_workload():
    path = shared_or_skip(*MOONCAKE)
    tr = load_trace(path)
    wl = trace_workload(tr)
    for t in (1024, 4096, 16384, 32768, 65536):
        assert wl.lengths.p_above(t) == pytest.approx(np.mean(tr.input_lengths > t), abs=1e-12)
    assert wl.rate == pytest.approx(3.4, rel=0.05)
