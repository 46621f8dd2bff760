"""Request traces: Mooncake JSONL and Azure LLM-inference CSV, read strictly.

Mooncake: one JSON object a line, `timestamp` (ms), `input_length`, `output_length`, `hash_ids`
(one id per 512-token block; equal ids mean a shared prefix). Azure:
`TIMESTAMP,ContextTokens,GeneratedTokens` with ISO-like date-times. A malformed record raises
`TraceError` naming the file and line; nothing is skipped silently.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

MOONCAKE_BLOCK_TOKENS = 512


class TraceError(ValueError):
    def __init__(self, path: str | Path, line: int | None, message: str):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, eq=False)
class Trace:
    """Arrival times (seconds from the first request), lengths, optional prefix-block ids."""

    path: str
    arrivals: np.ndarray  # float seconds, non-decreasing
    input_lengths: np.ndarray  # int tokens
    output_lengths: np.ndarray  # int tokens
    hash_ids: list[list[int]] | None = None

    def __len__(self) -> int:
        return len(self.arrivals)

    @property
    def duration(self) -> float:
        return float(self.arrivals[-1]) if len(self) else 0.0

    def scaled(self, time_scale: float) -> Trace:
        """Stretch (>1) or compress (<1) the arrival times: time_scale 0.5 doubles the rate."""
        return Trace(self.path, self.arrivals * time_scale, self.input_lengths,
                     self.output_lengths, self.hash_ids)


def _positive_int(value: object, field: str, path, line: int, allow_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise TraceError(path, line, f"{field} must be a whole number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise TraceError(path, line, f"{field} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return int(value)


def read_mooncake(path: str | Path) -> Trace:
    ts, ins, outs, hashes = [], [], [], []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TraceError(path, n, f"not valid JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise TraceError(path, n, "each line must be a JSON object")
            for key in ("timestamp", "input_length", "output_length"):
                if key not in rec:
                    raise TraceError(path, n, f"missing field {key!r}")
            t = rec["timestamp"]
            if isinstance(t, bool) or not isinstance(t, int | float) or t < 0:
                raise TraceError(path, n, f"timestamp must be a number of ms >= 0, got {t!r}")
            ts.append(float(t) / 1000.0)
            ins.append(_positive_int(rec["input_length"], "input_length", path, n))
            outs.append(_positive_int(rec["output_length"], "output_length", path, n, allow_zero=True))
            h = rec.get("hash_ids", [])
            if not isinstance(h, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in h):
                raise TraceError(path, n, "hash_ids must be a list of integers")
            hashes.append(h)
    return _finish(path, ts, ins, outs, hashes)


def read_azure(path: str | Path) -> Trace:
    ts, ins, outs = [], [], []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        want = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
        if header is None or [h.strip() for h in header[:3]] != want:
            raise TraceError(path, 1, f"expected the header {','.join(want)}")
        t0 = None
        for n, row in enumerate(reader, 2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3:
                raise TraceError(path, n, f"expected 3 columns, got {len(row)}")
            try:
                stamp = datetime.fromisoformat(row[0].strip()[:26])
            except ValueError:
                raise TraceError(path, n, f"TIMESTAMP is not a date-time: {row[0]!r}") from None
            t0 = stamp if t0 is None else t0
            ts.append((stamp - t0).total_seconds())
            try:
                ins.append(_positive_int(int(row[1]), "ContextTokens", path, n))
                outs.append(_positive_int(int(row[2]), "GeneratedTokens", path, n, allow_zero=True))
            except ValueError:
                raise TraceError(path, n, f"token counts must be whole numbers: {row[1]!r}, {row[2]!r}") from None
    return _finish(path, ts, ins, outs, None)


def _finish(path, ts, ins, outs, hashes) -> Trace:
    if not ts:
        raise TraceError(path, None, "no requests in the trace")
    arr = np.asarray(ts, dtype=float)
    order = np.argsort(arr, kind="stable")  # Azure rows are not always sorted
    arr = arr[order] - arr[order][0]
    h = [hashes[i] for i in order] if hashes is not None else None
    return Trace(str(path), arr, np.asarray(ins, dtype=np.int64)[order],
                 np.asarray(outs, dtype=np.int64)[order], h)


def read_trace(path: str | Path) -> Trace:
    """By extension: .jsonl/.json is Mooncake, .csv is Azure."""
    p = Path(path)
    if not p.is_file():
        raise TraceError(path, None, "no such file")
    if p.suffix in (".jsonl", ".json"):
        return read_mooncake(p)
    if p.suffix == ".csv":
        return read_azure(p)
    raise TraceError(path, None, "unknown trace format (expected .jsonl Mooncake or .csv Azure)")
