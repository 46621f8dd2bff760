"""Bring-your-own-deployment cards: model architectures read from Hugging Face `config.json`
files, GPU cards, and the roofline prefill estimate built from both.

Layering: this package sits at the model layer; it imports only units, profiles, distributions
and model, never the simulator or the UI.
"""

from __future__ import annotations

from pathlib import Path


class CardError(ValueError):
    """A config.json or GPU card that cannot be used; str() is the one line a user sees."""

    def __init__(self, path: str | Path | None, key: str, message: str):
        self.path, self.key, self.message = str(path) if path else "<card>", key, message
        super().__init__(f"{self.path}: {key}: {message}" if key else f"{self.path}: {message}")


CARDS_DIR = Path(__file__).resolve().parent
