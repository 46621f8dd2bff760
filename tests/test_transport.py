"""A WAN link's TCP goodput: Mathis and TFRC (Padhye) rates pinned by hand, window caps, the
line cap, the model and the bound seeing the goodput, and bad transport keys refused."""

import json
import math

import pytest

from emulator.scenario import presets
from emulator.scenario.presets import presets_dir
from emulator.scenario.reader import PresetError
from emulator.topology.bound import routing_bound
from emulator.topology.spec import Link
from emulator.topology.transport import Transport, goodput, loss_rate
from emulator.units import GBPS
from prfaas_tui.cli import main

TOY = (presets_dir() / "toy.toml").read_text()
TWO = (presets_dir() / "two-regions.toml").read_text()
WEST = 'bandwidth = "40 Gbps"\nrtt = "25 ms"'
# MSS / RTT x sqrt(3/2) / sqrt(p) at 1460 B, 30 ms, 1e-4: 48,666.7 B/s x 122.474 = 5.9604 MB/s
MATHIS_30MS = 1460 / 0.030 * math.sqrt(1.5) / 0.01


def _toy(extra: str, latency: str = '"30 ms"') -> str:
    text = TOY.replace('bandwidth = "1000 MB/s"', 'bandwidth = "1000 MB/s"\n' + extra, 1)
    return text.replace("seed = 1", f"seed = 1\nlink_latency = {latency}", 1)


def _two(extra: str, rtt: str = '"30 ms"') -> str:
    assert WEST in TWO
    return TWO.replace(WEST, f'bandwidth = "40 Gbps"\nrtt = {rtt}\n{extra}', 1)


def _load(tmp_path, text: str):
    path = tmp_path / "wan.toml"
    path.write_text(text)
    return presets.load(str(path), topology=True)


def test_mathis_rate_of_the_worked_example():
    assert pytest.approx(5.9604e6, rel=1e-4) == MATHIS_30MS  # about 48 Mbps
    g = goodput(40 * GBPS, 0.030, Transport(loss=1e-4, connections=16))
    assert g.cap == "loss"
    assert g.per_connection * 8 / 1e6 == pytest.approx(47.68, rel=1e-3)
    assert g.bytes_per_s / GBPS == pytest.approx(0.7629, rel=1e-3)  # of a 40 Gbps lease


def test_window_caps_a_connection():
    g = goodput(40 * GBPS, 0.030, Transport(loss=1e-6, connections=4, window=65536))
    assert g.cap == "window"
    assert g.per_connection == pytest.approx(65536 / 0.030)  # 17.5 Mbps, below Mathis' 477
    assert g.bytes_per_s == pytest.approx(4 * 65536 / 0.030)


def test_padhye_above_one_percent():
    # RFC 5348: MSS / (R sqrt(2p/3) + 4R x 3 sqrt(3p/8) p (1 + 32 p^2)) at p = 2%, R = 50 ms
    hand = 1460 / (0.05 * 0.1154701 + 0.2 * 3 * 0.0866025 * 0.02 * 1.0128)
    assert hand == pytest.approx(213_887, rel=1e-4)
    assert loss_rate(1460, 0.05, 0.02) == pytest.approx(hand, rel=1e-6)
    # at and below 1% it is Mathis'; the timeouts cost more above it
    assert loss_rate(1460, 0.05, 0.01) == pytest.approx(1460 / 0.05 * math.sqrt(1.5) / 0.1)
    assert loss_rate(1460, 0.05, 0.0101) < 0.95 * loss_rate(1460, 0.05, 0.01)


def test_line_caps_enough_connections():
    g = goodput(1 * GBPS, 0.030, Transport(loss=1e-4, connections=1000))
    assert (g.bytes_per_s, g.cap) == (1 * GBPS, "line")


@pytest.mark.parametrize("t", [None, Transport(), Transport(connections=8),
                               Transport(mss=9000)])
def test_no_loss_no_window_is_the_line_rate_itself(t):
    line = 40 * GBPS / 3
    g = goodput(line, 0.030, t)
    assert g.bytes_per_s is line and g.cap == "line" and g.per_connection == math.inf
    assert Link.over("a", "b", line, 0.03, t).bandwidth is line


def test_rtt_zero_with_loss_is_refused():
    with pytest.raises(ValueError):
        goodput(GBPS, 0.0, Transport(loss=1e-4))


def test_pair_model_sees_the_goodput(tmp_path):
    plain = _load(tmp_path, _toy("", '"30 ms"'))
    sc = _load(tmp_path, _toy("loss = 1e-4\nconnections = 4"))
    assert sc.system.bandwidth == pytest.approx(4 * MATHIS_30MS)
    assert sc.line_bandwidth == plain.system.bandwidth
    link = sc.topology.links[0]
    assert link.goodput.cap == "loss" and link.line == plain.system.bandwidth
    from emulator.model import evaluate
    assert evaluate(sc.system, sc.knobs).theta_prfaas_bandwidth < \
        evaluate(plain.system, plain.knobs).theta_prfaas_bandwidth / 10


def test_bound_drops_and_solve_reports_the_goodput(tmp_path, capsys):
    plain = _load(tmp_path, TWO).topology
    lossy = _load(tmp_path, _two("loss = 1e-4\nconnections = 16")).topology
    west = lossy.link("hub", "west")
    assert west.bandwidth == pytest.approx(16 * MATHIS_30MS)
    before, after = routing_bound(plain), routing_bound(lossy)
    assert after.lambda_max < 0.9 * before.lambda_max
    assert "link:hub->west" in after.binding and after.shadow_prices["link:hub->west"] > 0
    path = tmp_path / "wan.toml"
    assert main(["solve", "--preset", str(path), "--json"]) == 0
    topo = json.loads(capsys.readouterr().out)["topology"]
    links = topo["links"]
    got = links["hub->west"]
    assert got["goodput_gbps"] == pytest.approx(16 * MATHIS_30MS / GBPS, rel=0.01)
    assert got["per_connection_gbps"] == pytest.approx(MATHIS_30MS / GBPS, rel=0.01)
    assert got["cap"] == "loss" and got["bandwidth_gbps"] == 40.0
    # the link row's dual (req/s per Gbps) x one connection's Gbps
    price = topo["bound"]["shadow_prices"]["link:hub->west"] * got["per_connection_gbps"]
    assert got["connection_price"] == pytest.approx(price, rel=1e-6) and price > 0
    assert links["hub->east"]["cap"] == "line" and "connection_price" not in links["hub->east"]


def test_saved_pair_keeps_its_line_rate(tmp_path):
    from emulator.scenario.writer import write_preset
    sc = _load(tmp_path, _toy("loss = 1e-4\nconnections = 4"))
    back = write_preset(sc, tmp_path / "saved.toml")
    assert back.system.bandwidth == sc.system.bandwidth and back.transport == sc.transport


PAIR_BAD = [
    ("loss = 1.0", "deployment.loss", "[0, 1)"),
    ("loss = -0.1", "deployment.loss", "[0, 1)"),
    ("connections = 0", "deployment.connections", "at least 1"),
    ("mss = 0", "deployment.mss", "above 0"),
    ('window = "1 KB"', "deployment.window", "smaller than one MSS"),
    ("loss = 0.9\nconnections = 1", "deployment.connections", "goodput"),
]


@pytest.mark.parametrize("extra,key,phrase", PAIR_BAD, ids=[c[0] for c in PAIR_BAD])
def test_bad_pair_transport_is_one_line(tmp_path, capsys, extra, key, phrase):
    _refused(tmp_path, capsys, _toy(extra), key, phrase)


def test_pair_loss_without_a_round_trip(tmp_path, capsys):
    _refused(tmp_path, capsys, _toy("loss = 1e-4", '"0 s"'), "deployment.loss",
             "link_latency")


TOPO_BAD = [
    ("loss = 1.5", '"30 ms"', "link[1].loss", "[0, 1)"),
    ("connections = 0", '"30 ms"', "link[1].connections", "at least 1"),
    ("mss = 0", '"30 ms"', "link[1].mss", "above 0"),
    ("window = 100", '"30 ms"', "link[1].window", "smaller than one MSS"),
    ("loss = 1e-4", '"0 ms"', "link[1].loss", "rtt"),
]


@pytest.mark.parametrize("extra,rtt,key,phrase", TOPO_BAD, ids=[c[2] + c[0] for c in TOPO_BAD])
def test_bad_link_transport_is_one_line(tmp_path, capsys, extra, rtt, key, phrase):
    _refused(tmp_path, capsys, _two(extra, rtt), key, phrase)


def _refused(tmp_path, capsys, text: str, key: str, phrase: str) -> None:
    path = tmp_path / "wan.toml"
    path.write_text(text)
    with pytest.raises(PresetError) as err:
        presets.load(str(path), topology=True)
    msg = str(err.value)
    assert key in msg and phrase in msg and "\n" not in msg, msg
    assert main(["solve", "--preset", str(path)]) == 2
    out = capsys.readouterr().err
    assert out.count("\n") == 1 and key in out and "Traceback" not in out


@pytest.mark.parametrize("rtt,loss,need", [(0.001, 1e-5, 3), (0.010, 1e-4, 84),
                                           (0.050, 1e-4, 418)])
def test_worked_example_connections_keep_the_case_study_compute_bound(rtt, loss, need):
    """docs/transport.md's table: `need` connections are the fewest that keep PrfaaS
    compute-bound in paper-case-study."""
    from dataclasses import replace

    from emulator.model import evaluate
    sc = presets.load("paper-case-study")

    def term(n: int) -> str:
        bw = goodput(sc.system.bandwidth, rtt, Transport(loss=loss, connections=n)).bytes_per_s
        return evaluate(replace(sc.system, bandwidth=bw), replace(sc.knobs, bandwidth=bw),
                        sc.mode).prfaas_term

    assert (term(need), term(need - 1)) == ("compute", "bandwidth")


def test_emulator_links_run_at_the_goodput(tmp_path):
    from emulator.sim.engine import Emulation
    pair = _load(tmp_path, _toy("loss = 1e-4\nconnections = 4"))
    with Emulation(pair, rate=0.01, duration=1) as emu:
        assert emu.links["prfaas->pd"].bandwidth == pytest.approx(4 * MATHIS_30MS)
    topo = _load(tmp_path, _two("loss = 1e-4\nconnections = 16"))
    with Emulation(topo, rate=0.1, duration=1) as emu:
        assert emu.links["hub->west"].bandwidth == pytest.approx(16 * MATHIS_30MS)
        assert emu.links["hub->east"].bandwidth == 100 * GBPS
