"""README.md and docs/ as a checked artifact: every figure in a marked region matches
benchmarks/results.json, each table is placed once, the pages hold no development history, and
the README's test command is the one CI runs."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import render_docs  # noqa: E402

ENTRIES = json.loads((ROOT / "benchmarks" / "results.json").read_text(encoding="utf-8"))["entries"]
DOCS = render_docs.documents(ROOT)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_rendered_figures_match_the_results_file(path: Path):
    text = path.read_text(encoding="utf-8")
    assert render_docs.render(text, ENTRIES, path.name) == text, (
        f"{path.name} is out of date with benchmarks/results.json: "
        "run python benchmarks/render_docs.py")


def test_a_changed_figure_is_caught():
    key = "perf_model"
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    changed = json.loads(json.dumps(ENTRIES))
    changed[key]["rows"][0][3] = "999.9"
    assert render_docs.render(text, changed) != text


def test_each_table_is_placed_once_and_every_entry_is_used():
    tables: dict[str, list[str]] = {}
    values: set[str] = set()
    for path in DOCS:
        t, v = render_docs.uses(path.read_text(encoding="utf-8"))
        for key in t:
            tables.setdefault(key, []).append(path.name)
        values |= {k for k, _ in v}
    assert {k: w for k, w in tables.items() if len(w) > 1} == {}, "a table placed twice"
    assert set(ENTRIES) - set(tables) - values == set(), "entries no page shows"


@pytest.mark.parametrize("key", sorted(ENTRIES))
def test_every_entry_says_where_it_comes_from(key: str):
    e = ENTRIES[key]
    assert e["source"] and e["date"]
    assert ("columns" in e) == ("rows" in e)
    if "columns" in e:
        assert all(len(r) == len(e["columns"]) for r in e["rows"]), "a row with a missing cell"
    assert "columns" in e or e.get("values"), "an entry with no figures"


HISTORY = re.compile(r"this round|the issue|\bissue \d+|before this|\(was |used to be", re.I)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_pages_are_for_users_not_a_development_log(path: Path):
    hits = [f"{path.name}:{i}: {line.strip()}"
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if HISTORY.search(line)]
    assert hits == []


def test_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert "![" in text and (ROOT / "docs" / "picture.png").stat().st_size < 300_000
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link


def test_readme_test_block_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Run the tests", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    install, run = [x.strip() for x in block.splitlines() if x.strip()][1:]
    ci = [x.strip() for x in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert install in ci
    assert any(x.endswith(run) for x in ci), f"{run!r} not in .ci/run"
    assert "[torch]" not in install or "torch==" not in install  # the extra, not a second pin
