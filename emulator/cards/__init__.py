"""Bring-your-own-deployment cards: model architectures read from Hugging Face `config.json`
files, GPU cards with measured per-operation efficiencies, and the prefill profiles built from
both (kernel model + serving overhead, docs/profiles.md).

Layering: this package sits at the model layer; it imports only units, profiles, distributions
and model, never the simulator or the UI.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from emulator.files import MAX_DEPTH, FileRefused, printable, read_text, too_deep

C = TypeVar("C")


class CardError(ValueError):
    """A config.json or GPU card that cannot be used; str() is the one line a user sees (control
    characters of the file's own text escaped, so a name cannot split it)."""

    def __init__(self, path: str | Path | None, key: str, message: str):
        self.path, self.key, self.message = str(path) if path else "<card>", key, message
        line = f"{self.path}: {key}: {message}" if key else f"{self.path}: {message}"
        super().__init__(printable(line))


CARDS_DIR = Path(__file__).resolve().parent


def card_text(path: str | Path, kind: str = "model card") -> str:
    """A card file's text through the bounded reader (a regular file within the kind's cap,
    strict UTF-8); CardError naming the file otherwise, for config.json and GPU TOML alike."""
    try:
        return read_text(path, kind)
    except FileRefused as exc:
        raise CardError(path, "", exc.message) from None


MAX_NAME = 100


def check_name(value: object, path: str | Path | None, key: str) -> str:
    """A card's display name: a non-empty string of at most MAX_NAME printable characters (it
    is shown in one-line messages and may become a file name, see prfaas_tui.paths)."""
    if not isinstance(value, str) or not value.strip():
        raise CardError(path, key, f"must be a non-empty string, got {value!r:.60}")
    if len(value) > MAX_NAME or not value.isprintable():
        raise CardError(path, key, f"must be at most {MAX_NAME} printable characters, got "
                        f"{value!r:.60}")
    return value


def check_depth(data: object, path: str | Path | None) -> None:
    """CardError when `data` nests objects or lists deeper than MAX_DEPTH."""
    if too_deep(data):
        raise CardError(path, "", f"nested deeper than {MAX_DEPTH} levels")


def shipped_cards(kind: str, suffix: str) -> list[str]:
    """Names of the cards shipped in CARDS_DIR/kind (files ending in `suffix`)."""
    return sorted(p.stem for p in (CARDS_DIR / kind).glob(f"*{suffix}"))


def load_named(name_or_path: str | Path, kind: str, suffix: str,
               read: Callable[[Path, str | None], C], what: str) -> C:
    """A shipped card by name (CARDS_DIR/kind/NAME+suffix) or, for anything that looks like a
    path, that file; CardError naming the shipped ones otherwise."""
    s = str(name_or_path)
    p = Path(s)
    if p.suffix == suffix or "/" in s or p.exists():
        return read(p, None)
    cand = CARDS_DIR / kind / f"{s}{suffix}"
    if cand.is_file():
        return read(cand, s)
    raise CardError(s, "", f"no {what} of that name (shipped: "
                    f"{', '.join(shipped_cards(kind, suffix))}; or give a {suffix} path)")
