"""One rule per knob: the same value typed on every surface gets the same verdict.

Each value goes through the command line's flag path, a pair preset's key, a topology preset's
[[link]]/[[region]]/[[site]] (or [workload]) key, the dashboard's knob editor and the topology
view's element editor; every surface must accept it or every surface refuse it, and the verdict
is the registry's stated rule (emulator/scenario/knobs.py): bandwidth 1 Mbps to 8 Pbps, t any
number of tokens in the length support (fractions too), instances whole from 0 to 100,000, rate
finite and >= 0, a link's loss in [0, 1) and connections whole from 1 to 1,000,000 (the goodput
they leave at least 1 Mbps; the dashboard's editor for these is the pair's link dialog).
Work caps (emulator.budget) are not knob rules and are not exercised here."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pytest

from emulator.scenario.knobs import KNOBS, KnobError, check_element
from emulator.scenario.presets import load, presets_dir
from emulator.scenario.reader import PresetError
from prfaas_tui.commands.common import add_scenario_flags, scenario_from_args
from prfaas_tui.errors import UsageError
from prfaas_tui.modelview import Refused, Settings
from prfaas_tui.screens.element_knobs import parse_knobs
from prfaas_tui.widgets.controls import KNOB_BY_KEY

PAIR = (presets_dir() / "paper-case-study.toml").read_text(encoding="utf-8")
TOPOLOGY = (presets_dir() / "two-regions.toml").read_text(encoding="utf-8")

# knob -> (its flag, the pair preset's line, its dashboard key, the topology element (kind,
# name, the knob there) and the topology preset's line), the old lines as shipped
SURFACES = {
    "bandwidth": ("--bandwidth", 'bandwidth = "100 Gbps"', "bandwidth",
                  ("link", "hub->west", "bandwidth"), 'bandwidth = "40 Gbps"'),
    "t": ("--t", "threshold = 19400 ", "t", ("region", "east", "t"), "threshold = 19400\n"),
    "instances": ("--n-prfaas", "prfaas_gpus = 32 ", "n_prfaas", ("site", "hub", "instances"),
                  'profile = "h200"\nparallelism = 8\ngpus = 64\n'),
    # the offered rate: no element's knob (a topology's is the total, its [workload] key)
    "rate": ("--rate", "load = 0.9\n", "rate", None, "load = 0.9\n"),
}

CASES = [  # (knob, the value as typed, its TOML value, accepted?)
    ("bandwidth", "0", '"0"', False),
    ("bandwidth", "1e-300 Gbps", '"1e-300 Gbps"', False),
    ("bandwidth", "0.5 Mbps", '"0.5 Mbps"', False),
    ("bandwidth", "1 Mbps", '"1 Mbps"', True),
    ("bandwidth", "100 Tbps", '"100 Tbps"', True),
    ("bandwidth", "8 Pbps", '"8 Pbps"', True),
    ("bandwidth", "9 Pbps", '"9 Pbps"', False),
    ("bandwidth", "nan", '"nan"', False),
    ("bandwidth", "max", '"max"', False),
    ("bandwidth", "-3", '"-3"', False),
    ("t", "2.5", "2.5", True),
    ("t", "19.4K", '"19.4K"', True),
    ("t", "-1", "-1", False),
    ("t", "32K", '"32K"', True),
    ("t", "128K", '"128K"', True),  # the top of the length support
    ("t", "200K", '"200K"', False),  # above it
    ("instances", "-1", "-1", False),
    ("instances", "0", "0", True),
    ("instances", "100000", "100000", True),
    ("instances", "100001", "100001", False),
    ("instances", "2.5", "2.5", False),
    ("rate", "0", "0", True),
    ("rate", "2.5", "2.5", True),
    ("rate", "-1", "-1", False),
    ("rate", "nan", "nan", False),
    ("rate", "inf", "inf", False),
]


def _cli(knob: str, text: str) -> bool:
    """The flag path every scenario command shares (flags generated from the registry)."""
    p = argparse.ArgumentParser()
    add_scenario_flags(p, KNOBS)  # as `run` does: the rate and paradigm too
    args = p.parse_args(["--preset", "paper-case-study", f"{SURFACES[knob][0]}={text}"])
    try:
        scenario_from_args(args)
    except UsageError:
        return False
    return True


def _preset(tmp_path: Path, base: str, old: str, new: str, **kw) -> bool:
    assert old in base
    path = tmp_path / "p.toml"
    path.write_text(base.replace(old, new, 1), encoding="utf-8")
    try:
        load(path, **kw)
    except PresetError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return False
    return True


def _pair_preset(tmp_path: Path, knob: str, toml: str) -> bool:
    old = SURFACES[knob][1]
    key = {"bandwidth": "bandwidth", "t": "threshold", "instances": "n_prfaas"}.get(knob)
    return _preset(tmp_path, PAIR, old, f"rate = {toml}\n" if key is None else f"{key} = {toml} ")


def _topology_preset(tmp_path: Path, knob: str, toml: str) -> bool:
    old = SURFACES[knob][4]
    new = {"bandwidth": f"bandwidth = {toml}", "t": f"threshold = {toml}\n",
           "instances": f'profile = "h200"\nparallelism = 8\ninstances = {toml}\n',
           "rate": f"rate = {toml}\n"}[knob]
    # a site's range is the knob's; under best-bandwidth a site of 0 instances is no stranding
    # (the threshold rule would send long requests there: a whole-topology refusal, not a range)
    base = f'routing = "best-bandwidth"\n{TOPOLOGY}' if knob == "instances" else TOPOLOGY
    return _preset(tmp_path, base, old, new, topology=True)


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings.initial(load("paper-case-study"))


def _dashboard(settings: Settings, knob: str, text: str) -> bool:
    """The dashboard's knob editor: the value typed, then the knobs' check its settings run
    (`Settings.apply` adds the dashboard's work caps, which are no knob rule)."""
    try:
        change = KNOB_BY_KEY[SURFACES[knob][2]].parse(settings, text)
    except Refused as exc:
        assert "\n" not in str(exc)
        return False
    try:
        replace(settings.controls, **change).validate(settings.scenario.system)
    except KnobError:
        return False
    return True


def _topology_view(knob: str, text: str) -> bool | None:
    """The topology view's element editor: its text, then the element's check (None: the
    knob is no element's)."""
    if SURFACES[knob][3] is None:
        return None
    kind, name, _ = SURFACES[knob][3]
    topo = load("two-regions", topology=True).declared_topology
    try:
        check_element(topo, kind, name, **parse_knobs(kind, name, text))
    except KnobError as exc:
        assert "\n" not in str(exc) and name in str(exc)
        return False
    return True


@pytest.mark.parametrize("knob, text, toml, accepted", CASES)
def test_every_surface_gives_the_same_verdict(tmp_path, settings, knob, text, toml, accepted):
    verdicts = {
        "cli": _cli(knob, text),
        "pair preset": _pair_preset(tmp_path, knob, toml),
        "topology preset": _topology_preset(tmp_path, knob, toml),
        "dashboard": _dashboard(settings, knob, text),
        "topology view": _topology_view(knob, text),
    }
    verdicts = {where: v for where, v in verdicts.items() if v is not None}
    assert verdicts == dict.fromkeys(verdicts, accepted)


def test_the_pair_has_element_names_and_each_knob_one_address():
    from emulator.scenario.knobs import ELEMENT_KNOBS, KNOBS, PAIR_ADDRESSES, knob_at

    topo = load("paper-case-study").topology
    for name, (kind, element, there) in PAIR_ADDRESSES.items():
        assert knob_at(kind, there) is KNOBS[name]
        assert element in {"site": [s.name for s in topo.sites],
                           "region": [r.name for r in topo.regions],
                           "link": [k.name for k in topo.links]}[kind]
    assert sorted(ELEMENT_KNOBS) == ["link", "region", "site"]
    with pytest.raises(KnobError, match="no such knob on a link"):
        knob_at("link", "instances")


# a link's TCP knobs: the pair's --loss/--connections, its [deployment] keys, a [[link]]'s keys,
# the pair's dashboard link dialog (`b`) and the topology view's; the pair runs over the same
# 25 ms path as hub->west, so a goodput under the bandwidth floor is refused on both
TCP_CASES = [  # (knob, the value as typed, its TOML value, accepted?)
    ("loss", "0", "0", True),
    ("loss", "1e-4", "1e-4", True),
    ("loss", "0.9", "0.9", False),  # one connection then carries under 1 Mbps
    ("loss", "1", "1", False),
    ("loss", "-1e-4", "-1e-4", False),
    ("loss", "nan", "nan", False),
    ("connections", "1", "1", True),
    ("connections", "64", "64", True),
    ("connections", "1000000", "1000000", True),
    ("connections", "1000001", "1000001", False),
    ("connections", "0", "0", False),
    ("connections", "2.5", "2.5", False),
]
PAIR_25MS = PAIR.replace("seed = 1", 'seed = 1\nlink_latency = "25 ms"', 1)
PAIR_LINE = 'bandwidth = "100 Gbps"'
WEST = 'bandwidth = "40 Gbps"\nrtt = "25 ms"'


def _tcp_cli(tmp_path: Path, knob: str, text: str) -> bool:
    path = tmp_path / "pair.toml"
    path.write_text(PAIR_25MS, encoding="utf-8")
    p = argparse.ArgumentParser()
    add_scenario_flags(p, KNOBS)
    args = p.parse_args(["--preset", str(path), f"--{knob}={text}"])
    try:
        scenario_from_args(args)
    except UsageError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(("--loss", "--connections"))
        return False
    return True


def _tcp_pair_dialog(tmp_path: Path, knob: str, text: str) -> bool:
    """The pair's dashboard link dialog: its text, then the session's check of its link."""
    from prfaas_tui.session import Session

    path = tmp_path / "pair.toml"
    path.write_text(PAIR_25MS, encoding="utf-8")
    session = Session(load(path), post_tick=lambda tick: None, post_error=lambda *a: None)
    try:
        session.check_element("link", "prfaas->pd",
                              **parse_knobs("link", "prfaas->pd", f"{knob}={text}"))
    except KnobError as exc:
        assert "\n" not in str(exc) and "prfaas->pd" in str(exc)
        return False
    return True


def _tcp_topology_view(knob: str, text: str) -> bool:
    topo = load("two-regions", topology=True).declared_topology
    try:
        check_element(topo, "link", "hub->west", **parse_knobs("link", "hub->west",
                                                                f"{knob}={text}"))
    except KnobError as exc:
        assert "\n" not in str(exc) and "hub->west" in str(exc)
        return False
    return True


@pytest.mark.parametrize("knob, text, toml, accepted", TCP_CASES)
def test_a_links_tcp_gets_the_same_verdict_on_every_surface(tmp_path, knob, text, toml,
                                                            accepted):
    verdicts = {
        "cli": _tcp_cli(tmp_path, knob, text),
        "pair preset": _preset(tmp_path, PAIR_25MS, PAIR_LINE,
                               f"{PAIR_LINE}\n{knob} = {toml}"),
        "topology preset": _preset(tmp_path, TOPOLOGY, WEST, f"{WEST}\n{knob} = {toml}",
                                   topology=True),
        "pair dashboard": _tcp_pair_dialog(tmp_path, knob, text),
        "topology view": _tcp_topology_view(knob, text),
    }
    assert verdicts == dict.fromkeys(verdicts, accepted)


# -- the TPOT SLO of a decode from the cards: its range, and the step a batch of 1 must meet --------
TPOT_CASES = [  # (the value as typed, accepted?)
    ("25 ms", True), ("50ms", True), ("60 s", True), ("0.5", True),
    ("0", False), ("-5 ms", False), ("61 s", False), ("nan", False), ("fast", False),
    ("1 us", False),  # below one step at batch 1: the cards' own floor
]


@pytest.fixture(scope="module")
def cards_preset(tmp_path_factory) -> Path:
    from prfaas_tui.cli import main

    out = tmp_path_factory.mktemp("tpot") / "p.toml"
    configs = Path(__file__).parent / "configs"
    assert main(["new", "--model", str(configs / "qwen3-30b-a3b.json"), "--decode", "cards",
                 "--out", str(out), "--force", "--json"]) == 0
    return out


@pytest.fixture(scope="module")
def cards_topology(cards_preset):
    import tomllib

    from test_decode_from_cards import _two_regions

    from emulator.scenario.presets import from_dict
    from emulator.sim.engine import Emulation

    data = _two_regions(tomllib.loads(cards_preset.read_text()))
    sc = from_dict(data, cards_preset.parent / "t.toml", topology=True)
    with Emulation(sc, rate=1.0, duration=60, seed=1) as emu:
        yield data, emu


def _toml(text: str) -> str:
    return f'"{text}"' if text != "0.5" else text


@pytest.mark.parametrize("text, accepted", TPOT_CASES)
def test_the_tpot_gets_the_same_verdict_everywhere(tmp_path, capsys, cards_preset,
                                                   cards_topology, text, accepted):
    import tomllib

    import tomlkit

    from emulator.scenario.presets import from_dict
    from prfaas_tui.cli import main
    from prfaas_tui.live import ElementChange
    from prfaas_tui.live import check_element as live_check

    def loads(data: dict, **kw) -> bool:
        try:
            from_dict(data, tmp_path / "p.toml", **kw)
        except PresetError as exc:
            assert "\n" not in str(exc) and "decode.tpot" in str(exc)
            return False
        return True

    pair = tomllib.loads(cards_preset.read_text())
    topo, emu = cards_topology
    cli = main(["solve", "--preset", str(cards_preset), f"--tpot={text}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert cli == 0 or (len(err) == 1 and "--tpot" in err[0]), err
    settings = Settings.initial(load(cards_preset))
    try:
        settings.apply(**KNOB_BY_KEY["tpot"].parse(settings, text))
        dashboard = True
    except Refused as exc:
        assert "\n" not in str(exc)
        dashboard = False
    typed = text.replace(" ", "")  # the region editor's parts are split on spaces
    try:
        live_check(emu, ElementChange.of("region", "west", parse_knobs("region", "west",
                                                                       f"tpot={typed}")))
        view = True
    except KnobError as exc:
        assert "\n" not in str(exc) and "region west" in str(exc)
        view = False
    value = tomlkit.parse(f"x = {_toml(text)}")["x"]
    verdicts = {
        "cli": cli == 0,
        "pair preset": loads({**pair, "decode": {**pair["decode"], "tpot": value}}),
        "topology preset": loads({**topo, "decode": {**topo["decode"], "tpot": value}},
                                 topology=True),
        "dashboard": dashboard,
        "topology view": view,
    }
    assert verdicts == dict.fromkeys(verdicts, accepted)


def test_the_tpot_of_a_constant_decode_is_refused_everywhere(tmp_path, capsys, settings):
    from prfaas_tui.cli import main

    assert main(["solve", "--preset", "paper-case-study", "--tpot", "30ms"]) == 2
    assert 'set [decode] from = "cards"' in capsys.readouterr().err
    assert not _preset(tmp_path, PAIR, "[decode]\n", '[decode]\ntpot = "30 ms"\n')
    with pytest.raises(Refused, match='set \\[decode\\] from = "cards"'):
        settings.apply(**KNOB_BY_KEY["tpot"].parse(settings, "30 ms"))
