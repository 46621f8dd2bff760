"""More trace formats, and a trace as a model workload.

Why: an operator's traffic is a log, not a log-normal. `load_trace` reads the Mooncake JSONL and
Azure CSV of emulator.traces plus BurstGPT's CSV and any CSV with a column map
(`time=...,input=...,output=...`), strictly: a bad record raises TraceError naming file and line.
`trace_workload` turns a trace into what the model needs: the empirical input-length
distribution (optionally the incremental lengths left after prefix reuse, from Mooncake hash
ids) and the arrival rate.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from emulator.distributions import Empirical
from emulator.traces import MOONCAKE_BLOCK_TOKENS, Trace, TraceError, _finish, read_trace

BURSTGPT_HEADER = ("Timestamp", "Model", "Request tokens", "Response tokens")
COLUMN_ROLES = ("time", "input", "output")


def parse_columns(spec: str, flag: str = "--columns") -> dict[str, str]:
    """'time=ts,input=prompt_len,output=gen_len' -> {role: column}; time and input required."""
    out: dict[str, str] = {}
    for part in spec.split(","):
        if "=" not in part:
            raise TraceError(flag, None, f"expected role=column pairs like time=ts,input=n_in, got {part!r}")
        role, col = (x.strip() for x in part.split("=", 1))
        if role not in COLUMN_ROLES:
            raise TraceError(flag, None, f"unknown role {role!r} (roles: {', '.join(COLUMN_ROLES)})")
        if not col or role in out:
            raise TraceError(flag, None, f"role {role!r} given twice or without a column")
        out[role] = col
    for role in ("time", "input"):
        if role not in out:
            raise TraceError(flag, None, f"missing {role}=COLUMN")
    return out


def _whole(raw: str, what: str, path, line: int, allow_zero: bool = False) -> int:
    try:
        v = float(raw)
    except ValueError:
        raise TraceError(path, line, f"{what} must be a whole number, got {raw!r}") from None
    if not math.isfinite(v) or v != int(v):
        raise TraceError(path, line, f"{what} must be a whole number, got {raw!r}")
    if v < 0 or (v == 0 and not allow_zero):
        raise TraceError(path, line, f"{what} must be {'>= 0' if allow_zero else '> 0'}, got {raw!r}")
    return int(v)


def _time(raw: str, what: str, path, line: int) -> float | datetime:
    """Seconds (a finite number >= 0) or an ISO date-time."""
    try:
        v = float(raw)
    except ValueError:
        try:
            return datetime.fromisoformat(raw.strip()[:26])
        except ValueError:
            raise TraceError(path, line, f"{what} is neither seconds nor a date-time: {raw!r}") from None
    if not math.isfinite(v) or v < 0:
        raise TraceError(path, line, f"{what} must be finite seconds >= 0, got {raw!r}")
    return v


def read_columns(path: str | Path, columns: dict[str, str]) -> Trace:
    """A CSV with a header; `columns` maps the roles time/input[/output] to header names."""
    ts: list[float | datetime] = []
    ins, outs = [], []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise TraceError(path, 1, "empty file: expected a header line")
        names = [h.strip() for h in header]
        idx = {}
        for role, col in columns.items():
            if col not in names:
                raise TraceError(path, 1, f"--columns {role}={col}: no column {col!r} in the "
                                 f"header (columns: {', '.join(names)})")
            idx[role] = names.index(col)
        for n, row in enumerate(reader, 2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < len(names):
                raise TraceError(path, n, f"expected {len(names)} columns, got {len(row)}")
            ts.append(_time(row[idx["time"]], columns["time"], path, n))
            ins.append(_whole(row[idx["input"]], columns["input"], path, n))
            outs.append(_whole(row[idx["output"]], columns["output"], path, n, allow_zero=True)
                        if "output" in idx else 0)
    kinds = {type(t) for t in ts}
    if len(kinds) > 1:
        raise TraceError(path, None, f"column {columns['time']!r} mixes seconds and date-times")
    if ts and isinstance(ts[0], datetime):
        t0 = min(ts)  # type: ignore[type-var]
        secs = [(t - t0).total_seconds() for t in ts]  # type: ignore[operator]
    else:
        secs = [float(t) for t in ts]  # type: ignore[arg-type]
    return _finish(path, secs, ins, outs, None)


def read_burstgpt(path: str | Path) -> Trace:
    """BurstGPT: `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`,
    timestamps in seconds."""
    return read_columns(path, {"time": "Timestamp", "input": "Request tokens",
                               "output": "Response tokens"})


def is_burstgpt(path: str | Path) -> bool:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError):
        return False
    return tuple(h.strip() for h in header[:4]) == BURSTGPT_HEADER


def load_trace(path: str | Path, columns: str | dict[str, str] | None = None) -> Trace:
    """Any supported trace: a column map wins; else BurstGPT by its header; else by extension
    (emulator.traces.read_trace: Mooncake .jsonl, Azure .csv)."""
    p = Path(path)
    if not p.is_file():
        raise TraceError(path, None, "no such file")
    try:
        if columns is not None:
            cols = parse_columns(columns) if isinstance(columns, str) else columns
            return read_columns(p, cols)
        if p.suffix == ".csv" and is_burstgpt(p):
            return read_burstgpt(p)
        return read_trace(p)
    except UnicodeDecodeError:
        raise TraceError(path, None, "not UTF-8") from None


def incremental_lengths(trace: Trace) -> np.ndarray:
    """Tokens each request still has to prefill after the longest prefix of 512-token blocks
    that an earlier request already produced (Mooncake hash ids; equal ids = shared prefix).
    At least one token is always left: the last position must be computed."""
    if trace.hash_ids is None:
        raise TraceError(trace.path, None, "incremental lengths need Mooncake hash_ids")
    seen: set[int] = set()
    out = np.empty(len(trace), dtype=np.int64)
    for i, (length, ids) in enumerate(zip(trace.input_lengths, trace.hash_ids, strict=True)):
        k = 0
        for h in ids:
            if h not in seen:
                break
            k += 1
        out[i] = max(int(length) - k * MOONCAKE_BLOCK_TOKENS, 1)
        seen.update(ids)
    return out


@dataclass(frozen=True)
class TraceWorkload:
    """What the model takes from a trace."""

    path: str
    lengths: Empirical
    rate: float  # requests per second over the trace's span
    requests: int
    mean_output: float
    incremental: bool

    def to_dict(self) -> dict:
        return {"path": self.path, "requests": self.requests, "rate": self.rate,
                "mean_input": self.lengths.mean, "mean_output": self.mean_output,
                "incremental": self.incremental}


def trace_workload(trace: Trace, incremental: bool = False) -> TraceWorkload:
    lengths = incremental_lengths(trace) if incremental else trace.input_lengths
    span = trace.duration
    rate = (len(trace) - 1) / span if span > 0 and len(trace) > 1 else float("nan")
    return TraceWorkload(trace.path, Empirical.of(lengths, Path(trace.path).name), rate, len(trace),
                         float(np.mean(trace.output_lengths)), incremental)
