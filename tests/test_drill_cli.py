"""`prfaas-tui drill` as a user and a script see it: the JSON contract, --compare static, the
listing, exit statuses, and one line for a broken drill file."""

from __future__ import annotations

import json
from pathlib import Path

from prfaas_tui.cli import main

RUN_KEYS = {"simulated_seconds", "events", "offered_rate", "served_rate", "bottleneck",
            "link_utilization", "ttft", "accounting", "timing"}
CARD_KEYS = {"lost", "slo_attainment", "peak_ttft_p90", "recovery_seconds", "decisions"}


def test_json_is_a_run_object_plus_scorecard(capsys):
    assert main(["drill", "link-outage", "--json", "--seed", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= RUN_KEYS and set(out["scorecard"]) >= CARD_KEYS
    assert out["drill"] == "link-outage" and out["seed"] == 2 and out["scorecard"]["lost"] == 0
    assert out["incidents"] == [{"start": 600, "end": 660, "label": "link outage"}]


def test_compare_static_runs_the_same_workload_side_by_side(capsys):
    assert main(["drill", "prfaas-loss", "--compare", "static", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"scheduler", "static"}
    sched, static = out["scheduler"], out["static"]
    for run in (sched, static):
        assert set(run) >= RUN_KEYS and set(run["scorecard"]) >= CARD_KEYS
    assert sched["scheduler"] is not None and static["scheduler"] is None
    assert sched["accounting"]["arrived"] == static["accounting"]["arrived"]
    assert sched["scorecard"]["ttft_p90_during"] < static["scorecard"]["ttft_p90_during"]


def test_the_readable_scorecard_and_the_listing(capsys):
    assert main(["drill", "link-brownout", "--compare", "static"]) == 0
    text = capsys.readouterr().out
    for word in ("scheduler", "static", "requests lost", "time to recover", "link brownout"):
        assert word in text
    assert main(["drill"]) == 0
    assert "diurnal-link" in capsys.readouterr().out


def test_a_missed_expectation_exits_1(tmp_path: Path, capsys):
    path = tmp_path / "strict.toml"
    path.write_text('preset = "toy"\n[emulator]\nduration = "5 min"\n[expect]\n'
                    'peak_ttft_p90 = "1 ms"\n[[incidents]]\nkind = "outage"\nat = "1 min"\n'
                    'duration = "30 s"\n', encoding="utf-8")
    assert main(["drill", str(path)]) == 1
    assert "missed peak_ttft_p90" in capsys.readouterr().err


def test_broken_input_is_one_line_and_exit_2(tmp_path: Path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('preset = "toy"\n[[incidents]]\nkind = "brownout"\nat = 1\nduration = 1\n'
                    'factor = 1.5\n', encoding="utf-8")
    for argv in (["drill", str(path)], ["drill", "no-such-drill"],
                 ["drill", "link-outage", "--seed", "-1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("prfaas-tui: ")
    main(["drill", str(path)])
    assert f"{path}: incidents[0].factor" in capsys.readouterr().err
