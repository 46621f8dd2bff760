"""Issue 12: typed knob values in the project's words: speed 1-1000x or max, B_out with units
in the registry's range, t in tokens, rates; one-line messages, never a Python one."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.units import GBPS
from prfaas_tui.knob_input import (
    KEYS,
    KnobInputError,
    Limits,
    parse_bandwidth_knob,
    parse_knob,
    parse_rate,
    parse_speed,
    parse_threshold,
)

LIM = Limits(t_max=131072.0, pool=8, lambda_max=3.0)


@pytest.mark.parametrize("text", ["max", "MAX", " max ", "inf"])
def test_max_speed_is_flat_out(text):
    assert parse_speed(text) == math.inf  # used to fail: "could not convert string to float: 'ma'"


@pytest.mark.parametrize("text,want", [("20", 20.0), ("20x", 20.0), ("1 x", 1.0), ("1000", 1000.0),
                                       ("2.5x", 2.5)])
def test_speeds_in_range(text, want):
    assert parse_speed(text) == want


@pytest.mark.parametrize("text", ["2000", "2000x", "0.5", "0", "-3", "fast", "", "nan", "1e9"])
def test_speeds_out_of_range_or_garbage(text):
    with pytest.raises(KnobInputError, match=r"^speed is 1x to 1000x, or max \(got "):
        parse_speed(text)


def test_bandwidth_with_units_and_a_sane_range():
    assert parse_bandwidth_knob("30") == 30 * GBPS
    assert parse_bandwidth_knob("1000 MB/s") == 1e9
    assert parse_bandwidth_knob("8 Gb/s") == 1e9
    with pytest.raises(KnobInputError, match=r"^B_out is 1 Mbps to 8 Pbps \(got 1000 Pbps\)$"):
        parse_bandwidth_knob("1e9")
    with pytest.raises(KnobInputError, match="got 0 Gbps"):
        parse_bandwidth_knob("0")
    with pytest.raises(KnobInputError, match=r"^B_out is 1 Mbps to 8 Pbps \(got 0.5 Mbps\)$"):
        parse_bandwidth_knob("0.5 Mbps")
    assert parse_bandwidth_knob("8 Pbps") == 1e15
    with pytest.raises(KnobInputError, match=r"like 100 Gbps or 1000 MB/s \(got 'lots'\)"):
        parse_bandwidth_knob("lots")


def test_t_takes_tokens_in_the_support_fractions_too():
    assert parse_threshold("19400", 131072) == 19400
    assert parse_threshold("32K", 131072) == 32768
    assert parse_threshold("2.5", 131072) == 2.5  # the CLI's and the presets' rule
    assert parse_threshold("19.3K", 131072) == pytest.approx(19763.2)
    with pytest.raises(KnobInputError, match=r"^t is 0 to 131,072 tokens"):
        parse_threshold("200K", 131072)
    with pytest.raises(KnobInputError, match="token count like"):
        parse_threshold("soon", 131072)


def test_rates_plain_and_as_a_share_of_lambda_max():
    assert parse_rate("2.5") == 2.5 and parse_rate("2.5 req/s") == 2.5
    assert parse_rate("90%", 3.0) == pytest.approx(2.7)
    assert parse_rate("0") == 0.0  # rate >= 0, as --rate (the work caps bound the top)
    for bad in ("-1", "abc", "nan", "90%"):
        with pytest.raises(KnobInputError, match="^rate "):
            parse_rate(bad)


def test_counts_and_the_dispatcher():
    assert parse_knob("n_p", "3", LIM) == {"n_p": 3}
    with pytest.raises(KnobInputError, match=r"^N_d is 1 to 8 \(got 0\)$"):
        parse_knob("n_d", "0", LIM)
    with pytest.raises(KnobInputError, match=r"^N_p is a whole number of instances \(got '2.5'\)$"):
        parse_knob("n_p", "2.5", LIM)
    with pytest.raises(KnobInputError, match="no knob"):
        parse_knob("colour", "red", LIM)


@given(st.sampled_from(sorted(KEYS)), st.text(max_size=20))
def test_any_text_is_a_value_or_one_line_in_our_words(key, text):
    try:
        out = parse_knob(key, text, LIM)
    except KnobInputError as exc:
        msg = str(exc)
        assert "\n" not in msg and "could not convert" not in msg and "invalid literal" not in msg
        assert msg.split()[0] in {"speed", "B_out", "t", "rate", "N_prfaas", "N_p", "N_d"}
    else:
        assert set(out) == {key}


@given(st.floats(1, 1000))
def test_every_speed_in_range_parses_to_itself(x):
    assert parse_speed(repr(x)) == x and parse_speed(f"{x!r}x") == x


@given(st.floats(1000, 1e300, exclude_min=True) | st.floats(0, 1, exclude_max=True))
def test_every_speed_out_of_range_is_refused(x):
    with pytest.raises(KnobInputError):
        parse_speed(repr(x))


@given(st.integers(0, 131072))
def test_whole_tokens_round_trip(n):
    assert parse_threshold(str(n), 131072) == n


@given(st.floats(0, 131071).filter(lambda x: x != math.floor(x)))
def test_fractional_tokens_are_taken_not_rounded(x):
    assert parse_threshold(repr(x), 131072) == x


@given(st.floats(0.001, 8_000_000))
def test_gbps_in_range_round_trip(g):
    assert parse_bandwidth_knob(f"{g!r} Gbps") == pytest.approx(g * GBPS)


def test_an_empty_paradigm_is_refused_not_the_first():
    from prfaas_tui.modelview import Refused
    from prfaas_tui.widgets.controls import KNOB_BY_KEY

    parse = KNOB_BY_KEY["paradigm"].parse
    assert parse(None, "homo") == {"paradigm": "homogeneous"}
    with pytest.raises(Refused, match="^paradigm must be one of"):
        parse(None, "  ")
