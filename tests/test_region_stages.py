"""A topology's snapshot carries each region's stages as the pair's carries its own: PD-P and
PD-D measured over the window, the sites feeding it and the links into it, the hottest named.
The pair's snapshot has none (its JSON is unchanged)."""

from __future__ import annotations

import pytest

from emulator.scenario import presets
from emulator.scenario.drills import load_drill
from emulator.sim.engine import Emulation
from emulator.sim.runtime.topology import topology_bound


def _snap(sc, at: float):
    emu = Emulation(sc, seed=None, bound=topology_bound(sc))
    emu.run_until(at)
    return emu.snapshot()


@pytest.fixture(scope="module")
def two_regions():
    return _snap(presets.load("two-regions", topology=True), 600.0)


def test_each_region_has_its_chain_and_the_totals_are_their_sum(two_regions):
    snap = two_regions
    assert set(snap.regions) == {"east", "west"}
    east, west = snap.regions["east"], snap.regions["west"]
    # equal pools (3 + 5 each, none down): the total's utilization is the regions' mean
    for key, attr in (("pd-p", "pd_p"), ("pd-d", "pd_d")):
        a, b = getattr(east, attr), getattr(west, attr)
        assert snap.stages[key].utilization == pytest.approx((a.utilization + b.utilization) / 2)
        assert snap.stages[key].served_rate == pytest.approx(a.served_rate + b.served_rate)
        assert snap.stages[key].queue == a.queue + b.queue
        assert a.instances + b.instances == snap.stages[key].instances
    assert east.pd_p.utilization != west.pd_p.utilization  # each its own
    for name, r in snap.regions.items():
        (feed,) = r.feeds
        assert (feed.site, feed.link) == ("hub", f"hub->{name}")
        assert feed.stage.utilization == snap.topology["sites"]["hub"]["utilization"]
        # a healthy link carries at its knob: the objects' utilization is the same
        assert feed.link_snap.utilization == pytest.approx(
            snap.topology["links"][feed.link]["utilization"])
        util = {f"pd-p:{name}": r.pd_p.utilization, f"pd-d:{name}": r.pd_d.utilization,
                "site:hub": feed.stage.utilization, f"link:{feed.link}": feed.link_snap.utilization}
        assert r.hottest == max(util, key=util.__getitem__)


def test_a_region_fed_by_two_sites_lists_both():
    snap = _snap(presets.load("global", topology=True), 120.0)
    assert [f.site for f in snap.regions["eu-west"].feeds] == ["eu-hub", "us-hub"]
    assert snap.regions["us-east"].feeds[0].link == "us-hub->us-east"


def test_a_brownout_raises_its_links_utilization_against_what_it_can_carry():
    drill = load_drill("region-link-brownout")
    before = _snap(drill.scenario, 590.0).regions["west"].feeds[0].link_snap
    during = _snap(drill.scenario, 720.0).regions["west"].feeds[0].link_snap
    assert during.capacity == pytest.approx(before.capacity * 0.15)
    assert during.utilization > before.utilization + 0.2


def test_the_pair_has_no_regions_record():
    sc = presets.load("toy", topology=True)
    emu = Emulation(sc, seed=None)
    emu.run_until(30.0)
    assert emu.snapshot().regions is None
