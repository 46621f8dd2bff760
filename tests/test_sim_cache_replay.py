"""Mooncake replay with hash_ids through the prefix cache: a trace the test writes, the CLI, and
the real conversation trace when it sits beside the project."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from test_sim_cache_support import cache_preset, write_mooncake

from emulator.sim.arrivals.sessions import block_reuse, from_trace
from emulator.sim.engine import Emulation
from emulator.traces import read_trace
from prfaas_tui import cli
from tests import shared_data
from tests.shared_data import shared_file

MOONCAKE = shared_file(*shared_data.MOONCAKE)  # None when the shared traces are absent


def test_a_written_mooncake_trace_replays_with_hits(tmp_path):
    trace = write_mooncake(tmp_path / "conv.jsonl")
    sc = cache_preset(tmp_path, workload='replay = "conv.jsonl"')
    with Emulation(sc) as emu:
        result = emu.run()
    acc = result.accounting
    assert acc.arrived == len(read_trace(trace)) and acc.lost == 0
    assert acc.arrived == acc.completed + acc.in_flight + acc.rejected_total
    cache = result.to_json()["cache"]
    pd, pf = cache["clusters"]["pd"], cache["clusters"]["prfaas"]
    assert pd["hits"] + pf["hits"] > acc.arrived // 2  # the system prompt at least
    assert pd["token_hit_rate"] > 0.2
    assert cache["prefill_tokens"]["saved"] <= block_reuse(from_trace(read_trace(trace))) + 1e-9


def test_replay_from_the_cli_reports_the_cache(tmp_path, capsys):
    trace = write_mooncake(tmp_path / "conv.jsonl", conversations=10)
    path = tmp_path / "cache-toy.toml"
    cache_preset(tmp_path)  # writes the preset
    assert cli.main(["run", "--preset", str(path), "--trace", str(trace), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cache"]["clusters"]["pd"]["hits"] > 0
    assert out["accounting"]["lost"] == 0
    assert cli.main(["run", "--preset", "toy", "--duration", "60", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cache"] is None


def test_mooncake_blocks_need_512_token_cache_blocks(tmp_path):
    write_mooncake(tmp_path / "conv.jsonl", conversations=2)
    sc = cache_preset(tmp_path, workload='replay = "conv.jsonl"',
                      cache='capacity = "1 TiB"\nblock_tokens = 256')
    with pytest.raises(ValueError, match="block_tokens must be 512"):
        Emulation(sc)


@pytest.mark.skipif(MOONCAKE is None, reason="the shared Mooncake trace is absent (set PRFAAS_SHARED)")
@pytest.mark.parametrize("routing", ["scarce", "abundant"])
def test_the_real_mooncake_trace_hits(tmp_path, routing):
    sc = cache_preset(tmp_path, workload=f'replay = "{MOONCAKE}"',
                      cache=f'capacity = "2 TiB"\nrouting = "{routing}"', bandwidth="100 Gbps")
    sc = sc.with_knobs(t=16 * 1024)
    sc = replace(sc, sim=replace(sc.sim, max_queue=500))  # a small deployment: bound queues
    trace = read_trace(MOONCAKE)
    with Emulation(sc, trace=trace) as emu:
        result = emu.run()
    cache = result.to_json()["cache"]
    assert result.accounting.lost == 0
    assert cache["clusters"]["pd"]["token_hit_rate"] > 0.2
    assert 0.1 < cache["prefill_tokens"]["saved"] <= block_reuse(from_trace(trace)) + 1e-9
    moved = cache["clusters"]["prfaas"]["cache_transfers"]
    assert (moved > 0) == (routing == "abundant")
