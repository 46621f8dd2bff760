"""Knob flags: one spelling and one meaning in every command, generated from KNOBS and checked
by Controls.validate."""

import json

import pytest

from emulator.scenario.knobs import KNOBS
from emulator.scenario.presets import load
from prfaas_tui.cli import main

TOY = load("toy")


def solve(capsys, *argv) -> dict:
    assert main(["solve", "--preset", "toy", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["operating_point"]


def test_np_alone_keeps_the_presets_nd(capsys):
    op = solve(capsys, "--np", "0")
    assert (op["n_p"], op["n_d"]) == (0, TOY.n_d)
    op = solve(capsys, "--nd", "1")
    assert (op["n_p"], op["n_d"]) == (TOY.n_p, 1)


def test_old_spelling_is_a_hidden_alias(capsys):
    assert solve(capsys, "--nprfaas", "5") == solve(capsys, "--n-prfaas", "5")
    assert solve(capsys, "--n-prfaas", "5")["n_prfaas"] == 5
    for cmd in ("solve", "run", "plan"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        out = capsys.readouterr().out
        assert "--n-prfaas" in out and "--nprfaas" not in out, cmd


def test_every_scenario_command_has_the_same_knob_flags(capsys):
    helps = {}
    for cmd in ("solve", "run"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        helps[cmd] = capsys.readouterr().out
    for name in ("t", "n_p", "n_d", "n_prfaas", "bandwidth"):
        assert all(KNOBS[name].flag in h for h in helps.values()), name
    assert "--rate" in helps["run"] and "--paradigm" in helps["run"]


@pytest.mark.parametrize("argv, line", [
    (["--np", "3", "--nd", "1"], "--np/--nd: n_p + n_d = 4 exceeds the local pool of 3"),
    (["--nd", "0"], "--np/--nd: n_d must be >= 1: every request needs decode (got 0)"),
    (["--n-prfaas", "-1"], "--n-prfaas: must be >= 0 (got -1)"),
    (["--bandwidth", "0"], "--bandwidth: must be >= 1 Mbps (got 0 Gbps)"),
    (["--t", "1M"], "--t: 1048576 tokens lies outside the length distribution's support"),
])
def test_solve_and_run_refuse_alike(capsys, argv, line):
    errors = []
    for cmd in ("solve", "run"):
        assert main([cmd, "--preset", "toy", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and line in err, err
        errors.append(err[err.index(line):])
    assert errors[0] == errors[1]
