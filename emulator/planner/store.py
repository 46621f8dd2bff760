"""The plan's results file (JSON lines): a header describing the plan, then one line per finished
candidate, appended and flushed as each one finishes so that an interrupted sweep resumes without
redoing any of them.

Reading is total: a line that is not a plan record is named `file:line: not a plan record (key:
expected ..., found ...)`. A resumed sweep reports such lines, keeps them in `<file>.bad`, and
redoes their candidates; a read-only reader (the dashboard) refuses the file. One planner writes a
file at a time: `ResultsFile` holds an flock on the sidecar `<file>.lock`, which the kernel
releases when the process ends, so a dead planner's lock never blocks the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

from emulator.files import FileRefused, read_bytes
from emulator.paradigm import Paradigm


class PlanFileError(ValueError):
    """A results file that cannot be used or written; str() is one line naming the file (and
    line, or flag)."""


class OtherPlan(PlanFileError):
    """The file holds another plan's results: its header differs from this plan's (`theirs`
    against `ours`; the CLI names the flags that differ and suggests a free file name)."""

    def __init__(self, path: Path, theirs: dict, ours: dict):
        self.path, self.theirs, self.ours = path, theirs, ours
        self.differs = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
        super().__init__(f"{path}: belongs to another plan (differs in "
                         f"{', '.join(self.differs)}); use another --out or delete it")


def _shown(x: object) -> str:
    text = repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def is_number(x: object, allow_inf: bool = False) -> bool:
    """A real number (not a bool), finite unless `allow_inf` lets +inf through."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    return math.isfinite(x) or (allow_inf and x == math.inf)


def record_problem(rec: object) -> str | None:
    """Why a result line is not a plan record (`key: expected ..., found ...`), or None. The
    fields are those the sweep's summary, the CLI table and CSV, and the dashboard read."""
    if not isinstance(rec, dict):
        return f"expected a JSON object, found {type(rec).__name__}"
    for k in ("key", "label", "binding"):
        if not isinstance(rec.get(k), str):
            return f"{k}: expected a string, found {_shown(rec.get(k, 'no such key'))}"
    for k in ("goodput", "goodput_lo", "goodput_hi", "lambda_max", "utilization"):
        if not (is_number(rec.get(k)) and rec[k] >= 0):
            return f"{k}: expected a finite number >= 0, found {_shown(rec.get(k, 'no such key'))}"
    for k in ("cost_per_hour", "goodput_per_cost"):
        if rec.get(k) is not None and not is_number(rec[k]):
            return f"{k}: expected a finite number or null, found {_shown(rec[k])}"
    c = rec.get("candidate")
    if not isinstance(c, dict):
        return f"candidate: expected an object, found {_shown(c if 'candidate' in rec else 'no such key')}"
    if c.get("paradigm") not in tuple(Paradigm):
        return f"candidate.paradigm: expected one of {', '.join(tuple(Paradigm))}, found {_shown(c.get('paradigm'))}"
    for k in ("n_prfaas", "n_p", "n_d"):
        v = c.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            return f"candidate.{k}: expected a whole number >= 0, found {_shown(v)}"
    for k in ("t", "bandwidth"):
        v = c.get(k)
        if not (is_number(v, allow_inf=True) and v >= 0):
            return f"candidate.{k}: expected a number >= 0, found {_shown(v)}"
    return consistency_problem(rec)


MAX_RATE = 1e9  # req/s: no deployment's Lambda_max comes near (a 1e308 is a corrupt record)
_TOL = 1e-9


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _TOL * max(abs(a), abs(b), 1.0)


def consistency_problem(rec: dict) -> str | None:
    """Why a record's numbers cannot come from a sweep, or None: the bisection runs between 0
    and the candidate's Lambda_max, so goodput (the seeds' mean) lies in [0, Lambda_max],
    inside its interval [goodput_lo, goodput_hi], with utilization = goodput / Lambda_max."""
    lam, g = rec["lambda_max"], rec["goodput"]
    if lam > MAX_RATE:
        return f"lambda_max: expected at most {MAX_RATE:g} req/s, found {_shown(lam)}"
    if g > lam * (1 + _TOL):
        return f"goodput: expected at most its lambda_max {lam:.6g}, found {_shown(g)}"
    if not rec["goodput_lo"] <= g * (1 + _TOL) + _TOL or not g <= rec["goodput_hi"] * (1 + _TOL) + _TOL:
        return (f"goodput: expected within [goodput_lo, goodput_hi] = [{rec['goodput_lo']:.6g}, "
                f"{rec['goodput_hi']:.6g}], found {_shown(g)}")
    util = g / lam if lam > 0 else 0.0
    if not _close(rec["utilization"], util):
        return f"utilization: expected goodput / lambda_max = {util:.6g}, found {_shown(rec['utilization'])}"
    seeds = rec.get("per_seed")
    if seeds is not None:
        if not (isinstance(seeds, list) and seeds and all(is_number(x) and 0 <= x <= lam * (1 + _TOL)
                                                          for x in seeds)):
            return f"per_seed: expected goodputs in [0, lambda_max], found {_shown(seeds)}"
        if not _close(math.fsum(seeds) / len(seeds), g):
            return f"goodput: expected the mean of per_seed, found {_shown(g)}"
    per_cost, cost = rec.get("goodput_per_cost"), rec.get("cost_per_hour")
    if per_cost is not None and cost and not _close(per_cost, g / cost):
        return f"goodput_per_cost: expected goodput / cost_per_hour, found {_shown(per_cost)}"
    return None


def _lines(path: Path) -> list[str]:
    try:
        data = read_bytes(path, "plan")
    except FileRefused as exc:
        raise PlanFileError(str(exc)) from None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PlanFileError(f"{path}:{line}: not a prfaas-tui plan results file "
                            "(expected UTF-8 text)") from None


def _header(path: Path, lines: list[str]) -> dict:
    try:
        header = json.loads(lines[0])["header"]
    except (json.JSONDecodeError, ValueError, RecursionError, KeyError, IndexError, TypeError):
        header = None
    if not isinstance(header, dict):
        raise PlanFileError(f"{path}:1: not a prfaas-tui plan results file")
    return header


def _parse(path: Path, strict: bool, check: Callable[[dict], str | None] | None = None,
           ) -> tuple[dict, dict[str, dict], list[tuple[int, str]], bool]:
    """(header, records by key, [(line, problem)], whether the last line was cut short by an
    interrupt). `strict` raises at the first problem instead of collecting it; `check` adds
    the plan's own test of each well-formed record."""
    lines = _lines(path)
    header = _header(path, lines)
    done: dict[str, dict] = {}
    bad: list[tuple[int, str]] = []
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            if n == len(lines):  # cut short by an interrupt: that candidate is redone
                return header, done, bad, True
            why = "not valid JSON"
        else:
            why = record_problem(rec)
            if why is None and check is not None:
                why = check(rec)
        if why is None:
            done[rec["key"]] = rec
            continue
        if strict:
            raise PlanFileError(f"{path}:{n}: not a plan record ({why})")
        bad.append((n, why))
    return header, done, bad, False


def check_writable(path: str | Path, flag: str = "--out") -> None:
    """Pre-flight for an output file, before any work: its folder exists and it is (or can be
    created as) a writable regular file. PlanFileError naming the flag otherwise."""
    p = Path(path).expanduser()
    folder = p.parent
    if p.is_dir():
        raise PlanFileError(f"{flag}: {path} is a folder, expected a file name")
    if not folder.is_dir():
        raise PlanFileError(f"{flag}: the folder {str(folder) or '.'} does not exist (create it "
                            "first)")
    if p.exists():
        if not os.access(p, os.W_OK):
            raise PlanFileError(f"{flag}: {path} is not writable")
    elif not os.access(folder, os.W_OK | os.X_OK):
        raise PlanFileError(f"{flag}: the folder {folder} is not writable")


def check_resume(path: str | Path, header: dict, flag: str = "--out") -> None:
    """Pre-flight for a results file, before any work: writable (`check_writable`) and, when
    it holds results already, a plan results file of this plan (`header`), which a sweep would
    resume; PlanFileError (OtherPlan: another plan's) otherwise. The lock and the records are
    the sweep's (`ResultsFile`)."""
    check_writable(path, flag)
    p = Path(path).expanduser()
    if not (p.is_file() and p.stat().st_size):
        return
    first = _header(p, _lines(p))
    if first != header:
        raise OtherPlan(p, first, header)


def _stderr(message: str) -> None:
    print(f"prfaas-tui: warning: {message}", file=sys.stderr)


class ResultsFile:
    """A results file opened for writing: created with its header, or resumed. Holds the
    planner lock until `close()` (or the process ends)."""

    def __init__(self, path: str | Path, header: dict,
                 report: Callable[[str], None] | None = _stderr,
                 check: Callable[[dict], str | None] | None = None):
        """`check(record)`: why a resumed record does not fit this plan (its candidate's
        Lambda_max differs, say), or None; such records go to .bad like malformed lines."""
        self.path = Path(path)
        self.header = header
        self._check = check
        self.done: dict[str, dict] = {}
        self.problems: list[str] = []  # one line per result line skipped on resume
        check_writable(self.path)
        self._lock = self._acquire()
        try:
            self._open(report)
        except BaseException:
            self.close()
            raise

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def _acquire(self):
        """Lock `<file>.lock`. A planner that ends removes it while still holding it; one that
        opened the old file just before then gets a lock on a removed file, sees that the
        path no longer names it, and takes the new one instead (so two planners never both
        hold "the" lock)."""
        while True:
            try:
                fh = open(self.lock_path, "a+")  # noqa: SIM115 (held for the object's lifetime)
            except OSError as exc:
                raise PlanFileError(f"{self.lock_path}: cannot create the planner lock "
                                    f"({exc.strerror or exc})") from None
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.seek(0)
                pid = fh.read().strip()[:20] or "?"
                fh.close()
                raise PlanFileError(f"{self.path}: another planner (pid {pid}) is writing this "
                                    "file; wait for it to finish or use another --out") from None
            try:
                same = os.stat(self.lock_path).st_ino == os.fstat(fh.fileno()).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            fh.close()  # locked a file the previous planner removed on its way out: retry
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        return fh

    def _open(self, report: Callable[[str], None] | None) -> None:
        if not (self.path.exists() and self.path.stat().st_size):
            self.path.write_text(json.dumps({"header": self.header}, sort_keys=True) + "\n")
            return
        first, self.done, bad, cut = _parse(self.path, strict=False, check=self._check)
        if first != self.header:
            raise OtherPlan(self.path, first, self.header)
        if not (cut or bad):
            return
        lines = _lines(self.path)
        if cut:  # kept aside and named like a bad record
            bad = [*bad, (len(lines), "the last line, cut short by an interrupted write")]
        skipped = {n for n, _ in bad}
        with open(self.path.with_name(self.path.name + ".bad"), "a", encoding="utf-8") as fh:
            fh.writelines(lines[n - 1] + "\n" for n in sorted(skipped))
        lines = [x for n, x in enumerate(lines, 1) if n not in skipped]
        for n, why in bad:
            msg = (f"{self.path}:{n}: not a plan record ({why}); moved to "
                   f"{self.path.name}.bad, that candidate is redone")
            self.problems.append(msg)
            if report is not None:
                report(msg)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)  # the valid records survive a crash mid-rewrite

    def append(self, rec: dict) -> None:
        self.done[rec["key"]] = rec
        with self.path.open("a") as fh:
            fh.write(json.dumps(rec, sort_keys=True) + "\n")
            fh.flush()

    def close(self) -> None:
        """Remove the lock file and release the lock (a killed planner leaves the file, and the
        kernel releases its lock)."""
        if self._lock is not None:
            with contextlib.suppress(OSError):
                if os.stat(self.lock_path).st_ino == os.fstat(self._lock.fileno()).st_ino:
                    self.lock_path.unlink()  # still held: no one else can be using this file
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def read_results(path: str | Path) -> tuple[dict, list[dict]]:
    """(header, finished records) of a plan results file, read only (a sweep may be writing it:
    a cut last line is skipped); PlanFileError at the first line that is not a record."""
    header, done, _, _ = _parse(Path(path), strict=True)
    return header, list(done.values())
