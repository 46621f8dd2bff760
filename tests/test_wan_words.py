"""The WAN in words: the scheduler's topology decisions give link capacities in Gbps, and a
loss set on a link that has no `connections` says it is one TCP connection."""

from __future__ import annotations

from pathlib import Path

from emulator.scenario import presets
from emulator.scenario.incidents import RttChange
from emulator.scenario.scheduler import SchedulerConfig
from emulator.sim.control.scheduler import Scheduler, _moved
from emulator.sim.engine import Emulation
from emulator.units import GBPS

TWO = (presets.presets_dir() / "two-regions.toml").read_text(encoding="utf-8")
WEST = 'bandwidth = "40 Gbps"\nrtt = "25 ms"'


def test_a_moved_quantity_reads_in_gbps_and_instances():
    assert _moved("link:hub->east", 1.79e7, 1.25e10) == "link hub->east 0.143 -> 100 Gbps"
    assert _moved("egress:hub", 5 * GBPS, 2.5 * GBPS) == "egress hub 5 -> 2.5 Gbps"
    assert _moved("site:hub", 8, 6) == "site hub alive 8 -> 6"


def test_the_topology_schedulers_reason_names_the_link_in_gbps(tmp_path: Path):
    path = tmp_path / "two.toml"
    path.write_text(TWO.replace(WEST, f"{WEST}\nloss = 1e-5\nconnections = 16", 1),
                    encoding="utf-8")
    sc = presets.load(str(path), topology=True)
    with Emulation(sc, rate=0.1, duration=60) as emu:
        Scheduler(emu, SchedulerConfig(enabled=True))
        emu.inject(RttChange(at=5, duration=30, factor=4, link="hub->west"))
        emu.run_until(40)
        text = "\n".join(str(d) for d in emu.decisions)
    assert "link hub->west " in text and " Gbps" in text
    assert "link:hub" not in text and "e+" not in text


def test_a_loss_on_a_link_without_connections_is_said_to_be_one_connection():
    from emulator.scenario.incidents import LossSpike
    from emulator.sim.runs.health import served_warnings
    from emulator.topology.transport import Transport, goodput
    from emulator.units import format_bandwidth

    sc = presets.load("two-regions", topology=True)
    with Emulation(sc, rate=0.1, duration=60) as emu:
        emu.inject(LossSpike(at=5, duration=10, loss=1e-4, link="hub->west"))
        emu.inject(RttChange(at=5, duration=10, factor=2, link="hub->east"))  # no loss: quiet
        emu.run_until(30)
        warned = served_warnings(emu)
    one = goodput(40 * GBPS, 0.025, Transport(loss=1e-4)).bytes_per_s
    assert [w for w in warned if "connections" in w] == [
        f"hub->west has no connections: one TCP connection at loss 0.0001 carries "
        f"{format_bandwidth(one)} (give the link `connections`)"]


def test_a_loss_spike_on_a_link_with_connections_says_nothing(tmp_path: Path):
    from emulator.scenario.incidents import LossSpike
    from emulator.sim.runs.health import served_warnings

    path = tmp_path / "two.toml"
    path.write_text(TWO.replace(WEST, f"{WEST}\nloss = 1e-5\nconnections = 16", 1),
                    encoding="utf-8")
    with Emulation(presets.load(str(path), topology=True), rate=0.1, duration=60) as emu:
        emu.inject(LossSpike(at=5, duration=10, factor=10, link="hub->west"))
        emu.run_until(30)
        assert not any("connections" in w for w in served_warnings(emu))
