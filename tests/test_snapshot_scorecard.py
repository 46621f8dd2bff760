"""A drill snapshot in JSON carries the scorecard the txt and svg show (at or past the drill's
end), the same object `drill --json` gives for the same drill and seed; before the end, none."""

from __future__ import annotations

import json

from prfaas_tui.cli import main


def test_a_drill_snapshot_in_json_carries_the_headless_scorecard(tmp_path, capsys):
    out = tmp_path / "end.json"
    assert main(["snapshot", "--drill", "link-brownout", "--at", "2400", "--format", "json",
                 "--out", str(out)]) == 0
    snap = json.loads(out.read_text())
    capsys.readouterr()
    assert main(["drill", "link-brownout", "--json"]) == 0
    headless = json.loads(capsys.readouterr().out)
    assert snap["drill"] == "link-brownout"
    assert snap["scorecard"] == headless["scorecard"]


def test_before_the_drill_ends_there_is_no_scorecard(tmp_path):
    out = tmp_path / "mid.json"
    assert main(["snapshot", "--drill", "link-brownout", "--at", "600", "--format", "json",
                 "--out", str(out)]) == 0
    snap = json.loads(out.read_text())
    assert "scorecard" not in snap and "drill" not in snap
