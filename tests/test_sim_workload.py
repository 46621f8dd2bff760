"""Arrival processes: Poisson, Gamma with a given CV and on/off bursts keep their mean rate and
shape; lengths come from the model's distribution; draws are seeded."""

import numpy as np
import pytest

from emulator.scenario.presets import load, presets_dir
from emulator.sim.arrivals.workload import SyntheticSource, Workload
from emulator.sim.core.loop import VirtualTimeLoop


def arrivals(kind="poisson", cv=1.0, rate=2.0, horizon=20_000.0, seed=0, bursts=None):
    sc = load("toy")
    loop = VirtualTimeLoop()
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]
    src = SyntheticSource(rngs[:3], kind, cv, sc.system.lengths, sc.system.decode.l_out, None)
    times, lengths = [], []
    wl = Workload(loop, lambda length, out, h: (times.append(loop.time()), lengths.append(length)),
                  src, rate)
    wl.start()
    if bursts:
        wl.start_bursts(rngs[3], *bursts)
    loop.run_until(horizon)
    return np.array(times), np.array(lengths)


@pytest.mark.parametrize("kind, cv", [("poisson", 1.0), ("gamma", 0.5), ("gamma", 3.0)])
def test_renewal_arrivals_have_their_rate_and_cv(kind, cv):
    t, _ = arrivals(kind, cv)
    gaps = np.diff(t)
    assert len(t) / 20_000 == pytest.approx(2.0, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.06)


def test_on_off_bursts_keep_the_mean_rate_and_are_bursty():
    t, _ = arrivals("onoff", bursts=(60.0, 120.0, 0.0), horizon=200_000)
    assert len(t) / 200_000 == pytest.approx(2.0, rel=0.05)
    counts = np.bincount((t // 10).astype(int))
    assert counts.var() / counts.mean() > 5  # Poisson would give 1


def test_lengths_follow_the_model_distribution_and_seeds_repeat():
    t1, l1 = arrivals(seed=4, horizon=5000)
    t2, l2 = arrivals(seed=4, horizon=5000)
    assert np.array_equal(t1, t2) and np.array_equal(l1, l2)
    assert set(np.unique(l1)) == {1024.0, 32768.0}
    assert (l1 == 32768).mean() == pytest.approx(0.5, abs=0.03)
    t3, _ = arrivals(seed=5, horizon=5000)
    assert not np.array_equal(t1[:50], t3[:50])


def test_bad_arrival_keys_name_the_key(tmp_path):
    from emulator.scenario.reader import PresetError

    text = (presets_dir() / "toy.toml").read_text()
    path = tmp_path / "x.toml"
    path.write_text(text.replace('arrival = "poisson"', 'arrival = "bursty"'))
    with pytest.raises(PresetError, match=r"x.toml: workload.arrival: must be one of"):
        load(str(path))
    path.write_text(text.replace('arrival = "poisson"', 'arrival = "onoff"\noff_level = 2'))
    with pytest.raises(PresetError, match=r"workload.off_level: must be between 0 and 1"):
        load(str(path))
