"""Presets and traces for the prefix-cache tests (no tests here): a small deployment with a
`[cache]` section and a workload with reuse, written to a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

from emulator.scenario.presets import load
from emulator.scenario.scenario import Scenario

SESSIONS = ('sessions = { rate = 0.1, turns = 4, think_time = "20 s", system_prompt = "1K", '
            'user_tokens = { kind = "lognormal", mu = 6.5, sigma = 0.8, lo = 16, hi = "8K" } }')
CACHE = 'capacity = "1 TiB"'

PRESET = """name = "cache-toy"
mode = "paper"

[profiles.fast]
prefill_time = {{ lengths = ["1K", "32K"], seconds = [0.5, 2.0] }}
kv_size = {{ lengths = ["1K", "32K"], bytes = ["100 MB", "800 MB"] }}

[deployment]
n_prfaas = 2
local_pool = 4
n_p = 2
n_d = 2
threshold = "8K"
bandwidth = "{bandwidth}"

[decode]
t_decode = "25 ms"
bs_max = 16
l_out = 100

[workload]
lengths = {{ kind = "discrete", values = ["1K", "32K"], probs = [0.5, 0.5] }}
{workload}

[emulator]
duration = "{duration}"
seed = 1
{extra}
"""


def preset_text(*, cache: str | None = CACHE, workload: str = SESSIONS,
                bandwidth: str = "1000 MB/s", duration: str = "10 min", extra: str = "") -> str:
    if cache is not None:
        extra = f"[cache]\n{cache}\n{extra}"
    return PRESET.format(bandwidth=bandwidth, workload=workload, duration=duration, extra=extra)


def cache_preset(tmp_path: Path, name: str = "cache-toy", **kw) -> Scenario:
    path = tmp_path / f"{name}.toml"
    path.write_text(preset_text(**kw), encoding="utf-8")
    return load(path)


def write_mooncake(path: Path, conversations: int = 40, turns: int = 4, gap_ms: int = 1500,
                   system_blocks: int = 2) -> Path:
    """A Mooncake-format trace: conversations whose turns extend the previous prompt (same
    leading hash_ids), all behind a shared system prompt of `system_blocks` blocks."""
    rows, next_id = [], system_blocks
    for c in range(conversations):
        ids = list(range(system_blocks))
        for k in range(turns):
            grow = 3 + (c * 7 + k * 5) % 11  # new blocks this turn
            ids += range(next_id, next_id + grow)
            next_id += grow
            length = 512 * len(ids) - 100  # the last block partial
            rows.append({"timestamp": (c * turns + k) * gap_ms // 2 + k * gap_ms * 20,
                         "input_length": length, "output_length": 50 + c % 7,
                         "hash_ids": list(ids)})
    rows.sort(key=lambda r: r["timestamp"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
