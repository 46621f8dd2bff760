"""The run's events (knob changes, incidents, scheduler decisions with their reasons) as rows to
filter and export. Textual-free.

There is one event store: the engine's note log (`Emulation.decisions`, written by
`Emulation.note` for every knob change, incident start/end and scheduler decision). This module
parses it (the chart markers of `timeaxis` use the same parsing), filters the rows and writes
them out.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from prfaas_tui.text_filter import matches

_DECISION = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]*)?)s (.*)$")
KINDS = ("knob", "incident", "scheduler")
# what the engine notes (Emulation.note) -> kind: incidents (and what they do, a cache flush),
# the automatic controllers (the scheduler, cache routing); everything else is a knob someone set
_INCIDENT_WORDS = ("incident", "prefix cache flushed")
_SCHEDULER_WORDS = ("scheduler", "cache routing")


def parse_decision(line: str) -> tuple[float, str] | None:
    """Snapshot.decisions lines ('   123.4s threshold -> 20000 tokens') -> (123.4, text)."""
    m = _DECISION.match(line)
    return (float(m.group(1)), m.group(2)) if m else None


def decision_kind(text: str) -> str:
    """"incident", "scheduler" or "knob" (a change by hand: threshold, split, bandwidth, rate,
    paradigm, a pin, switching the scheduler)."""
    if text.startswith(_INCIDENT_WORDS):
        return "incident"
    if text.startswith(_SCHEDULER_WORDS) and "(by hand)" not in text:
        return "scheduler"
    return "knob"


@dataclass(frozen=True)
class Event:
    t: float  # simulated seconds
    kind: str  # one of KINDS
    text: str  # what the engine noted, reason included
    change: bool = False  # a knob changed (by hand, or the scheduler carrying out a decision)


def events_of(lines: Iterable[str]) -> list[Event]:
    """Parse the engine's note lines, oldest first. A knob change noted at the same instant
    right after a scheduler decision is that decision carried out: it counts as the
    scheduler's (the engine notes "scheduler (short): ... -> t 19K", then "threshold -> ...")."""
    out: list[Event] = []
    for line in lines:
        parsed = parse_decision(line)
        if parsed is None:
            continue
        t, text = parsed
        kind = decision_kind(text)
        change = kind == "knob"
        if change and out and out[-1].kind == "scheduler" and out[-1].t == t:
            kind = "scheduler"
        out.append(Event(t, kind, text, change))
    return out


def select(events: Sequence[Event], kinds: Collection[str] = KINDS, text: str = "") -> list[Event]:
    """The events of these kinds whose text holds `text` (the dashboard's one text filter)."""
    return [e for e in events if e.kind in kinds and matches(e.text, text)]


EXPORT_SUFFIXES = (".jsonl", ".csv")


def write_events(events: Sequence[Event], path: Path) -> Path:
    """JSON lines (.jsonl) or CSV (.csv), chosen by the suffix; never over an existing file
    (FileExistsError). ValueError for another suffix."""
    if path.suffix not in EXPORT_SUFFIXES:
        raise ValueError(f"{path.name}: the events export writes .jsonl or .csv")
    with path.open("x", newline="", encoding="utf-8") as f:
        if path.suffix == ".csv":
            w = csv.DictWriter(f, fieldnames=["t", "kind", "text", "change"])
            w.writeheader()
            w.writerows(asdict(e) for e in events)
        else:
            f.writelines(json.dumps(asdict(e)) + "\n" for e in events)
    return path
