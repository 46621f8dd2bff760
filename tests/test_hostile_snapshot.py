"""`snapshot` refuses before it renders: --press with thousands of keys or an unknown key, and a
--check file that is not a snapshot (empty, corrupt, a device), each in one line."""

from __future__ import annotations

import pytest

from prfaas_tui.cli import main
from prfaas_tui.commands.snapshot import MAX_PRESS, parse_press
from prfaas_tui.errors import UsageError


def one_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_thousands_of_keys_are_refused_before_any_render(tmp_path, capsys):
    keys = ",".join(["c"] * 5000)
    line = one_line(capsys, ["snapshot", "--preset", "toy", "--at", "5", "--press", keys,
                             "--out", str(tmp_path / "x.svg")])
    assert f"--press: 5,000 keys, over the {MAX_PRESS}" in line
    assert not (tmp_path / "x.svg").exists()


def test_an_unknown_key_is_one_line(tmp_path, capsys):
    line = one_line(capsys, ["snapshot", "--preset", "toy", "--at", "5", "--press", "c,nosuchkey",
                             "--out", str(tmp_path / "x.svg")])
    assert "--press: unknown key 'nosuchkey'" in line


def test_the_keys_the_dashboard_uses_are_known():
    assert parse_press("c, f1,question_mark,tab,ctrl+c,space,enter,escape,plus,E") == (
        "c", "f1", "question_mark", "tab", "ctrl+c", "space", "enter", "escape", "plus", "E")
    with pytest.raises(UsageError):
        parse_press("\x1b[2J")


@pytest.mark.parametrize("content,fmt,needle", [
    ("", "svg", "empty, not a snapshot"),
    ("garbage, not an svg\n" * 20, "svg", "not an SVG snapshot"),
    ("[1, 2", "json", "not a JSON snapshot"),
    ("   \n", "txt", "empty, not a snapshot"),
])
def test_a_check_file_that_is_not_a_snapshot_is_one_line(tmp_path, capsys, content, fmt, needle):
    p = tmp_path / f"old.{fmt}"
    p.write_text(content)
    line = one_line(capsys, ["snapshot", "--preset", "toy", "--at", "5", "--check", str(p)])
    assert line.startswith(f"prfaas-tui: --check: {p}") and needle in line


def test_a_device_as_check_file_is_refused_unread(capsys):
    line = one_line(capsys, ["snapshot", "--preset", "toy", "--at", "5", "--check", "/dev/zero"])
    assert "expected a regular snapshot file, found a device" in line


@pytest.mark.parametrize("preset, fmt", [("global", "json"), ("two-regions", "txt"),
                                         ("paper-case-study", "json")])
def test_a_snapshot_that_served_nothing_says_so(tmp_path, capsys, preset, fmt):
    """At 5 s nothing has finished decoding (25.6 s per request): stderr says why, and the
    JSON carries the same lines under `warnings`."""
    import json


    out = tmp_path / f"s.{fmt}"
    assert main(["snapshot", "--preset", preset, "--at", "5", "--format", fmt,
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("prfaas-tui snapshot: warning:")]
    assert lines and all("nothing served" in ln and "the horizon" in ln for ln in lines)
    if fmt == "json":
        assert json.loads(out.read_text())["warnings"] == [ln.split("warning: ", 1)[1]
                                                           for ln in lines]


def test_keys_pressed_reach_a_topology_json_as_they_reach_the_pair(tmp_path):
    """`--press` acts on the view whose JSON is written: three steps move a topology's
    snapshot as far as the pair's (its JSON came from a run without the keys)."""
    import json

    times = []
    for preset in ("two-regions", "paper-case-study"):
        out = tmp_path / f"{preset}.json"
        assert main(["snapshot", "--preset", preset, "--at", "30", "--format", "json",
                     "--press", "full_stop,full_stop,full_stop", "--out", str(out)]) == 0
        times.append(json.loads(out.read_text())["sim_time"])
    assert times[0] == times[1] > 30
