"""Plan results files (issue 11): a wrong-shaped or corrupted record is named by line and the
sweep resumes from the valid ones; one planner per file (an flock that dies with its process);
an output folder that does not exist is refused before the sweep runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from emulator.planner.goodput import SLO, Settings
from emulator.planner.space import AUTO_T, Space
from emulator.planner.store import (
    PlanFileError,
    ResultsFile,
    check_writable,
    read_results,
    record_problem,
)
from emulator.planner.sweep import Plan, run_plan
from prfaas_tui import cli

HEADER = {"scenario": "x", "seeds": [1]}


def rec(key: str, goodput: float = 1.0) -> dict:
    return {"key": key, "label": key, "binding": "prfaas", "goodput": goodput,
            "goodput_lo": goodput, "goodput_hi": goodput, "lambda_max": 4.0, "utilization": goodput / 4.0,
            "cost_per_hour": None, "goodput_per_cost": None,
            "candidate": {"paradigm": "prfaas-pd", "n_prfaas": 1, "n_p": 1, "n_d": 2,
                          "t": float("inf"), "bandwidth": 0.0}}


CORRUPT = [
    ('{"key": "k"}', "label: expected a string"),
    ("[1, 2]", "expected a JSON object, found list"),
    ("not json at all", "not valid JSON"),
    (json.dumps({**rec("k"), "goodput": "3"}), "goodput: expected a finite number >= 0, found '3'"),
    (json.dumps({**rec("k"), "goodput": float("nan")}), "goodput: expected a finite number"),
    (json.dumps({**rec("k"), "goodput": -1}), "goodput: expected a finite number >= 0, found -1"),
    (json.dumps({**rec("k"), "cost_per_hour": 1e999}), "cost_per_hour: expected a finite"),
    (json.dumps({**rec("k"), "key": 5}), "key: expected a string, found 5"),
    (json.dumps({**rec("k"), "candidate": []}), "candidate: expected an object"),
    (json.dumps({**rec("k"), "candidate": {**rec("k")["candidate"], "n_p": True}}),
     "candidate.n_p: expected a whole number >= 0, found True"),
    (json.dumps({**rec("k"), "candidate": {**rec("k")["candidate"], "paradigm": "x"}}),
     "candidate.paradigm: expected one of"),
    (json.dumps({**rec("k"), "candidate": {**rec("k")["candidate"], "t": -1}}),
     "candidate.t: expected a number >= 0, found -1"),
]


@pytest.mark.parametrize(("line", "why"), CORRUPT, ids=[w.split(":")[0] for _, w in CORRUPT])
def test_a_corrupt_record_is_named_skipped_kept_aside_and_redone(tmp_path, line, why):
    path = tmp_path / "p.jsonl"
    with ResultsFile(path, HEADER) as rf:
        rf.append(rec("a"))
    with path.open("a") as fh:
        fh.write(line + "\n" + json.dumps(rec("b")) + "\n")
    with pytest.raises(PlanFileError) as info:  # a read-only reader refuses the file
        read_results(path)
    assert str(info.value).startswith(f"{path}:3: not a plan record ({why}")
    reported: list[str] = []
    with ResultsFile(path, HEADER, report=reported.append) as again:
        assert set(again.done) == {"a", "b"}  # the valid ones on both sides of it
        assert len(reported) == 1 and reported[0].startswith(f"{path}:3: not a plan record ({why}")
        assert "\n" not in reported[0] and again.problems == reported
    assert (tmp_path / "p.jsonl.bad").read_text() == line + "\n"  # nothing silently dropped
    header, records = read_results(path)  # the rewritten file reads cleanly
    assert header == HEADER and [r["key"] for r in records] == ["a", "b"]


def test_a_last_line_cut_by_an_interrupt_is_named_and_redone(tmp_path):
    path = tmp_path / "p.jsonl"
    with ResultsFile(path, HEADER) as rf:
        rf.append(rec("a"))
        rf.append(rec("b"))
    text = path.read_text()
    path.write_text(text[:-25])  # the last record half written
    half = path.read_text().splitlines()[-1]
    reported: list[str] = []
    with ResultsFile(path, HEADER, report=reported.append) as again:
        assert set(again.done) == {"a"}
        assert len(reported) == 1 and reported[0] == (
            f"{path}:3: not a plan record (the last line, cut short by an interrupted write); "
            "moved to p.jsonl.bad, that candidate is redone")
    assert (tmp_path / "p.jsonl.bad").read_text() == half + "\n"
    header, records = read_results(path)
    assert [r["key"] for r in records] == ["a"]


@pytest.mark.parametrize("data", [b"", b"\xff\xfe\x00binary", b"hello\n", b'{"header": 3}\n',
                                  b"[" * 100_000 + b"\n"])
def test_not_a_plan_file_is_one_line_at_line_1(tmp_path, data):
    path = tmp_path / "p.jsonl"
    path.write_bytes(data)
    with pytest.raises(PlanFileError, match=rf"^{path}:1: not a prfaas-tui plan results file"):
        read_results(path)
    if data:
        with pytest.raises(PlanFileError, match=r":1: not a prfaas-tui plan results file"):
            ResultsFile(path, HEADER)


def test_record_problem_accepts_what_the_sweep_writes():
    assert record_problem(rec("a")) is None
    assert record_problem({**rec("a"), "extra": [1]}) is None  # new fields are allowed


def test_two_writers_on_one_file_are_refused_and_the_lock_is_released(tmp_path):
    path = tmp_path / "p.jsonl"
    first = ResultsFile(path, HEADER)
    with pytest.raises(PlanFileError, match=r"another planner \(pid \d+\) is writing this file"):
        ResultsFile(path, HEADER)
    first.close()
    ResultsFile(path, HEADER).close()  # released on close


HOLDER = """
import sys
from emulator.planner.store import ResultsFile
rf = ResultsFile(sys.argv[1], {"scenario": "x", "seeds": [1]})
print("locked", flush=True)
sys.stdin.read()  # hold the lock until killed
"""


def test_a_live_planner_blocks_a_dead_one_does_not(tmp_path):
    path = tmp_path / "p.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(PlanFileError, match=rf"another planner \(pid {proc.pid}\)"):
            ResultsFile(path, HEADER)
    finally:
        proc.kill()
        proc.wait()
    assert (tmp_path / "p.jsonl.lock").exists()  # stale: the file stays, the lock does not
    with ResultsFile(path, HEADER) as rf:
        assert rf.done == {}


def test_check_writable(tmp_path):
    check_writable(tmp_path / "new.jsonl")
    with pytest.raises(PlanFileError, match=r"^--out: the folder .*nope does not exist"):
        check_writable(tmp_path / "nope" / "x.jsonl")
    with pytest.raises(PlanFileError, match=r"^--csv: .* is a folder"):
        check_writable(tmp_path, "--csv")


@pytest.mark.parametrize("flag", ["--out", "--csv"])
def test_plan_into_a_missing_folder_fails_before_the_sweep(tmp_path, capsys, monkeypatch, flag):
    import prfaas_tui.commands.plan as plan_cmd

    def no_sweep(*a, **k):
        raise AssertionError("the sweep ran")

    monkeypatch.setattr(plan_cmd, "run_plan", no_sweep)
    argv = ["plan", "--preset", "toy", "--out", str(tmp_path / "ok.jsonl"),
            flag, str(tmp_path / "missing" / "x")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag}: the folder" in err and "does not exist" in err


def test_the_sweep_resumes_from_the_valid_records(toy, tmp_path):
    sp = Space.around(toy, thresholds=(AUTO_T,), paradigms=("prfaas-pd",), n_prfaas=(1, 2))
    plan = Plan(toy, sp, Settings(SLO(600.0), seeds=(1,), duration=120.0, steps=2),
                per_config=99, margin=1.0)
    path = tmp_path / "r.jsonl"
    full = run_plan(plan, out=path)
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + full["emulated"] >= 3
    broken = json.loads(lines[1])
    broken["goodput"] = "lots"
    lines[1] = json.dumps(broken)
    path.write_text("\n".join(lines) + "\n")
    again = []
    resumed = run_plan(plan, out=path, on_result=lambda r: again.append(r["key"]))
    assert again == [broken["key"]] and resumed["evaluated_now"] == 1
    assert [r["key"] for r in resumed["ranked"]] == [r["key"] for r in full["ranked"]]
