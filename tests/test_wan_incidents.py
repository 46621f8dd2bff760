"""Loss spikes and route flaps on a WAN link: the link's goodput and round trip under them
(pair and topology, composed with other incidents), flows in flight re-sharing from that moment,
connection setups when the pool is busy, the scheduler seeing the goodput, the drills, the
acceptance at 0.9 x the goodput-limited bound, and bad input refused in one line."""

import math
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from emulator.scenario import presets
from emulator.scenario.drills import load_drill
from emulator.scenario.incidents import Brownout, LossSpike, RttChange
from emulator.scenario.reader import PresetError
from emulator.sim.core.loop import VirtualTimeLoop
from emulator.sim.engine import Emulation
from emulator.sim.runs.drills import run_drill
from emulator.sim.stages.link import Link
from emulator.topology.transport import (
    HANDSHAKE_RTTS,
    LOSS_CEILING,
    PathChange,
    Transport,
    goodput,
)
from emulator.units import GBPS
from prfaas_tui.cli import main

MB = 1e6
TOY = (presets.presets_dir() / "toy.toml").read_text()
TWO = (presets.presets_dir() / "two-regions.toml").read_text()
WEST = 'bandwidth = "40 Gbps"\nrtt = "25 ms"'
LINE = 1000 * MB  # toy's lease
T = Transport(loss=1e-4, connections=4)


def _toy(tmp_path, extra: str = "loss = 1e-4\nconnections = 4"):
    text = TOY.replace('bandwidth = "1000 MB/s"', 'bandwidth = "1000 MB/s"\n' + extra, 1)
    path = tmp_path / "wan.toml"
    path.write_text(text.replace("seed = 1", 'seed = 1\nlink_latency = "30 ms"', 1))
    return presets.load(str(path), topology=True)


def _two(tmp_path, extra: str = "loss = 1e-5\nconnections = 16"):
    path = tmp_path / "wan2.toml"
    path.write_text(TWO.replace(WEST, f"{WEST}\n{extra}", 1))
    return presets.load(str(path), topology=True)


def _g(rtt: float, t: Transport) -> float:
    return goodput(LINE, rtt, t).bytes_per_s


# -- the link's goodput and round trip under them --------------------------------------------
def test_a_loss_spike_sets_the_pair_links_goodput_and_clears(tmp_path):
    with Emulation(_toy(tmp_path), rate=0.01, duration=100) as emu:
        link = emu.links["prfaas->pd"]
        assert link.capacity == pytest.approx(_g(0.03, T))
        emu.inject(LossSpike(at=10, duration=10, factor=4))
        emu.run_until(15)
        spiked = _g(0.03, Transport(loss=4e-4, connections=4))
        assert link.capacity == pytest.approx(spiked) and spiked == pytest.approx(_g(0.03, T) / 2)
        assert link.latency == 0.03 and emu.snapshot().incidents == ("link loss x4",)
        emu.run_until(25)
        assert link.capacity == link.bandwidth and not link.path_changes


def test_a_route_flap_sets_the_round_trip_and_the_goodput_falls_with_it(tmp_path):
    with Emulation(_toy(tmp_path), rate=0.01, duration=100) as emu:
        link = emu.link
        emu.inject(RttChange(at=10, duration=10, rtt=0.09))
        emu.run_until(15)
        assert link.latency == pytest.approx(0.09)
        assert link.capacity == pytest.approx(_g(0.03, T) / 3)  # MSS / RTT
        emu.run_until(25)
        assert (link.latency, link.capacity) == (0.03, link.bandwidth)


def test_on_a_named_topology_link_only_that_one_changes(tmp_path):
    topo = _two(tmp_path)
    with Emulation(topo, rate=0.1, duration=100) as emu:
        west, east = emu.links["hub->west"], emu.links["hub->east"]
        before = (west.nominal, east.nominal, east.latency)
        emu.inject(RttChange(at=5, duration=10, factor=2, link="hub->west"))
        emu.inject(LossSpike(at=5, duration=10, factor=100, link="hub->west"))
        emu.run_until(6)
        lk = topo.declared_topology.link("hub", "west")
        want = goodput(lk.line, 0.05, Transport(loss=1e-3, connections=16)).bytes_per_s
        assert west.nominal == pytest.approx(want) and west.latency == pytest.approx(0.05)
        assert (east.nominal, east.latency) == before[1:]
        emu.run_until(20)
        assert west.nominal == before[0] and west.latency == 0.025


def test_path_changes_compose_with_each_other_and_with_a_brownout(tmp_path):
    with Emulation(_toy(tmp_path), rate=0.01, duration=100) as emu:
        emu.inject(LossSpike(at=1, duration=50, factor=2))
        emu.inject(LossSpike(at=2, duration=50, factor=2))
        emu.inject(Brownout(at=3, duration=50, factor=0.5))
        emu.run_until(4)
        assert emu.link.capacity == pytest.approx(0.5 * _g(0.03, T) / 2)  # loss x4: rate / 2
        emu.inject(LossSpike(at=5, duration=50, loss=0.5))  # set, then multiplied by 4: capped
        emu.run_until(6)
        capped = _g(0.03, Transport(loss=LOSS_CEILING, connections=4))
        assert emu.link.capacity == pytest.approx(0.5 * capped)


def test_a_set_loss_on_a_link_without_transport_keys_is_one_connections():
    loop = VirtualTimeLoop()
    link = Link(loop, "plain", LINE, latency=0.03)
    link.set_path_change("k", PathChange(loss=1e-4))
    link.rebalance()
    assert link.capacity == pytest.approx(1460 / 0.03 * math.sqrt(1.5) / 0.01)
    link.set_path_change("k", None)
    link.rebalance()
    assert link.capacity == LINE and link.pool is None


def test_a_flow_in_flight_sees_the_new_rate_from_that_moment():
    loop = VirtualTimeLoop()
    link = Link(loop, "wan", _g(0.03, T), latency=0.03, line=LINE, transport=T)
    rate = link.capacity
    done = []
    link.open(2 * rate, 0.0, lambda f: done.append(loop.now), lambda p: None, None)

    def spike():
        link.set_path_change("k", PathChange(loss_factor=4))
        link.rebalance()
    loop.call_at(1.0, spike)
    loop.run_until(100)
    # one second at the rate, the other `rate` bytes at half of it: 1 + 2 seconds
    assert done == [pytest.approx(3.0, abs=1e-9)]


# -- connection setup when the pool is busy ----------------------------------------------------
def _opened(link, loop, n: int, size: float, log: list) -> list:
    return [link.open(size, 0.0, lambda f, i=i: log.append((i, loop.now)), lambda p: None, i)
            for i in range(n)]


def test_a_flow_beyond_the_pool_waits_a_connection_setup():
    loop = VirtualTimeLoop()
    t = Transport(connections=2, window=1e9)  # a pool of 2, never below the line rate here
    link = Link(loop, "wan", 100 * MB, latency=0.05, line=100 * MB, transport=t)
    log = []
    flows = _opened(link, loop, 3, 10 * MB, log)
    assert link.handshakes == 1 and set(link.pending) == {flows[2].fid}
    assert link.remaining(flows[2]) == 10 * MB
    setup = HANDSHAKE_RTTS * 0.05
    loop.run_until(100)
    # two flows share 100 MB/s alone for `setup` seconds, then three share it
    shared = 20 * MB - 100 * MB * setup  # bytes the two have left when the third joins
    first = setup + shared / 2 / (100 * MB / 3)  # each has shared / 2, at a third each
    assert [i for i, _ in log] == [0, 1, 2]
    assert log[0][1] == pytest.approx(first) and log[1][1] == pytest.approx(first)
    assert first == pytest.approx(0.25)
    assert log[2][1] == pytest.approx(0.3)  # the link never idled: 30 MB at 100 MB/s


def test_without_connections_no_flow_waits():
    loop = VirtualTimeLoop()
    t = Transport(loss=1e-4)  # a lossy link, its pool not given: no setups (as before)
    link = Link(loop, "wan", goodput(LINE, 0.05, t).bytes_per_s, latency=0.05, line=LINE,
                transport=t)
    log = []
    _opened(link, loop, 5, 1 * MB, log)
    assert link.pool is None and link.handshakes == 0 and not link.pending


def test_a_flow_cancelled_during_its_setup_sent_nothing():
    loop = VirtualTimeLoop()
    link = Link(loop, "wan", 100 * MB, latency=0.05, line=100 * MB,
                transport=Transport(connections=1, window=1e9))
    log = []
    a, b = _opened(link, loop, 2, 10 * MB, log)
    loop.run_until(0.01)
    assert link.cancel(b) == 0.0 and not link.pending
    loop.run_until(100)
    assert [i for i, _ in log] == [0] and link.totals(loop.now)[0] == pytest.approx(10 * MB)


# -- every byte accounted for under random loss spikes and route flaps (hypothesis) -----------
_flow = st.tuples(st.floats(0.0, 5.0), st.floats(1.0, 500.0),  # opens at (s), size (MB)
                  st.sampled_from([0.0, 0.5, 2.0]) | st.floats(0.01, 3.0),  # production (s)
                  st.none() | st.floats(0.0, 2.0))  # cancelled this long after it opened
_change = st.tuples(st.floats(0.0, 6.0), st.floats(0.1, 4.0),  # starts at, lasts (s)
                    st.one_of(st.builds(PathChange, loss_factor=st.floats(0.1, 50.0)),
                              st.builds(PathChange, loss=st.floats(0.0, 0.2)),
                              st.builds(PathChange, rtt_factor=st.floats(0.2, 5.0)),
                              st.builds(PathChange, rtt=st.floats(0.0, 0.2))))


@settings(max_examples=120, deadline=None)
@example(flows=[(0.0, 1.0, 0.0, None)], pool=None,  # a subnormal RTT under a lossy path
         changes=[(0.0, 1.0, PathChange(loss=0.125)), (0.0, 1.0, PathChange(rtt=5e-324))])
@given(flows=st.lists(_flow, min_size=1, max_size=25),
       changes=st.lists(_change, max_size=6),
       pool=st.none() | st.integers(1, 4))
def test_every_byte_is_accounted_for_under_loss_spikes_and_route_flaps(flows, changes, pool):
    """Each flow not cancelled is sent once and delivered once, never before its production
    ended nor before its round trip; the link carried exactly those bytes plus what the
    cancelled ones had sent; and nothing is left open or on the wire."""
    loop = VirtualTimeLoop()
    t = Transport(loss=1e-4, connections=pool)
    link = Link(loop, "prop", goodput(LINE, 0.03, t).bytes_per_s, latency=0.03, line=LINE,
                transport=t)
    sent, delivered, cancelled, opened = {}, {}, {}, []

    def start(i: int, size: float, prod: float, cancel_after: float | None) -> None:
        f = link.open(size * MB, prod, lambda f: sent.setdefault(i, loop.now),
                      lambda p: delivered.__setitem__(p, delivered.get(p, 0) + 1), i)
        opened.append((i, loop.now, prod))
        if cancel_after is not None:
            loop.call_at(loop.now + cancel_after,
                         lambda: cancelled.setdefault(i, link.cancel(f)))
        assert link.bytes_in_flight(loop.now) >= 0

    def change(key: int, c: PathChange | None) -> None:
        link.set_path_change(key, c)
        link.rebalance()
        assert link.capacity >= 0 and link.latency >= 0

    for i, (at, size, prod, cancel_after) in enumerate(flows):
        loop.call_at(at, start, i, size, prod, cancel_after)
    for k, (at, dur, c) in enumerate(changes):
        loop.call_at(at, change, k, c)
        loop.call_at(at + dur, change, k, None)
    loop.run_until(1e7)
    assert not link.flows and not link.pending and link.propagating_flows == 0
    assert link.capacity == link.bandwidth and link.latency == 0.03
    for i, t0, prod in opened:
        if i in sent:
            assert sent[i] >= t0 + prod - 1e-9 and delivered.get(i) == 1
        else:
            assert i in cancelled and i not in delivered
    carried = sum(flows[i][1] * MB for i in sent)
    carried += sum(v for i, v in cancelled.items() if i not in sent)
    assert link.totals(loop.now)[0] == pytest.approx(carried, rel=1e-6, abs=1.0)


# -- the drills, and the scheduler's view ----------------------------------------------------
WAN_DRILLS = ("loss-spike", "rtt-change", "region-rtt-change")


@pytest.mark.parametrize("name", WAN_DRILLS)
def test_the_wan_drills_lose_nothing_and_meet_their_bars(name):
    out = run_drill(load_drill(name))
    card = out["scorecard"]
    assert card["lost"] == 0 and card["passed"], {k: e for k, e in
                                                   card["expectations"].items() if not e["ok"]}


def test_the_scheduler_judges_headroom_on_the_goodput_under_a_loss_spike():
    """The pair's short timescale reads the link's capacity: under the spike that is the
    pool's goodput at 1e-4 (9.2 Gbps), not the 100 Gbps line rate nor the 28.9 Gbps before."""
    drill = load_drill("loss-spike")
    sc = drill.scenario
    before = goodput(sc.line_bandwidth, 0.01, sc.transport).bytes_per_s
    during = goodput(sc.line_bandwidth, 0.01, Transport(loss=1e-4, connections=64)).bytes_per_s
    assert sc.system.bandwidth == pytest.approx(before)
    text = " ".join(d if isinstance(d, str) else str(d) for d in
                    run_drill(drill)["scorecard"]["decisions"])
    assert f"link {during / GBPS:.1f} Gbps now" in text and during / GBPS < 10


def test_the_topology_scheduler_sees_a_route_flaps_goodput(tmp_path):
    from emulator.scenario.scheduler import SchedulerConfig
    from emulator.sim.control.scheduler import Scheduler
    topo = _two(tmp_path)
    with Emulation(topo, rate=0.1, duration=100) as emu:
        sched = Scheduler(emu, SchedulerConfig())
        emu.inject(RttChange(at=5, duration=10, factor=4, link="hub->west"))
        emu.run_until(6)
        lk = topo.declared_topology.link("hub", "west")
        want = goodput(lk.line, 0.1, lk.transport).bytes_per_s
        assert sched._live()["link:hub->west"] == pytest.approx(want)
        assert want < 0.3 * lk.bandwidth


def test_a_loss_spike_on_every_link_of_a_topology():
    """No `link`: every link (two-regions has no transport keys: one connection at 1e-4)."""
    drill = load_drill("loss-spike", preset="two-regions")
    with Emulation(drill.scenario, rate=0.1, duration=700) as emu:
        emu.run_until(601)
        for lk in emu.links.values():
            one = goodput(lk.line, lk.rtt, Transport(loss=1e-4)).bytes_per_s
            assert lk.nominal == pytest.approx(one)


# -- bad input: one line naming the key, exit 2 --------------------------------------------------
BAD = [
    ('kind = "loss-spike"\nfactor = 0', "incidents[0].factor", "> 0"),
    ('kind = "loss-spike"\nfactor = -2', "incidents[0].factor", "> 0"),
    ('kind = "loss-spike"\nloss = 1.0', "incidents[0].loss", "[0, 1)"),
    ('kind = "loss-spike"\nloss = 0.1\nfactor = 2', "incidents[0].loss", "not both"),
    ('kind = "rtt-change"\nrtt = "-5 ms"', "incidents[0].rtt", ">= 0"),
    ('kind = "rtt-change"\nfactor = 0', "incidents[0].factor", "> 0"),
    ('kind = "rtt-change"\nrtt = "1e300 s"', "incidents[0].rtt", "a minute"),
]


@pytest.mark.parametrize("entry,key,phrase", BAD, ids=[b[0] for b in BAD])
def test_bad_wan_incidents_are_one_line(tmp_path, capsys, entry, key, phrase):
    path = tmp_path / "bad.toml"
    path.write_text('preset = "toy"\n[[incidents]]\nat = 10\nduration = 10\n' + entry + "\n")
    with pytest.raises(PresetError) as err:
        load_drill(str(path))
    assert key in str(err.value) and phrase in str(err.value) and "\n" not in str(err.value)
    assert main(["drill", str(path)]) == 2
    out = capsys.readouterr().err
    assert out.count("\n") == 1 and key in out and "Traceback" not in out


def test_by_hand_spikes_are_checked_as_drill_entries():
    from emulator.scenario.incidents import by_hand
    assert by_hand("rtt-change", {"rtt": "80 ms"}, n_prfaas=1, pool=2, lengths=None).rtt == 0.08
    with pytest.raises(PresetError, match="rtt"):
        by_hand("rtt-change", {"rtt": "-1 ms"}, n_prfaas=1, pool=2, lengths=None)
    with pytest.raises(ValueError, match="not both"):
        LossSpike(factor=2, loss=0.01)


# -- acceptance: 0.9 x the goodput-limited bound -----------------------------------------------
def test_the_emulator_at_09_of_the_goodput_bound_serves_its_offered_rate(tmp_path):
    """paper-case-study over a 10 ms link with 1e-4 loss and 64 connections (9.2 Gbps of a
    100 Gbps lease: the bandwidth term binds): at 0.9 x the model's Lambda at that goodput the
    emulator completes at least 97% of what was offered and loses nothing."""
    text = (presets.presets_dir() / "paper-case-study.toml").read_text()
    text = text.replace('bandwidth = "100 Gbps"', 'bandwidth = "100 Gbps"\nloss = 1e-4\n'
                        'connections = 64', 1).replace("seed = 1", 'seed = 1\n'
                                                       'link_latency = "10 ms"', 1)
    path = Path(tmp_path) / "lossy.toml"
    path.write_text(text)
    sc = presets.load(str(path))
    assert sc.system.bandwidth < 0.1 * sc.line_bandwidth
    with Emulation(sc, load=0.9, duration=3600) as emu:
        point = emu.model_point("exact")  # what a load is relative to
        assert point.prfaas_term == "bandwidth"
        res = emu.run()
    out = res.json
    assert out["accounting"]["lost"] == 0
    assert out["target_rate"] == pytest.approx(0.9 * point.lambda_max)
    assert out["served_rate"] >= 0.97 * out["offered_rate"]
    assert out["second_half"]["served_rate"] >= 0.97 * out["second_half"]["offered_rate"]


# -- where it shows ----------------------------------------------------------------------------
def test_the_map_shows_goodput_against_the_line_rate_and_its_cap(tmp_path):
    from emulator.sim.reports.topology_report import marks, objects
    from prfaas_tui.topology_text import Figures
    topo = _two(tmp_path, "loss = 1e-4\nconnections = 16")
    with Emulation(topo, rate=0.5, duration=100) as emu:
        start = marks(emu.topology, 0.0)
        emu.run_until(50)
        objs = objects(emu.topology, start, marks(emu.topology, 50.0), whole=True)
    west, east = objs["links"]["hub->west"], objs["links"]["hub->east"]
    lk = topo.declared_topology.link("hub", "west")
    assert west["cap"] == "loss" and west["line_gbps"] == pytest.approx(40.0)
    assert west["goodput_gbps"] == pytest.approx(lk.bandwidth / GBPS)
    assert "cap" not in east  # no transport keys: the objects as before
    fig = Figures(topo.declared_topology, objs, None)
    assert fig.link_capacity("hub->west").startswith("916M/40G loss ")  # 16 x Mathis at 25 ms, 1e-4
    assert fig.link_capacity("hub->east").startswith("100G ")


def test_the_pairs_panel_names_the_line_rate_and_the_cap(tmp_path):
    from prfaas_tui.widgets.model_panel import _wire
    assert _wire(_toy(tmp_path)) == " · goodput of 8 Gbps line, loss-capped"
    assert _wire(_toy(tmp_path, "")) == ""
    assert _wire(_toy(tmp_path).with_knobs(bandwidth=500 * MB)) == ""  # the knob moved it


# -- loss and connections through the knob registry --------------------------------------------
def test_one_rule_for_loss_and_connections_in_presets_dialogs_and_the_engine(tmp_path):
    from emulator.scenario.knobs import CONNECTIONS, LOSS, KnobError, knob_at
    from prfaas_tui.screens.element_knobs import parse_knobs
    assert knob_at("link", "loss") is LOSS and knob_at("link", "connections") is CONNECTIONS
    assert LOSS.refusal(1.0) == "must be in [0, 1) (got 1)" and LOSS.refusal(0.0) is None
    # the preset key says what the registry says
    with pytest.raises(PresetError) as err:
        _two(tmp_path, "loss = 1.0")
    assert str(err.value).endswith(f"link[1].loss: {LOSS.problem(1.0)} (got 1.0)")
    with pytest.raises(PresetError) as err:
        _two(tmp_path, "connections = 0")
    assert str(err.value).endswith(f"link[1].connections: {CONNECTIONS.problem(0)} (got 0)")
    # the topology view's link dialog
    assert parse_knobs("link", "hub->west", "1000 MB/s loss=1e-4 connections=16") == {
        "bandwidth": 1000 * MB, "loss": 1e-4, "connections": 16}
    assert parse_knobs("link", "hub->west", "40") == {"bandwidth": 40 * GBPS}
    with pytest.raises(KnobError) as kerr:
        parse_knobs("link", "hub->west", "connections=0")
    assert str(kerr.value) == f"link hub->west: connections {CONNECTIONS.refusal(0)}"


def test_turning_a_links_tcp_on_the_running_topology_recomputes_its_goodput():
    from emulator.scenario.knobs import KnobError
    from prfaas_tui.live import ElementChange, check_element, set_element
    sc = presets.load("two-regions", topology=True)
    with Emulation(sc, rate=0.5, duration=100) as emu:
        emu.run_until(5)
        set_element(emu, ElementChange.of("link", "hub->west", {"loss": 1e-4,
                                                                 "connections": 16}))
        lk = emu.links["hub->west"]
        want = goodput(40 * GBPS, 0.025, Transport(loss=1e-4, connections=16)).bytes_per_s
        assert lk.bandwidth == pytest.approx(want) and lk.capacity == pytest.approx(want)
        assert lk.pool == 16 and emu.links["hub->east"].bandwidth == 100 * GBPS
        set_element(emu, ElementChange.of("link", "hub->west", {"connections": 64}))
        assert lk.bandwidth == pytest.approx(4 * want)
        with pytest.raises(KnobError, match="hub->west: connections: the link's goodput"):
            check_element(emu, ElementChange.of("link", "hub->west", {"loss": 0.9,
                                                                      "connections": 1}))
        emu.run_until(100)


def _lat_preset(tmp_path, extra: str = "") -> str:
    text = (presets.presets_dir() / "paper-case-study.toml").read_text()
    text = text.replace('bandwidth = "100 Gbps"', 'bandwidth = "100 Gbps"\n' + extra, 1)
    path = tmp_path / ("keys.toml" if extra else "lat.toml")
    path.write_text(text.replace("seed = 1", 'seed = 1\nlink_latency = "10 ms"', 1))
    return str(path)


def test_the_pairs_loss_and_connections_flags_are_its_preset_keys(tmp_path, capsys):
    import json
    flags = ["--loss", "1e-4", "--connections", "16"]
    assert main(["solve", "--preset", _lat_preset(tmp_path), *flags, "--json"]) == 0
    by_flag = json.loads(capsys.readouterr().out)
    keys = _lat_preset(tmp_path, "loss = 1e-4\nconnections = 16")
    assert main(["solve", "--preset", keys, "--json"]) == 0
    by_key = json.loads(capsys.readouterr().out)
    assert by_flag["operating_point"] == by_key["operating_point"]
    assert by_flag["operating_point"]["bandwidth_gbps"] == pytest.approx(
        goodput(100 * GBPS, 0.01, Transport(loss=1e-4, connections=16)).bytes_per_s / GBPS)


FLAG_BAD = [
    (["--loss", "1"], "--loss: must be in [0, 1)"),
    (["--connections", "0"], "--connections: must be >= 1"),
    (["--loss", "0.5", "--connections", "1"], "--connections: the link's goodput"),
    (["--loss", "1e-4", "--bandwidth", "10"], "--loss: the goodput comes from"),
]


@pytest.mark.parametrize("argv,phrase", FLAG_BAD, ids=[" ".join(a) for a, _ in FLAG_BAD])
def test_bad_transport_flags_are_one_line(tmp_path, capsys, argv, phrase):
    assert main(["solve", "--preset", _lat_preset(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and phrase in err and "Traceback" not in err


def test_transport_flags_need_a_round_trip_and_a_pair(capsys):
    assert main(["solve", "--loss", "1e-4"]) == 2
    assert "[emulator] link_latency" in capsys.readouterr().err
    assert main(["solve", "--preset", "two-regions", "--connections", "4"]) == 2
    assert "[[link]]" in capsys.readouterr().err


def test_a_route_flap_holds_the_round_trip_at_a_minute():
    """However large the factor: past a minute a transfer would outlive any run."""
    from emulator.topology.transport import MAX_RTT, changed
    assert changed(0.01, None, [PathChange(rtt_factor=1e300)])[0] == MAX_RTT
    assert changed(0.01, None, [PathChange(rtt_factor=3.0)])[0] == pytest.approx(0.03)
