"""The torch prefill backend inside the emulator: every prefill runs the model and its measured
time is the service time (its KV the flow's size); a profile written by the real profiler loads
into a preset that `solve` and `run` use; without torch, one line with the install hint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_sim_cache_support import cache_preset, preset_text

from emulator.sim.engine import Emulation
from emulator.torch_prefill import TORCH_HINT
from prfaas_tui import cli

ROOT = Path(__file__).resolve().parents[1]
TORCH = '[prefill]\nbackend = "torch"\nmodel = "hybrid-tiny"\ndevice = "cpu"\nlength_scale = {}\n'
ONE_SHOT = 'arrival = "poisson"\nrate = 1.0'

TINY_PRESET = """name = "torch-tiny"
[profiles.tiny]
file = "tiny.toml"

[deployment]
prfaas_profile = "tiny"
local_profile = "tiny"
n_prfaas = 1
local_pool = 2
n_p = 1
n_d = 1
threshold = 512
bandwidth = "1 Gbps"

[decode]
t_decode = "5 ms"
bs_max = 8
l_out = 8

[workload]
lengths = { kind = "discrete", values = [256, 1024], probs = [0.5, 0.5] }

[homogeneous]
pool = 3
profile = "tiny"

[emulator]
duration = "3 s"
seed = 1
"""

NO_TORCH = r"""
import sys
sys.modules["torch"] = None  # as if torch were not installed
from prfaas_tui import cli
assert cli.main(["solve", "--preset", sys.argv[1], "--json"]) == 0
print("rc:", cli.main(["run", "--preset", sys.argv[1], "--duration", "5"]))
print("rc:", cli.main(["run", "--preset", "toy", "--backend", "torch", "--duration", "5"]))
"""


def test_without_torch_selecting_the_backend_prints_the_hint(tmp_path):
    preset = tmp_path / "torch.toml"
    preset.write_text(preset_text(cache=None, workload=ONE_SHOT, extra=TORCH.format(0.01)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.run([sys.executable, "-c", NO_TORCH, str(preset)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("rc: 2") == 2
    assert proc.stderr == f"prfaas-tui run: error: {TORCH_HINT}\n" * 2


@pytest.mark.slow
@pytest.mark.torch
def test_every_prefill_runs_the_model_and_sets_the_service_time(tmp_path):
    pytest.importorskip("torch")
    sc = cache_preset(tmp_path, cache=None, workload=ONE_SHOT, duration="20 s",
                      extra=TORCH.format(0.01))
    with Emulation(sc) as emu:
        measured, opened = [], []
        measure, link_open, rdma_open = emu.torch.backend.measure, emu.link.open, emu.rdma.open

        def spy_measure(n):
            measured.append(measure(n))
            return measured[-1]

        def spy(open_):
            return lambda size, prod_time, *rest: (opened.append((size, prod_time)),
                                                   open_(size, prod_time, *rest))[1]

        emu.torch.backend.measure = spy_measure
        emu.link.open, emu.rdma.open = spy(emu.link.open), spy(emu.rdma.open)
        emu.run_until(7.25)
        assert emu.now == 7.25  # the model ran inside callbacks: virtual time stays exact
        result = emu.run()
    assert link_open and rdma_open
    acc = result.accounting
    assert acc.lost == 0 and acc.arrived == acc.completed + acc.in_flight
    # (measured times vary with the machine's load: count on the 4 instances, not on speed)
    assert len(measured) == emu.prfaas.started + emu.pdp.started == len(opened) >= 4
    for m, (size, prod_time) in zip(measured, opened, strict=True):
        assert prod_time == m.seconds  # service time = measured (scaled) wall time
        assert size == pytest.approx(m.kv_bytes)  # flow = measured KV (no cache: whole prompt)
        assert m.tokens_run == max(1, round(m.length_tokens * 0.01))
    assert emu.prfaas.work_started + emu.pdp.work_started == pytest.approx(
        sum(m.seconds for m in measured))
    assert result.to_json()["prefill_backend"]["prefills"] == len(measured)


@pytest.mark.slow
@pytest.mark.torch
def test_torch_backend_with_the_prefix_cache(tmp_path):
    pytest.importorskip("torch")
    extra = TORCH.format(0.01) + 'stages = ["prfaas"]\n'
    sc = cache_preset(tmp_path, duration="150 s", extra=extra)
    with Emulation(sc) as emu:
        result = emu.run()
    out = result.to_json()
    assert result.accounting.lost == 0
    assert out["prefill_backend"]["prefills"] == emu.prfaas.started > 0
    assert out["cache"]["prefill_tokens"]["saved"] > 0


@pytest.mark.slow
@pytest.mark.torch
def test_a_measured_profile_feeds_solve_and_a_torch_run(tmp_path, capsys):
    pytest.importorskip("torch")
    from emulator.torch_prefill.profiling import profile_model, write_profile

    write_profile(profile_model("hybrid-tiny", [256, 1024], device="cpu", repeats=1, warmup=1),
                  tmp_path / "tiny.toml")
    preset = tmp_path / "torch-tiny.toml"
    preset.write_text(TINY_PRESET)
    assert cli.main(["solve", "--preset", str(preset), "--json"]) == 0
    solved = json.loads(capsys.readouterr().out)
    assert solved["operating_point"]["lambda_max"] > 0
    assert set(solved["paradigms"]) >= {"prfaas-pd", "homogeneous", "naive-heterogeneous"}
    rc = cli.main(["run", "--preset", str(preset), "--rate", "3", "--backend", "torch",
                   "--torch-model", "hybrid-tiny", "--length-scale", "0.5",
                   "--torch-device", "cpu", "--json"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    out = json.loads(cap.out)
    acc = out["accounting"]
    assert acc["arrived"] == acc["completed"] + acc["in_flight"] + acc["rejected"]
    assert acc["lost"] == 0 and acc["arrived"] > 0
    assert out["prefill_backend"]["model"] == "hybrid-tiny"
    assert out["prefill_backend"]["length_scale"] == 0.5
    assert out["prefill_backend"]["prefills"] > 0
