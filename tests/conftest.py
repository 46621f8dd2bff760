"""Shared fixtures (the shipped presets, loaded once per session) and the slow tests' timeout."""

from __future__ import annotations

import os

import pytest

from emulator.scenario import presets

os.environ.pop("NO_COLOR", None)  # NO_COLOR changes Textual's SVG output

# Seconds a test marked slow may take (pyproject's `timeout` covers the rest): the longest take
# about a minute alone on 2 cores and must still pass with another CPU-bound process running.
SLOW_TIMEOUT = 600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("timeout"):
            continue
        if item.get_closest_marker("fuzz"):  # bounded by its --fuzz-budget of inputs instead
            item.add_marker(pytest.mark.timeout(0))
        elif item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))


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
    parser.addoption("--fuzz-budget", default=None, metavar="INPUTS",
                     help="run the long fuzz profile (-m fuzz) over this many inputs per test "
                          "(or set PRFAAS_FUZZ_BUDGET); without it those tests skip")
