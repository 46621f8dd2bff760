"""`prfaas-tui run`: the JSON contract, determinism, one-line errors with exit status 2, the
unbounded-queue warning, the CSV time series."""

import argparse
import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prfaas_tui.commands import run

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ("import argparse, sys; from prfaas_tui.commands import run; "
           "p = argparse.ArgumentParser(prog='prfaas-tui'); s = p.add_subparsers(dest='cmd'); "
           "run.add_parser(s); a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))")


def cli(capsys, *argv):
    parser = argparse.ArgumentParser(prog="prfaas-tui")
    run.add_parser(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["run", *argv])
    rc = args.func(args)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def without_timing(text):
    obj = json.loads(text)
    obj.pop("timing")
    return obj


def test_json_has_the_contract_keys(capsys):
    rc, out, err = cli(capsys, "--preset", "toy", "--duration", "300", "--json")
    assert rc == 0, err
    j = json.loads(out)
    for key in ("simulated_seconds", "events", "offered_rate", "served_rate", "bottleneck",
                "link_utilization", "ttft", "accounting", "timing", "model"):
        assert key in j
    assert j["bottleneck"] in ("prfaas", "pd-p", "pd-d", "link")
    assert set(j["ttft"]) >= {"mean", "p50", "p90", "p99"}
    assert set(j["accounting"]) >= {"arrived", "completed", "in_flight", "rejected", "lost"}
    assert set(j["timing"]) == {"wall_seconds", "requests_per_wall_second", "realtime_factor"}
    assert j["model"]["exact"]["lambda_max"] == pytest.approx(2.0)
    assert j["model"]["paper"]["lambda_max"] == pytest.approx(2.0)
    assert j["simulated_seconds"] == 300
    acc = j["accounting"]
    assert acc["arrived"] == acc["completed"] + acc["in_flight"] + acc["rejected"] + acc["lost"]


def test_same_preset_and_seed_give_identical_json_apart_from_timing(capsys):
    argv = ["--preset", "paper-case-study", "--duration", "600", "--seed", "5", "--json"]
    first = without_timing(cli(capsys, *argv)[1])
    second = without_timing(cli(capsys, *argv)[1])
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    proc = subprocess.run([sys.executable, "-c", HARNESS, "run", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    third = without_timing(proc.stdout)
    assert first == second == third
    other = without_timing(cli(capsys, *argv[:-3], "--seed", "6", "--json")[1])
    assert other != first


@pytest.mark.parametrize("argv, needle", [
    (["--bandwidth", "-5"], "--bandwidth: must be >= 1 Mbps"),
    (["--bandwidth", "fast"], "--bandwidth:"),
    (["--np", "3", "--nd", "2"], "--np/--nd: n_p + n_d = 5 exceeds the local pool of 3"),
    (["--nd", "0"], "--np/--nd: n_d must be >= 1"),
    (["--preset", "no-such-preset"], "no-such-preset: no preset of that name"),
    (["--duration", "-1"], "--duration: must be > 0"),
    (["--rate", "x"], "--rate:"),
    (["--t", "1M"], "--t:"),
    (["--seed", "1.5"], "--seed: must be a whole number"),
    (["--paradigm", "homogeneous", "--np", "12", "--nd", "1"], "exceeds the local pool of 5"),
    (["--trace", "missing.jsonl"], "missing.jsonl: no such file"),
    (["--rate", "1", "--load", "1"], "--rate/--load: give one or the other"),
    (["--paradigm", "naive-heterogeneous", "--np", "1", "--nd", "2"], "n_p must be 0"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, needle):
    rc, out, err = cli(capsys, "--preset", "toy", *argv)
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1 and needle in err
    assert "Traceback" not in err


def test_bad_preset_key_names_file_and_key(capsys, tmp_path):
    text = (ROOT / "presets" / "toy.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("[emulator]", "[emulator]\nmax_qeue = 5"))
    rc, _, err = cli(capsys, "--preset", str(bad))
    assert rc == 2
    assert "bad.toml: emulator.max_qeue: unknown key (did you mean 'max_queue'?)" in err


def test_overload_without_admission_bound_warns(capsys):
    rc, _, err = cli(capsys, "--preset", "toy", "--load", "1.2", "--duration", "60", "--json")
    assert rc == 0
    assert "warning: overloaded: queue grows" in err and "1.20x" in err
    rc, _, err = cli(capsys, "--preset", "toy", "--load", "0.8", "--duration", "60", "--json")
    assert rc == 0 and err == ""


def test_knob_flags_reach_the_run(capsys):
    rc, out, _ = cli(capsys, "--preset", "toy", "--duration", "120", "--t", "0", "--np", "0",
                     "--nd", "3", "--n-prfaas", "3", "--bandwidth", "16", "--rate", "1.5",
                     "--json")
    assert rc == 0
    j = json.loads(out)
    k = j["knobs"]
    assert (k["t"], k["n_p"], k["n_d"], k["n_prfaas"]) == (0, 0, 3, 3)
    assert k["bandwidth_gbps"] == pytest.approx(16)
    assert j["target_rate"] == 1.5
    assert j["stages"]["pd-p"]["entered"] == 0  # t = 0 sends everything remote


def test_readable_summary_and_csv(capsys, tmp_path):
    path = tmp_path / "series.csv"
    rc, out, _ = cli(capsys, "--preset", "toy", "--duration", "120", "--csv", str(path))
    assert rc == 0
    assert "busiest (measured)" in out and "prfaas" in out
    rows = list(csv.reader(path.open()))
    assert rows[0][:3] == ["time", "offered_rate", "served_rate"]
    assert len(rows) == 1 + 120  # one row per simulated second
    assert float(rows[-1][0]) == 120
    assert all(math.isfinite(float(r[-1])) for r in rows[1:])  # the wire bytes, read per row


def test_csv_rows_carry_wire_bytes_after_the_stride_doubles(tmp_path):
    """Samples skip the walk over every flow unless a row reads them: once the series keeps
    every 2nd, 4th... sample, each written row still has its bytes in flight."""
    from dataclasses import replace

    from emulator.scenario.presets import load
    from emulator.sim.engine import Emulation

    sc = load("toy")
    sc = replace(sc, sim=replace(sc.sim, timeseries_rows=8))
    rows = []
    with Emulation(sc, load=0.9, duration=100) as emu:
        emu.observer.series.sink = rows.append
        emu.run()
    assert emu.observer.series.stride >= 8
    times = [r[0] for r in rows]
    assert times[-1] - times[-2] >= 8  # rows every 8 samples or more by the end
    wire = [r[-1] for r in rows]
    assert all(math.isfinite(w) for w in wire) and max(wire) > 0


def test_csv_unwritable_is_exit_2(capsys, tmp_path):
    rc, _, err = cli(capsys, "--preset", "toy", "--duration", "10",
                     "--csv", str(tmp_path / "no" / "dir.csv"))
    assert rc == 2 and "--csv: cannot write" in err


@pytest.mark.parametrize("targets, expected", [('ttft = "1 h"', 1.0), ('tpot = "20 ms"', 0.0)])
def test_slo_attainment(capsys, tmp_path, targets, expected):
    text = (ROOT / "presets" / "toy.toml").read_text() + f"\n[slo]\n{targets}\n"
    path = tmp_path / "slo.toml"
    path.write_text(text)
    rc, out, _ = cli(capsys, "--preset", str(path), "--duration", "300", "--json")
    assert rc == 0
    assert json.loads(out)["slo"]["attainment"] == expected
    rc, out, _ = cli(capsys, "--preset", "toy", "--duration", "60", "--json")
    assert json.loads(out)["slo"] is None
