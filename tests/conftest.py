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


def pytest_addoption(parser):
    parser.addoption("--fuzz-budget", default=None, metavar="SECONDS",
                     help="run the long fuzz profile (-m fuzz) for this many seconds per test "
                          "(or set PRFAAS_FUZZ_BUDGET); without it those tests skip")
