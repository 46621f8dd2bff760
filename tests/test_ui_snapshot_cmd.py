"""`prfaas-tui snapshot`: same inputs, same SVG; --check reports what changed; txt and json
(the panels' numbers, checked against the model at the live state)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from emulator.model import Knobs, evaluate
from emulator.scenario.drills import load_drill
from prfaas_tui.cli import main
from prfaas_tui.commands.snapshot import diff_summary, screen_rows


def snap(tmp_path, name: str, *args: str) -> str:
    out = tmp_path / name
    assert main(["snapshot", "--preset", "toy", "--size", "100x30", *args, "--out", str(out)]) == 0
    return out.read_text()


def test_deterministic_and_free_of_random_ids(tmp_path):
    a = snap(tmp_path, "a.svg", "--at", "45")
    b = snap(tmp_path, "b.svg", "--at", "45")
    assert a == b
    assert not re.search(r"terminal-\d", a)  # Rich's content-hash ids are normalized away
    rows = screen_rows(a)
    assert len(rows) == 30 and "sim 0:00:45.0" in rows[28] and "rtf" not in rows[28]


def test_check_passes_and_fails_with_a_summary(tmp_path, capsys):
    snap(tmp_path, "a.svg", "--at", "45")
    ref = str(tmp_path / "a.svg")
    assert main(["snapshot", "--preset", "toy", "--size", "100x30", "--at", "45", "--check", ref]) == 0
    assert main(["snapshot", "--preset", "toy", "--size", "100x30", "--at", "50", "--check", ref]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err  # the files hold the rest
    assert f"{ref}: differs: " in err and "rows differ, first row" in err


def test_a_drill_to_its_scorecard(tmp_path, capsys):
    out = tmp_path / "drill.svg"
    assert main(["snapshot", "--drill", "link-brownout", "--at", "40 min", "--size", "120x40",
                 "--out", str(out)]) == 0
    text = "\n".join(screen_rows(out.read_text()).values())
    assert "scorecard · drill link-brownout" in text and "lost requests" in text
    assert main(["snapshot", "--drill", "no-such-drill", "--at", "1", "--out", str(out)]) == 2
    assert "no drill of that name" in capsys.readouterr().err


def test_keys_before_capture_and_bad_flags(tmp_path, capsys):
    svg = snap(tmp_path, "help.svg", "--at", "5", "--press", "f1")
    assert any("prfaas-tui help" in r for r in screen_rows(svg).values())
    assert main(["snapshot", "--preset", "toy", "--at", "5", "--size", "huge",
                 "--out", str(tmp_path / "x.svg")]) == 2
    assert main(["snapshot", "--preset", "toy", "--at", "soon",
                 "--out", str(tmp_path / "x.svg")]) == 2
    assert "--size" in capsys.readouterr().err


def test_diff_summary_names_rows():
    row = ('<text class="terminal-r1" x="{x}" y="20" textLength="12.2" '
           'clip-path="url(#terminal-line-{n})">{t}</text>')
    a = row.format(x=0, n=0, t="same") + row.format(x=0, n=1, t="old")
    b = row.format(x=0, n=0, t="same") + row.format(x=0, n=1, t="new")
    summary = diff_summary(a, b)
    assert summary == "1 of 2 rows differ, first row 2: 'old' -> 'new'"


def test_a_json_diff_names_its_first_key_in_one_line():
    a = json.dumps({"regions": {"east": {"ttft": 1.0, "n": 3}}, "at": 5, "l": [1, 2]})
    b = json.dumps({"regions": {"east": {"ttft": 2.5, "n": 4}}, "at": 5, "l": [1, 3]})
    assert diff_summary(a, b, "json") == "3 values differ, first l[1]: 2 -> 3"
    assert diff_summary(a, a.replace(", ", ",  "), "json").startswith("the same values")
    txt = diff_summary("a\nsame\nb\n", "a\nsame\nc\n", "txt")
    assert txt == "1 of 3 lines differ, first line 3: 'b' -> 'c'"


def _drill_json(tmp_path, drill: str, at: str = "800") -> dict:
    out = tmp_path / f"{drill}.json"
    assert main(["snapshot", "--drill", drill, "--at", at, "--size", "160x48",
                 "--format", "json", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def _model_at(system, knobs, alive: dict, capacity_gbps: float, mode: str):
    """Eqs. 3-5 at the JSON's own knobs, alive counts and link capacity (built here)."""
    cap = capacity_gbps * 1e9 / 8  # bytes/s
    live = dataclasses.replace(system, n_prfaas=alive["prfaas"], bandwidth=cap)
    return evaluate(live, Knobs(t=knobs["t"], n_p=alive["pd-p"], n_d=alive["pd-d"],
                                n_prfaas=alive["prfaas"], bandwidth=cap), mode)


@pytest.mark.parametrize(("drill", "changed"), [("link-brownout", "link"),
                                                ("prfaas-loss", "prfaas")])
def test_json_mid_incident_is_the_model_at_the_live_state(tmp_path, drill, changed):
    data = _drill_json(tmp_path, drill)
    sc = load_drill(drill).scenario
    system = sc.system
    assert data["mode"] == sc.mode  # the preset's mode, as solve's default
    eff, nom, k = data["effective"], data["nominal"], data["knobs"]
    assert data["sim_time"] == 800.0 and isinstance(data["stable"], bool)
    assert isinstance(data["unstable_stages"], list)
    for block in (eff, nom):
        assert set(block) >= {"lambda_max", "binding", "prfaas_term", "ceilings",
                              "link_capacity_gbps", "alive"}
        op = _model_at(system, k, block["alive"], block["link_capacity_gbps"], sc.mode)
        assert block["lambda_max"] == pytest.approx(op.lambda_max)
        assert block["binding"] == op.binding and block["prfaas_term"] == op.prfaas_term
        for s in ("prfaas", "pd-p", "pd-d"):
            assert block["ceilings"][s] == pytest.approx(op.ceilings[s])
    assert nom["alive"] == {"prfaas": k["n_prfaas"], "pd-p": k["n_p"], "pd-d": k["n_d"]}
    assert nom["link_capacity_gbps"] == pytest.approx(k["bandwidth_gbps"])
    if changed == "link":  # 30 Gbps browned out to 20%
        assert eff["link_capacity_gbps"] == pytest.approx(6.0)
        assert eff["prfaas_term"] == "bandwidth" and nom["prfaas_term"] == "compute"
    else:  # half the PrfaaS instances down
        assert eff["alive"]["prfaas"] == 2 and nom["alive"]["prfaas"] == 4
    assert eff["ceilings"]["prfaas"] < 0.8 * nom["ceilings"]["prfaas"]


def test_txt_is_the_screen_and_check_works_for_txt_and_json(tmp_path, capsys):
    txt = snap(tmp_path, "a.txt", "--at", "45")  # format from the extension
    lines = txt.splitlines()
    assert len(lines) == 30 and "sim 0:00:45.0" in lines[28] and "<" not in txt
    assert txt == snap(tmp_path, "b.out", "--at", "45", "--format", "txt")
    args = ["snapshot", "--preset", "toy", "--size", "100x30"]
    assert main([*args, "--at", "45", "--check", str(tmp_path / "a.txt")]) == 0
    assert main([*args, "--at", "50", "--check", str(tmp_path / "a.txt")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "of 30 lines differ, first line " in err
    snap(tmp_path, "a.json", "--at", "45")
    assert main([*args, "--at", "45", "--check", str(tmp_path / "a.json")]) == 0
    assert main([*args, "--at", "50", "--check", str(tmp_path / "a.json")]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "values differ, first " in err, err
