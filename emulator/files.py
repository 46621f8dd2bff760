"""Bounded reads of the files a user names: regular files only, each kind under its size cap.

Why one helper: every path a command takes (model card, GPU card, preset, drill, snapshot,
trace, plan) must refuse /dev/zero, a FIFO or a directory in one line instead of reading
forever, blocking on open or loading gigabytes; each reader calls `checked`, `read_bytes`,
`read_text` or `open_text` here, and the caps below are the ones `--help` states.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import IO

MIB = 1 << 20
# kind -> the largest file of that kind read (bytes)
LIMITS: dict[str, int] = {
    "model card": 8 * MIB,  # a config.json is a few KB; the largest shipped is under 10 KB
    "GPU card": 1 * MIB,
    "preset": 16 * MIB,  # presets may hold an empirical length table
    "drill": 1 * MIB,
    "snapshot": 64 * MIB,  # an SVG snapshot of a large terminal is a few MB
    "trace": 2048 * MIB,
    "plan": 256 * MIB,  # 100,000 candidates (the cap) write about 60 MB
}


class FileRefused(ValueError):
    """A named file that is not read: missing, not a regular file, too large, not UTF-8.
    str() is the one line a user sees: `PATH: message`."""

    def __init__(self, path: str | Path, message: str):
        self.path, self.message = str(path), message
        super().__init__(printable(f"{path}: {message}"))


def printable(text: str) -> str:
    """text with control and other non-printable characters escaped (\\n, \\x1b): an error
    that quotes a file's own text (a header cell, a name) stays one line."""
    return text if text.isprintable() else "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def short_path(path: str | Path, width: int = 80) -> str:
    """A path as an error quotes it: printable, and cut in the middle past `width` characters
    (a 5,000-character name still leaves its error one readable line)."""
    text = printable(str(path))
    return text if len(text) <= width else f"{text[:width - 21]}...{text[-18:]}"


def os_error_text(exc: OSError) -> str:
    """An OSError on a file the user named as the one line they see: `PATH: reason`."""
    reason = exc.strerror or str(exc)
    return f"{short_path(exc.filename)}: {reason.lower()}" if exc.filename is not None else reason


def undecodable(argv: list[str]) -> str | None:
    """Why an argument cannot be used (bytes that are not UTF-8 reach Python as lone
    surrogates, which no file, TOML or terminal write can encode); None when all are text."""
    for i, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            flag = argv[i - 1] if i and argv[i - 1].startswith("-") else f"argument {i + 1}"
            return f"{flag}: {short_path(arg)} is not UTF-8 text (re-type it, or rename the file)"
    return None


def size_text(n: int) -> str:
    """'8 MiB', '2 GiB': how a cap reads in messages and --help."""
    return f"{n // (1 << 30)} GiB" if n >= 1 << 30 and n % (1 << 30) == 0 else \
        f"{n // MIB} MiB" if n % MIB == 0 else f"{n} bytes"


def cap_help(kind: str) -> str:
    """The cap as --help states it: 'a regular file of at most 8 MiB'."""
    return f"a regular file of at most {size_text(LIMITS[kind])}"


def checked(path: str | Path, kind: str) -> Path:
    """`path` when it names a regular file within `kind`'s cap; FileRefused otherwise. Only
    stat() is called: a FIFO is refused without being opened (opening one blocks)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise FileRefused(p, "no such file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise FileRefused(p, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        what = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a file")
        raise FileRefused(p, f"expected a regular {kind} file, found {what}")
    cap = LIMITS[kind]
    if st.st_size > cap:
        raise FileRefused(p, f"{st.st_size:,} bytes, over the {size_text(cap)} a {kind} may take")
    return p


def read_bytes(path: str | Path, kind: str) -> bytes:
    """The file's bytes, never more than the cap (a file that grows past it is refused too)."""
    p = checked(path, kind)
    cap = LIMITS[kind]
    try:
        with open(p, "rb") as fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        raise FileRefused(p, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > cap:
        raise FileRefused(p, f"over the {size_text(cap)} a {kind} may take")
    return data


def read_text(path: str | Path, kind: str) -> str:
    """The file as strict UTF-8 text (a leading BOM dropped); FileRefused at the first byte
    that is not UTF-8, with its offset (a Latin-1 or binary file)."""
    data = read_bytes(path, kind)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(path, f"expected UTF-8 text, found byte 0x{data[exc.start]:02x} at "
                          f"offset {exc.start}") from None
    return text.removeprefix("\ufeff")


def open_text(path: str | Path, kind: str) -> IO[str]:
    """The file opened for streaming as strict UTF-8 (a BOM dropped, newlines kept for csv),
    after the same checks; the reader streams it, so only the size cap bounds it."""
    p = checked(path, kind)
    try:
        return open(p, encoding="utf-8-sig", errors="strict", newline="")
    except OSError as exc:
        raise FileRefused(p, f"cannot read: {exc.strerror or exc}") from None


MAX_DEPTH = 32  # nesting of objects/tables/lists in a card, preset or drill (they nest 3-4 deep)


_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def file_stem(name: str, fallback: str = "scenario") -> str:
    """A user-given name (a preset's, a profile's) as one file-name component: anything but
    letters, digits and `._+-` becomes '-' (no separators, no control characters), no leading
    dot or dash, no '..', at most 100 characters; `fallback` when nothing is left. So a name
    never makes a path that climbs out of the folder it is written in."""
    stem = _UNSAFE.sub("-", name)
    while ".." in stem:
        stem = stem.replace("..", ".")
    stem = stem.strip(".-")[:100].strip(".-")
    return stem or fallback


def unusable(text: str) -> str | None:
    """Why a typed path cannot name a file on any system (empty, a part over 255 bytes, over
    4,096 bytes in all, a NUL, text that is not UTF-8); None when it can. Checked before the
    path is stat()ed: exists() raises on a name too long instead of answering."""
    try:
        parts = [len(part.encode("utf-8")) for part in Path(text).parts]
    except UnicodeEncodeError:
        return f"{short_path(text)}: not UTF-8 text"
    if not text.strip():
        return "give a file name"
    if "\0" in text or len(text.encode("utf-8")) > 4096 or max(parts, default=0) > 255:
        return f"{short_path(text)}: not a usable file name (too long, or a NUL in it)"
    return None


def escapes(text: str) -> str | None:
    """Why a typed relative path would leave the working folder (absolute, `~`, or a `..`
    part) or name no file (`unusable`); None when it stays inside."""
    if (why := unusable(text)) is not None:
        return why
    p = Path(text)
    if p.is_absolute() or text.startswith("~"):
        return f"{text}: give a name in this folder (a relative path), not {p.anchor or '~'}..."
    if ".." in p.parts:
        return f"{text}: a name may not climb out of this folder with '..'"
    return None


class JsonRefused(ValueError):
    """A JSON text no reader should take: malformed, an integer past Python's digit limit, or
    nested deeper than MAX_DEPTH. `lineno` is the line the parser stopped at (None: no line)."""

    def __init__(self, message: str, lineno: int | None = None):
        super().__init__(message)
        self.lineno = lineno


def parse_json(text: str) -> object:
    """JSON from a user's file, bounded: every way the standard parser can fail (a 5,000-digit
    integer, 100,000 nested brackets, bad syntax) is one JsonRefused, never a RecursionError
    or an unnamed ValueError, and the result nests at most MAX_DEPTH deep."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonRefused(f"malformed JSON: {exc.msg}", exc.lineno) from None
    except RecursionError:
        raise JsonRefused(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError:  # Python refuses integers of more than 4,300 digits
        raise JsonRefused("an integer too long to read") from None
    if too_deep(data):
        raise JsonRefused(f"nested deeper than {MAX_DEPTH} levels")
    return data


def too_deep(data: object, limit: int = MAX_DEPTH) -> bool:
    """Whether parsed JSON/TOML `data` nests dicts or lists deeper than `limit`; iterative, so
    any depth a parser returned is answered (a parser's own RecursionError is the caller's)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False
