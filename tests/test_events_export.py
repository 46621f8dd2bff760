"""Issue 12 items 6 and 9 without Textual: the engine's note log as events (kinds, filters,
export), and the whole run's series in bounded memory with export files that never collide."""

from __future__ import annotations

import csv
import json
from datetime import datetime

import pytest

from prfaas_tui.events import Event, events_of, select, write_events
from prfaas_tui.metrics_export import fresh_base
from prfaas_tui.series_record import SeriesRecord

NOTES = ["    0.0s cache routing -> scarce (hit 2%)",
         "  600.0s incident: link brownout to 20%",
         "  610.0s scheduler (short): egress 6.0 of 6 Gbps -> t 19K",
         "  610.0s threshold -> 19000 tokens",
         "  620.0s threshold -> 28000 tokens",
         "  620.0s t pinned: the scheduler leaves it alone",
         "  700.0s scheduler off (by hand)",
         " 1200.0s incident over: link brownout to 20%",
         "not a note"]


def test_notes_become_events_by_kind_and_who_changed_what():
    ev = events_of(NOTES)
    assert [(e.t, e.kind, e.change) for e in ev] == [
        (0.0, "scheduler", False), (600.0, "incident", False), (610.0, "scheduler", False),
        (610.0, "scheduler", True),  # the scheduler carrying out its decision
        (620.0, "knob", True), (620.0, "knob", True), (700.0, "knob", True),
        (1200.0, "incident", False)]


def test_select_by_kind_and_text():
    ev = events_of(NOTES)
    assert [e.t for e in select(ev, {"incident"})] == [600.0, 1200.0]
    assert [e.t for e in select(ev, {"knob", "scheduler"}, "THRESHOLD")] == [610.0, 620.0]
    assert select(ev, set()) == []


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_events_export_round_trips_and_never_overwrites(tmp_path, suffix):
    ev = events_of(NOTES)
    path = write_events(ev, tmp_path / f"ev{suffix}")
    if suffix == ".csv":
        with path.open() as f:
            rows = list(csv.DictReader(f))
        back = [Event(float(r["t"]), r["kind"], r["text"], r["change"] == "True") for r in rows]
    else:
        back = [Event(**json.loads(line)) for line in path.read_text().splitlines()]
    assert back == ev
    with pytest.raises(FileExistsError):
        write_events(ev, path)
    with pytest.raises(ValueError, match="jsonl or .csv"):
        write_events(ev, tmp_path / "ev.txt")


def test_series_record_keeps_the_whole_run_in_bounded_rows():
    rec = SeriesRecord(capacity=8)
    for i in range(100):
        rec.add({"sim_time": float(i), "x": i * 2})
    rows = rec.dicts()
    assert len(rows) <= 8 and rec.seen == 100
    assert rows[0]["sim_time"] == 0.0 and rows[-1]["sim_time"] == 99.0  # start and newest
    steps = {b["sim_time"] - a["sim_time"] for a, b in zip(rows[:-2], rows[1:-1], strict=True)}
    assert steps == {float(rec.stride)}  # evenly thinned
    assert all(r["x"] == 2 * r["sim_time"] for r in rows)
    small = SeriesRecord(capacity=1000)
    small.extend({"sim_time": float(i)} for i in range(10))
    assert [r["sim_time"] for r in small.dicts()] == [float(i) for i in range(10)]
    with pytest.raises(ValueError):
        SeriesRecord(capacity=1)


def test_export_names_are_timestamped_and_fresh(tmp_path):
    now = datetime(2026, 12, 1, 17, 5, 9)
    base = fresh_base(tmp_path, "prfaas-toy", (".csv", ".json"), now)
    assert base.name == "prfaas-toy-20261201-170509"
    base.with_name(base.name + ".json").write_text("{}")
    again = fresh_base(tmp_path, "prfaas-toy", (".csv", ".json"), now)
    assert again.name == "prfaas-toy-20261201-170509-2"
