"""The planner searches a link's TCP connections beside its bandwidth: on a lossy path each
(line rate, connections) is a link option at its goodput, the model scores it there, more
connections win where the link binds, and the flag's bad values are one line."""

from __future__ import annotations

import hashlib
import json

import pytest

from emulator.paradigm import Paradigm
from emulator.planner.prune import prune, score_topology
from emulator.planner.space import Candidate, Space, TopologySpace
from emulator.scenario import presets
from emulator.topology.transport import Transport, goodput
from emulator.units import GBPS
from prfaas_tui.cli import main

TWO = (presets.presets_dir() / "two-regions.toml").read_text(encoding="utf-8")
WEST = 'bandwidth = "40 Gbps"\nrtt = "25 ms"'


def _lossy_pair(tmp_path) -> str:
    """The paper's case study over a 10 ms path at 1e-4 loss and 16 connections."""
    text = (presets.presets_dir() / "paper-case-study.toml").read_text(encoding="utf-8")
    text = text.replace('bandwidth = "100 Gbps"',
                        'bandwidth = "100 Gbps"\nloss = 1e-4\nconnections = 16', 1)
    path = tmp_path / "lossy.toml"
    path.write_text(text.replace("seed = 1", 'seed = 1\nlink_latency = "10 ms"', 1),
                    encoding="utf-8")
    return str(path)


def _lossy_two(tmp_path) -> str:
    path = tmp_path / "two.toml"
    path.write_text(TWO.replace(WEST, f"{WEST}\nloss = 1e-4\nconnections = 4", 1),
                    encoding="utf-8")
    return str(path)


def test_the_pairs_link_options_are_goodputs_of_line_rate_and_connections(tmp_path):
    sc = presets.load(_lossy_pair(tmp_path))
    space = Space.around(sc, connections=(4, 64), paradigms=(Paradigm.PRFAAS_PD,))
    got = {(c.bandwidth, c.connections) for c in space.candidates()}
    want = {(goodput(100 * GBPS, 0.01, Transport(loss=1e-4, connections=n)).bytes_per_s,
             (("prfaas->pd", n),)) for n in (4, 64)}
    assert got == want
    assert "connections=(4, 64)" in repr(space)
    # without connections the header and the keys are the ones results files always held
    plain = Space.around(sc, paradigms=(Paradigm.PRFAAS_PD,))
    assert "connections" not in repr(plain) and "wires" not in repr(plain)
    c = plain.candidates()[0]
    blob = json.dumps({"paradigm": c.paradigm, "n_prfaas": c.n_prfaas, "n_p": c.n_p,
                       "n_d": c.n_d, "t": c.t, "bandwidth": c.bandwidth}, sort_keys=True)
    assert c.key == hashlib.sha1(blob.encode()).hexdigest()[:16]


def test_a_pair_candidate_with_connections_reads_back_and_runs_its_pool(tmp_path):
    sc = presets.load(_lossy_pair(tmp_path))
    space = Space.around(sc, connections=(4, 64), paradigms=(Paradigm.PRFAAS_PD,))
    c = next(c for c in space.candidates() if c.connections == (("prfaas->pd", 64),))
    back = Candidate.of(c.to_dict())
    assert back == c and back.key == c.key
    assert c.key != Candidate.pair(c.paradigm, c.n_prfaas, c.n_p, c.n_d, c.t, c.bandwidth).key
    assert c.label().endswith("/64c")
    assert c.wired(sc).transport == Transport(loss=1e-4, connections=64)


def test_more_connections_win_where_the_lossy_link_binds(tmp_path):
    sc = presets.load(_lossy_pair(tmp_path))
    space = Space.around(sc, connections=(1, 16, 256), paradigms=(Paradigm.PRFAAS_PD,))
    scored = prune(sc.system, space.candidates())
    best = {}
    for s in scored:
        n = s.cand.connections[0][1]
        best[n] = max(best.get(n, 0.0), s.lambda_max)
    assert best[1] < best[16] < best[256]
    # a connection costs nothing: fewer of them are dominated at the same cost
    alive = {s.cand.connections[0][1] for s in scored if s.pruned is None}
    assert 256 in alive and 1 not in alive


def test_a_topology_searches_connections_per_link(tmp_path):
    sc = presets.load(_lossy_two(tmp_path), topology=True)
    topo = sc.declared_topology
    space = TopologySpace({}, {"hub->west": (20 * GBPS, 40 * GBPS)}, ("threshold",),
                          {"hub->west": (4, 64)})
    assert space.size(topo) == 4
    cands = space.candidates(topo)
    assert len(cands) == 4 and space.describe()["connections"] == {"hub->west": [4, 64]}
    for c in cands:
        line, n = dict(c.links)["hub->west"], dict(c.connections)["hub->west"]
        west = c.topology(topo).link("hub", "west")
        assert west.transport.n == n and west.line == line
        assert west.bandwidth == pytest.approx(
            goodput(line, 0.025, Transport(loss=1e-4, connections=n)).bytes_per_s)
        assert Candidate.of(c.to_dict()) == c and f"hub->west={n}c" in c.key
    # without connections a link's bandwidth search is as before (its line untouched)
    plain = TopologySpace({}, {"hub->west": (20 * GBPS,)}, ("threshold",))
    assert plain.candidates(topo)[0].connections == ()
    assert "connections" not in plain.describe()
    from emulator.planner.prices import Prices
    free = Prices({"hub": 0.0}, {"east": 0.0, "west": 0.0}, {"hub->east": 0.0, "hub->west": 0.0})
    lam = {dict(s.cand.connections)["hub->west"]: s.lambda_max
           for s in score_topology(topo, cands, free) if dict(s.cand.links)["hub->west"] == 40 * GBPS}
    assert lam[4] < lam[64]


@pytest.mark.parametrize("argv, words", [
    (["--connections", "0"], "--connections: must be >= 1"),
    (["--connections", "4,x"], "--connections: "),
    (["--connections", "prfaas->pd=4"], "--connections: a single pair has one link"),
    (["--connections", "4", "--connections", "8"], "--connections: a single pair has one link"),
])
def test_bad_pair_connections_are_one_line(tmp_path, capsys, argv, words):
    assert main(["plan", "--preset", _lossy_pair(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    (["--connections", "nowhere=4"], "--connections: no link named 'nowhere'"),
    (["--connections", "hub->west=0"], "--connections: hub->west: must be >= 1"),
    (["--connections", "4", "--connections", "8"], "--connections: one list for every link"),
    (["--connections", "hub->west=2.5"], "--connections: hub->west: "),
])
def test_bad_topology_connections_are_one_line(tmp_path, capsys, argv, words):
    assert main(["plan", "--preset", _lossy_two(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_lossy_link_costs_its_line_rate_whatever_its_connections(tmp_path, capsys):
    """A leased line is paid for at its line rate: more TCP connections raise the goodput a
    lossy link carries, not its price; so --connections 1,4 cost the same per hour (the shipped
    deployment too) while their goodputs differ."""
    import tomllib

    import tomlkit

    from emulator.planner.prices import Prices
    from emulator.planner.space import leased
    from emulator.scenario.presets import presets_dir

    data = tomllib.loads((presets_dir() / "toy-two-regions.toml").read_text())
    data["link"][1] |= {"loss": 1e-4, "connections": 1, "price_per_tb": 0.1}
    data["link"][0] |= {"price_per_tb": 0.1}
    path = tmp_path / "lossy.toml"
    path.write_text(tomlkit.dumps(data))
    topo = presets.load(path, topology=True).declared_topology
    west = topo.links[1]
    assert west.bandwidth < west.line / 100 and leased(west) == west.line == 1e9
    # 2 hub x 2 + 6 region instances x 1 + two 1000 MB/s leases (3.6 TB/h each) x 0.1 per TB
    assert Prices.of(topo).cost_per_hour(topo) == pytest.approx(10.72)
    assert main(["plan", "--preset", str(path), "--connections", "hub->west=1,4", "--seeds", "1",
                 "--steps", "2", "--duration", "60", "--workers", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    by = {r["candidate"]["connections"]["hub->west"]: r for r in out["ranked"]}
    assert sorted(by) == [1, 4]
    assert by[1]["cost_per_hour"] == by[4]["cost_per_hour"] == out["shipped"]["cost_per_hour"] \
        == pytest.approx(10.72)
    assert by[4]["bound"] > by[1]["bound"] and by[4]["goodput"] != by[1]["goodput"]
    # the shipped link is named as its candidates are: its line rate and connections
    assert "hub->west:8G/1c" in out["shipped"]["label"] and "hub->west:8G/1c" in by[1]["label"]
