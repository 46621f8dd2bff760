"""Write the figures of `benchmarks/results.json` into README.md and docs/*.md.

A table lives between `<!-- results:KEY -->` and `<!-- /results:KEY -->` (the entry's columns
and rows, then a line naming its source, machine and date); a single figure in prose between
`<!--r:KEY/NAME-->` and `<!--/r-->` (the entry's `values[NAME]`). Everything else is left as it
is, so the Markdown stays hand-written and every figure has one source.

    python benchmarks/render_docs.py           # rewrite the files in place
    python benchmarks/render_docs.py --check   # exit 1 naming each file that is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results.json"
TABLE = re.compile(r"(<!-- results:([\w.-]+) -->\n)(.*?)(<!-- /results:\2 -->)", re.S)
VALUE = re.compile(r"(<!--r:([\w.-]+)/([\w.-]+)-->)(.*?)(<!--/r-->)", re.S)


class RenderError(ValueError):
    """A region names an entry or value the results file does not hold."""


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def caption(entry: dict) -> str:
    where = "; ".join(x for x in (entry.get("machine"),
                                  f"load average {entry['load']}" if entry.get("load") else None,
                                  entry.get("date")) if x)
    note = f" {entry['note']}" if entry.get("note") else ""
    return f"*Source: `{entry['source']}`; {where}.{note}*\n"


def table(entry: dict) -> str:
    cols, rows = entry["columns"], entry["rows"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n\n" + caption(entry)


def render(text: str, entries: dict, name: str = "text") -> str:
    def fill_table(m: re.Match) -> str:
        key = m.group(2)
        if key not in entries or "columns" not in entries[key]:
            raise RenderError(f"{name}: results:{key}: no such table in {RESULTS.name}")
        return m.group(1) + table(entries[key]) + m.group(4)

    def fill_value(m: re.Match) -> str:
        key, field = m.group(2), m.group(3)
        try:
            value = entries[key]["values"][field]
        except KeyError:
            raise RenderError(f"{name}: r:{key}/{field}: no such value in {RESULTS.name}") from None
        return m.group(1) + value + m.group(5)

    return VALUE.sub(fill_value, TABLE.sub(fill_table, text))


def uses(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The tables and the values a document places."""
    return ([m.group(2) for m in TABLE.finditer(text)],
            [(m.group(2), m.group(3)) for m in VALUE.finditer(text)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report files out of date")
    a = ap.parse_args(argv)
    entries = json.loads(RESULTS.read_text(encoding="utf-8"))["entries"]
    stale = []
    for path in documents():
        old = path.read_text(encoding="utf-8")
        try:
            new = render(old, entries, path.name)
        except RenderError as exc:
            print(f"render_docs: {exc}", file=sys.stderr)
            return 2
        if new != old:
            stale.append(path)
            if not a.check:
                path.write_text(new, encoding="utf-8")
    for path in stale:
        print(f"render_docs: {'out of date' if a.check else 'rewrote'}: {path.relative_to(ROOT)}",
              file=sys.stderr)
    return 1 if a.check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
