"""A drill on the user's own preset (`drill NAME --preset P`, `snapshot --preset P --drill NAME`,
the dashboard's `d`): the preset keeps its deployment, the drill brings its incidents, load,
run, SLO, scheduler and routing, and a preset that lacks what the drill targets is refused in
one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.scenario import presets
from emulator.scenario.drills import DrillMisfit, drill_on, drills_for, load_drill
from prfaas_tui.cli import main

PAIR_DRILLS = ["decode-loss", "diurnal-link", "link-brownout", "link-outage", "long-surge",
               "prfaas-loss"]
TOPOLOGY_DRILLS = ["follow-the-sun", "region-link-brownout", "site-loss"]
# a loss spike or route flap without a `link` strikes every link: it fits any preset
EVERY_LINK = ["loss-spike", "rtt-change"]


def _json(capsys, argv: list[str], rc: int = 0) -> dict:
    assert main(argv) == rc
    return json.loads(capsys.readouterr().out)


def _error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line
    return err.strip()


def _untimed(run: dict) -> dict:
    return {k: v for k, v in run.items() if k != "timing"}


@pytest.fixture(scope="module")
def mine(tmp_path_factory) -> Path:
    """A preset made by `prfaas-tui new`, as a user makes theirs."""
    out = tmp_path_factory.mktemp("mine") / "mine.toml"
    assert main(["new", "--model", "kimi-linear-48b-a3b", "--prefill-gpu", "h200", "--local-gpu",
                 "h20", "--prfaas-gpus", "32", "--local-gpus", "64", "--bandwidth", "100 Gbps",
                 "--out", str(out)]) == 0
    return out


def test_a_pair_drill_runs_on_a_preset_made_by_new(mine, capsys):
    capsys.readouterr()
    own = presets.load(mine)
    run = _json(capsys, ["drill", "link-brownout", "--preset", str(mine), "--json"])
    assert run["preset"] == own.name and run["drill"] == "link-brownout"
    # the user's deployment: their 100 Gbps, not the drill's 30 Gbps lease
    assert run["knobs"]["bandwidth_gbps"] == pytest.approx(100.0)
    assert run["incidents"] == [{"start": 600, "end": 1200, "label": "link brownout to 20%"}]
    assert run["simulated_seconds"] == pytest.approx(2400.0) and run["seed"] == 3
    assert "passed" in run["scorecard"]


def test_the_drill_brings_its_load_and_run_and_the_preset_keeps_its_deployment():
    base = presets.load("paper-case-study")
    drill = load_drill("link-brownout")
    assert drill.scenario.system.bandwidth == pytest.approx(30e9 / 8)  # its own base, overridden
    on = drill_on(drill, base)
    assert on.scenario.system.bandwidth == base.system.bandwidth  # [deployment]: the preset's
    assert (on.scenario.t, on.scenario.n_p, on.scenario.n_d) == (base.t, base.n_p, base.n_d)
    sim = on.scenario.sim
    assert sim.load == 0.6 and sim.rate is None and sim.duration == 2400.0 and sim.seed == 3
    assert sim.slo_ttft == 10.0 and sim.scheduler.enabled and sim.conversion_delay == 60.0
    assert sim.incidents == drill.scenario.sim.incidents
    assert on.scoring == drill.scoring


def test_the_drills_load_replaces_a_presets_rate(tmp_path):
    data = Path(presets.resolve("toy")).read_text(encoding="utf-8")
    p = tmp_path / "rated.toml"
    p.write_text(data.replace("load = 0.9", "rate = 0.5"), encoding="utf-8")
    assert presets.load(p).sim.rate == 0.5
    on = load_drill("prfaas-loss", p).scenario
    assert on.sim.rate is None and on.sim.load == 0.6


def test_a_knob_the_running_scenario_changed_is_kept():
    base = presets.load("paper-case-study").with_knobs(n_p=2, n_d=6, bandwidth=50e9 / 8)
    on = drill_on(load_drill("prfaas-loss"), base).scenario
    assert (on.n_p, on.n_d, on.system.bandwidth) == (2, 6, 50e9 / 8)


def test_a_drill_on_its_own_base_preset_is_the_drill(capsys):
    plain = _json(capsys, ["drill", "prfaas-loss", "--json"])
    named = _json(capsys, ["drill", "prfaas-loss", "--preset", "paper-case-study", "--json"])
    assert _untimed(named) == _untimed(plain)


def test_a_topology_drill_runs_on_a_topology_that_has_its_targets(capsys):
    run = _json(capsys, ["drill", "site-loss", "--preset", "two-regions", "--json"])
    assert run["preset"] == "two-regions" and run["routing"] == "best-bandwidth"
    assert run["incidents"][0]["label"] == "site hub loses 4 instances"


def test_a_topology_drill_on_another_topology_keeps_that_topology():
    toy = presets.load("toy-two-regions", topology=True)
    on = load_drill("region-link-brownout", "toy-two-regions").scenario
    assert on.name == "toy-two-regions"
    for part in ("sites", "regions", "links"):
        assert [(e.name, getattr(e, "instances", None), getattr(e, "bandwidth", None))
                for e in getattr(on.declared_topology, part)] == \
            [(e.name, getattr(e, "instances", None), getattr(e, "bandwidth", None))
             for e in getattr(toy.declared_topology, part)]
    assert on.declared_topology.routing == "best-bandwidth"  # the drill's site policy


def test_a_drill_that_needs_a_link_the_preset_lacks_is_one_line_and_exit_2(capsys):
    assert _error(capsys, ["drill", "region-link-brownout", "--preset", "paper-case-study"]) == (
        "prfaas-tui: drill region-link-brownout --preset paper-case-study: the drill targets "
        "link hub->west, which paper-case-study does not have")


@pytest.mark.parametrize("drill, preset, says", [
    ("site-loss", "global", "the drill targets site hub, which global does not have"),
    ("follow-the-sun", "toy", "the drill targets region east, which toy does not have"),
    ("link-brownout", "two-regions", "targets a single pair's link, and two-regions has 2 "
                                     "(hub->east, hub->west)"),
    ("prfaas-loss", "two-regions", "a single pair's prfaas stage, which two-regions"),
    ("long-surge", "two-regions", "re-weights a single pair's length mix"),
    ("site-loss", "toy-two-regions", "the drill's site 'hub' loses 4 instances but has 2 in "
                                     "toy-two-regions"),
])
def test_what_the_preset_lacks_is_named(drill, preset, says, capsys):
    err = _error(capsys, ["drill", drill, "--preset", preset])
    assert err.startswith(f"prfaas-tui: drill {drill} --preset {preset}: ") and says in err


def test_an_instance_loss_larger_than_the_preset_is_refused(tmp_path):
    data = Path(presets.resolve("toy")).read_text(encoding="utf-8")
    p = tmp_path / "one.toml"
    p.write_text(data.replace("n_prfaas = 2", "n_prfaas = 1"), encoding="utf-8")
    with pytest.raises(DrillMisfit, match=r"the drill loses 2 prfaas instances but \S*one.toml has 1 PrfaaS"):
        load_drill("prfaas-loss", p)
    assert load_drill("prfaas-loss", "toy").scenario.system.n_prfaas == 2


def test_snapshot_never_swaps_the_preset_the_user_named(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert _error(capsys, ["snapshot", "--preset", "global", "--drill", "region-link-brownout",
                           "--at", "60", "--format", "json", "--out", str(out)]) == (
        "prfaas-tui: drill region-link-brownout --preset global: the drill targets link "
        "hub->west, which global does not have")
    assert main(["snapshot", "--preset", "toy-two-regions", "--drill", "region-link-brownout",
                 "--at", "700", "--format", "json", "--out", str(out)]) == 0
    snap = json.loads(out.read_text(encoding="utf-8"))
    assert snap["preset"] == "toy-two-regions" and snap["incidents"] == ["hub->west brownout to 15%"]
    assert main(["snapshot", "--drill", "region-link-brownout", "--at", "60", "--format", "json",
                 "--out", str(out)]) == 0  # no --preset: the drill's own base
    assert json.loads(out.read_text(encoding="utf-8"))["preset"] == "two-regions"


@pytest.mark.parametrize("preset, fits", [
    ("toy", sorted(PAIR_DRILLS + EVERY_LINK)),
    ("paper-case-study", sorted(PAIR_DRILLS + EVERY_LINK)),
    ("two-regions", sorted(TOPOLOGY_DRILLS + EVERY_LINK + ["region-rtt-change"])),
    ("toy-two-regions", sorted(["follow-the-sun", "region-link-brownout", "region-rtt-change"]
                               + EVERY_LINK)),
    ("global", EVERY_LINK),
])
def test_the_drills_that_fit_a_scenario(preset, fits):
    assert [n for n, _ in drills_for(presets.load(preset, topology=True))] == fits


def test_the_listing_with_a_preset_names_the_drills_that_fit_it(capsys):
    assert main(["drill", "--preset", "two-regions"]) == 0
    assert [ln.split()[0] for ln in capsys.readouterr().out.splitlines()] == sorted(
        TOPOLOGY_DRILLS + EVERY_LINK + ["region-rtt-change"])
    assert main(["drill", "--preset", "no-such-preset"]) == 2
