"""Runs say what they did: arrivals are counted against the request cap as generated (any CV),
an offered rate far from its target is flagged, a run that serves too few of its arrivals
warns with the reason, an SLO nothing meets names no optimum, and `solve` solves the traffic a
preset replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.budget import BudgetError
from emulator.scenario import presets
from emulator.sim.engine import Emulation
from emulator.sim.runs.health import served_warnings
from prfaas_tui.cli import main

TOY = presets.presets_dir() / "toy.toml"


def preset(tmp_path: Path, old: str, new: str, name: str = "p.toml") -> Path:
    text = TOY.read_text()
    assert old in text
    p = tmp_path / name
    p.write_text(text.replace(old, new, 1))
    return p


def gamma(tmp_path: Path, cv: float) -> Path:
    return preset(tmp_path, 'arrival = "poisson"', f'arrival = "gamma"\ncv = {cv:g}')


@pytest.mark.parametrize("cv", [1e3, 1e4, 1e6])
def test_a_huge_cv_stops_at_the_request_cap(tmp_path, cv):
    with Emulation(presets.load(gamma(tmp_path, cv)), seed=1, duration=1800) as emu:
        emu.workload.limit = 2_000
        with pytest.raises(BudgetError, match=r"workload.arrival: gamma arrivals with cv = .* "
                                              r"reached the cap of 2,000 requests"):
            emu.run()
        assert emu.arrived == 2_000  # never one more than the cap


def test_the_cap_is_the_commands_own(tmp_path, capsys):
    assert main(["run", "--preset", str(gamma(tmp_path, 1e6)), "--max-requests", "3000",
                 "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reached the cap of 3,000 requests" in err[0]


def test_an_offered_rate_far_from_its_target_is_flagged(tmp_path):
    with Emulation(presets.load(gamma(tmp_path, 1e3)), seed=1, duration=60) as emu:
        emu.run()
        lines = served_warnings(emu)
    assert any(line.startswith("offered rate: gamma arrivals with cv = 1000") for line in lines)


def test_a_poisson_run_is_not_flagged(toy):
    with Emulation(toy, seed=1, duration=120) as emu:
        emu.run()
        assert served_warnings(emu) == []


def test_a_one_byte_kv_budget_says_nothing_was_served(tmp_path, capsys):
    p = preset(tmp_path, "l_out = 100", 'l_out = 100\nkv_budget = "1 B"')
    assert main(["run", "--preset", str(p), "--duration", "60s", "--json"]) == 0
    out = capsys.readouterr()
    (line,) = json.loads(out.out)["warnings"]
    assert line.startswith("nothing served: 0 of ") and "kv_budget" in line
    assert f"warning: {line}" in out.err


def test_an_output_past_the_horizon_says_nothing_was_served(tmp_path, capsys):
    p = preset(tmp_path, "l_out = 100", "l_out = 3000")
    assert main(["run", "--preset", str(p), "--duration", "60s", "--json"]) == 0
    (line,) = json.loads(capsys.readouterr().out)["warnings"]
    assert "the horizon: one request decodes for about 3000 x 25 ms = 75 s" in line


def test_an_unreachable_slo_names_no_optimum(capsys):
    assert main(["solve", "--preset", "toy", "--slo-ttft", "0.1s", "--objective", "slo",
                 "--json"]) == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert doc["slo"]["optimum"] is None and doc["slo"]["rate"] == 0
    assert doc["objective"] == "lambda" and "no SLO optimum" in doc["warnings"][0]
    assert "no SLO optimum" in out.err
    assert main(["solve", "--preset", "toy", "--slo-ttft", "0.1s"]) == 0
    assert "no threshold and split meets it" in " ".join(capsys.readouterr().out.split())


def test_an_empty_objective_is_refused(capsys):
    assert main(["solve", "--objective", ""]) == 2
    assert "--objective: must be one of lambda, slo (got '')" in capsys.readouterr().err


def test_solve_solves_the_replayed_trace(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:00:{s:02d},{n},10\n" for s, n in zip(range(0, 60, 2), [2000, 40000] * 15,
                                                              strict=True)))
    p = preset(tmp_path, 'arrival = "poisson"', 'arrival = "poisson"\nreplay = "t.csv"')
    assert main(["solve", "--preset", str(p), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["trace"]["requests"] == 30 and doc["trace"]["mean_input"] == 21000


@pytest.mark.parametrize("target", ["/dev/zero", "self.csv", "p.toml"])
def test_a_replay_of_dev_zero_or_the_preset_itself_is_one_line(tmp_path, capsys, target):
    p = preset(tmp_path, 'arrival = "poisson"', f'arrival = "poisson"\nreplay = "{target}"')
    if target == "self.csv":
        (tmp_path / "self.csv").symlink_to(p)  # still the preset, under a trace's name
    assert main(["solve", "--preset", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "workload.replay" in err[0], err


@pytest.mark.parametrize("mean", ["1 us", "1e-300 s"])
def test_on_off_phases_count_as_timer_events(tmp_path, capsys, mean):
    """A burst process switching phase every microsecond (or never advancing the clock) ran
    without end: its phase switches are timers, counted against the event cap before the run."""
    p = preset(tmp_path, 'arrival = "poisson"',
               f'arrival = "onoff"\non_mean = "{mean}"\noff_mean = "{mean}"')
    assert main(["run", "--preset", str(p), "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "on/off phase switches" in err[0] and "--max-events" in err[0]
