"""`plan` as a newcomer meets it: output redirected to a file is plain text, a bare `plan`
leaves nothing in the working directory, the lock file goes when the planner ends, a file of
another plan is refused with the flags that differ and a free name, and a paradigm at goodput
0 says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.planner.store import OtherPlan, ResultsFile
from prfaas_tui.cli import main
from prfaas_tui.commands.plan import changed_flags, free_name, other_plan_message


@pytest.fixture(autouse=True)
def _no_forced_colour(monkeypatch):
    """FORCE_COLOR / TTY_COMPATIBLE ask rich for colour on purpose: not what is tested here."""
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)


TINY = ["plan", "--n-prfaas", "4", "--pool", "8", "--seeds", "1", "--steps", "2",
        "--duration", "9 min", "--workers", "1"]


def test_bare_plan_redirected_is_plain_and_leaves_no_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(TINY) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out  # captured stdout is not a terminal: no colour escapes
    assert "cost / goodput" in out and "Pareto front" in out  # the chart, as plain text
    assert "Results not kept: --out FILE keeps them" in out
    assert list(tmp_path.iterdir()) == []
    # the default 5 s SLO is below homogeneous's P90 at zero load: said, with the figure
    line = next(x for x in out.splitlines() if x.startswith("homogeneous: goodput 0"))
    assert "even at zero" in " ".join(out.split()) and "--slo-ttft 5 s" in " ".join(out.split())
    assert line


def test_out_keeps_the_results_and_removes_its_lock(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*TINY, "--out", "p.jsonl"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.jsonl"]
    # the same command resumes; another SLO and pool are refused, naming them and a free name
    assert main([*TINY, "--out", "p.jsonl"]) == 0
    capsys.readouterr()
    assert main([*TINY, "--out", "p.jsonl", "--slo-ttft", "6s", "--pool", "7,8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--slo-ttft" in err and "--pool" in err and "--out p-2.jsonl" in err


HEADER = {"scenario": "x", "seeds": [1], "slo": {"ttft_p90": 5.0, "tpot_p90": None},
          "space": "Space(n_prfaas=(4,), pools=(8,), thresholds=(-1.0,))", "steps": 2}


@pytest.mark.parametrize("change, flags", [
    ({"seeds": [1, 2]}, ["--seeds"]),
    ({"slo": {"ttft_p90": 6.0, "tpot_p90": None}}, ["--slo-ttft"]),
    ({"space": "Space(n_prfaas=(4,), pools=(7, 8), thresholds=(-1.0,))"}, ["--pool"]),
    ({"space": "Space(n_prfaas=(2,), pools=(8,), thresholds=(16384.0,))"}, ["--n-prfaas", "--t"]),
])
def test_a_changed_flag_is_named(tmp_path, change, flags):
    path = tmp_path / "plan.jsonl"
    ResultsFile(path, HEADER).close()
    with pytest.raises(OtherPlan) as info:
        ResultsFile(path, {**HEADER, **change})
    assert sorted(changed_flags(info.value)) == sorted(flags)
    assert "--out " + str(tmp_path / "plan-2.jsonl") in other_plan_message(info.value)


def test_free_name_skips_taken_ones(tmp_path):
    (tmp_path / "plan-2.jsonl").write_text("")
    assert free_name(tmp_path / "plan.jsonl") == tmp_path / "plan-3.jsonl"
    assert free_name(Path(tmp_path / "results.txt")) == tmp_path / "results-2.txt"


def test_lock_file_removed_on_close_and_a_new_planner_can_lock(tmp_path):
    path = tmp_path / "p.jsonl"
    rf = ResultsFile(path, HEADER)
    assert (tmp_path / "p.jsonl.lock").exists()
    rf.close()
    assert not (tmp_path / "p.jsonl.lock").exists()
    with ResultsFile(path, HEADER):
        assert (tmp_path / "p.jsonl.lock").exists()
