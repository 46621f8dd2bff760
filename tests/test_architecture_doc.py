"""docs/architecture.md kept true: every path and dotted module it names exists, and every
subpackage of emulator/ and emulator/sim/ is described in it (a package moved, renamed or added
without the page following fails here)."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"

PATH = re.compile(r"\b(?:emulator|prfaas_tui)(?:/[\w.]+)+/?")
DOTTED = re.compile(r"(?<![\w/.])(?:emulator|prfaas_tui)(?:\.\w+)+")


def named_paths(text: str) -> set[str]:
    return {m.rstrip(".") for m in PATH.findall(text)}


def named_modules(text: str) -> set[str]:
    return set(DOTTED.findall(text))


def resolves(dotted: str) -> bool:
    """A module, or an attribute of the longest module prefix (`pkg.module.Class.method`)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            obj: object = importlib.import_module(name)
            for attr in parts[i:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
    return False


def subpackages(folder: Path) -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() + "/" for p in folder.iterdir()
                  if (p / "__init__.py").is_file())


TEXT = DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(named_paths(TEXT)))
def test_every_named_path_exists(path: str):
    assert (ROOT / path).exists(), f"docs/architecture.md names {path}, which does not exist"


@pytest.mark.parametrize("dotted", sorted(named_modules(TEXT)))
def test_every_named_module_resolves(dotted: str):
    assert resolves(dotted), f"docs/architecture.md names {dotted}, which does not resolve"


PACKAGES = subpackages(ROOT / "emulator") + subpackages(ROOT / "emulator" / "sim")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_subpackage_is_described(package: str):
    assert f"`{package}`" in TEXT, f"docs/architecture.md does not describe {package}"


def test_the_checks_can_fail():
    text = "see `emulator/sim/nowhere.py`, emulator.sim.engine.Nothing and emulator.sim.engine"
    assert named_paths(text) == {"emulator/sim/nowhere.py"}
    assert named_modules(text) == {"emulator.sim.engine.Nothing", "emulator.sim.engine"}
    assert not (ROOT / "emulator/sim/nowhere.py").exists()
    assert not resolves("emulator.sim.engine.Nothing")
    assert resolves("emulator.sim.engine.Emulation")
    assert not resolves("emulator.sim.nowhere")
    assert "emulator/sim/core/" in subpackages(ROOT / "emulator" / "sim")
