"""Drills: every shipped one loads and runs clean, the brownout drill shows what the scheduler is
for (a principled reason, see test_sched_short), the scorecard's recovery reads right, and a
broken drill file is one line naming the file and the key."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from emulator.scenario.drills import Drill, list_drills, load_drill
from emulator.scenario.reader import PresetError
from emulator.sim.engine import Emulation
from emulator.sim.runs.drills import run_drill
from emulator.sim.runs.record import attach
from emulator.sim.runs.score import recovery_time, scorecard

REQUIRED = {"link-brownout", "link-outage", "prfaas-loss", "long-surge", "diurnal-link"}


def test_the_shipped_drills_are_listed_and_load():
    names = {n for n, _ in list_drills()}
    assert names >= REQUIRED
    for name in names:
        d = load_drill(name)
        if d.scenario.declared_topology is not None:  # site policies, not the scheduler:
            continue  # tests/test_topology_emulator.py checks the topology drills
        assert isinstance(d, Drill) and d.timeline and d.scenario.sim.scheduler.enabled
        assert 20 * 60 <= d.duration <= 40 * 60 and d.scoring.expect["lost"] == 0
        assert all(end is not None and end <= d.duration for _, end, _ in d.timeline)


@pytest.fixture(scope="module")
def brownout() -> dict[str, dict]:
    d = load_drill("link-brownout")
    return {"scheduler": run_drill(d, scheduler=True), "static": run_drill(d, scheduler=False)}


def test_brownout_scheduler_beats_the_static_threshold(brownout):
    sched, static = brownout["scheduler"]["scorecard"], brownout["static"]["scorecard"]
    assert sched["lost"] == static["lost"] == 0
    assert brownout["scheduler"]["accounting"]["arrived"] == brownout["static"]["accounting"][
        "arrived"]  # the same seeded workload
    assert sched["ttft_p90_during"] < 0.5 * static["ttft_p90_during"]
    assert sched["recovery_seconds"] < static["recovery_seconds"]
    assert sched["peak_queue"]["prfaas"] < static["peak_queue"]["prfaas"]
    assert sched["decisions"] and not static["decisions"]
    assert sched["passed"] and not static["passed"]


def test_every_drill_loses_nothing_and_meets_its_bars():
    for name, _ in list_drills():
        card = run_drill(load_drill(name))["scorecard"]
        assert card["lost"] == 0, name
        assert card["passed"], (name, {k: e for k, e in card["expectations"].items()
                                       if not e["ok"]})


def test_the_drill_api_the_ui_uses(toy):
    """The UI builds its own emulation from `drill.scenario`, attaches, runs, scores."""
    d = load_drill("link-outage")
    with Emulation(d.scenario, seed=5, duration=900) as emu:
        rec = attach(emu)
        emu.run_until(630)
        assert emu.snapshot().incidents == ("link outage",)
        emu.run()
        card = scorecard(emu, rec, d.scoring)
    assert card.lost == 0 and card.ttft_p90_during is not None and card.unfinished_during == 0
    assert set(card.to_dict()) >= {"lost", "slo_attainment", "peak_ttft_p90",
                                   "recovery_seconds", "decisions"}
    with Emulation(toy, seed=1, duration=60) as emu:  # no recorder: the run-wide figures only
        emu.run()
        bare = scorecard(emu)
    assert bare.lost == 0 and bare.recovery_seconds is None and bare.ttft_p90_during is None


def rows(served_minus_offered: list[float], rate: float = 10.0, step: float = 5.0):
    out, a, c = [(0.0, 0, 0, 0)], 0.0, 0.0
    for i, gap in enumerate(served_minus_offered, 1):
        a += rate * step
        c += rate * step + gap
        out.append((i * step, int(a), int(c), 0))
    return out


def test_recovery_is_when_forward_windows_balance():
    # incident ends at 50 s; a backlog drains until 100 s (completions above arrivals)
    r = rows([0] * 10 + [10] * 10 + [0] * 60)
    assert recovery_time(r, [50.0], window=60, tolerance=0.05) == pytest.approx(35.0)
    assert recovery_time(rows([0] * 80), [50.0], 60, 0.05) == 0.0  # nothing to drain
    assert recovery_time(rows([-5] * 80), [50.0], 60, 0.05) is None  # still falling behind
    assert recovery_time(r, [None], 60, 0.05) is None  # still going on
    assert recovery_time(r, [390.0], 60, 0.05) is None  # no full window after it


BROKEN = [
    ('preset = "toy"\n[deployment]\nbandwith = "1 Gbps"\n', "deployment.bandwith",
     "did you mean 'bandwidth'"),
    ('preset = "toy"\n[[incidents]]\nkind = "outage"\nat = 1\n', "incidents[0].duration",
     "missing"),
    ('preset = "toy"\n', "incidents", "at least one"),
    ('preset = "nope"\n[[incidents]]\nkind = "outage"\nat = 1\nduration = 1\n', "preset",
     "no preset"),
    ('preset = "toy"\nspeed = 3\n[[incidents]]\nkind = "outage"\nat = 1\nduration = 1\n',
     "speed", "unknown key"),
    ('preset = "toy"\n[expect]\nslo_attainment = 2\n[[incidents]]\nkind = "outage"\nat = 1\n'
     'duration = 1\n', "expect.slo_attainment", "between 0 and 1"),
    ('preset = "toy"\n[[incidents]\n', "", "malformed TOML"),
]


@pytest.mark.parametrize(("text", "key", "msg"), BROKEN)
def test_a_broken_drill_names_file_and_key(tmp_path: Path, text, key, msg):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PresetError) as err:
        load_drill(path)
    assert err.value.key == key and msg in str(err.value)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_a_drill_may_name_its_preset_by_path(tmp_path: Path):
    (tmp_path / "base.toml").write_text(Path(load_drill("link-outage").scenario.path)
                                        .read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "d.toml").write_text('preset = "base.toml"\n[[incidents]]\nkind = "outage"\n'
                                     'at = 1\nduration = 1\n', encoding="utf-8")
    d = load_drill(tmp_path / "d.toml")
    assert d.name == "d" and d.timeline == ((1, 2, "link outage"),)
    assert not math.isnan(d.duration)
