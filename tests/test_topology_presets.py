"""Topology presets ([[site]], [[region]], [[link]]): what they read into, the single pair as
the 1x1 topology, and hostile files refused in one line naming the key and the table index."""

import re

import pytest

from emulator.scenario import presets
from emulator.scenario.presets import presets_dir
from emulator.scenario.reader import PresetError
from emulator.topology.spec import Link, Topology
from prfaas_tui.cli import main

TWO_PATH = presets_dir() / "toy-two-regions.toml"
TWO = TWO_PATH.read_text()


def _edit(old: str, new: str, text: str = TWO) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _load(tmp_path, text: str):
    path = tmp_path / "topo.toml"
    path.write_text(text)
    return presets.load(str(path), topology=True)


def test_two_regions_read_into_the_spec(tmp_path):
    topo = _load(tmp_path, TWO).topology
    assert [s.name for s in topo.sites] == ["hub"]
    assert topo.sites[0].instances == 2 and topo.sites[0].egress == 2e9
    east, west = topo.regions
    assert (east.name, east.pool, east.n_p, east.n_d, east.threshold, east.share) == \
        ("east", 3, 1, 2, 8192.0, 0.5)
    assert [k.name for k in topo.links] == ["hub->east", "hub->west"]
    assert topo.link("hub", "west").rtt == pytest.approx(0.030)
    assert all(k.long_share == 1.0 for k in topo.links)  # one link each: all long requests
    assert topo.routing == "threshold" and not topo.is_pair
    assert east.decode.per_instance_rate == pytest.approx(4.0)


def test_region_overrides_and_defaults(tmp_path):
    text = _edit('threshold = "8K"\nshare = 0.5\nprice = 1.0\n\n[[region]]\nname = "west"',
                 'threshold = "8K"\nshare = 0.5\nprice = 1.0\n[region.decode]\nbs_max = 20\n'
                 '[region.workload]\nlengths = { kind = "discrete", values = ["1K", "16K"], '
                 'probs = [0.5, 0.5] }\n\n[[region]]\nname = "west"')
    topo = _load(tmp_path, "routing = \"lp\"\n" + text).topology
    east, west = topo.regions
    assert east.decode.bs_max == 20 and east.decode.t_decode == west.decode.t_decode
    assert west.decode.bs_max == 10
    assert east.lengths.support == (1024.0, 16384.0) and west.lengths.support == (1024.0, 32768.0)
    assert topo.routing == "lp"


def test_equal_shares_when_none_given(tmp_path):
    text = TWO.replace("share = 0.5\n", "")
    assert [r.share for r in _load(tmp_path, text).topology.regions] == [0.5, 0.5]


def test_single_pair_preset_is_the_1x1_topology():
    sc = presets.load("toy")
    topo = sc.topology
    assert topo.is_pair and [k.name for k in topo.links] == ["prfaas->pd"]
    site, region, link = topo.sites[0], topo.regions[0], topo.links[0]
    assert (site.instances, region.pool, region.n_p, region.n_d) == (2, 3, 1, 2)
    assert (region.threshold, region.share, link.bandwidth, link.long_share) == (8192, 1.0, 1e9, 1.0)
    assert site.profile is sc.system.prfaas and region.lengths is sc.system.lengths
    # it follows the knobs: a copy at other knobs is a 1x1 topology at those knobs
    moved = sc.with_knobs(t=1024, n_prfaas=3).topology
    assert moved.regions[0].threshold == 1024 and moved.sites[0].instances == 3
    back = topo.pair_system("pd")
    assert (back.n_prfaas, back.local_pool, back.bandwidth) == (2, 3, 1e9)


def test_every_command_takes_a_topology_and_plan_names_a_missing_price(capsys, tmp_path):
    # run, drill and snapshot --format json run topologies (tests/test_topology_emulator.py);
    # snapshot draws the topology view and plan searches sites and links
    # (tests/test_topology_view.py, tests/test_topology_plan.py)
    out = tmp_path / "x.svg"
    assert main(["snapshot", "--preset", str(TWO_PATH), "--at", "10", "--out", str(out)]) == 0
    assert "<svg" in out.read_text()
    capsys.readouterr()
    unpriced = tmp_path / "unpriced.toml"
    unpriced.write_text(re.sub(r"(?m)^price = .*\n", "", TWO), encoding="utf-8")
    assert main(["plan", "--preset", str(unpriced)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "site[0].price" in err and "Traceback" not in err


def test_programmatic_problems_name_the_table_index(tmp_path):
    topo = _load(tmp_path, TWO).topology
    bad = Topology(topo.sites, topo.regions, (*topo.links, Link("hub", "nowhere", 1e9)))
    assert ("link[2].region", "no region named 'nowhere' (defined: east, west)") in bad.problems()


WEST_LINK = '[[link]]\nsite = "hub"\nregion = "west"\nbandwidth = "1000 MB/s"\nrtt = "30 ms"\n'
HOSTILE = [
    ("link names a region as its site (a cycle of names)",
     _edit('site = "hub"\nregion = "west"', 'site = "west"\nregion = "hub"'),
     "link[1].site", "is a region, not a site"),
    ("0 regions", re.sub(r"\[\[region\]\][^\[]*", "", TWO).replace(WEST_LINK, ""),
     "region", "at least one"),
    ("10,000 links", TWO + "\n" + "[[link]]\nsite = \"hub\"\nregion = \"east\"\n"
     "bandwidth = \"1 Gbps\"\n" * 10_000, "link", "more than 256"),
    ("NaN share", _edit("share = 0.5", "share = nan"), "region[0].share", "finite"),
    ("unknown site", _edit('site = "hub"\nregion = "west"', 'site = "hbu"\nregion = "west"'),
     "link[1].site", "no site named 'hbu'"),
    ("unknown region", _edit('region = "west"\nbandwidth', 'region = "wset"\nbandwidth'),
     "link[1].region", "no region named 'wset'"),
    ("duplicate region", _edit('name = "west"', 'name = "east"'),
     "region[1].name", "already the name of a region"),
    ("site and region share a name", _edit('name = "hub"', 'name = "east"'),
     "region[0].name", "already the name of a site"),
    ("duplicate link", TWO + "\n" + WEST_LINK, "link[2]", "a second link hub->west"),
    ("shares do not sum to 1", _edit("share = 0.5", "share = 0.6"), "region[1].share", "sum to 1.1"),
    ("some shares missing", _edit("share = 0.5\n", ""), "region", "give every region a share"),
    ("region without a link sends requests out", TWO.replace(WEST_LINK, ""),
     "region[1].threshold", "no [[link]] reaches region 'west'"),
    ("long_share not summing to 1", _edit('rtt = "10 ms"', 'rtt = "10 ms"\nlong_share = 0.5'),
     "link[0].long_share", "summing to 0.5"),
    ("name with an arrow", _edit('name = "west"', 'name = "w->st"'), "region[1].name", "not a name"),
    ("split over the pool", _edit("n_p = 1\nn_d = 2", "n_p = 2\nn_d = 2"), "region[0].n_p", "exceeds"),
    ("threshold outside the support", _edit('threshold = "8K"', 'threshold = "64K"'),
     "region[0].threshold", "support"),
    ("deployment and sites", TWO + '\n[deployment]\nn_p = 1\n', "deployment", "no [deployment]"),
    ("bad routing", 'routing = "fastest"\n' + TWO, "routing", "one of"),
    ("negative egress", _edit('egress = "2000 MB/s"', 'egress = "-1 Gbps"'), "site[0].egress", "> 0"),
    ("unknown link key", _edit('rtt = "10 ms"', 'rtt = "10 ms"\nbandwith = 1'),
     "link[0].bandwith", "unknown key"),
    ("bad profile", _edit('profile = "fast"\ninstances', 'profile = "h100"\ninstances'),
     "site[0].profile", "no profile named 'h100'"),
    ("fluctuation of 1", _edit('rtt = "10 ms"', 'rtt = "10 ms"\nfluctuation = 1.5'),
     "link[0].fluctuation", "between"),
]


@pytest.mark.parametrize("name,text,key,phrase", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_topology_names_key_and_index(tmp_path, capsys, name, text, key, phrase):
    path = tmp_path / "hostile.toml"
    path.write_text(text)
    with pytest.raises(PresetError) as err:
        presets.load(str(path), topology=True)
    msg = str(err.value)
    assert str(path) in msg and f": {key}" in msg and phrase in msg, msg
    assert "\n" not in msg
    assert main(["solve", "--preset", str(path)]) == 2
    out = capsys.readouterr().err
    assert out.count("\n") == 1 and key in out and "Traceback" not in out
