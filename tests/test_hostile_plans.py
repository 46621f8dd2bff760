"""Plan files are checked on resume like fresh input: a record whose numbers no sweep can
write (goodput over its Lambda_max, 1e308, a Lambda_max not the candidate's) is moved to .bad
and redone; the plan's horizon warning never reads as a negative share."""

from __future__ import annotations

import json

import pytest

from emulator.planner.goodput import SLO, Settings, too_short
from emulator.planner.space import AUTO_T, Space
from emulator.planner.store import ResultsFile, record_problem
from emulator.planner.sweep import Plan, run_plan

HEADER = {"scenario": "x", "seeds": [1]}


def rec(key: str, goodput: float, lam: float = 1.6) -> dict:
    return {"key": key, "label": key, "binding": "prfaas", "goodput": goodput,
            "goodput_lo": goodput, "goodput_hi": goodput, "lambda_max": lam,
            "utilization": goodput / lam, "cost_per_hour": None, "goodput_per_cost": None,
            "candidate": {"paradigm": "prfaas-pd", "n_prfaas": 1, "n_p": 1, "n_d": 2,
                          "t": 8192.0, "bandwidth": 1e10}}


@pytest.mark.parametrize("edit,why", [
    ({"goodput": 50.0, "goodput_hi": 50.0}, "goodput: expected at most its lambda_max 1.6"),
    ({"goodput": 1e308, "goodput_hi": 1e308, "lambda_max": 1e308, "utilization": 1.0},
     "lambda_max: expected at most 1e+09"),
    ({"utilization": 0.9}, "utilization: expected goodput / lambda_max"),
    ({"goodput_lo": 1.5}, "goodput: expected within [goodput_lo, goodput_hi]"),
    ({"per_seed": [0.1, 0.2]}, "goodput: expected the mean of per_seed"),
])
def test_impossible_numbers_are_not_records(edit, why):
    assert record_problem(rec("a", 0.8)) is None
    assert why in (record_problem({**rec("a", 0.8), **edit}) or "")


def test_a_resume_moves_them_aside_and_redoes_them(tmp_path):
    path = tmp_path / "plan.jsonl"
    lines = [{"header": HEADER}, rec("a", 0.8), {**rec("b", 50.0), "utilization": 50 / 1.6}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    reported: list[str] = []
    with ResultsFile(path, HEADER, report=reported.append) as rf:
        assert set(rf.done) == {"a"}
    assert len(reported) == 1 and f"{path}:3: not a plan record (goodput: expected at most" \
        in reported[0]
    assert json.loads(path.with_name("plan.jsonl.bad").read_text())["key"] == "b"


def test_a_record_whose_lambda_max_is_not_its_candidates_is_redone(toy, tmp_path):
    sp = Space.around(toy, thresholds=(AUTO_T,), paradigms=("prfaas-pd",), n_prfaas=(1, 2))
    plan = Plan(toy, sp, Settings(SLO(600.0), seeds=(1,), duration=120.0, steps=2),
                per_config=99, margin=1.0)
    path = tmp_path / "r.jsonl"
    full = run_plan(plan, out=path)
    lines = path.read_text().splitlines()
    forged = json.loads(lines[1])
    forged["lambda_max"] *= 30  # consistent on its own, but not this candidate's
    forged["goodput"] = forged["goodput_lo"] = forged["goodput_hi"] = forged["lambda_max"] * 0.9
    forged["utilization"] = 0.9
    forged.pop("per_seed", None)
    forged["goodput_per_cost"] = (forged["goodput"] / forged["cost_per_hour"]
                                  if forged["cost_per_hour"] else None)
    lines[1] = json.dumps(forged)
    path.write_text("\n".join(lines) + "\n")
    again: list[str] = []
    resumed = run_plan(plan, out=path, on_result=lambda r: again.append(r["key"]))
    assert again == [forged["key"]]
    assert [r["goodput"] for r in resumed["ranked"]] == [r["goodput"] for r in full["ranked"]]


def test_a_one_second_plan_warning_never_says_a_negative_share(toy):
    why = too_short(toy, 1.0)
    assert why is not None and "%" not in why.split("(")[0] and "-" not in why.split("(")[0]
    assert "can judge none of its requests" in why
