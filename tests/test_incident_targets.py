"""Incidents addressed by element: one class per kind of fault, its target a link, site or
region by name (the pair's are "prfaas->pd", "prfaas", "pd", each the default there), the old
kind names still read, and every fault found through the one lookup on the pair and a topology."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulator.scenario.incidents import KINDS, Brownout, InstanceLoss, by_hand, parse_incidents
from emulator.scenario.presets import from_dict
from emulator.scenario.reader import PresetError, Reader, read_toml
from emulator.sim.engine import Emulation
from emulator.sim.runtime.topology import TopologyError

ROOT = Path(__file__).parents[1]
TOY2 = ROOT / "tests" / "data" / "toy-two-regions.toml"
MB = 1e6


def parsed(**table) -> object:
    (inc,) = parse_incidents([Reader({"at": 10, "duration": 20, **table}, "incidents[0]")],
                             ROOT)
    return inc


def test_the_old_kind_names_are_spellings_of_one_class():
    assert KINDS["link-brownout"] is KINDS["brownout"] is Brownout
    assert KINDS["site-loss"] is KINDS["instance-loss"] is InstanceLoss
    named = parsed(kind="link-brownout", link="hub->west", factor=0.15)
    assert named == parsed(kind="brownout", link="hub->west", factor=0.15)
    assert named.label == "hub->west brownout to 15%"
    assert parsed(kind="brownout", factor=0.2).label == "link brownout to 20%"


def test_a_site_loss_is_an_instance_loss_at_a_site_all_by_default():
    loss = parsed(kind="site-loss", site="hub")
    assert loss == InstanceLoss(at=10, duration=20, stage="prfaas", count=None, site="hub")
    assert loss.label == "site hub loses all instances"
    assert parsed(kind="site-loss", site="hub", count=4).label == "site hub loses 4 instances"
    # the instance-loss spelling keeps its own default: one instance
    assert parsed(kind="instance-loss", site="hub").count == 1
    assert parsed(kind="instance-loss", stage="pd-d", count=2).label == "2 pd-d instances lost"
    assert parsed(kind="instance-loss", stage="pd-d", region="west").label == \
        "1 pd-d instance lost in west"


@pytest.mark.parametrize(("table", "says"), [
    ({"kind": "link-brownout", "factor": 0.5}, "link: missing (required)"),
    ({"kind": "site-loss"}, "site: missing (required)"),
    ({"kind": "instance-loss", "stage": "pd-p", "site": "hub"},
     "stage: a site's instances prefill for PrfaaS"),
    ({"kind": "instance-loss", "region": "east"},
     "region: a region holds pd-p and pd-d instances"),
])
def test_a_target_that_does_not_fit_the_kind_is_one_line(table, says):
    with pytest.raises(PresetError, match=r"^incidents\[0\]: " + re.escape(says)):
        parsed(**table)


def test_by_hand_reads_the_old_spelling_with_its_defaults():
    inc = by_hand("site-loss", {"site": "prfaas", "duration": 30}, n_prfaas=2, pool=3,
                  lengths=None)
    assert inc.count is None and inc.where == "prfaas"


def test_the_pair_names_its_link_site_and_region(toy):
    with Emulation(toy, seed=1, duration=200) as emu:
        bw = emu.bandwidth
        emu.inject(Brownout(factor=0.5, link="prfaas->pd", duration=150))
        assert emu.link.capacity == pytest.approx(0.5 * bw)
        emu.inject(InstanceLoss(site="prfaas", count=None, duration=20))
        assert emu.live_instances("prfaas") == [] == emu.live_instances("prfaas", "prfaas")
        emu.inject(InstanceLoss(stage="pd-d", region="pd", duration=20))
        assert len(emu.live_instances("pd-d", "pd")) == toy.n_d - 1
        emu.set_rate_multiplier("surge", 2.0, "pd")
        assert emu.workload.rate == pytest.approx(2 * emu.workload.base_rate)
        emu.set_rate_multiplier("surge", None, "pd")
        for call in (lambda: emu.set_link_factor("x", 0.5, "hub->west"),
                     lambda: emu.fail_instance("prfaas", 0, "hub"),
                     lambda: emu.set_rate_multiplier("x", 2.0, "east")):
            with pytest.raises(TopologyError, match="no (link|site|region) '"):
                call()
        emu.run_until(100)
        assert emu.link.capacity == pytest.approx(0.5 * bw)
        emu.change(bandwidth=2 * bw)  # the brownout's share holds across a bandwidth change
        assert emu.link.capacity == pytest.approx(bw)
        emu.run_until(200)
        assert emu.link.capacity == pytest.approx(2 * bw)
        assert emu.live_instances("prfaas") == list(range(toy.system.n_prfaas))
        assert emu.run().accounting.lost == 0


def test_a_topology_loses_a_regions_decode_instance_by_name():
    data = read_toml(TOY2)
    data["incidents"] = [{"kind": "instance-loss", "stage": "pd-d", "region": "west",
                          "at": 10, "duration": 100}]
    sc = from_dict(data, TOY2, topology=True)
    with Emulation(sc, rate=2.0, duration=200) as emu:
        emu.run_until(50)
        assert emu.live_instances("pd-d", "west") == [1]  # the highest-numbered one died
        assert emu.live_instances("pd-d", "east") == [1, 2]
        assert emu.live_instances("prfaas") == [0, 1]  # one site: it needs no name
        with pytest.raises(TopologyError, match="name the region"):
            emu.live_instances("pd-d")
        assert emu.run().json["lost"] == 0
        assert emu.live_instances("pd-d", "west") == [1, 2]


def test_a_plain_surge_ends_cleanly_on_a_replayed_trace(tmp_path, capsys):
    """A surge that scaled only the rate leaves the length mix alone when it ends: a replayed
    trace has no mix to reset (the run used to fail at the surge's end)."""
    import json

    from prfaas_tui.cli import main

    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": 500 * i, "input_length": 1000 + 97 * i,
                                         "output_length": 50, "hash_ids": [i]}) + "\n"
                             for i in range(80)), encoding="utf-8")
    text = (ROOT / "presets" / "toy.toml").read_text(encoding="utf-8")
    text = text.replace("[workload]", f'[workload]\nreplay = "{trace}"', 1)
    text += '\n[[incidents]]\nkind = "surge"\nat = "5 s"\nduration = "10 s"\nfactor = 2\n'
    preset = tmp_path / "surge.toml"
    preset.write_text(text, encoding="utf-8")
    assert main(["run", "--preset", str(preset), "--duration", "60", "--json"]) in (0, None)
    books = json.loads(capsys.readouterr().out)["accounting"]
    assert books["arrived"] > 0
    assert books["arrived"] == books["completed"] + books["in_flight"] + books["rejected"]
