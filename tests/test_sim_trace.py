"""Trace replay: Mooncake JSONL and Azure CSV files written here, replayed with their own
timing, lengths and output lengths, rescaled in time; malformed lines named by number."""

import json

import numpy as np
import pytest

from emulator.scenario.presets import load, presets_dir
from emulator.sim.engine import Emulation
from emulator.traces import TraceError
from tests.test_sim_cli import cli


def mooncake(path, n=200, seed=0, long_share=0.5):
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1000.0, n))  # ms, about 1 req/s
    lines = []
    for i in range(n):
        length = 32768 if rng.random() < long_share else 1024
        lines.append(json.dumps({"timestamp": int(t[i]), "input_length": length,
                                 "output_length": int(rng.integers(10, 200)),
                                 "hash_ids": list(range(length // 512))}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_mooncake_replay_serves_every_request_with_its_lengths(tmp_path):
    path = mooncake(tmp_path / "trace.jsonl")
    records = [json.loads(x) for x in path.read_text().splitlines()]
    seen = []
    with Emulation(load("toy"), trace=str(path), duration=2000) as emu:
        arrive = emu.region.arrive
        emu.workload.emit = lambda *a: (seen.append(a), arrive(*a))
        result = emu.run()
    acc = result.accounting
    assert acc.arrived == acc.completed == len(records)
    assert [(int(n), o) for n, o, _ in seen] == [(r["input_length"], r["output_length"])
                                                 for r in records]
    assert [h for _, _, h in seen] == [r["hash_ids"] for r in records]
    longs = sum(r["input_length"] > 8192 for r in records)
    assert result.json["stages"]["prfaas"]["entered"] == longs


def test_replay_keeps_the_trace_timing_and_rescales_it(tmp_path):
    path = mooncake(tmp_path / "trace.jsonl", n=50)
    last = json.loads(path.read_text().splitlines()[-1])["timestamp"] / 1000
    first = json.loads(path.read_text().splitlines()[0])["timestamp"] / 1000
    span = last - first
    with Emulation(load("toy"), trace=str(path), duration=1e5) as emu:
        native = emu.workload.rate
        emu.run_until(span * (1 - 1e-9))
        assert emu.arrived == 49
        emu.run_until(span)
        assert emu.arrived == 50
    with Emulation(load("toy"), trace=str(path), rate=2 * native, duration=1e5) as emu:
        emu.run_until(span / 2)
        assert emu.arrived == 50


def test_azure_csv_replay(tmp_path):
    path = tmp_path / "azure.csv"
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for i in range(30):
        rows.append(f"2023-11-16 18:15:{i:02d}.000000,{500 + 100 * i},{20 + i}")
    path.write_text("\n".join(rows) + "\n")
    with Emulation(load("toy"), trace=str(path), duration=3600) as emu:
        acc = emu.run().accounting
    assert acc.arrived == acc.completed == 30


def test_malformed_line_is_rejected_with_its_number(tmp_path, capsys):
    path = mooncake(tmp_path / "bad.jsonl", n=5)
    lines = path.read_text().splitlines()
    lines[2] = '{"timestamp": 5, "input_length": -3, "output_length": 1}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"bad.jsonl:3: input_length: expected a whole number in \[1, 16777216\], found -3"):
        Emulation(load("toy"), trace=str(path))
    rc, out, err = cli(capsys, "--preset", "toy", "--trace", str(path))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "bad.jsonl:3:" in err


def test_preset_replay_key(tmp_path):
    trace = mooncake(tmp_path / "t.jsonl", n=20)
    text = (presets_dir() / "toy.toml").read_text()
    preset = tmp_path / "replay.toml"
    preset.write_text(text.replace('arrival = "poisson"',
                                   f'arrival = "poisson"\nreplay = "{trace.name}"\n'
                                   'replay_time_scale = 0.5'))
    with Emulation(load(str(preset)), duration=2000) as emu:
        acc = emu.run().accounting
    assert acc.arrived == acc.completed == 20


def test_replay_without_duration_runs_to_the_last_arrival(tmp_path):
    path = mooncake(tmp_path / "trace.jsonl", n=80)
    for rate in (None, 3.0):
        with Emulation(load("toy"), trace=str(path), rate=rate) as emu:
            assert emu.run().accounting.arrived == 80
