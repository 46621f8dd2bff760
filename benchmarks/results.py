"""The one results file (`benchmarks/results.json`) every figure in README.md and docs/ comes
from. A benchmark calls `record(...)` with its table; `benchmarks/render_docs.py` writes the
tables into the Markdown regions that name them, so a figure lives in one place only.

An entry: `source` (the command that produced it), `machine`, `date` (UTC), `load` (the load
average while it ran, when it was measured), `columns` and `rows` (strings, as printed) and
`values` (single figures quoted in prose, by name).
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().with_name("results.json")


def machine() -> str:
    """A short description of this machine: CPU model, cores, memory, Python."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(next(x for x in Path("/proc/meminfo").read_text().splitlines()
                      if x.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{cpu}, {os.cpu_count()} vCPU{mem}, Python {platform.python_version()}"


def load() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def record(key: str, *, source: str, columns: list[str] | None = None,
           rows: list[list[str]] | None = None, values: dict[str, str] | None = None,
           computed: bool = False, path: Path = RESULTS) -> dict:
    """Replace entry `key` with a fresh measurement (machine and date of now) and write the file.
    `computed`: the figures are deterministic outputs of the model (no machine, a date only)."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"entries": {}}
    entry: dict = {"source": source, "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}
    if not computed:
        entry["machine"] = machine()
        entry["load"] = f"{os.getloadavg()[0]:.1f}"
    if columns is not None:
        entry["columns"] = [str(c) for c in columns]
        entry["rows"] = [[str(c) for c in r] for r in rows or []]
    if values:
        entry["values"] = {k: str(v) for k, v in values.items()}
    data["entries"][key] = entry
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"results: wrote {key} to {path}", file=sys.stderr)
    return entry


def markdown_rows(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) of a Markdown table given as its lines (header, separator, rows)."""
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])] for line in lines
             if line.startswith("|") and not line.startswith("|---")]
    return cells[0], cells[1:]

