"""Request traces: Mooncake JSONL and Azure LLM-inference CSV, read strictly.

Mooncake: one JSON object a line, `timestamp` (ms), `input_length`, `output_length`, `hash_ids`
(one id per 512-token block; equal ids mean a shared prefix). Azure:
`TIMESTAMP,ContextTokens,GeneratedTokens` with ISO-like date-times. Rows need not be sorted:
requests arrive in timestamp order, ties in file order.

Accepted exactly: UTF-8 text; input lengths whole numbers in [1, MAX_TOKENS]; output lengths in
[0, MAX_TOKENS]; timestamps finite, >= 0 (Mooncake ms <= MAX_TIMESTAMP_MS) and spanning at most
MAX_SPAN_S. Anything else raises `TraceError` with one line `file:line: key: expected ...,
found ...`; nothing is skipped silently. New formats reuse `text_lines`, `check_record` and
`finish` so that they accept and reject the same way.
"""

from __future__ import annotations

import csv
import json
import math
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from emulator.files import LIMITS, FileRefused, checked, printable, size_text

MOONCAKE_BLOCK_TOKENS = 512
MAX_TOKENS = 16 * 1024 * 1024  # 16M tokens: beyond any model's context
MAX_SPAN_S = 366 * 86400.0  # a year of arrivals; a longer span is a unit or date error
MAX_TIMESTAMP_MS = 1e15  # ~31,700 years of ms: absolute epoch stamps fit, 1e308 does not
_MAX_HASH = 2**63 - 1
MAX_ROWS = 10_000_000  # requests in one trace: 10M rows summarise in well under 1 GB
MAX_HASH_IDS = 20_000_000  # prefix-block ids in one Mooncake trace (each is a Python int)
MAX_FIELD = 1 << 20  # characters in one CSV cell (csv's own limit is 131,072)
MAX_LINE = 8 << 20  # bytes in one line: a 16M-token Mooncake record's ids are under 1 MB
LIMITS_HELP = (f"a trace is a regular file of at most {size_text(LIMITS['trace'])} and "
               f"{MAX_ROWS:,} requests")


class TraceError(ValueError):
    def __init__(self, path: str | Path, line: int | None, message: str):
        where = f"{path}:{line}" if line else str(path)
        super().__init__(printable(f"{where}: {message}"))


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


# -- shared checks (every reader, including formats added later) --------------------------------
def _shown(value: object) -> str:
    text = repr(value) if not isinstance(value, float) else f"{value:g}"
    return text if len(text) <= 40 else text[:37] + "..."


def _num(x: float) -> str:
    return f"{int(x)}" if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def _bad(path, line: int | None, key: str, expected: str, value: object) -> TraceError:
    return TraceError(path, line, f"{key}: expected {expected}, found {_shown(value)}")


def check_number(path: str | Path, line: int | None, key: str, value: object, *,
                 lo: float, hi: float, whole: bool = False, unit: str = "") -> float:
    """`value` as a finite number in [lo, hi] (a whole one if `whole`), or TraceError. Strings
    are accepted (CSV cells); bools and non-finite values are not."""
    x = value
    if isinstance(x, str):
        try:
            x = int(x) if whole else float(x)
        except ValueError:
            try:  # "12.0" is a whole number written as a float
                x = float(x)
            except ValueError:
                x = None
    if (isinstance(x, bool) or not isinstance(x, int | float)
            or (isinstance(x, float) and not math.isfinite(x))
            or not lo <= x <= hi  # int vs float compares exactly: huge ints cannot overflow
            or (whole and x != int(x))):
        what = f"{'a whole number' if whole else 'a number'}{unit} in [{_num(lo)}, {_num(hi)}]"
        raise _bad(path, line, key, what, value)
    return float(x)


def check_record(path: str | Path, line: int | None, timestamp: object, input_length: object,
                 output_length: object, *,
                 keys: tuple[str, str, str] = ("timestamp", "input_length", "output_length"),
                 units_per_second: float = 1.0, unit: str = "s") -> tuple[float, int, int]:
    """One request's (arrival seconds, input tokens, output tokens), checked as every reader
    checks them; `timestamp` is a number of `unit` (`units_per_second` a second; Mooncake: ms,
    1000), or None when the format's own parser bounds it (Azure's date-times)."""
    t = 0.0
    if timestamp is not None:
        t = check_number(path, line, keys[0], timestamp, lo=0.0,
                         hi=MAX_TIMESTAMP_MS / 1000.0 * units_per_second, unit=f" of {unit}")
    return t / units_per_second, check_tokens(path, line, keys[1], input_length), \
        check_tokens(path, line, keys[2], output_length, allow_zero=True)


def check_tokens(path: str | Path, line: int | None, key: str, value: object,
                 allow_zero: bool = False) -> int:
    """A token count: a whole number in [1 (0 if `allow_zero`), MAX_TOKENS]."""
    return int(check_number(path, line, key, value, lo=0 if allow_zero else 1, hi=MAX_TOKENS,
                            whole=True))


def _positive_int(value: object, field: str, path, line: int, allow_zero: bool = False) -> int:
    """The pre-issue-11 helper's signature, kept for readers written against it."""
    return check_tokens(path, line, field, value, allow_zero)


def checked_trace(path: str | Path) -> Path:
    """The trace's path when it is a regular file within the trace cap; TraceError otherwise
    (a FIFO, /dev/zero, a directory, a file over the cap)."""
    try:
        return checked(path, "trace")
    except FileRefused as exc:
        raise TraceError(path, None, exc.message) from None


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file (a leading BOM dropped, line ends kept: CRLF
    is for csv to read); TraceError at the first line that is not UTF-8 or holds a NUL byte
    (a binary file) or is longer than MAX_LINE bytes. The file is checked first (regular,
    within the trace cap); no line is read past MAX_LINE, so memory stays bounded."""
    with open(checked_trace(path), "rb") as fh:
        for n, raw in enumerate(iter(lambda: fh.readline(MAX_LINE + 1), b""), 1):
            if len(raw) > MAX_LINE:
                raise TraceError(path, n, f"a line over {MAX_LINE:,} bytes (no record is that "
                                 "long: a binary file?)")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise TraceError(path, n, "expected UTF-8 text, found undecodable bytes") from None
            if "\x00" in text:
                raise TraceError(path, n, "expected UTF-8 text, found a NUL byte (a binary file?)")
            if n == 1:
                text = text.removeprefix("\ufeff")
            yield n, text


class Records:
    """Checked records as they stream in, in compact arrays (8 bytes a number, not a Python
    object each), refused at MAX_ROWS: what keeps a 10M-row trace in bounded memory."""

    def __init__(self, path: str | Path, hashes: bool = False):
        self.path = path
        self.ts, self.ins, self.outs, self.lines = array("d"), array("q"), array("q"), array("q")
        self.hashes: list[list[int]] | None = [] if hashes else None
        self._n_hash = 0

    def add(self, line: int, t: float, n_in: int, n_out: int, h: list[int] | None = None) -> None:
        if len(self.ts) >= MAX_ROWS:
            raise TraceError(self.path, line, f"more than {MAX_ROWS:,} requests (the trace cap)")
        self.ts.append(t)
        self.ins.append(n_in)
        self.outs.append(n_out)
        self.lines.append(line)
        if self.hashes is not None:
            self._n_hash += len(h or ())
            if self._n_hash > MAX_HASH_IDS:
                raise TraceError(self.path, line, f"hash_ids: more than {MAX_HASH_IDS:,} block "
                                 "ids in the trace (the trace cap)")
            self.hashes.append(h or [])

    def finish(self, key: str = "timestamp") -> Trace:
        return finish(self.path, self.ts, self.ins, self.outs, self.hashes, self.lines, key)


def finish(path: str | Path, ts, ins, outs, hashes: list[list[int]] | None,
           lines=None, key: str = "timestamp") -> Trace:
    """The Trace of checked records (lists or `Records`' arrays), in timestamp order (ties in
    file order), from 0 s; a span over MAX_SPAN_S is refused at the line that stretches it."""
    if not len(ts):
        raise TraceError(path, None, "no requests in the trace")
    arr = np.asarray(ts, dtype=float)
    lo, hi = int(np.argmin(arr)), int(np.argmax(arr))
    span = float(arr[hi] - arr[lo])
    if not span <= MAX_SPAN_S:
        at = max(lo, hi)
        raise TraceError(path, lines[at] if lines else None,
                         f"{key}: expected arrivals spanning at most {MAX_SPAN_S / 86400:g} days, "
                         f"found a span of {span / 86400:.6g} days")
    if lo == 0 and np.all(arr[1:] >= arr[:-1]):  # already in order: no copies
        return Trace(str(path), arr - arr[0], np.asarray(ins, dtype=np.int64),
                     np.asarray(outs, dtype=np.int64), hashes)
    order = np.argsort(arr, kind="stable")  # Azure rows are not always sorted
    arr = arr[order] - arr[lo]
    h = [hashes[i] for i in order] if hashes is not None else None
    return Trace(str(path), arr, np.asarray(ins, dtype=np.int64)[order],
                 np.asarray(outs, dtype=np.int64)[order], h)


# -- the formats -------------------------------------------------------------------------------
def read_mooncake(path: str | Path) -> Trace:
    recs = Records(path, hashes=True)
    for n, line in text_lines(path):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)  # NaN/Infinity parse here and fail check_record with their key
        except json.JSONDecodeError as exc:
            raise TraceError(path, n, f"not valid JSON ({exc.msg})") from None
        except ValueError:  # Python refuses integers of more than 4,300 digits
            raise TraceError(path, n, "not valid JSON (an integer too long to read)") from None
        except RecursionError:
            raise TraceError(path, n, "not valid JSON (nested too deeply)") from None
        if not isinstance(rec, dict):
            raise TraceError(path, n, f"expected a JSON object, found {type(rec).__name__}")
        for key in ("timestamp", "input_length", "output_length"):
            if key not in rec:
                raise TraceError(path, n, f"{key}: expected a number, found no such key")
        t, n_in, n_out = check_record(path, n, rec["timestamp"], rec["input_length"],
                                      rec["output_length"], units_per_second=1000.0, unit="ms")
        h = rec.get("hash_ids", [])
        if not isinstance(h, list) or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= _MAX_HASH for x in h):
            raise _bad(path, n, "hash_ids", "a list of whole numbers in [0, 2^63)", h)
        recs.add(n, t, n_in, n_out, h)
    return recs.finish()


class Stamps:
    """ISO-like date-time cells of one column as naive UTC, all of one kind: either every cell
    carries a time zone or none does (a mix has no common clock: refused at the first cell
    that differs)."""

    def __init__(self, path: str | Path, key: str):
        self.path, self.key = path, key
        self.aware: bool | None = None

    def __call__(self, line: int, cell: str) -> datetime:
        stamp = _parse_stamp(self.path, line, self.key, cell)
        aware = stamp.utcoffset() is not None
        if self.aware is None:
            self.aware = aware
        elif aware != self.aware:
            raise _bad(self.path, line, self.key, f"a date-time {'with' if self.aware else 'without'}"
                       " a time zone like the first row's (a column cannot mix them)", cell)
        return _utc(self.path, line, self.key, stamp, cell)


def _parse_stamp(path, line: int, key: str, cell: str) -> datetime:
    text = cell.strip()
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        try:  # Azure writes 7 fraction digits; Python reads up to 6
            return datetime.fromisoformat(text[:26])
        except ValueError:
            raise _bad(path, line, key, "a date-time like 2023-11-16 18:15:46.680",
                       cell) from None


def _stamp(path, line: int, cell: str) -> datetime:
    """A naive UTC date-time from an ISO-like cell (a single cell; a column goes through
    `Stamps`, which also refuses mixed time zones)."""
    return _utc(path, line, "TIMESTAMP", _parse_stamp(path, line, "TIMESTAMP", cell), cell)


def _utc(path, line: int, key: str, stamp: datetime, cell: str) -> datetime:
    """Naive UTC (an offset is subtracted in timedelta arithmetic, which cannot overflow at
    year 1 or 9999)."""
    offset = stamp.utcoffset()
    if not offset:
        return stamp.replace(tzinfo=None)
    try:
        return stamp.replace(tzinfo=None) - offset
    except OverflowError:
        raise _bad(path, line, key, "a date-time within years 1-9999 in UTC", cell) from None


def csv_rows(path: str | Path):
    """A CSV file's rows through `text_lines` (checked file, strict UTF-8, no NUL, BOM dropped,
    CRLF or LF) and csv with cells up to MAX_FIELD characters; the reader gives `line_num`."""
    csv.field_size_limit(MAX_FIELD)
    return csv.reader(text for _, text in text_lines(path))


def csv_error(path, reader, exc: csv.Error) -> TraceError:
    msg = str(exc)
    if "field larger" in msg:
        msg = f"a cell over {MAX_FIELD:,} characters"
    return TraceError(path, reader.line_num or None, f"not valid CSV ({msg})")


def read_azure(path: str | Path) -> Trace:
    recs = Records(path)
    want = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]
    rows = reader = csv_rows(path)
    stamps = Stamps(path, "TIMESTAMP")
    t0: datetime | None = None
    try:
        header = next(rows, None)
        if header is None or [h.strip() for h in header[:3]] != want:
            raise TraceError(path, 1, f"header: expected {','.join(want)}, found "
                             f"{_shown(','.join(header or []))}")
        for row in rows:
            n = reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) < 3:
                raise TraceError(path, n, f"row: expected 3 columns, found {len(row)}")
            stamp = stamps(n, row[0])
            t0 = stamp if t0 is None else t0  # seconds from the first row: exact for close rows
            secs = (stamp - t0).total_seconds()
            _, n_in, n_out = check_record(path, n, None, row[1].strip(), row[2].strip(),
                                          keys=("TIMESTAMP", *want[1:]))
            recs.add(n, secs, n_in, n_out)
    except csv.Error as exc:
        raise csv_error(path, reader, exc) from None
    return recs.finish(key="TIMESTAMP")


def read_trace(path: str | Path) -> Trace:
    """By extension: .jsonl/.json is Mooncake, .csv is Azure."""
    p = checked_trace(path)
    try:
        if p.suffix in (".jsonl", ".json"):
            return read_mooncake(p)
        if p.suffix == ".csv":
            return read_azure(p)
    except OSError as exc:
        raise TraceError(path, None, f"cannot read ({exc.strerror or exc})") from None
    raise TraceError(path, None, "unknown trace format (expected .jsonl Mooncake or .csv Azure)")
