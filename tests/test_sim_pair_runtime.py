"""The single pair is built by the one runtime as the 1x1 topology: the engine's pair attributes
are views onto its elements, its differences are data (streams, names, the sole link as the
site's egress), and a topology site with no egress cap and one link gets the same plain link."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emulator.scenario.presets import from_dict, load
from emulator.scenario.reader import read_toml
from emulator.sim.arrivals.workload import SyntheticSource
from emulator.sim.engine import Emulation
from emulator.sim.runtime.topology_live import set_link
from emulator.sim.stages.link import Link
from emulator.sim.stages.site import LinkEgress, SiteLink
from emulator.topology.spec import PAIR_LINK, PAIR_REGION, PAIR_SITE

TOY2 = Path(__file__).parent / "data" / "toy-two-regions.toml"
MB = 1e6


def test_the_pairs_attributes_are_the_runtimes_elements():
    with Emulation(load("toy"), duration=30) as emu:
        rt = emu.runtime
        site = rt.sites[PAIR_SITE]
        assert emu.topology is None  # no declared topology: the pair's screens and books
        assert emu.prfaas is site.stage and emu.remote is site.pool
        assert emu.link is rt.links[PAIR_LINK] and type(emu.link) is Link
        assert isinstance(site.egress, LinkEgress) and site.egress.links == [emu.link]
        assert type(emu.prfaas) is type(emu.pdp)  # one stage type on the hot path
        assert emu.region is rt.regions[PAIR_REGION] and emu.router is emu.region.policy
        assert (emu.link.name, emu.local.name, emu.rdma.name) == ("link", "local", "rdma")
        emu.change(bandwidth=emu.bandwidth / 2)  # the pair's knob moves the site's egress too
        assert site.egress.capacity == emu.link.capacity == emu.bandwidth


def test_the_pair_draws_its_arrivals_from_the_seed_itself():
    scenario = load("toy")
    with Emulation(scenario, seed=7, duration=30) as emu:
        got = [emu.workload.source.gaps.next() for _ in range(50)]
    sim = scenario.sim
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(7).spawn(4)]
    want = SyntheticSource(streams[:3], sim.arrival, sim.cv, scenario.system.lengths,
                           scenario.system.decode.l_out, sim.output_lengths)
    want.gaps.next()  # the first gap: the workload's start drew it
    assert got == [want.gaps.next() for _ in range(50)]


def edge_site(egress: str | None) -> object:
    """The toy's two regions with a second site `edge` linked to west only."""
    data = read_toml(TOY2)
    edge = {"name": "edge", "profile": "fast", "instances": 1}
    if egress is not None:
        edge["egress"] = egress
    data["site"].append(edge)
    data["link"][1]["long_share"] = 0.75
    data["link"].append({"site": "edge", "region": "west", "bandwidth": "1000 MB/s",
                         "rtt": "5 ms", "long_share": 0.25})
    return from_dict(data, TOY2, topology=True)


def test_a_site_with_no_egress_cap_and_one_link_has_that_link_as_its_egress():
    with Emulation(edge_site(None), rate=2.0, duration=60) as emu:
        rt = emu.topology
        link = rt.links["edge->west"]
        assert type(link) is Link and isinstance(rt.sites["edge"].egress, LinkEgress)
        assert isinstance(rt.links["hub->west"], SiteLink)  # the hub's egress is shared
        emu.run_until(20)
        set_link(emu, "edge->west", 1500 * MB)  # nothing else caps it: it carries all of it
        assert link.capacity == rt.sites["edge"].egress.capacity == 1500 * MB
        emu.run_until(40)
    with Emulation(edge_site("800 MB/s"), rate=2.0, duration=60) as emu:
        link = emu.topology.links["edge->west"]
        assert isinstance(link, SiteLink) and link.capacity == 800 * MB  # its cap binds


@pytest.mark.slow
@pytest.mark.torch
def test_the_torch_backend_runs_on_a_topologys_sites():
    pytest.importorskip("torch")
    data = read_toml(TOY2)
    data["prefill"] = {"backend": "torch", "model": "hybrid-tiny", "device": "cpu",
                       "length_scale": 0.01, "stages": ["prfaas"]}
    data["emulator"]["duration"] = "20 s"
    with Emulation(from_dict(data, TOY2, topology=True), rate=1.0) as emu:
        hub = emu.topology.sites["hub"].stage
        assert hub.on_start is not None  # "prfaas" names every site's stage
        assert all(r.pdp.on_start is None for r in emu.regions.values())  # not listed
        result = emu.run()
    out = result.to_json()
    assert result.accounting.lost == 0
    assert out["prefill_backend"]["prefills"] == emu.torch.prefills == hub.started > 0
