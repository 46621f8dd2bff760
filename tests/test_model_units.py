"""Units: one parser per quantity; MB and MiB never mix."""

import pytest

from emulator.units import (
    GBPS,
    MB,
    MiB,
    UnitError,
    format_bandwidth,
    format_bytes,
    format_tokens,
    format_tokens_short,
    parse_bandwidth,
    parse_bytes,
    parse_duration,
    parse_tokens,
    to_gbps,
)


@pytest.mark.parametrize("text,expected", [
    ("100 Gbps", 100 * GBPS), ("1000 MB/s", 1000 * MB), ("8 Gb/s", 1000 * MB),
    ("8 Gbit/s", 1000 * MB), ("1 GiB/s", 2**30), (8, 8 * GBPS), ("10 Mbps", 1.25e6),
])
def test_bandwidth(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected)


def test_sizes_keep_decimal_and_binary_apart():
    assert parse_bytes("701.3 MiB") == pytest.approx(701.3 * 2**20)
    assert parse_bytes("100 MB") == 100 * MB
    assert parse_bytes("1 MiB") / parse_bytes("1 MB") == pytest.approx(1.048576)
    assert format_bytes(701.3 * MiB) == "701.3 MiB"
    assert format_bytes(800 * MB, binary=False) == "800.0 MB"


def test_tokens_and_durations():
    assert parse_tokens("32K") == 32768
    assert parse_tokens("1K") == 1024
    assert parse_tokens(19400) == 19400
    assert parse_tokens("19,400") == 19400  # what the screen prints parses back
    with pytest.raises(UnitError):
        parse_tokens("19,40")
    assert parse_tokens("128K") == 131072
    assert parse_duration("25 ms") == pytest.approx(0.025)
    assert parse_duration("10 min") == 600
    assert format_tokens(32768) == "32,768"  # printed: whole tokens, never a binary K
    assert format_tokens(19400.4) == "19,400"
    assert format_tokens(512) == "512"
    assert format_tokens(parse_tokens("20K")) == "20,480"  # typed K = 1,024, shown exactly
    assert format_tokens(float("inf")) == "inf"
    assert format_tokens_short(131072) == "131k"  # axis ticks: SI k = 1,000
    assert format_tokens_short(1500) == "1.5k"
    assert format_tokens_short(999) == "999"
    assert format_bandwidth(1000 * MB) == "8.00 Gbps"
    assert to_gbps(parse_bandwidth("1000 MB/s")) == pytest.approx(8.0)


@pytest.mark.parametrize("bad", ["100 parsecs", "abc", "nan MB", "", "1e999 MB", True])
def test_bad_units_raise(bad):
    with pytest.raises(UnitError):
        parse_bytes(bad)
