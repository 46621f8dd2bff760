"""`plan --slo-tpot` on a topology: each region's decode (its own constants or cards) is checked
against the target before any work, and each region's emulated P90 TPOT is judged against it,
as the pair's one region's is."""

from __future__ import annotations

import tomllib

import tomlkit

from emulator.planner.goodput import SLO, tpot_unmeetable, why_not
from emulator.scenario import presets
from emulator.scenario.presets import presets_dir
from prfaas_tui.cli import main


def _slow_west(tmp_path) -> str:
    """two-regions with west decoding on its own, slower constants (40 ms a step)."""
    data = tomllib.loads((presets_dir() / "two-regions.toml").read_text())
    data["region"][1]["decode"] = {"t_decode": "40 ms"}
    path = tmp_path / "slow-west.toml"
    path.write_text(tomlkit.dumps(data))
    return str(path)


def _refused(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_target_under_the_first_regions_step_names_it(capsys):
    line = _refused(["plan", "--preset", "two-regions", "--slo-tpot", "20ms"], capsys)
    assert "--slo-tpot: 0.02 s is below the decode step of region east (t_decode = 0.025 s)" \
        in line


def test_each_region_is_checked_against_its_own_decode(tmp_path, capsys):
    path = _slow_west(tmp_path)
    sc = presets.load(path, topology=True)
    east, west = sc.declared_topology.regions
    assert (east.decode.t_decode, west.decode.t_decode) == (0.025, 0.04)
    assert tpot_unmeetable(sc, SLO(10.0, 0.045)) is None
    assert "region west (t_decode = 0.04 s)" in tpot_unmeetable(sc, SLO(10.0, 0.03))
    assert tpot_unmeetable(sc, SLO(10.0)) is None
    line = _refused(["plan", "--preset", path, "--slo-tpot", "30ms", "--out",
                     str(tmp_path / "plan.json")], capsys)
    assert "below the decode step of region west" in line
    assert not (tmp_path / "plan.json").exists()


def _probe(tpot_west: float | None) -> dict:
    region = {"offered": 1.0, "rejected": 0, "growth": 0.0, "ttft_p90": 1.0}
    return {"rate": 2.0, "regions": {"east": {**region, "tpot_p90": 0.026},
                                     "west": {**region, "tpot_p90": tpot_west}}}


def test_a_regions_p90_tpot_over_the_target_fails_the_probe():
    slo = SLO(5.0, 0.03)
    assert why_not(_probe(0.029), slo) is None
    assert why_not(_probe(0.031), slo) == "region west: P90 TPOT 31 ms over the 30 ms target"
    assert why_not(_probe(None), slo) == "region west: P90 TPOT none over the 30 ms target"
    assert why_not(_probe(0.031), SLO(5.0)) is None  # no TPOT target: TTFT alone


def test_a_topology_plan_reads_each_regions_tpot(tmp_path, capsys):
    """The emulated regions report their P90 TPOT (about the 25 ms step): a 30 ms target is met
    (a probe without it would fail every rate) and the summary keeps the target."""
    import json

    argv = ["plan", "--preset", "toy-two-regions", "--site", "hub=2", "--seeds", "1",
            "--steps", "2", "--duration", "60", "--workers", "1", "--json", "--slo-ttft", "60s"]
    assert main([*argv, "--slo-tpot", "30ms"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["slo"] == {"ttft_p90": 60.0, "tpot_p90": 0.03}
    for rec in (out["shipped"], *out["ranked"]):
        assert rec["goodput"] > 0 and "TPOT" not in (rec["fails_at"] or {}).get("why", "")
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["slo"] == {"ttft_p90": 60.0}
