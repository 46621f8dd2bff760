"""Queueing closed forms: the M/D/1 mean wait (Pollaczek-Khinchine) and Little's law."""

import tomllib

import pytest

from emulator.scenario.presets import from_dict, load
from emulator.sim.engine import Emulation

ONE_SERVER = """
name = "md1"
[profiles.unit]
prefill_time = { a = "1 s" }
kv_size = { a = "100 MB" }
[deployment]
n_prfaas = 0
local_pool = 2
n_p = 1
n_d = 1
threshold = 1000
bandwidth = "100 Gbps"
[decode]
t_decode = "1 ms"
bs_max = 100000
l_out = 2
[workload]
lengths = { kind = "discrete", values = [1000], probs = [1.0] }
[emulator]
sample_interval = "10 s"
window = "60 s"
"""


def test_md1_mean_wait_matches_pollaczek_khinchine():
    sc = from_dict(tomllib.loads(ONE_SERVER))
    rho, service = 0.5, 1.0
    with Emulation(sc, rate=rho / service, duration=40_000, seed=1) as emu:
        emu.run()
        st = emu.pdp
        mean_wait = st.wait_sum / st.started
    assert st.started > 19_000
    assert mean_wait == pytest.approx(rho * service / (2 * (1 - rho)), rel=0.05)


@pytest.mark.parametrize("bandwidth", [None, 500e6])  # compute-bound, then link-bound PrfaaS
def test_littles_law_per_stage(bandwidth):
    sc = load("toy")
    if bandwidth:
        sc = sc.with_knobs(bandwidth=bandwidth)
    with Emulation(sc, load=0.9, duration=6000, seed=2) as emu:
        j = emu.run().json
    for name, st in j["stages"].items():
        lam = st["completed"] / j["simulated_seconds"]
        assert st["mean_in_stage"] == pytest.approx(lam * st["mean_time_in_stage"], rel=0.02), name
