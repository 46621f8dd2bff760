"""Shared fixtures: the shipped presets, loaded once per session."""

from __future__ import annotations

import os

import pytest

from emulator.scenario import presets

os.environ.pop("NO_COLOR", None)  # NO_COLOR changes Textual's SVG output


@pytest.fixture(scope="session")
def toy():
    return presets.load("toy")


@pytest.fixture(scope="session")
def paper():
    return presets.load("paper-case-study")


@pytest.fixture(scope="session")
def dense():
    return presets.load("dense-contrast")
