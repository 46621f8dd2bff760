"""The plan's results file (JSON lines): a header describing the plan, then one line per finished
candidate, appended and flushed as each one finishes so that an interrupted sweep resumes without
redoing any of them."""

from __future__ import annotations

import json
from pathlib import Path


def _parse(path: Path) -> tuple[dict, dict[str, dict], bool]:
    """(header, records by key, whether the last line was cut short by an interrupt)."""
    try:
        lines = path.read_text().splitlines()
        header = json.loads(lines[0])["header"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, IndexError, TypeError):
        raise ValueError(f"{path}:1: not a prfaas-tui plan results file") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}:1: not a prfaas-tui plan results file")
    done: dict[str, dict] = {}
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            done[rec["key"]] = rec
        except (json.JSONDecodeError, KeyError, TypeError):
            if n == len(lines):  # cut short by an interrupt: that candidate is redone
                return header, done, True
            raise ValueError(f"{path}:{n}: malformed result line") from None
    return header, done, False


class ResultsFile:
    """A results file opened for writing: created with its header, or resumed."""

    def __init__(self, path: str | Path, header: dict):
        self.path = Path(path)
        self.header = header
        self.done: dict[str, dict] = {}
        if not (self.path.exists() and self.path.stat().st_size):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"header": header}, sort_keys=True) + "\n")
            return
        first, self.done, cut = _parse(self.path)
        if first != header:
            diff = sorted(k for k in set(first) | set(header) if first.get(k) != header.get(k))
            raise ValueError(f"{self.path}: belongs to another plan (differs in {', '.join(diff)}); "
                             "use another --out or delete it")
        if cut:  # drop the partial line before appending after it
            lines = self.path.read_text().splitlines()
            self.path.write_text("\n".join(lines[:-1]) + "\n")

    def append(self, rec: dict) -> None:
        self.done[rec["key"]] = rec
        with self.path.open("a") as fh:
            fh.write(json.dumps(rec, sort_keys=True) + "\n")
            fh.flush()


def read_results(path: str | Path) -> tuple[dict, list[dict]]:
    """(header, finished records) of a plan results file, read only (a sweep may be writing it)."""
    header, done, _ = _parse(Path(path))
    return header, list(done.values())
