"""`--help` explains itself: every subcommand has a description line, every flag that takes a
value names it with a real metavar (never argparse's upper-cased dest), says its default, and a
flag with a fixed set of values lists them."""

from __future__ import annotations

import argparse

import pytest

from prfaas_tui.cli import COMMANDS, _parser


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = _parser([])
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


SUBS = _subparsers()


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    """argparse wraps at the terminal's width, and at hyphens: read the help unwrapped."""
    monkeypatch.setenv("COLUMNS", "2000")


def test_the_dashboard_flags_have_metavars_too():
    auto = [a.option_strings[0] for a in _valued(_parser([])) if a.metavar is None]
    assert auto == []


def test_every_command_is_built():
    assert set(COMMANDS) <= set(SUBS)


@pytest.mark.parametrize("name", sorted(SUBS))
def test_a_description_line(name: str):
    assert SUBS[name].description, f"prfaas-tui {name} --help has no description"
    assert SUBS[name].format_help().splitlines()[0].startswith(f"usage: prfaas-tui {name}")


def _valued(p: argparse.ArgumentParser):
    for a in p._actions:
        if a.option_strings and a.nargs != 0 and a.help != argparse.SUPPRESS:
            yield a


@pytest.mark.parametrize("name", sorted(SUBS))
def test_real_metavars(name: str):
    auto = [a.option_strings[0] for a in _valued(SUBS[name])
            if a.metavar is None and a.choices is None]
    assert auto == [], f"prfaas-tui {name}: argparse's default metavar for {auto}"


@pytest.mark.parametrize("name", sorted(SUBS))
def test_defaults_are_shown(name: str):
    p = SUBS[name]
    text = " ".join(p.format_help().split())
    for a in _valued(p):
        if a.default not in (None, False, ""):
            assert f"default: {a.default}" in text or "default" in (a.help or ""), (
                f"prfaas-tui {name} {a.option_strings[0]}: default {a.default!r} not shown")


@pytest.mark.parametrize("name", sorted(SUBS))
def test_choices_are_listed(name: str):
    p = SUBS[name]
    text = " ".join(p.format_help().split())
    for a in _valued(p):
        for c in a.choices or ():
            assert str(c) in text, f"prfaas-tui {name} {a.option_strings[0]}: {c} not listed"


def test_plan_help_names_its_values():
    text = " ".join(SUBS["plan"].format_help().split())
    for bad in ("N_PRFAAS", "SLO_TTFT", "TOP", "PARADIGM"):
        assert bad not in text
    for paradigm in ("prfaas-pd", "homogeneous", "naive-heterogeneous"):
        assert paradigm in text
    assert "(default: 5 s)" in text and "(default: 10)" in text
