"""A topology region replaying its own trace: its arrivals in the trace's order and rhythm at its
share of the offered rate, its input and output lengths, its length mix in the model, and the
one-line refusals of what cannot go with it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from emulator.scenario.presets import PresetError, from_dict
from emulator.scenario.reader import read_toml
from emulator.sim.engine import Emulation
from prfaas_tui.cli import main as cli

TOY2 = Path(__file__).parent / "data" / "toy-two-regions.toml"


def mooncake(path: Path, n: int = 120, seed: int = 0) -> tuple[list[int], list[int]]:
    """A Mooncake-format trace of `n` requests over about a minute: (inputs, outputs)."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(500.0, n)).astype(int)  # ms
    ins = rng.choice([1024, 4096, 30000], n).tolist()
    outs = rng.integers(20, 200, n).tolist()
    path.write_text("".join(json.dumps({"timestamp": int(a), "input_length": i,
                                        "output_length": o, "hash_ids": []}) + "\n"
                            for a, i, o in zip(t, ins, outs, strict=True)))
    return ins, outs


def preset(tmp_path: Path, replay: str | None = "west.jsonl", **workload) -> tuple[dict, Path]:
    data = read_toml(TOY2)
    if replay is not None:
        data["region"][1]["workload"] = {"replay": replay, **workload}
    path = tmp_path / "toy-replay.toml"
    return data, path


def load(tmp_path: Path, **kw):
    data, path = preset(tmp_path, **kw)
    return from_dict(data, path, topology=True)


def test_the_region_replays_every_request_of_its_trace_with_its_lengths(tmp_path):
    ins, outs = mooncake(tmp_path / "west.jsonl")
    sc = load(tmp_path)
    west = sc.declared_topology.regions[1]
    assert west.replay == str(tmp_path / "west.jsonl")
    assert west.lengths.mean == pytest.approx(np.mean(ins))  # the model sees its inputs' mix
    assert sc.declared_topology.regions[0].replay is None
    seen = []
    with Emulation(sc, rate=3.0, duration=3600, routing="threshold") as emu:
        emu.regions["west"].on_arrive = lambda req: seen.append((req.length, req.out_len))
        out = emu.run().json
    assert out["lost"] == 0
    assert seen == list(zip(map(float, ins), outs, strict=True))  # in order, every one
    west_books = out["regions"]["west"]
    assert west_books["arrived"] == len(ins) == west_books["completed"]
    assert out["regions"]["east"]["arrived"] > len(ins)  # Poisson for the hour


def test_the_trace_keeps_its_rhythm_at_the_regions_share_of_the_rate(tmp_path):
    """Gaps are the trace's, rescaled: the region's requests span the trace's length x its
    native rate / the region's rate."""
    mooncake(tmp_path / "west.jsonl")
    sc = load(tmp_path)
    times = {}
    for rate in (2.0, 4.0):
        stamps = []
        with Emulation(sc, rate=rate, duration=3600, routing="threshold") as emu:
            emu.regions["west"].on_arrive = lambda req, s=stamps: s.append(req.arrival)
            emu.run()
        times[rate] = np.diff(stamps)
    assert np.allclose(times[2.0], 2 * times[4.0])  # twice the rate, half every gap


def test_a_replay_run_is_deterministic(tmp_path):
    mooncake(tmp_path / "west.jsonl")
    sc = load(tmp_path)
    outs = []
    for _ in range(2):
        with Emulation(sc, rate=3.0, duration=600, routing="best-bandwidth", seed=5) as emu:
            out = emu.run().to_json()
        out.pop("timing")
        outs.append(out)
    assert outs[0] == outs[1]


@pytest.mark.parametrize(("kw", "key", "msg"), [
    ({"replay": "missing.jsonl"}, "region[1].workload.replay", "no such file"),
    ({"replay": "toy-replay.toml"}, "region[1].workload.replay", "expected a Mooncake"),
    ({"lengths": {"kind": "discrete", "values": ["1K"], "probs": [1.0]}},
     "region[1].workload.lengths", "brings its own lengths"),
])
def test_a_bad_replay_is_one_line_naming_its_key(tmp_path, kw, key, msg):
    mooncake(tmp_path / "west.jsonl")
    (tmp_path / "toy-replay.toml").write_text("")
    with pytest.raises(PresetError, match=rf"{re.escape(key)}: .*{msg}"):
        load(tmp_path, **({"replay": "west.jsonl"} | kw))


def test_sessions_and_a_replay_are_refused_in_one_line(tmp_path, capsys):
    mooncake(tmp_path / "west.jsonl")
    text = TOY2.read_text().replace(
        "[workload]", '[workload]\nsessions = { rate = 0.5, turns = 2, think_time = "20 s", '
        'system_prompt = "1K", user_tokens = { kind = "discrete", values = ["1K"], '
        'probs = [1.0] } }', 1)
    i = text.index("[[region]]", text.index("[[region]]") + 1)
    j = text.index("\n[[", i + 1)
    text = text[:j] + '\n[region.workload]\nreplay = "west.jsonl"\n' + text[j:]
    path = tmp_path / "replay-sessions.toml"
    path.write_text(text)
    assert cli(["run", "--preset", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "workload.sessions" in err[0] and "replays a trace" in err[0]


def test_mooncake_hash_ids_need_the_traces_block_size_for_the_caches(tmp_path):
    path = tmp_path / "west.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": n, "output_length": 10,
                                        "hash_ids": [1, 2]}) + "\n"
                            for i, n in enumerate((1024, 30000))))
    data, where = preset(tmp_path)
    data["cache"] = {"capacity": "200 GB", "block_tokens": 256}
    sc = from_dict(data, where, topology=True)
    with pytest.raises(Exception, match="block_tokens = 512"):
        Emulation(sc, rate=1.0, duration=60, routing="threshold")


def test_a_burstgpt_trace_replays_as_it_was_read(tmp_path):
    """The preset's reader and the emulator's are one: any format the preset accepts runs."""
    rows = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    rows += [f"{0.7 * i:.3f},ChatGPT,{n},{40 + i},{n + 40 + i},Conversation log"
             for i, n in enumerate([1024, 30000, 4096] * 20)]
    (tmp_path / "west.csv").write_text("\n".join(rows) + "\n")
    sc = load(tmp_path, replay="west.csv")
    seen = []
    with Emulation(sc, rate=3.0, duration=3600, routing="threshold") as emu:
        emu.regions["west"].on_arrive = lambda req: seen.append(req.out_len)
        out = emu.run().json
    assert out["lost"] == 0 and seen == [40 + i for i in range(60)]
