"""Fuzzed inputs of the newer surfaces: model cards (config.json), GPU cards, BurstGPT and
mapped CSV traces, snapshot --press and plan records. Each property's oracle: the input is
accepted with every derived number finite and in range, or refused with one line naming the
file (or flag) in the surface's own error type; never another exception, a warning or a hang.
The default suite runs a few dozen inputs per surface; `-m fuzz --fuzz-budget N` runs N."""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulator.cards import CardError
from emulator.cards.gpu import read_gpu
from emulator.cards.model_card import read_config, shipped_dir
from emulator.cards.sources import card_profile
from emulator.planner.store import record_problem
from emulator.trace_formats import load_trace, trace_workload
from emulator.traces import MAX_SPAN_S, MAX_TOKENS, TraceError
from prfaas_tui.commands.snapshot import MAX_PRESS, parse_press
from prfaas_tui.errors import UsageError
from tests.fuzzing import (
    HOSTILE_VALUES,
    default_settings,
    fuzz_budget,
    long_profile,
    mutated_bytes,
)

CARDS = sorted(shipped_dir().glob("*.json"))
H200 = read_gpu(shipped_dir().parent / "gpus" / "h200.toml")
GPU_TEXT = (shipped_dir().parent / "gpus" / "h200.toml").read_text()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzzsurf")


def one_line(exc: Exception, where: str) -> None:
    msg = str(exc)
    assert "\n" not in msg and "\r" not in msg and msg.startswith(where), msg


# -- config.json -----------------------------------------------------------------------------------
def _paths(data: object, prefix: tuple = ()) -> list[tuple]:
    """Every key path of a JSON object (nested objects included)."""
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    return out


@st.composite
def almost_config(draw) -> bytes:
    data = json.loads(draw(st.sampled_from(CARDS)).read_text())
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)))
        node = data
        for k in path[:-1]:
            node = node[k]
        how = draw(st.sampled_from(["value", "drop", "big", "list"]))
        if how == "value":
            node[path[-1]] = draw(HOSTILE_VALUES)
        elif how == "drop":
            node.pop(path[-1])
        elif how == "big":
            node[path[-1]] = draw(st.sampled_from([10**400, -(10**30), 2**63, 0, 1]))
        else:
            node[path[-1]] = draw(st.lists(st.one_of(st.integers(-2, 200), HOSTILE_VALUES),
                                           max_size=6))
    text = json.dumps(data, allow_nan=True).encode()
    return draw(mutated_bytes(text)) if draw(st.integers(0, 3)) == 0 else text


def card_loads_or_one_line(path: Path, data: bytes, counter: list[int] | None = None) -> None:
    if counter is not None:
        counter[0] += 1
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (overflow, 0/0) fails the input
        try:
            card = read_config(path)
        except CardError as exc:
            one_line(exc, str(path))
            return
        for g in card.groups:
            assert g.count >= 0 and math.isfinite(g.kv_bytes_per_token) and g.kv_bytes_per_token >= 0
            assert math.isfinite(g.state_bytes) and g.state_bytes >= 0
        assert math.isfinite(card.active_params) and card.active_params > 0
        assert card.num_layers >= 1 and card.name.isprintable()
        lengths = np.array([1.0, 1024.0, 131072.0])
        assert np.all(np.isfinite(card.kv_bytes(lengths)))
        prefill_is_finite(card, H200)


def prefill_is_finite(card, gpu) -> None:
    """The card on 8 of the GPUs: a kernel time finite and > 0 at every length, or a setup
    the kernel model refuses in one line."""
    try:
        _, _, kernel = card_profile(card, gpu, 8)
    except CardError as exc:
        one_line(exc, "")
        return
    t = [kernel(n) for n in (1.0, 1024.0, 131072.0)]
    assert all(math.isfinite(x) and x > 0 for x in t), t


@default_settings(40)
@given(data=almost_config())
def test_almost_valid_configs_load_or_say_where(workdir, data):
    card_loads_or_one_line(workdir / "config.json", data)


# -- GPU cards ---------------------------------------------------------------------------------------
GPU_KEYS = ("bf16_tflops", "fp8_tflops", "hbm_tbps", "hbm_gb", "nic_gbps", "price_per_hour",
            "mfu", "attn_mfu", "overhead_s", "name", "description")


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    return '""'


@st.composite
def almost_gpu(draw) -> bytes:
    lines = GPU_TEXT.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(GPU_KEYS))
        i = next((n for n, line in enumerate(lines) if line.startswith(key + " ")), None)
        value = draw(st.one_of(HOSTILE_VALUES, st.text(max_size=12),
                               st.sampled_from([10**400, 1e-300, 5e-324, 0])))
        line = f"{key} = {toml_value(value)}" if draw(st.integers(0, 5)) else ""
        if i is None:
            lines.append(line)
        else:
            lines[i] = line
    text = ("\n".join(lines) + "\n").encode()
    return draw(mutated_bytes(text)) if draw(st.integers(0, 3)) == 0 else text


def gpu_loads_or_one_line(path: Path, data: bytes, counter: list[int] | None = None) -> None:
    if counter is not None:
        counter[0] += 1
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            gpu = read_gpu(path)
        except CardError as exc:
            one_line(exc, str(path))
            return
        assert gpu.name.isprintable() and math.isfinite(gpu.bf16_tflops) and gpu.bf16_tflops > 0
        prefill_is_finite(read_config(CARDS[0]), gpu)


@default_settings(40)
@given(data=almost_gpu())
def test_almost_valid_gpu_cards_load_or_say_where(workdir, data):
    gpu_loads_or_one_line(workdir / "gpu.toml", data)


# -- BurstGPT and mapped CSV -------------------------------------------------------------------------
BURST_HEAD = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"
CELL = st.one_of(st.integers(0, 2 * MAX_TOKENS).map(str), HOSTILE_VALUES.map(str),
                 st.text(max_size=5), st.just(""), st.floats(0, 1e7).map(repr))


@st.composite
def almost_burst(draw) -> bytes:
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        row = [repr(draw(st.floats(0, 1e6))), "ChatGPT", str(draw(st.integers(1, 5000))),
               str(draw(st.integers(0, 5000))), "0", "Conversation log"]
        if draw(st.booleans()):
            row[draw(st.sampled_from([0, 2, 3]))] = draw(CELL)
        rows.append(",".join(row))
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    text = draw(st.sampled_from(["", "\ufeff"])) + nl.join([BURST_HEAD, *rows]) + nl
    data = text.encode()
    return draw(mutated_bytes(data)) if draw(st.integers(0, 2)) == 0 else data


MAP = "time=ts,input=n_in,output=n_out"


@st.composite
def almost_mapped(draw) -> bytes:
    iso = draw(st.booleans())
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        t = draw(st.integers(0, 10**6))
        stamp = (f"2024-01-0{1 + t % 9}T{t % 24:02d}:00:00" + draw(st.sampled_from(["", "+02:00"]))
                 if iso else str(t))
        row = [stamp, str(draw(st.integers(1, 5000))), str(draw(st.integers(0, 5000)))]
        if draw(st.booleans()):
            row[draw(st.integers(0, 2))] = draw(CELL)
        rows.append(",".join(row))
    head = ",".join(draw(st.permutations(["ts", "n_in", "n_out"])))
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    text = draw(st.sampled_from(["", "\ufeff"])) + nl.join([head, *rows]) + nl
    data = text.encode()
    return draw(mutated_bytes(data)) if draw(st.integers(0, 2)) == 0 else data


def trace_loads_or_one_line(path: Path, data: bytes, columns: str | None,
                            counter: list[int] | None = None) -> None:
    if counter is not None:
        counter[0] += 1
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            tr = load_trace(path, columns)
        except TraceError as exc:
            one_line(exc, str(path))
            return
        text = data.decode("utf-8").removeprefix("\ufeff")  # it loaded: UTF-8
        rows = list(csv.reader(io.StringIO(text, newline="")))[1:]  # quoted cells may span lines
        rows = [r for r in rows if r and not (len(r) == 1 and not r[0].strip())]
        assert len(tr) == len(rows)  # nothing dropped silently
        assert np.isfinite(tr.arrivals).all() and tr.arrivals[0] == 0.0
        assert (np.diff(tr.arrivals) >= 0).all() and tr.arrivals[-1] <= MAX_SPAN_S
        assert tr.input_lengths.min() >= 1 and tr.input_lengths.max() <= MAX_TOKENS
        assert tr.output_lengths.min() >= 0 and tr.output_lengths.max() <= MAX_TOKENS
        rate = trace_workload(tr).rate
        assert rate is None or (math.isfinite(rate) and rate > 0)


@default_settings(60)
@given(data=almost_burst())
def test_almost_valid_burstgpt_loads_or_says_where(workdir, data):
    trace_loads_or_one_line(workdir / "b.csv", data, None)


@default_settings(60)
@given(data=almost_mapped())
def test_almost_valid_mapped_csv_loads_or_says_where(workdir, data):
    trace_loads_or_one_line(workdir / "m.csv", data, MAP)


# -- snapshot --press ---------------------------------------------------------------------------------
PRESS = st.one_of(
    st.lists(st.one_of(st.sampled_from(["c", "f1", "tab", "ctrl+c", "question_mark", "q", "E"]),
                       st.text(max_size=6)), max_size=80).map(",".join),
    st.text(max_size=200))


def press_or_one_line(raw: str, counter: list[int] | None = None) -> None:
    if counter is not None:
        counter[0] += 1
    try:
        keys = parse_press(raw)
    except UsageError as exc:
        one_line(exc, "--press: ")
        return
    assert len(keys) <= MAX_PRESS and all(k and k == k.strip() for k in keys)


@default_settings(100)
@given(raw=PRESS)
def test_press_keys_parse_or_say_which(raw):
    press_or_one_line(raw)


# -- plan records ---------------------------------------------------------------------------------------
@st.composite
def almost_record(draw) -> dict:
    lam = draw(st.floats(0.01, 100))
    g = draw(st.floats(0, 1)) * lam
    rec = {"key": "k" * 16, "label": "x", "binding": "prfaas", "goodput": g, "goodput_lo": g,
           "goodput_hi": g, "lambda_max": lam, "utilization": g / lam, "cost_per_hour": None,
           "goodput_per_cost": None,
           "candidate": {"paradigm": "prfaas-pd", "n_prfaas": 1, "n_p": 1, "n_d": 2,
                         "t": 8192.0, "bandwidth": 1e10}}
    for _ in range(draw(st.integers(0, 2))):
        key = draw(st.sampled_from(["goodput", "goodput_lo", "goodput_hi", "lambda_max",
                                    "utilization", "per_seed", "goodput_per_cost"]))
        rec[key] = draw(st.one_of(HOSTILE_VALUES, st.floats(0, 1e308),
                                  st.lists(st.floats(0, 200), max_size=3)))
    return rec


def record_oracle(rec: dict, counter: list[int] | None = None) -> None:
    """A record the store accepts is one a sweep could write."""
    if counter is not None:
        counter[0] += 1
    why = record_problem(rec)
    if why is not None:
        assert "\n" not in why and ": expected " in why
        return
    lam, g = rec["lambda_max"], rec["goodput"]
    assert 0 <= g <= lam * (1 + 1e-9) and lam <= 1e9
    assert rec["goodput_lo"] <= g * (1 + 1e-9) + 1e-9 and g <= rec["goodput_hi"] * (1 + 1e-9) + 1e-9
    assert math.isclose(rec["utilization"], g / lam if lam else 0.0, rel_tol=1e-6, abs_tol=1e-9)


@default_settings(100)
@given(rec=almost_record())
def test_plan_records_accepted_are_possible(rec):
    record_oracle(rec)


# -- the long profile ---------------------------------------------------------------------------------
@pytest.mark.fuzz
@pytest.mark.parametrize("surface", ["config.json", "gpu card", "burstgpt", "mapped csv",
                                     "press", "plan records"])
def test_fuzz_surfaces_for_a_budget(request, tmp_path, surface):
    counter = [0]

    def make(s):
        if surface == "config.json":
            return s(given(data=almost_config())(
                lambda data: card_loads_or_one_line(tmp_path / "config.json", data, counter)))
        if surface == "gpu card":
            return s(given(data=almost_gpu())(
                lambda data: gpu_loads_or_one_line(tmp_path / "g.toml", data, counter)))
        if surface == "burstgpt":
            return s(given(data=almost_burst())(
                lambda data: trace_loads_or_one_line(tmp_path / "b.csv", data, None, counter)))
        if surface == "mapped csv":
            return s(given(data=almost_mapped())(
                lambda data: trace_loads_or_one_line(tmp_path / "m.csv", data, MAP, counter)))
        if surface == "press":
            return s(given(raw=PRESS)(lambda raw: press_or_one_line(raw, counter)))
        return s(given(rec=almost_record())(lambda rec: record_oracle(rec, counter)))

    assert long_profile(request, surface, make, counter) >= fuzz_budget(request.config)
