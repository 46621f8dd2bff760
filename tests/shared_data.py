"""Where the tests find the project's shared data (the real traces): one setting,
`PRFAAS_SHARED`, else `../shared` next to the clone, else `shared/` inside it. A test that
needs a file skips when none of them holds it, wherever the clone lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_dirs() -> list[Path]:
    """The places searched, in order."""
    env = os.environ.get("PRFAAS_SHARED")
    return [Path(env)] if env else [ROOT.parent / "shared", ROOT / "shared"]


def shared_file(*parts: str) -> Path | None:
    """The first existing `<shared>/<parts>`, or None."""
    return next((p for d in shared_dirs() if (p := d.joinpath(*parts)).is_file()), None)


def shared_or_skip(*parts: str) -> Path:
    path = shared_file(*parts)
    if path is None:
        pytest.skip(f"shared data {'/'.join(parts)} not found in "
                    f"{', '.join(map(str, shared_dirs()))} (set PRFAAS_SHARED)")
    return path


MOONCAKE = ("traces", "mooncake_conversation.jsonl")
