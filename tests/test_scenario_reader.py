"""The field-driven reader: a config dataclass's setting() fields are its TOML keys, with the
default written once (in the dataclass) and every bad value one line naming file and key."""

from dataclasses import dataclass, fields

import pytest

from emulator.scenario.cache import CacheConfig
from emulator.scenario.prefill import PrefillBackendConfig
from emulator.scenario.reader import (
    PresetError,
    Reader,
    default_of,
    non_negative,
    positive,
    read_fields,
    setting,
)
from emulator.scenario.scheduler import SchedulerConfig, parse_scheduler
from emulator.scenario.sim import SimConfig, StepProfile
from emulator.units import parse_duration


@dataclass(frozen=True)
class Demo:
    need: int = setting(parse=int, check=positive)
    every: float = setting(10.0, parse=parse_duration, check=positive)
    on: bool = setting(False, parse=bool, present=True)
    elsewhere: float = setting(1.0, section="other")
    derived: int = 0  # not a key


def read(data: dict, section: str | None = None) -> dict:
    r = Reader(data, "demo.toml", "demo")
    out = read_fields(Demo, r, section)
    r.finish()
    return out


def test_defaults_come_from_the_dataclass():
    assert read({"need": 3}) == {"need": 3, "every": 10.0, "on": True}
    assert read({"need": 3, "every": "2 min", "on": False}) == {"need": 3, "every": 120.0,
                                                               "on": False}
    assert read({}, "other") == {"elsewhere": 1.0}
    assert Demo(need=1).on is False  # `present` is the default only when the table exists


@pytest.mark.parametrize("data, line", [
    ({}, "demo.toml: demo.need: missing (required)"),
    ({"need": 0}, "demo.toml: demo.need: must be > 0 (got 0)"),
    ({"need": 1.5}, "demo.toml: demo.need: must be a whole number, got 1.5"),
    ({"need": 1, "every": "soon"}, "demo.toml: demo.every:"),
    ({"need": 1, "every": -1}, "demo.toml: demo.every: must be > 0 (got -1)"),
    ({"need": 1, "on": "yes"}, "demo.toml: demo.on: must be true or false, got 'yes'"),
    ({"need": 1, "evry": 2}, "demo.toml: demo.evry: unknown key (did you mean 'every'?)"),
    ({"need": 1, "derived": 2}, "demo.toml: demo.derived: unknown key"),
])
def test_bad_values_are_one_line_naming_file_and_key(data, line):
    with pytest.raises(PresetError) as err:
        read(data)
    assert str(err.value).startswith(line) and "\n" not in str(err.value)


def test_one_finiteness_rule():
    inf, nan = float("inf"), float("nan")
    assert positive(inf) == non_negative(inf) == "must be finite"
    assert positive(nan) == non_negative(nan) == "must be finite"
    assert positive(0) == "must be > 0" and non_negative(0) is None
    assert non_negative(-1e-9) == "must be >= 0" and positive(1e-9) is None


@pytest.mark.parametrize("cls", [SimConfig, StepProfile, SchedulerConfig, CacheConfig,
                                 PrefillBackendConfig])
def test_every_default_is_readable_by_its_own_parser(cls):
    """A default that its key's parser or check would refuse is a typo in the dataclass."""
    for f in fields(cls):
        meta = f.metadata
        if "parse" not in meta or f.default is None or f.default is meta.get("present"):
            continue
        default = f.default
        if not isinstance(default, bool | int | float | str):
            continue
        value = meta["parse"](default)
        assert value == default, f.name
        assert meta["check"] is None or meta["check"](value) is None, f.name


def test_scheduler_section_enables_unless_it_says_otherwise():
    assert parse_scheduler(None) == SchedulerConfig() and not SchedulerConfig().enabled
    assert parse_scheduler(Reader({}, "x.toml", "scheduler")).enabled
    assert not parse_scheduler(Reader({"enabled": False}, "x.toml", "scheduler")).enabled


def test_default_of_reads_the_dataclass():
    assert default_of(Demo, "every") == 10.0
    with pytest.raises(TypeError, match="has no default"):
        default_of(Demo, "need")
