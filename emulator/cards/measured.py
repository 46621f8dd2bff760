"""Measured prefill latencies in, a table profile out: a CSV of `input_tokens,seconds` (or a
column map) or the JSON results of vLLM's / SGLang's serving benchmarks (per-request input
lengths and TTFTs).

Why: a user who has benchmarked their own stack should plan with those numbers, not with a
model of them. T_prefill per length is the median of the requests of that length; S_kv comes
from the model card (a benchmark does not report KV bytes). Every malformed input is one
TraceError naming the file and line.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from emulator.cards import card_text
from emulator.cards.fields import shown
from emulator.files import JsonRefused, parse_json
from emulator.traces import TraceError

CSV_ROLES = ("input", "seconds", "ms")
DEFAULT_COLUMNS = {"input": "input_tokens", "seconds": "seconds"}
MAX_ROWS = 10_000_000


@dataclass(frozen=True)
class Measured:
    """Median prefill seconds per input length, and what they were measured on."""

    lengths: tuple[int, ...]
    seconds: tuple[float, ...]
    requests: int
    origin: str  # e.g. "vLLM benchmark (model X, backend vllm, max_concurrency 1)"


def parse_column_map(spec: str) -> dict[str, str]:
    """'input=prompt_len,seconds=latency' (or ms=COL for milliseconds) -> {role: column}."""
    out: dict[str, str] = {}
    for part in spec.split(","):
        role, sep, col = (x.strip() for x in part.partition("="))
        if not sep or role not in CSV_ROLES or not col or role in out:
            raise TraceError("--columns", None, f"expected input=COL and seconds=COL (or ms=COL), "
                             f"got {part.strip()!r}")
        out[role] = col
    if "input" not in out or ("seconds" in out) == ("ms" in out):
        raise TraceError("--columns", None, "needs input=COL and one of seconds=COL or ms=COL")
    return out


def _tokens(path, line: int, raw) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool) and not 1 <= raw <= 1 << 24:
        raise TraceError(path, line, f"input length {shown(raw)} must be a whole number of "
                         "tokens from 1 to 16,777,216")  # checked before float(): 10**400
    try:
        v = float(raw)
    except (TypeError, ValueError):
        raise TraceError(path, line, f"input length {raw!r} is not a number") from None
    if not math.isfinite(v) or v != int(v) or not 1 <= v <= 1 << 24:
        raise TraceError(path, line, f"input length {raw!r} must be a whole number of tokens >= 1")
    return int(v)


def _seconds(path, line: int, raw, scale: float = 1.0) -> float:
    if isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) > 10**9:
        raise TraceError(path, line, f"latency {shown(raw)} must be > 0 and at most an hour")
    try:
        v = float(raw) * scale
    except (TypeError, ValueError):
        raise TraceError(path, line, f"latency {raw!r} is not a number") from None
    if not math.isfinite(v) or v <= 0 or v > 3600:
        raise TraceError(path, line, f"latency {raw!r} must be > 0 and at most an hour")
    return v


def _median_table(pairs: list[tuple[int, float]]) -> tuple[tuple[int, ...], tuple[float, ...]]:
    by: dict[int, list[float]] = {}
    for n, s in pairs:
        by.setdefault(n, []).append(s)
    lengths = tuple(sorted(by))
    return lengths, tuple(float(np.median(by[n])) for n in lengths)


def read_csv(path: str | Path, columns: dict[str, str] | None = None) -> Measured:
    cols = columns or DEFAULT_COLUMNS
    text = card_text(path) if Path(path).is_file() else _missing(path)
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise TraceError(path, None, "empty file") from None
    idx = {}
    for role, col in cols.items():
        if col not in header:
            raise TraceError(path, 1, f"no column {col!r} (header: {', '.join(header)}); "
                             "map yours with --columns input=COL,seconds=COL")
        idx[role] = header.index(col)
    pairs = []
    for i, row in enumerate(reader, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise TraceError(path, i, f"{len(row)} fields for {len(header)} columns")
        n = _tokens(path, i, row[idx["input"]])
        s = _seconds(path, i, row[idx["seconds"]]) if "seconds" in idx else \
            _seconds(path, i, row[idx["ms"]], 1e-3)
        pairs.append((n, s))
        if len(pairs) > MAX_ROWS:
            raise TraceError(path, i, f"more than {MAX_ROWS:,} rows")
    if not pairs:
        raise TraceError(path, None, "no data rows")
    lengths, seconds = _median_table(pairs)
    return Measured(lengths, seconds, len(pairs), f"CSV {Path(path).name}")


def _missing(path):
    raise TraceError(path, None, "no such file")


def read_benchmark_json(path: str | Path) -> Measured:
    """vLLM's `--save-result --save-detailed` JSON (one object) or SGLang's bench_serving output
    (JSON lines, one run per line): `input_lens` and `ttfts` (seconds), request by request.
    Requests that failed (TTFT missing or 0) are left out and counted."""
    text = card_text(path) if Path(path).is_file() else _missing(path)
    runs: list[tuple[int, object]] = []
    try:
        runs.append((1, parse_json(text)))
    except JsonRefused as whole:
        lines = [(i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
        if whole.lineno is None or len(lines) < 2 or not _is_object(lines[0][1]):
            raise TraceError(path, whole.lineno, str(whole)) from None  # one broken document
        for i, ln in lines:
            try:
                runs.append((i, parse_json(ln)))
            except JsonRefused as exc:
                raise TraceError(path, i, str(exc)) from None
    pairs, failed, meta = [], 0, {}
    for line, run in runs:
        if not isinstance(run, dict):
            raise TraceError(path, line, "expected a JSON object with input_lens and ttfts")
        lens, ttfts = run.get("input_lens"), run.get("ttfts")
        if not isinstance(lens, list) or not isinstance(ttfts, list):
            raise TraceError(path, line, "no input_lens / ttfts lists (save vLLM's results with "
                             "--save-detailed; SGLang's bench_serving writes them)")
        if len(lens) != len(ttfts):
            raise TraceError(path, line, f"input_lens has {len(lens)} entries, ttfts {len(ttfts)}")
        for n, t in zip(lens, ttfts, strict=True):
            if t is None or (isinstance(t, int | float) and not isinstance(t, bool) and t == 0):
                failed += 1
                continue
            pairs.append((_tokens(path, line, n), _seconds(path, line, t)))
        for k in ("model_id", "backend", "max_concurrency", "request_rate", "date"):
            if run.get(k) is not None and k not in meta:
                meta[k] = run[k]
    if not pairs:
        raise TraceError(path, None, "no successful requests")
    lengths, seconds = _median_table(pairs)
    tool = "SGLang" if len(runs) > 1 or str(meta.get("backend", "")).startswith("sglang") else "vLLM"
    bits = [f"{k} {meta[k]}" for k in meta]
    if failed:
        bits.append(f"{failed} failed request(s) left out")
    origin = f"{tool} benchmark {Path(path).name}" + (f" ({', '.join(bits)})" if bits else "")
    return Measured(lengths, seconds, len(pairs), origin)


def _is_object(line: str) -> bool:
    try:
        return isinstance(parse_json(line), dict)
    except JsonRefused:
        return False


def read_measurements(path: str | Path, columns: str | None = None) -> Measured:
    """A CSV (by extension, or whenever --columns is given) or a benchmark JSON."""
    p = Path(path)
    if columns is not None or p.suffix.lower() in (".csv", ".tsv", ".txt"):
        return read_csv(p, parse_column_map(columns) if columns else None)
    return read_benchmark_json(p)
