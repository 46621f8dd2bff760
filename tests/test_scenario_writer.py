"""The preset writer: a written preset loads back to the same scenario, for any valid knobs."""

import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulator.model import evaluate
from emulator.paradigm import Paradigm
from emulator.scenario.presets import list_presets, load
from emulator.scenario.reader import read_toml
from emulator.scenario.topology import declares_topology
from emulator.scenario.writer import write_preset

TOY = load("toy")
LO, HI = TOY.system.lengths.support
POOL = TOY.system.local_pool


def same_scenario(a, b) -> bool:
    """Equal as far as anything downstream can tell: knobs, emulator settings, the model at the
    knobs and the hardware curves on a grid (profiles compare by identity)."""
    grid = np.linspace(1.0, HI, 17)
    curves = all(np.allclose(pa.t_prefill(grid), pb.t_prefill(grid))
                 and np.allclose(pa.s_kv(grid), pb.s_kv(grid))
                 for pa, pb in zip(a.profiles.values(), b.profiles.values(), strict=True))
    return (a.controls == b.controls and a.sim == b.sim and a.mode == b.mode and curves
            and evaluate(a.system, a.knobs, a.mode).to_dict()
            == evaluate(b.system, b.knobs, b.mode).to_dict())


@st.composite
def knobs(draw):
    n_p = draw(st.integers(0, POOL - 1))
    return {"t": draw(st.floats(0, HI)), "n_p": n_p, "n_d": draw(st.integers(1, POOL - n_p)),
            "n_prfaas": draw(st.integers(0, 64)),
            "bandwidth": draw(st.floats(1.25e5, 1e14, allow_subnormal=False)),  # 1 Mbps up
            "rate": draw(st.floats(1e-3, 1e4))}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=knobs())
def test_written_preset_loads_back_equal(tmp_path, k):
    rate = k.pop("rate")
    sc = TOY.with_knobs(**k)
    back = write_preset(sc, tmp_path / "saved.toml", rate=rate)
    assert back.sim.rate == rate
    assert same_scenario(back, replace(sc, sim=replace(sc.sim, rate=rate)))
    assert same_scenario(load(tmp_path / "saved.toml"), back)


PROFILE = """[profile]
name = "fast"
[profile.prefill_time]
lengths = ["1K", "32K"]
seconds = [0.5, 2.0]
[profile.kv_size]
lengths = ["1K", "32K"]
bytes = ["100 MB", "800 MB"]
"""


def test_header_names_the_paradigm_and_file_refs_follow_the_file(tmp_path):
    src = tmp_path / "src"
    (src / "hw").mkdir(parents=True)
    (src / "hw" / "fast.toml").write_text(PROFILE)
    text = (Path(TOY.path)).read_text()
    head, rest = text.split("[profiles.slow]", 1)
    start = head.index("[profiles.fast]")
    (src / "mine.toml").write_text(head[:start] + '[profiles.fast]\nfile = "hw/fast.toml"\n\n'
                                   + "[profiles.slow]" + rest)
    sc = load(src / "mine.toml")
    dest = tmp_path / "deep" / "er"
    dest.mkdir(parents=True)
    back = write_preset(sc, dest / "p.toml", paradigm=Paradigm.HOMOGENEOUS)
    written = (dest / "p.toml").read_text()
    assert written.startswith("# saved by prfaas-tui from preset 'toy' "
                              "(paradigm homogeneous, not a preset key)")
    data = tomllib.loads(written)
    assert data["name"] == "p" and "paradigm" not in data
    assert data["profiles"]["fast"]["file"] == "../../src/hw/fast.toml"
    assert same_scenario(back, sc)


def test_every_shipped_preset_round_trips(tmp_path):

    # save-as writes single-pair presets (the dashboard's); topology presets load for solve only
    pairs = [name for name, _, path in list_presets() if not declares_topology(read_toml(path))]
    assert {"toy", "paper-case-study", "dense-contrast"} <= set(pairs)
    for name in pairs:
        sc = load(name)
        assert same_scenario(write_preset(sc, tmp_path / f"{name}.toml"), sc), name
