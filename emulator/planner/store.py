"""The plan's results file (JSON lines): a header describing the plan, then one line per finished
candidate, appended and flushed as each one finishes so that an interrupted sweep resumes without
redoing any of them."""

from __future__ import annotations

import json
from pathlib import Path


class ResultsFile:
    def __init__(self, path: str | Path, header: dict):
        self.path = Path(path)
        self.header = header
        self.done: dict[str, dict] = {}
        if self.path.exists() and self.path.stat().st_size:
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"header": header}, sort_keys=True) + "\n")

    def _load(self) -> None:
        lines = self.path.read_text().splitlines()
        try:
            first = json.loads(lines[0])["header"]
        except (json.JSONDecodeError, KeyError, IndexError, TypeError):
            raise ValueError(f"{self.path}:1: not a prfaas-tui plan results file") from None
        if first != self.header:
            diff = sorted(k for k in set(first) | set(self.header) if first.get(k) != self.header.get(k))
            raise ValueError(f"{self.path}: belongs to another plan (differs in {', '.join(diff)}); "
                             "use another --out or delete it")
        for n, line in enumerate(lines[1:], 2):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                self.done[rec["key"]] = rec
            except (json.JSONDecodeError, KeyError, TypeError):
                if n == len(lines):  # cut short by an interrupt: drop it, redo that candidate
                    self.path.write_text("\n".join(lines[:-1]) + "\n")
                    break
                raise ValueError(f"{self.path}:{n}: malformed result line") from None

    def append(self, rec: dict) -> None:
        self.done[rec["key"]] = rec
        with self.path.open("a") as fh:
            fh.write(json.dumps(rec, sort_keys=True) + "\n")
            fh.flush()


def read_results(path: str | Path) -> tuple[dict, list[dict]]:
    """(header, finished records) of a plan results file, for the dashboard's plan browser."""
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
        header = json.loads(lines[0])["header"]
    except (OSError, IndexError, KeyError, TypeError, json.JSONDecodeError):
        raise ValueError(f"{p}: not a prfaas-tui plan results file") from None
    return header, list(ResultsFile(p, header).done.values())
