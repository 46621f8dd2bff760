"""A preset that declares one [[site]], one [[region]] and one [[link]] is the single pair: the
pair's flags and keys (--paradigm, --trace, a top-level replay, a [homogeneous] baseline) run it
as the pair, with the pair's answers; a larger topology refuses them in one line saying why."""

from __future__ import annotations

import json
import tomllib

import pytest
import tomlkit

from emulator.scenario import presets
from emulator.scenario.presets import presets_dir
from emulator.scenario.reader import PresetError
from prfaas_tui.cli import main


def one_by_one(**site: object) -> dict:
    """paper-case-study written as a 1x1 topology (site hub, region east, link hub->east)."""
    pair = tomllib.loads((presets_dir() / "paper-case-study.toml").read_text())
    dep, prices = pair.pop("deployment"), pair.pop("prices")
    return {**pair, "name": "one",
            "site": [{"name": "hub", "profile": dep["prfaas_profile"], "gpus": dep["prfaas_gpus"],
                      "parallelism": dep["parallelism"],
                      "price": prices["prfaas_instance_hour"], **site}],
            "region": [{"name": "east", "profile": dep["local_profile"],
                        "gpus": dep["local_gpus"], "parallelism": dep["parallelism"],
                        "n_p": dep["n_p"], "n_d": dep["n_d"], "threshold": dep["threshold"],
                        "rdma_bandwidth": dep["rdma_bandwidth"],
                        "price": prices["local_instance_hour"]}],
            "link": [{"site": "hub", "region": "east", "bandwidth": dep["bandwidth"]}]}


def write(tmp_path, data: dict, name: str = "one.toml") -> str:
    path = tmp_path / name
    path.write_text(tomlkit.dumps(data))
    return str(path)


def run_json(capsys, *argv: str, duration: tuple[str, ...] = ("--duration", "300")) -> dict:
    assert main(["run", *argv, *duration, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def refused(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("paradigm", ["homogeneous", "naive-heterogeneous"])
def test_a_declared_1x1_runs_a_paradigm_as_the_pair(tmp_path, capsys, paradigm):
    one = write(tmp_path, one_by_one())
    got = run_json(capsys, "--preset", one, "--paradigm", paradigm)
    want = run_json(capsys, "--preset", "paper-case-study", "--paradigm", paradigm)
    assert got["paradigm"] == want["paradigm"] == paradigm
    assert got["accounting"] == want["accounting"] and got["accounting"]["completed"] > 0
    assert got["model"]["exact"]["lambda_max"] == want["model"]["exact"]["lambda_max"]
    assert got["offered_rate"] == want["offered_rate"]


def test_without_a_pair_flag_a_declared_1x1_stays_a_topology(tmp_path, capsys):
    out = run_json(capsys, "--preset", write(tmp_path, one_by_one()))
    assert list(out["regions"]) == ["east"] and list(out["links"]) == ["hub->east"]


def _trace(tmp_path) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"timestamp": 400 * i, "input_length": 2000 + 97 * i,
                                        "output_length": 64}) + "\n" for i in range(400)))
    return str(path)


def test_a_top_level_replay_on_a_declared_1x1_replays_as_the_pair(tmp_path, capsys):
    """The trace brings its own arrivals: by default its own rate and its whole span, as on the
    pair (the routing bound sets no rate for it)."""
    trace = _trace(tmp_path)
    data = one_by_one()
    data["workload"]["replay"] = trace
    sc = presets.load(write(tmp_path, data), topology=True)
    assert sc.declared_topology is None and sc.sim.replay == trace
    pair = tomllib.loads((presets_dir() / "paper-case-study.toml").read_text())
    pair["workload"]["replay"] = trace
    got = run_json(capsys, "--preset", str(tmp_path / "one.toml"), duration=())
    want = run_json(capsys, "--preset", write(tmp_path, pair, "pair.toml"), duration=())
    assert got["accounting"] == want["accounting"] and got["accounting"]["arrived"] == 400
    assert got["simulated_seconds"] == want["simulated_seconds"] == pytest.approx(160, rel=0.01)
    # --trace on the declared file (no replay key) is the same replay
    flag = run_json(capsys, "--preset", write(tmp_path, one_by_one(), "plain.toml"),
                    "--trace", trace, duration=())
    assert flag["accounting"] == want["accounting"]


@pytest.mark.parametrize("argv, words", [
    (["--paradigm", "homogeneous"], "--paradigm: a single-pair flag (a 1x1 topology runs as "
                                    "the pair); two-regions has 1 site, 2 regions, 2 links: "
                                    "each region routes by its site policy"),
    (["--trace", "t.jsonl"], "--trace: a single-pair flag (a 1x1 topology runs as the pair); "
                             "two-regions has 1 site, 2 regions, 2 links: each region "
                             "replays its own trace"),
])
def test_a_larger_topology_refuses_the_pair_flags_saying_why(capsys, argv, words):
    assert words in refused(capsys, "run", "--preset", "two-regions", *argv)


def test_a_larger_topology_refuses_the_pair_keys_naming_them(tmp_path):
    data = tomllib.loads((presets_dir() / "two-regions.toml").read_text())
    with pytest.raises(PresetError, match=r"workload.replay: a topology of 2 regions replays "
                                          "per region"):
        presets.from_dict({**data, "workload": {**data["workload"],
                                                "replay": _trace(tmp_path)}},
                          tmp_path / "t.toml", topology=True)
    with pytest.raises(PresetError, match="homogeneous: a baseline of the single pair"):
        presets.from_dict({**data, "homogeneous": {"gpus": 96, "profile": "h20"}},
                          tmp_path / "t.toml", topology=True)


def test_what_the_pair_cannot_carry_is_named(tmp_path, capsys):
    one = write(tmp_path, one_by_one(egress="50 Gbps"))
    line = refused(capsys, "run", "--preset", one, "--paradigm", "homogeneous")
    assert line.endswith("site[0].egress: the pair's link is its site's egress: drop egress or "
                         "lower the link's bandwidth (a 1x1 topology runs as the pair here)")
    assert "--paradigm:" in line


def test_plan_and_solve_take_the_pair_flags_on_a_declared_1x1(tmp_path, capsys, monkeypatch):
    import prfaas_tui.commands.plan as plan_cmd

    one = write(tmp_path, one_by_one())
    plans = []
    monkeypatch.setattr(plan_cmd, "run_plan", lambda plan, **k: plans.append(plan) or
                        {"ranked": []})
    monkeypatch.setattr(plan_cmd, "render", lambda *a, **k: None)
    assert main(["plan", "--preset", one, "--paradigm", "homogeneous", "--seeds", "1"]) == 0
    (plan,) = plans
    assert not plan.is_topology and [str(p) for p in plan.space.paradigms] == ["homogeneous"]
    assert main(["solve", "--preset", one, "--trace", _trace(tmp_path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert main(["solve", "--preset", "paper-case-study", "--trace", _trace(tmp_path),
                 "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    assert got["operating_point"] == want["operating_point"] and "trace" in json.dumps(got)


def test_a_1x1_run_as_the_pair_saves_as_its_own_file(tmp_path):
    """Saving it (the dashboard's save-as) writes the pair's knobs into the 1x1's own tables
    and loads back as the same pair."""
    from emulator.scenario.scenario import as_pair
    from emulator.scenario.writer import write_preset

    sc = as_pair(presets.load(write(tmp_path, one_by_one()), topology=True))
    moved = sc.with_knobs(t=30000.0, n_p=4, n_d=4, n_prfaas=5)
    back = write_preset(moved, tmp_path / "saved.toml")
    assert back.declared_topology is None and back.knobs == moved.knobs
    data = tomllib.loads((tmp_path / "saved.toml").read_text())
    assert "deployment" not in data and data["site"][0]["gpus"] == 5 * 8
    assert (data["region"][0]["n_p"], data["region"][0]["threshold"]) == (4, 30000)


def test_incidents_keep_their_targets_under_the_pairs_names(tmp_path, capsys):
    data = one_by_one()
    data["incidents"] = [{"kind": "link-brownout", "link": "hub->east", "factor": 0.1,
                          "at": "30 s", "duration": "2 min"}]
    pair = tomllib.loads((presets_dir() / "paper-case-study.toml").read_text())
    pair["incidents"] = [{**data["incidents"][0], "link": "prfaas->pd"}]
    got = run_json(capsys, "--preset", write(tmp_path, data), "--paradigm", "prfaas-pd")
    want = run_json(capsys, "--preset", write(tmp_path, pair, "pair.toml"))
    assert got["incidents"] == want["incidents"] and got["incidents"]
    assert got["accounting"] == want["accounting"]


def test_a_1x1_replay_the_pair_cannot_carry_is_refused_at_load(tmp_path):
    data = one_by_one(egress="200 Gbps")
    data["workload"]["replay"] = _trace(tmp_path)
    with pytest.raises(PresetError, match=r"site\[0\]\.egress: the pair's link is its site's "
                                          "egress"):
        presets.load(write(tmp_path, data), topology=True)
