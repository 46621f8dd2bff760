"""`prfaas-tui snapshot`: same inputs, same SVG; --check reports what changed."""

from __future__ import annotations

import re

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
    assert "differs" in err and "rows differ" in err and "sim 0:00:50.0" in err


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
    assert "1 of 2 rows differ" in summary and "- old" in summary and "+ new" in summary
