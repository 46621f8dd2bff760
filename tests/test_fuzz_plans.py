"""Fuzzed plan results files (issue 11): valid and almost-valid files (hostile values, swapped
types, missing keys, mutated bytes, truncation) are read by the dashboard's reader and resumed
by a sweep's ResultsFile: each either works or raises the one-line PlanFileError naming the
file; a resume names every line it skips and leaves a file that reads cleanly."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.paradigm import Paradigm
from emulator.planner.store import PlanFileError, ResultsFile, read_results, record_problem
from tests.fuzzing import (
    HOSTILE_VALUES,
    default_settings,
    fuzz_budget,
    long_profile,
    mutated_bytes,
)

HEADER = {"scenario": "toy", "seeds": [1, 2], "duration": 600.0, "space": "Space(...)"}
NUM = st.floats(0, 1e6)
CANDIDATE = st.fixed_dictionaries({
    "paradigm": st.sampled_from([str(p) for p in Paradigm]), "n_prfaas": st.integers(0, 64),
    "n_p": st.integers(0, 64), "n_d": st.integers(0, 64),
    "t": st.one_of(st.floats(0, 1e6), st.just(math.inf)), "bandwidth": st.floats(0, 1e12)})
@st.composite
def record(draw) -> dict:
    """A record as a sweep writes one: goodput the seeds' mean in [0, lambda_max] inside its
    interval, utilization = goodput / lambda_max, goodput_per_cost = goodput / cost."""
    lam = draw(st.floats(0, 1e6))
    seeds = draw(st.lists(st.floats(0, 1, allow_subnormal=False).map(lambda u: u * lam),
                          min_size=1, max_size=3))
    g = math.fsum(seeds) / len(seeds)
    half = draw(st.floats(0, 10))
    cost = draw(st.one_of(st.none(), st.floats(0.01, 1e6)))
    rec = {
        "key": draw(st.text("0123456789abcdef", min_size=16, max_size=16)),
        "label": draw(st.text(max_size=12)),
        "binding": draw(st.sampled_from(["prfaas", "pd-p", "pd-d"])), "goodput": g,
        "goodput_lo": max(g - half, 0.0), "goodput_hi": g + half, "lambda_max": lam,
        "utilization": g / lam if lam > 0 else 0.0, "cost_per_hour": cost,
        "goodput_per_cost": g / cost if cost else None, "candidate": draw(CANDIDATE)}
    if draw(st.booleans()):
        rec["per_seed"] = seeds
    return rec


RECORD = record()


def plan_bytes(header, records) -> bytes:
    return "".join(json.dumps(x, sort_keys=True) + "\n"
                   for x in [{"header": header}, *records]).encode()


@st.composite
def almost_plan(draw) -> bytes:
    records = draw(st.lists(RECORD, max_size=6))
    header = dict(HEADER)
    how = draw(st.sampled_from(["value", "candidate", "drop", "junk", "header", "bytes"]))
    if records and how in ("value", "candidate", "drop", "junk"):
        i = draw(st.integers(0, len(records) - 1))
        rec = dict(records[i])
        if how == "value":
            rec[draw(st.sampled_from(sorted(rec)))] = draw(HOSTILE_VALUES)
        elif how == "candidate":
            c = dict(rec["candidate"])
            c[draw(st.sampled_from(sorted(c)))] = draw(HOSTILE_VALUES)
            rec["candidate"] = c
        elif how == "drop":
            rec.pop(draw(st.sampled_from(sorted(rec))))
        else:
            rec = draw(HOSTILE_VALUES)
        records[i] = rec
    elif how == "header":
        header = draw(st.one_of(HOSTILE_VALUES, st.just({**HEADER, "seeds": [1]})))
    data = plan_bytes(header, records)
    return draw(mutated_bytes(data)) if how == "bytes" or draw(st.booleans()) else data


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzzplan")


def one_line(exc: Exception, path: Path) -> None:
    msg = str(exc)
    assert "\n" not in msg and msg.startswith(str(path)), msg


def read_and_resume(path: Path, data: bytes, counter: list[int] | None = None) -> None:
    """The oracle: the read-only reader and a resume each work or raise one PlanFileError line;
    after a resume every skipped line was named and the file reads cleanly."""
    if counter is not None:
        counter[0] += 1
    bad = path.with_name(path.name + ".bad")
    bad.unlink(missing_ok=True)
    path.write_bytes(data)
    try:
        header, records = read_results(path)
    except PlanFileError as exc:
        one_line(exc, path)
    else:
        assert header == HEADER or isinstance(header, dict)
        assert all(record_problem(r) is None for r in records)
    reported: list[str] = []
    try:
        with ResultsFile(path, HEADER, report=reported.append) as rf:
            done = dict(rf.done)
    except PlanFileError as exc:
        one_line(exc, path)
        return
    for msg in reported:
        one_line(Exception(msg), path)
    kept = bad.read_text().splitlines() if bad.exists() else []
    assert len(kept) == len(reported)  # every skipped line is kept aside and named
    header, records = read_results(path)  # clean after the resume
    assert header == HEADER and {r["key"]: r for r in records} == done


@default_settings(60)
@given(records=st.lists(RECORD, max_size=6))
def test_a_valid_plan_file_reads_and_resumes_whole(workdir, records):
    path = workdir / "v.jsonl"
    read_and_resume(path, plan_bytes(HEADER, records))
    assert {r["key"] for r in read_results(path)[1]} == {r["key"] for r in records}


@default_settings(200)
@given(data=almost_plan())
def test_an_almost_valid_plan_file_works_or_says_where(workdir, data):
    read_and_resume(workdir / "m.jsonl", data)


@pytest.mark.fuzz
def test_fuzz_plan_files_for_a_budget(request, tmp_path):
    counter = [0]

    def make(s):
        @s
        @given(data=st.one_of(almost_plan(), st.binary(max_size=400)))
        def prop(data):
            read_and_resume(tmp_path / "p.jsonl", data, counter)
        return prop

    assert long_profile(request, "plan files", make, counter) >= fuzz_budget(request.config)
