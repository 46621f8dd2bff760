"""Preset keys of the prefix cache, sessions and the prefill backend: read strictly, one line
naming the key on every mistake."""

from __future__ import annotations

import pytest
from test_sim_cache_support import SESSIONS, cache_preset

from emulator.scenario.cache import SessionWorkload
from emulator.scenario.reader import PresetError


def test_cache_keys(tmp_path):
    sc = cache_preset(tmp_path, cache='capacity = "2 TiB"\npd_capacity = "500 GB"\n'
                      'routing = "scarce"\nscarce_at = 0.9\nabundant_at = 0.5\n'
                      'scarcity_window = "10 s"')
    c = sc.sim.cache
    assert (c.prfaas_capacity, c.pd_capacity) == (2 * 2**40, 500e9)
    assert (c.routing, c.scarce_at, c.abundant_at, c.scarcity_window) == ("scarce", 0.9, 0.5, 10)
    assert c.block_tokens == 512
    off = cache_preset(tmp_path, "off", cache='enabled = false\ncapacity = "1 TiB"')
    assert off.sim.cache is None
    assert cache_preset(tmp_path, "none", cache=None).sim.cache is None


@pytest.mark.parametrize("cache, key, message", [
    ('routing = "auto"', "cache.capacity", "missing"),
    ('prfaas_capacity = "1 TiB"', "cache.capacity", "missing"),
    ('capacity = "1 TiB"\nscarce_at = 0.6', "cache.abundant_at", "below scarce_at"),
    ('capacity = "1 TiB"\nrouting = "sometimes"', "cache.routing", "must be one of"),
    ('capacity = "1 TiB"\nblocks = 3', "cache.blocks", "unknown key"),
    ('capacity = "lots"', "cache.capacity", "expected a size"),
])
def test_bad_cache_keys(tmp_path, cache, key, message):
    with pytest.raises(PresetError, match=message) as err:
        cache_preset(tmp_path, cache=cache)
    assert err.value.key == key


def test_session_keys(tmp_path):
    sc = cache_preset(tmp_path)
    work = sc.sim.sessions
    assert isinstance(work, SessionWorkload)
    assert (work.session_rate, work.mean_turns, work.think_time) == (0.1, 4.0, 20.0)
    assert work.system_prompt_blocks == 2 and work.block_tokens == 512
    assert work.first_turn is sc.system.lengths  # default: the preset's lengths
    assert work.output_tokens.mean == pytest.approx(100)  # default: decode.l_out
    small = cache_preset(tmp_path, "b256", cache='capacity = "1 TiB"\nblock_tokens = 256')
    assert small.sim.sessions.block_tokens == 256 and small.sim.sessions.system_prompt_blocks == 4


@pytest.mark.parametrize("workload, message", [
    ('sessions = { rate = 0.1 }', "user_tokens"),
    ('sessions = { user_tokens = { kind = "discrete", values = [100], probs = [1] } }', "rate"),
    (SESSIONS + '\nreplay = "x.jsonl"', "sessions bring their own arrivals"),
    (SESSIONS + '\narrival = "gamma"', "sessions bring their own arrivals"),
    (SESSIONS.replace("turns = 4", "turns = 0.5"), "turns"),
])
def test_bad_session_keys(tmp_path, workload, message):
    with pytest.raises(PresetError, match=message):
        cache_preset(tmp_path, workload=workload)


def test_prefill_backend_keys(tmp_path):
    sc = cache_preset(tmp_path, extra='[prefill]\nbackend = "torch"\nmodel = "dense-tiny"\n'
                      'device = "cpu"\nlength_scale = 0.05\nstages = ["prfaas"]')
    p = sc.sim.prefill
    assert (p.model, p.device, p.length_scale, p.stages) == ("dense-tiny", "cpu", 0.05,
                                                             ("prfaas",))
    assert cache_preset(tmp_path, "prof", extra='[prefill]\nbackend = "profile"').sim.prefill is None
    for extra, message in (('model = "huge"', "unknown model"), ('stages = ["pd-d"]', "stages"),
                           ('device = "tpu"', "cpu, cuda"), ("length_scale = 0", "> 0")):
        with pytest.raises(PresetError, match=message):
            cache_preset(tmp_path, "bad", extra=f'[prefill]\nbackend = "torch"\n{extra}')
