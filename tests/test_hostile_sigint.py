"""Issue 11: Ctrl-C ends `run --csv` and `plan --out` with one line on stderr and exit 130,
and leaves their files valid up to the last complete record.

A real subprocess in its own session gets SIGINT on its whole process group (what a terminal's
Ctrl-C does, plan's worker processes included) once its file holds a record. `run` writes to a
FIFO, so the test waits on the rows themselves; `plan`'s resumable results file must be a
regular file, so its launcher announces each record on stdout once it is flushed and the test
waits on that line (an event, no clock). No test times the exit: benchmarks/bench_sigint.py
measures it."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.sim.books.metrics import TimeSeries

ROOT = Path(__file__).resolve().parents[1]
CLI = "import sys; from prfaas_tui.cli import main; sys.exit(main())"
# the same CLI, with "record" on stdout after each plan record is flushed to the results file
RECORDED_CLI = """
import sys
from emulator.planner.store import ResultsFile
from prfaas_tui.cli import main

append = ResultsFile.append


def announced(self, rec):
    append(self, rec)
    print("record", flush=True)


ResultsFile.append = announced
sys.exit(main())
"""
DEADLINE = 60.0  # generous, for a loaded machine: a hang fails here, it never times a pass

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
              pytest.mark.timeout(180)]


def start(*argv: str, code: str = CLI) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    stdout = subprocess.PIPE if code is RECORDED_CLI else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-c", code, *argv], cwd=ROOT, env=env,
                            stdout=stdout, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def ended(proc: subprocess.Popen) -> str:
    """Its stderr once it has ended. How fast it ends after SIGINT is
    benchmarks/bench_sigint.py's to measure, not a test's: a hang fails at the deadline."""
    try:
        return proc.communicate(timeout=DEADLINE)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"still running {DEADLINE:.0f} s after SIGINT")


def ctrl_c(proc: subprocess.Popen) -> None:
    """What a terminal's Ctrl-C does: SIGINT to the whole process group."""
    os.killpg(proc.pid, signal.SIGINT)


def assert_one_line(proc: subprocess.Popen, err: str) -> None:
    lines = err.strip().splitlines()
    assert lines == ["prfaas-tui: interrupted"], err
    assert proc.returncode == 130


def test_ctrl_c_during_run_csv(tmp_path):
    """The series goes to a FIFO: the test reads the header and a row as they are written (an
    event, no clock), interrupts, and reads the rest to the end of the stream."""
    path = tmp_path / "series.csv"
    os.mkfifo(path)
    # about 28 minutes of emulation at the run's caps: raised so that it is mid-way when hit
    proc = start("run", "--duration", "6e5", "--max-requests", "1e8", "--max-events", "1e8",
                 "--csv", str(path))
    with open(path, encoding="utf-8", newline="") as fifo:  # blocks until the run opens it
        head = [fifo.readline(), fifo.readline()]  # the header and a row
        assert all(line.endswith("\n") for line in head), head
        ctrl_c(proc)
        head.extend(fifo)  # to the end of the stream (the run's last writes never block)
    err = ended(proc)
    text = "".join(head)
    assert_one_line(proc, err)
    assert text.endswith("\n")  # ends on a complete record
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == list(TimeSeries.COLUMNS)
    times = []
    for row in rows[1:]:
        assert len(row) == len(TimeSeries.COLUMNS), row
        values = [float(x) for x in row]
        assert all(math.isfinite(x) for x in values), row
        times.append(values[0])
    assert len(times) >= 1 and times == sorted(times) and times[-1] < 6e5


def wait_for_record(proc: subprocess.Popen) -> None:
    """Block until the plan announces a record flushed to its results file (the launcher's
    "record" line: an event, no clock; a hang is the test's timeout). Fails if the command
    ends first."""
    for line in proc.stdout:
        if line.strip() == "record":
            return
    proc.wait()
    pytest.fail(f"ended (rc {proc.returncode}) before writing a record: {proc.stderr.read()}")


def test_ctrl_c_during_plan_out(tmp_path):
    path = tmp_path / "plan.jsonl"
    proc = start("plan", "--pool", "4:12", "--workers", "2", "--max-requests", "1e9",
                 "--out", str(path), code=RECORDED_CLI)
    wait_for_record(proc)  # the header and a candidate are in the file
    ctrl_c(proc)
    err = ended(proc)
    assert_one_line(proc, err)
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    records = [json.loads(line) for line in text.splitlines()]
    assert "header" in records[0] and len(records) >= 2
    assert all("key" in r and "candidate" in r for r in records[1:])
    # and the sweep resumes from it: the same command skips what is done
    from emulator.planner.store import read_results

    header, done = read_results(path)
    assert header == records[0]["header"] and len(done) == len(records) - 1
