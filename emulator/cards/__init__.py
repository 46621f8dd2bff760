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

C = TypeVar("C")


class CardError(ValueError):
    """A config.json or GPU card that cannot be used; str() is the one line a user sees."""

    def __init__(self, path: str | Path | None, key: str, message: str):
        self.path, self.key, self.message = str(path) if path else "<card>", key, message
        super().__init__(f"{self.path}: {key}: {message}" if key else f"{self.path}: {message}")


CARDS_DIR = Path(__file__).resolve().parent


def card_text(path: str | Path) -> str:
    """A card file's text; CardError naming the file when it is missing, unreadable or not
    UTF-8 (a binary file), for config.json and GPU TOML cards alike."""
    p = Path(path)
    try:
        return p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise CardError(p, "", "no such file") from None
    except OSError as exc:
        raise CardError(p, "", f"cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CardError(p, "", "not UTF-8") from None


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
