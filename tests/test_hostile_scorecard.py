"""The drill scorecard never reads better than the truth: a request without its first token
counts as waiting until now, however long the incident lasts."""

from __future__ import annotations

from pathlib import Path

from emulator.scenario.drills import load_drill
from emulator.sim.runs.drills import run_drill
from prfaas_tui.cli import main

DEAD_LINK = """
description = "the link at 0% for the whole run"
preset = "toy"
[emulator]
duration = "2 min"
seed = 1
[[incidents]]
kind = "brownout"
at = "0 s"
duration = "2 min"
factor = 0.0
[expect]
lost = 0
ttft_p90_during = "5 s"
"""


def dead_link(tmp_path: Path) -> Path:
    p = tmp_path / "dead.toml"
    p.write_text(DEAD_LINK)
    return p


def test_unfinished_requests_wait_until_the_end(tmp_path):
    out = run_drill(load_drill(dead_link(tmp_path)))
    card, acc = out["scorecard"], out["accounting"]
    assert acc["in_flight"] > 0 and card["unfinished_during"] == acc["in_flight"]
    # the ones still waiting at 120 s arrived at 0..120 s: a good share waited over a minute
    assert card["ttft_p90_during"] > 30.0
    assert not card["expectations"]["ttft_p90_during"]["ok"] and not card["passed"]


def test_a_dead_link_drill_fails_its_ttft_bar(tmp_path, capsys):
    assert main(["drill", str(dead_link(tmp_path)), "--json"]) == 1
    assert "ttft_p90_during" in capsys.readouterr().err


def test_starved_requests_count_against_slo_attainment(tmp_path):
    """The finished requests alone met their SLO; the ones the dead link starved past the TTFT
    target cannot, and count as misses."""
    p = tmp_path / "dead.toml"
    p.write_text(DEAD_LINK.replace("[expect]", '[slo]\nttft = "10 s"\n[expect]\nslo_attainment = 0.9'))
    card = run_drill(load_drill(p))["scorecard"]
    assert card["slo_attainment"] < 0.6 and not card["expectations"]["slo_attainment"]["ok"]
