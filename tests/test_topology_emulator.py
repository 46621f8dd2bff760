"""The topology emulator: every site, region and link on the one loop, per-region books, the
site policies, the site's shared egress, and `run --json` on a topology."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.scenario.presets import from_dict, load
from emulator.scenario.reader import read_toml
from emulator.sim.books.accounting import AccountingError
from emulator.sim.core.loop import VirtualTimeLoop
from emulator.sim.engine import Emulation
from emulator.sim.routing.site_policy import RoundRobin
from emulator.sim.stages.site import Egress, SiteLink
from prfaas_tui.cli import main as cli

TOY2 = Path(__file__).parent / "data" / "toy-two-regions.toml"
MB = 1e6


def toy2(**top) -> object:
    data = read_toml(TOY2)
    data.update(top)
    return from_dict(data, TOY2, topology=True)


def two_sites() -> dict:
    """The toy's two regions with a second site `edge` linked to west only, west sending 3/4
    of its long requests to the hub."""
    data = read_toml(TOY2)
    data["site"].append({"name": "edge", "profile": "fast", "instances": 1,
                         "egress": "1000 MB/s"})
    data["link"][1]["long_share"] = 0.75
    data["link"].append({"site": "edge", "region": "west", "bandwidth": "1000 MB/s",
                         "rtt": "5 ms", "long_share": 0.25})
    return data


@pytest.mark.parametrize("routing", ["threshold", "best-bandwidth"])
def test_every_region_balances_its_books(routing):
    with Emulation(toy2(), rate=2.5, duration=300, routing=routing) as emu:
        res = emu.run()
        regions = res.json["regions"]
    assert set(regions) == {"east", "west"}
    for r in regions.values():
        assert r["arrived"] == r["completed"] + r["in_flight"] + r["rejected"]
        assert r["lost"] == 0 and r["completed"] > 0
    assert sum(r["arrived"] for r in regions.values()) == res.accounting.arrived
    assert res.json["lost"] == 0


def test_a_region_that_loses_a_request_fails_the_run():
    with Emulation(toy2(), rate=2.0, duration=60) as emu:
        emu.run_until(30)
        emu.regions["west"].completed += 1  # a completion nobody made: the books break
        with pytest.raises(AccountingError, match="region west"):
            emu.run()


def test_shares_of_the_total_rate_and_determinism():
    runs = []
    for _ in range(2):
        with Emulation(toy2(), rate=2.0, duration=600, seed=7) as emu:
            out = emu.run().to_json()
            out.pop("timing")
            runs.append(json.dumps(out, sort_keys=True))
    assert runs[0] == runs[1]
    regions = json.loads(runs[0])["regions"]
    for r in regions.values():  # each region offers its half of 2.0 req/s
        assert r["target_rate"] == pytest.approx(1.0)
        assert r["offered_rate"] == pytest.approx(1.0, rel=0.12)


def test_threshold_routing_sends_long_requests_in_the_links_shares():
    sc = from_dict(two_sites(), TOY2, topology=True)
    with Emulation(sc, rate=1.0, duration=1200, routing="threshold") as emu:
        west = emu.regions["west"]
        seen: dict[str, int] = {}
        pick = west.policy.pick

        def counting(req):
            stage = pick(req)
            seen[stage.name] = seen.get(stage.name, 0) + 1
            return stage
        west.policy.pick = counting
        emu.run()
    longs = seen["hub"] + seen["edge"]
    assert longs > 100 and seen["pd-p"] > 100
    assert abs(seen["hub"] - 0.75 * longs) <= 1  # a round robin: exact within one pick
    assert emu.sites["edge"].stage.entered == seen["edge"]


def test_egress_is_processor_shared_by_the_busy_links():
    loop = VirtualTimeLoop()
    egress = Egress(1500 * MB)
    a = SiteLink(loop, "hub->a", 1000 * MB, egress)
    b = SiteLink(loop, "hub->b", 1000 * MB, egress)
    egress.links += [a, b]
    egress.rebalance()
    done = []
    a.open(4000 * MB, 0.0, lambda f: done.append(("a", loop.now)), lambda p: None, None)
    assert a.capacity == pytest.approx(1000 * MB)  # alone: its own bandwidth binds
    b.open(1500 * MB, 0.0, lambda f: done.append(("b", loop.now)), lambda p: None, None)
    assert a.capacity == b.capacity == pytest.approx(750 * MB)  # both busy: half each
    loop.run_until(100)
    # b: 1500 MB at 750 MB/s = 2 s; a: 1500 MB by then, the other 2500 MB at 1000 MB/s
    assert done == [("b", pytest.approx(2.0)), ("a", pytest.approx(4.5))]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.01, 10.0), min_size=1, max_size=5), st.integers(1, 400))
def test_round_robin_keeps_the_shares_within_one_pick(weights, n):
    rr = RoundRobin(list(range(len(weights))), weights)
    counts = [0] * len(weights)
    for _ in range(n):
        counts[rr.next()] += 1
    total = sum(weights)
    for c, w in zip(counts, weights, strict=True):
        assert abs(c - n * w / total) <= len(weights)


def test_best_bandwidth_keeps_up_where_the_threshold_rule_cannot():
    """3 req/s: the threshold rule sends every long request to the hub's 2 instances (1 req/s
    of 2 s prefills: 2 req/s of traffic at most); best-bandwidth keeps the overflow local."""
    served = {}
    for routing in ("threshold", "best-bandwidth"):
        with Emulation(toy2(), rate=3.0, duration=1200, routing=routing) as emu:
            late = emu.run().json["regions"]
        served[routing] = late
    for name in ("east", "west"):
        thr, bb = served["threshold"][name], served["best-bandwidth"][name]
        assert thr["second_half"]["in_flight_growth"] > 0.1  # its queue grows
        assert bb["second_half"]["served_rate"] == pytest.approx(
            bb["second_half"]["offered_rate"], rel=0.05)


def test_run_json_on_a_topology(capsys):
    assert cli(["run", "--preset", str(TOY2), "--duration", "120", "--rate", "2",
                "--routing", "best-bandwidth", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["routing"] == "best-bandwidth" and out["lost"] == 0
    r = out["regions"]["east"]
    for key in ("arrived", "completed", "in_flight", "rejected", "offered_rate",
                "served_rate"):
        assert key in r
    assert set(r["ttft"]) >= {"mean", "p90"}
    assert set(out["links"]) == {"hub->east", "hub->west"}
    assert set(out["links"]["hub->west"]) >= {"gbps", "utilization"}
    assert out["target_rate"] == pytest.approx(2.0)


@pytest.mark.parametrize("argv, says", [
    (["--np", "2"], "--np: a topology preset"),
    (["--routing", "best-cache"],
     "--routing: best-cache routes by what the prefix caches hold: the preset needs a [cache]"),
    (["--trace", "x.jsonl"], "--trace: a single-pair flag (a 1x1 topology runs as the pair)"),
])
def test_pair_flags_on_a_topology_are_one_line(capsys, argv, says):
    assert cli(["run", "--preset", str(TOY2), "--duration", "60", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1


def test_site_policies_need_a_topology(capsys):
    assert cli(["run", "--preset", "toy", "--routing", "best-bandwidth"]) == 2
    assert "single-pair preset routes by its threshold" in capsys.readouterr().err
    assert load("toy").declared_topology is None


def with_incidents(*incidents: dict):
    data = read_toml(TOY2)
    data["incidents"] = list(incidents)
    return from_dict(data, TOY2, topology=True)


def test_incidents_name_their_target():
    sc = with_incidents(
        {"kind": "link-brownout", "link": "hub->west", "factor": 0.1, "at": 100, "duration": 200},
        {"kind": "site-loss", "site": "hub", "count": 1, "at": 400, "duration": 100},
        {"kind": "surge", "region": "east", "factor": 1.5, "at": 600, "duration": 100})
    with Emulation(sc, rate=2.0, duration=800, routing="best-bandwidth") as emu:
        emu.run_until(150)
        west, east = emu.links["hub->west"], emu.links["hub->east"]
        assert west.capacity == pytest.approx(100 * MB)  # 10% of its 1000 MB/s
        assert east.capacity == pytest.approx(1000 * MB)  # its own bandwidth, not touched
        emu.run_until(350)
        assert west.capacity == pytest.approx(1000 * MB)
        emu.run_until(450)
        assert emu.sites["hub"].stage.n_accepting == 1
        emu.run_until(650)
        assert emu.regions["east"].workload.rate == pytest.approx(1.5)
        assert emu.regions["west"].workload.rate == pytest.approx(1.0)
        res = emu.run()
    assert emu.sites["hub"].stage.n_accepting == 2
    assert emu.regions["east"].workload.rate == pytest.approx(1.0)
    assert res.json["lost"] == 0


def test_diurnal_rate_follows_each_regions_local_day():
    sc = with_incidents({"kind": "diurnal-rate", "at": 0, "duration": 2400, "period": 2400,
                         "step": 100, "low": 0.2, "peak_hour": 12, "offsets": {"west": -12}})
    with Emulation(sc, rate=2.0, duration=1300) as emu:
        emu.run_until(1200)  # noon UTC: east (offset 0) peaks, west (midnight) at its trough
        assert emu.regions["east"].workload.rate == pytest.approx(1.0 * 1.8)
        assert emu.regions["west"].workload.rate == pytest.approx(1.0 * 0.2)
        assert emu.run().json["lost"] == 0


@pytest.mark.parametrize("incident, key, says", [
    ({"kind": "link-brownout", "link": "hub->north", "factor": 0.5}, "incidents[0].link",
     "no link named 'hub->north'"),
    ({"kind": "site-loss", "site": "edge"}, "incidents[0].site", "no site named 'edge'"),
    ({"kind": "surge", "region": "south", "factor": 2}, "incidents[0].region", "no region"),
    ({"kind": "instance-loss", "stage": "pd-d"}, "incidents[0].region",
     "pd-d instances are in every region: name one (east, west)"),
    ({"kind": "instance-loss", "stage": "pd-d", "site": "hub"}, "incidents[0].stage",
     "stage must be prfaas"),
])
def test_a_target_that_is_not_there_is_one_line(incident, key, says):
    from emulator.scenario.reader import PresetError
    with pytest.raises(PresetError, match=re.escape(key) + ": .*" + re.escape(says)):
        with_incidents({"at": 10, "duration": 20, **incident})


def test_pair_presets_keep_their_incidents_and_refuse_foreign_targets():
    from emulator.scenario.reader import PresetError
    data = read_toml(Path(__file__).parents[1] / "presets" / "toy.toml")
    data["incidents"] = [{"kind": "link-brownout", "link": "prfaas->pd", "factor": 0.5,
                          "at": 10, "duration": 20}]
    sc = from_dict(data, "toy.toml")
    with Emulation(sc, duration=40) as emu:
        emu.run_until(15)
        assert emu.link.capacity == pytest.approx(500 * MB)
        emu.run()
    data["incidents"][0]["link"] = "hub->west"
    with pytest.raises(PresetError, match="incidents\\[0\\].link: no link named 'hub->west'"):
        from_dict(data, "toy.toml")


def test_drill_compares_site_policies_per_region(capsys):
    """hub->west at 10% for 10 minutes: the threshold rule keeps sending west's long requests
    over it, best-bandwidth sends them where they finish first."""
    drill = str(Path(__file__).parent / "data" / "toy-link-brownout.toml")
    assert cli(["drill", drill, "--routing", "best-bandwidth", "--compare", "threshold",
                "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert set(runs) == {"best-bandwidth", "threshold"}
    west = {k: r["scorecard"]["regions"]["west"] for k, r in runs.items()}
    assert west["best-bandwidth"]["ttft_p90_during"] < 0.5 * west["threshold"]["ttft_p90_during"]
    for r in runs.values():
        assert r["scorecard"]["lost"] == 0
        assert all(x["lost"] == 0 for x in r["scorecard"]["regions"].values())


def test_compare_threshold_needs_a_topology_drill(capsys):
    assert cli(["drill", "link-brownout", "--compare", "threshold"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--compare threshold" in err and len(err.splitlines()) == 1


def test_snapshot_json_carries_the_run_objects_at_its_instant(tmp_path):
    out = tmp_path / "snap.json"
    assert cli(["snapshot", "--preset", str(TOY2), "--at", "300", "--format", "json",
                "--out", str(out)]) == 0
    snap = json.loads(out.read_text())
    assert snap["sim_time"] == 300 and snap["lost"] == 0
    assert set(snap["regions"]) == {"east", "west"} and set(snap["sites"]) == {"hub"}
    for r in snap["regions"].values():
        assert r["arrived"] == r["completed"] + r["in_flight"] + r["rejected"]
        assert set(r["ttft"]) >= {"mean", "p90"}
    assert set(snap["links"]["hub->west"]) >= {"gbps", "utilization"}
    # the same instant through the API: the same books
    with Emulation(toy2(), duration=600) as emu:
        emu.run_until(300)
        api = emu.snapshot().topology
    assert {n: r["arrived"] for n, r in api["regions"].items()} == \
        {n: r["arrived"] for n, r in snap["regions"].items()}


def test_snapshot_svg_of_a_topology_draws_the_topology_view(capsys, tmp_path):
    # the view itself: tests/test_topology_view.py
    out = tmp_path / "x.svg"
    assert cli(["snapshot", "--preset", str(TOY2), "--at", "10", "--out", str(out)]) == 0
    assert "<svg" in out.read_text() and "topology" in out.read_text()


def test_lp_serves_what_the_threshold_rule_cannot_on_the_toy_pair_of_regions():
    """Two toy regions on the toy's site, routing bound 4.8 req/s at N_p/N_d 2/1: at 0.9 x the
    bound the bound's routing serves both regions over a simulated hour; the threshold rule
    (every long request to the hub: 2 instances x 1/2 s... 2 req/s at most) falls behind."""
    from emulator.sim.runtime.topology import topology_bound
    sc = toy2()
    bound = topology_bound(sc)
    assert bound.lambda_max == pytest.approx(4.8)
    assert bound.splits == {"east": (2, 1), "west": (2, 1)}
    with Emulation(sc, load=0.9, duration=3600, routing="lp", bound=bound) as emu:
        lp = emu.run().json
        assert emu.regions["east"].local.count("pd-p") == 2  # run at the bound's split
    with Emulation(sc, load=0.9, duration=1200, routing="threshold", bound=bound) as emu:
        thr = emu.run().json
    for name in ("east", "west"):
        r = lp["regions"][name]
        assert r["target_rate"] == pytest.approx(0.45 * 4.8)
        assert r["served_rate"] == pytest.approx(r["offered_rate"], rel=0.01)
        assert abs(r["second_half"]["in_flight_growth"]) < 0.01
        t = thr["regions"][name]
        assert t["second_half"]["served_rate"] < 0.8 * t["second_half"]["offered_rate"]
        assert t["second_half"]["in_flight_growth"] > 0.3
    assert lp["lost"] == thr["lost"] == 0


def test_lp_routes_each_bin_in_the_bounds_shares():
    from emulator.sim.runtime.topology import topology_bound
    sc = toy2()
    bound = topology_bound(sc)
    (edges, weights) = bound.routing_for("west", ["hub"])
    with Emulation(sc, load=0.5, duration=1200, routing="lp", bound=bound) as emu:
        west = emu.regions["west"]
        seen: dict[tuple[bool, str], int] = {}
        pick = west.policy.pick

        def counting(req):
            stage = pick(req)
            key = (req.length > 8192, stage.name)
            seen[key] = seen.get(key, 0) + 1
            return stage
        west.policy.pick = counting
        emu.run()
    for i, is_long in enumerate((False, True)):  # bins (.., 1K], (8K, 32K]
        n = seen.get((is_long, "hub"), 0) + seen.get((is_long, "pd-p"), 0)
        assert n > 200
        assert abs(seen.get((is_long, "hub"), 0) - weights[i][1] * n) <= 1  # round robin
    assert sum(w[1] for w in weights) > 0  # the bound sends some of west's traffic out


def test_load_on_a_topology_is_relative_to_the_routing_bound(capsys):
    assert cli(["run", "--preset", str(TOY2), "--duration", "60", "--load", "0.5",
                "--routing", "lp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["target_rate"] == pytest.approx(0.5 * 4.8)


def test_region_link_brownout_best_bandwidth_beats_threshold_for_west():
    """The shipped drill's claim, in its scorecard: while hub->west runs at 15%, west's P90
    TTFT (of the requests that arrived during it) is lower under best-bandwidth than under the
    threshold rule, and nothing is lost either way."""
    from emulator.scenario.drills import load_drill
    from emulator.sim.runs.drills import run_drill
    drill = load_drill("region-link-brownout")
    assert drill.scenario.declared_topology.routing == "best-bandwidth"
    runs = {r: run_drill(drill, routing=r) for r in ("best-bandwidth", "threshold")}
    west = {r: out["scorecard"]["regions"]["west"] for r, out in runs.items()}
    assert west["best-bandwidth"]["ttft_p90_during"] < 0.5 * west["threshold"]["ttft_p90_during"]
    assert runs["best-bandwidth"]["scorecard"]["passed"]
    assert all(out["lost"] == 0 for out in runs.values())


def test_the_topology_drills_are_shipped():
    from emulator.scenario.drills import list_drills, load_drill
    names = {n for n, _ in list_drills()}
    assert names >= {"region-link-brownout", "site-loss", "follow-the-sun"}
    for name in ("region-link-brownout", "site-loss", "follow-the-sun"):
        d = load_drill(name)
        assert d.scenario.declared_topology is not None and d.timeline
        assert d.scoring.expect["lost"] == 0
        assert all(end is not None and end <= d.duration for _, end, _ in d.timeline)


@pytest.mark.parametrize("name", ["site-loss", "follow-the-sun"])
def test_shipped_topology_drills_load_and_balance(name):
    from dataclasses import replace

    from emulator.scenario.drills import load_drill
    from emulator.sim.runs.drills import drill_emulation
    from emulator.sim.runs.score import scorecard
    drill = load_drill(name)
    assert drill.scenario.declared_topology is not None
    sc = drill.scenario
    short = replace(drill, scenario=replace(sc, sim=replace(sc.sim, duration=900.0)))
    emu, rec = drill_emulation(short)
    with emu:
        res = emu.run()
        card = scorecard(emu, rec, drill.scoring)
    assert res.json["lost"] == 0 and card.lost == 0
    assert set(card.regions) == {"east", "west"}
    assert all(r["lost"] == 0 for r in card.regions.values())


@pytest.mark.parametrize("load_", [0.5, 0.7])
def test_per_region_ttft_against_the_latency_layer(load_):
    """two-regions under its own threshold policy at 0.5 and 0.7 x that policy's Lambda: each
    region's emulated TTFT against the latency layer's (emulator.topology.ttft), within the
    single pair's targets (mean 10%, P90 20%; benchmarks/bench_topology_emulator.py --accuracy has
    global, where a region with two links gets the layer's P90 upper bound)."""
    from emulator.topology.policy import evaluate_policy, preset_settings
    from emulator.topology.ttft import region_latency
    sc = load("two-regions", topology=True)
    topo = sc.declared_topology
    point = evaluate_policy(topo, preset_settings(topo))
    rate = load_ * point.lambda_max
    pred = region_latency(topo, point, rate, rdma_latency=sc.sim.rdma_latency)
    with Emulation(sc, rate=rate, duration=12000 / rate, routing="threshold", seed=1) as emu:
        out = emu.run().json
    for name, p in pred.items():
        got = out["regions"][name]["ttft"]
        assert got["mean"] == pytest.approx(p.mean, rel=0.10)
        assert got["p90"] == pytest.approx(p.p90, rel=0.20)


@pytest.mark.parametrize("routing", ["lp", "threshold"])
def test_short_timescale_re_solves_on_the_live_state(routing):
    """[scheduler] on a topology: when hub->west browns out the routing is re-solved on the
    link's capacity now (the bound's Lambda falls), and again when it recovers."""
    from emulator.scenario.presets import resolve
    from emulator.sim.runtime.topology import topology_bound
    data = read_toml(resolve("two-regions"))
    data["workload"]["load"] = 0.5
    data["scheduler"] = {"period": "10 s", "long_period": 0}  # the short timescale alone
    data["incidents"] = [{"kind": "link-brownout", "link": "hub->west", "factor": 0.15,
                          "at": 300, "duration": 300}]
    sc = from_dict(data, resolve("two-regions"), topology=True)
    with Emulation(sc, duration=900, routing=routing, bound=topology_bound(sc)) as emu:
        west_before = emu.regions["west"].policy
        emu.run_until(320)
        assert emu.regions["west"].policy is not west_before or routing == "threshold"
        out = emu.run().json
    log = out["scheduler"]["decisions"]
    assert [d["time"] for d in log] == [300.0, 600.0]  # the brownout's start and end
    assert "hub->west" in log[0]["reason"]
    assert out["lost"] == 0


def brownout_with_both_timescales():
    from emulator.scenario.presets import resolve
    data = read_toml(resolve("two-regions"))
    data["workload"]["load"] = 0.5
    data["scheduler"] = {"period": "10 s", "long_period": "60 s"}
    data["incidents"] = [{"kind": "link-brownout", "link": "hub->west", "factor": 0.15,
                          "at": 300, "duration": 300}]
    return from_dict(data, resolve("two-regions"), topology=True)


@pytest.mark.parametrize("routing", ["lp", "threshold"])
def test_long_timescale_converts_a_region_under_stress(routing):
    """[scheduler] on a topology, both timescales: with headroom no region converts; when the
    hub->west brownout puts the offered rate over `stress` x the live Lambda, west (the region
    the brownout starves) turns one decode instance into prefill, drains it, loses nothing,
    and the routing is re-solved at the new split; east keeps its split."""
    from emulator.sim.runtime.topology import topology_bound
    sc = brownout_with_both_timescales()
    with Emulation(sc, duration=900, routing=routing, bound=topology_bound(sc)) as emu:
        before = {n: (r.local.count("pd-p"), r.local.count("pd-d"))
                  for n, r in emu.regions.items()}
        out = emu.run().json
        after = {n: (r.local.count("pd-p"), r.local.count("pd-d"))
                 for n, r in emu.regions.items()}
        notes = list(emu.decisions)
    long = [d for d in out["scheduler"]["decisions"] if d["timescale"] == "long"]
    assert [d["time"] for d in long] == [300.0]  # the first long look in the brownout
    assert long[0]["change"] == "west: split N_p 3 -> 4, N_d 5 -> 4"
    assert before == {"east": (3, 5), "west": (3, 5)}
    assert after == {"east": (3, 5), "west": (4, 4)}
    assert out["scheduler"]["conversions"] == 1 and out["lost"] == 0
    i = next(k for k, d in enumerate(out["scheduler"]["decisions"]) if d["timescale"] == "long")
    assert out["scheduler"]["decisions"][i + 1]["reason"] == "new split"
    assert any("scheduler (long)" in n and "west: split" in n for n in notes)


def test_a_pinned_split_is_left_alone_on_a_topology():
    """The operator's pin holds on a topology as on the pair: the brownout that converts a
    west instance converts none, and the short timescale still re-solves the routing."""
    from emulator.sim.runtime.topology import topology_bound
    sc = brownout_with_both_timescales()
    with Emulation(sc, duration=700, bound=topology_bound(sc)) as emu:
        emu.pin("split")
        out = emu.run().json
        splits = {n: (r.local.count("pd-p"), r.local.count("pd-d"))
                  for n, r in emu.regions.items()}
    assert out["scheduler"]["conversions"] == 0
    assert splits == {"east": (3, 5), "west": (3, 5)}
    assert [d["timescale"] for d in out["scheduler"]["decisions"]] == ["short", "short"]


def test_a_region_switched_by_hand_keeps_its_routing_through_a_re_solve():
    """The short timescale hands the re-solved thresholds only to the regions that still run
    the threshold policy: west, switched to best-bandwidth by hand, keeps it."""
    from emulator.sim.routing.site_policy import BestBandwidthPolicy
    from emulator.sim.runtime.topology import topology_bound
    from emulator.sim.runtime.topology_live import set_region
    sc = brownout_with_both_timescales()
    with Emulation(sc, duration=400, routing="threshold", bound=topology_bound(sc)) as emu:
        set_region(emu, "west", routing="best-bandwidth")
        east_t = emu.regions["east"].policy.t
        out = emu.run().json
        assert isinstance(emu.regions["west"].policy, BestBandwidthPolicy)
        assert emu.regions["east"].policy.t != east_t
    first = next(d for d in out["scheduler"]["decisions"] if d["timescale"] == "short")
    assert first["time"] == 300.0 and first["change"].startswith("thresholds re-solved")
    assert out["lost"] == 0


def test_a_site_window_counts_compute_as_it_runs():
    """A site's utilization over any window stays within 100%, from the first second and through
    a site loss (work counted as a prefill starts read 200-400% in a run's first seconds), and
    the whole run's work done is the work started less what is still to run."""
    sc = with_incidents({"kind": "site-loss", "site": "hub", "count": 1, "at": 30,
                         "duration": 20})
    with Emulation(sc, rate=6.0, duration=90) as emu:  # the routing bound: 4.8 req/s
        stage = emu.sites["hub"].stage
        peak = 0.0
        for t in range(1, 90):
            emu.run_until(float(t))
            peak = max(peak, emu.snapshot().topology["sites"]["hub"]["utilization"])
        assert 0.9 < peak <= 1.0 + 1e-9  # overloaded: every instance computing
        left = sum(w.until - emu.now for w in stage.workers
                   if w.job is not None and w.until > emu.now)
        assert stage.work_done(emu.now) < stage.work_started - left + 1e-9
