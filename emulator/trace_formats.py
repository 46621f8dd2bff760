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
import functools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from emulator.distributions import Empirical
from emulator.traces import (
    MAX_TIMESTAMP_MS,
    MAX_TOKENS,
    MOONCAKE_BLOCK_TOKENS,
    Records,
    Stamps,
    Trace,
    TraceError,
    _shown,
    check_number,
    check_tokens,
    checked_trace,
    csv_error,
    csv_rows,
    read_trace,
)

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


def read_columns(path: str | Path, columns: dict[str, str]) -> Trace:
    """A CSV with a header; `columns` maps the roles time/input[/output] to header names.
    Streamed through emulator.traces' shared checks: the same file rules, cell checks and
    bounds as every format (a BOM, CRLF line ends accepted; NUL bytes, empty cells, lengths
    over MAX_TOKENS, mixed seconds and date-times, mixed time zones refused in one line)."""
    recs = Records(path)
    reader = csv_rows(path)
    stamps = Stamps(path, columns["time"])
    t0: datetime | None = None
    seconds: bool | None = None  # the time column's kind, fixed by its first row
    try:
        header = next(reader, None)
        if header is None:
            raise TraceError(path, 1, "empty file: expected a header line")
        names = [h.strip() for h in header]
        idx = {}
        for role, col in columns.items():
            if col not in names:
                raise TraceError(path, 1, f"--columns {role}={col}: no column {col!r} in the "
                                 f"header (columns: {_names(names)})")
            idx[role] = names.index(col)
        i_in, i_out = idx["input"], idx.get("output")
        for row in reader:
            n = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) < len(names):
                raise TraceError(path, n, f"expected {len(names)} columns, got {len(row)}")
            cell = row[idx["time"]].strip()
            is_secs = _is_number(cell) or not cell  # an empty cell fails as a number
            if seconds is None:
                seconds = is_secs
            elif is_secs != seconds:
                raise TraceError(path, n, f"column {columns['time']!r} mixes seconds and "
                                 f"date-times (found {_shown(cell)})")
            if is_secs:
                t = _seconds(cell)  # the common case inline; the shared check says why not
                if t is None:
                    t = check_number(path, n, columns["time"], cell, lo=0.0, hi=MAX_SECONDS,
                                     unit=" of s")
            else:
                stamp = stamps(n, cell)
                t0 = stamp if t0 is None else t0  # seconds from the first row; sorted later
                t = (stamp - t0).total_seconds()
            raw = row[i_in]
            n_in = _tokens(raw, 1)
            if n_in is None:
                n_in = check_tokens(path, n, columns["input"], raw.strip())
            n_out = 0
            if i_out is not None:
                raw = row[i_out]
                n_out = _tokens(raw, 0)
                if n_out is None:
                    n_out = check_tokens(path, n, columns["output"], raw.strip(), allow_zero=True)
            recs.add(n, t, n_in, n_out)
    except csv.Error as exc:
        raise csv_error(path, reader, exc) from None
    return recs.finish(key=columns["time"])


MAX_SECONDS = MAX_TIMESTAMP_MS / 1000.0


def _seconds(cell: str) -> float | None:
    """A valid seconds cell as check_number reads it, or None (then check_number says why):
    the fast path of a 10M-row file."""
    try:
        t = float(cell)
    except ValueError:
        return None
    return t if 0.0 <= t <= MAX_SECONDS else None  # NaN fails the comparison


def _tokens(cell: str, lo: int) -> int | None:
    """A valid token cell (a plain whole number in [lo, MAX_TOKENS]) or None (then
    check_tokens reads it: '12.0', or says why not)."""
    try:
        v = int(cell)
    except ValueError:
        return None
    return v if lo <= v <= MAX_TOKENS else None


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _names(names: list[str]) -> str:
    text = ", ".join(names)
    return _shown(text) if len(text) > 200 else text


def read_burstgpt(path: str | Path) -> Trace:
    """BurstGPT: `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`,
    timestamps in seconds."""
    return read_columns(path, {"time": "Timestamp", "input": "Request tokens",
                               "output": "Response tokens"})


def is_burstgpt(path: str | Path) -> bool:
    """Whether the file's header is BurstGPT's (a BOM and CRLF allowed)."""
    try:
        header = next(csv_rows(path), [])
    except (OSError, TraceError, csv.Error):
        return False
    return tuple(h.strip() for h in header[:4]) == BURSTGPT_HEADER


def load_trace(path: str | Path, columns: str | dict[str, str] | None = None) -> Trace:
    """Any supported trace: a column map wins; else BurstGPT by its header; else by extension
    (emulator.traces.read_trace: Mooncake .jsonl, Azure .csv)."""
    p = checked_trace(path)
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
    rate: float | None  # requests per second over the trace's span; None: undefined (one
    # request, or every request at the same instant)
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
    rate = (len(trace) - 1) / span if span > 0 and len(trace) > 1 else None
    return TraceWorkload(trace.path, Empirical.of(lengths, Path(trace.path).name), rate, len(trace),
                         float(np.mean(trace.output_lengths)), incremental)


def read_workload(path: str | Path, columns: str | None = None,
                  incremental: bool = False) -> TraceWorkload:
    """trace_workload(load_trace(...)) of a file, remembered for the last file read (keyed by
    its resolved path, size and modification time): `new` reads a trace, solves the preset
    that names it and loads that preset back, and a 10M-row trace is then read once, not
    three times."""
    p = checked_trace(path)
    st = p.stat()
    return _read_workload(str(p.resolve()), st.st_size, st.st_mtime_ns, str(path), columns,
                          incremental)


@functools.lru_cache(maxsize=1)
def _read_workload(resolved: str, size: int, mtime_ns: int, shown: str, columns: str | None,
                   incremental: bool) -> TraceWorkload:
    return trace_workload(load_trace(shown, columns), incremental)
