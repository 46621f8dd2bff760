"""Fuzzed presets and drill files (issue 11): the shipped presets and drills with a key set to a
hostile value (swapped types, extreme and non-finite numbers, hostile unit strings), a key or
table dropped or added, then written as TOML and sometimes mutated byte by byte or truncated.
Each is fed to the loaders (presets.load, load_drill) and to the CLI in-process (`run`, `drill`
with tiny caps, so a valid input runs in milliseconds): it loads or runs, or ends in the
project's one-line error (PresetError naming the file; the CLI's exit 2 with one stderr line);
never another exception. `-m fuzz --fuzz-budget INPUTS` runs the long profile."""

from __future__ import annotations

import json
import tomllib
import warnings
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import example, given
from hypothesis import strategies as st

from emulator.scenario import presets
from emulator.scenario.drills import drills_dir, load_drill
from emulator.scenario.reader import PresetError
from emulator.scenario.topology import declares_topology
from prfaas_tui.cli import main
from tests.fuzzing import (
    HOSTILE_NUMBERS,
    HOSTILE_VALUES,
    default_settings,
    fuzz_budget,
    long_profile,
    mutated_bytes,
)


def small(doc: dict) -> dict:
    """A shipped preset or drill shrunk to seconds of simulated time (incidents at 5 s for
    5 s), so that it runs within the tiny caps below: what the fuzzer edits is then a file
    that runs, and an edit that keeps it valid is run, not refused as too big."""
    emu = {**doc.get("emulator", {}), "duration": "20 s"}
    incidents = [{**inc, **{k: "5 s" for k in ("at", "duration") if k in inc}}
                 for inc in doc.get("incidents", [])]
    out = {**doc, "emulator": emu}
    if incidents:
        out["incidents"] = incidents
    out.pop("expect", None)  # a 20 s drill cannot meet a 40 min drill's expectations
    return out


SHIPPED = {p.stem: small(tomllib.loads(p.read_text(encoding="utf-8")))
           for p in sorted(presets.presets_dir().glob("*.toml"))}
# `run` takes single-pair presets; topology presets ([[site]], ...) load for `solve`
PRESETS = {k: v for k, v in SHIPPED.items() if not declares_topology(v)}
TOPOLOGIES = {k: v for k, v in SHIPPED.items() if declares_topology(v)}
SMALL_TOPOLOGIES = {k: v for k, v in TOPOLOGIES.items() if k != "global"}
DRILLS = {p.stem: small(tomllib.loads(p.read_text(encoding="utf-8")))
          for p in sorted(drills_dir().glob("*.toml"))}
# unit strings at and past every edge the readers document
HOSTILE_STRINGS = st.sampled_from([
    "1e308 s", "nan s", "inf h", "-5 min", "0 s", "1e-300 s", "1e12 h", "10 parsecs", "",
    "1e30 Gbps", "1e-300 Gbps", "0 Gbps", "NaN Gbps", "1e9K", "-8K", "0K", "1e30", "32K",
    "1 ns", "18446744073709551616", "\u00e9\u00e9", "10 min", "1e6",
])
HOSTILE = st.one_of(HOSTILE_VALUES, HOSTILE_STRINGS, HOSTILE_NUMBERS)
# what a CLI run may take at most: refused (exit 2) above, milliseconds below
TINY = ["--max-requests", "2000", "--max-events", "5000", "--max-instances", "200"]


def leaves(doc: Any, path: tuple = ()) -> list[tuple]:
    """Every path to a value in a TOML document (tables and arrays walked)."""
    out = [path] if path else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += leaves(v, (*path, i))
    return out


def replaced(doc: Any, path: tuple, value: Any, drop: bool = False) -> Any:
    """A copy of doc with the value at path replaced (or dropped)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        new = dict(doc)
        if drop and not rest:
            new.pop(head, None)
        else:
            new[head] = replaced(doc[head], rest, value, drop) if rest else value
        return new
    new = list(doc)
    if drop and not rest:
        del new[head]
    else:
        new[head] = replaced(doc[head], rest, value, drop) if rest else value
    return new


def toml_bytes(doc: dict) -> bytes:
    """doc as TOML (None, which TOML lacks, becomes an empty table)."""
    def clean(x: Any) -> Any:
        if x is None:
            return {}
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x
    return tomlkit.dumps(clean(doc)).encode("utf-8", "surrogatepass")


@st.composite
def almost(draw, docs: dict[str, dict]) -> bytes:
    """One of `docs` with up to three hostile edits (none: the valid file), sometimes mutated
    byte by byte."""
    doc = docs[draw(st.sampled_from(sorted(docs)))]
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
        paths = leaves(doc)
        how = draw(st.sampled_from(["value", "value", "value", "drop", "add", "table"]))
        if how == "add":
            table = draw(st.sampled_from([p for p in [()] + paths
                                          if isinstance(_at(doc, p), dict)]))
            key = draw(st.one_of(st.sampled_from(["bogus", "at", "count", "factor", "kind"]),
                                 st.text(max_size=4)))  # control characters included
            doc = replaced(doc, (*table, key), draw(HOSTILE)) if table else \
                {**doc, key: draw(HOSTILE)}
        elif paths:
            path = draw(st.sampled_from(paths))
            if how == "drop":
                doc = replaced(doc, path, None, drop=True)
            elif how == "table":
                doc = replaced(doc, path[:1], draw(HOSTILE))
            else:
                doc = replaced(doc, path, draw(HOSTILE))
    data = toml_bytes(doc)
    return draw(mutated_bytes(data)) if draw(st.integers(0, 3)) == 0 else data


def _at(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


@st.composite
def valid_preset(draw) -> bytes:
    """A shipped preset with knobs moved within their documented ranges."""
    # `global` (600 PrfaaS instances, 200 req/s) cannot run under the tiny caps below: the
    # topology tests and benchmarks/bench_topology.py run it
    doc = PRESETS[draw(st.sampled_from(sorted(set(PRESETS) - {"global"})))]
    work = dict(doc["workload"])
    work.pop("rate", None)
    work["load"] = draw(st.floats(0.05, 2.0))
    emu = {**doc.get("emulator", {}), "duration": f"{draw(st.integers(1, 30))} s",
           "seed": draw(st.integers(0, 2**31))}
    return toml_bytes({**doc, "workload": work, "emulator": emu})


# -- the oracles --------------------------------------------------------------------------------
def loads_or_one_line(load, path: Path, data: bytes, counter: list[int] | None = None):
    """load(path) returns, or raises PresetError: one line starting with the file's path."""
    if counter is not None:
        counter[0] += 1
    path.write_bytes(data)
    try:
        return load(path)
    except PresetError as exc:
        msg = str(exc)
        assert "\n" not in msg and msg.startswith(str(path)), msg
        return None


def cli_runs_or_one_line(capsys, argv: list[str], counter: list[int] | None = None) -> int:
    """The CLI in-process: exit 0 with its JSON on stdout, or exit 1/2 with one stderr line
    (2: bad input or over a cap; 1: a drill's expectations missed); never an exception."""
    if counter is not None:
        counter[0] += 1
    rc = main(argv)
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line and ": warning: " not in line]
    if rc == 0:
        assert not errors, err
        json.loads(out)
    else:
        assert rc in (1, 2) and len(errors) == 1, (rc, err)
        assert errors[0].startswith("prfaas-tui"), err
    return rc


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzzpreset")


# -- presets ------------------------------------------------------------------------------------------
@default_settings(50)
@given(data=valid_preset())
def test_a_valid_preset_loads_and_runs(workdir, capsys, data):
    path = workdir / "v.toml"
    # a topology preset loads for the commands that read topologies (run among them)
    assert loads_or_one_line(lambda p: presets.load(p, topology=True), path, data) is not None
    assert cli_runs_or_one_line(capsys, ["run", "--preset", str(path), "--json", *TINY]) == 0


@default_settings(400)
@given(data=almost(PRESETS))
def test_an_almost_valid_preset_loads_or_says_where(workdir, data):
    loads_or_one_line(presets.load, workdir / "m.toml", data)


@default_settings(150)
@given(data=almost(PRESETS))
def test_an_almost_valid_preset_runs_or_exits_2(workdir, capsys, data):
    path = workdir / "c.toml"
    path.write_bytes(data)
    rc = cli_runs_or_one_line(capsys, ["run", "--preset", str(path), "--duration", "5",
                                       "--json", *TINY])
    assert rc in (0, 2)


@default_settings(200)
@given(data=almost(TOPOLOGIES))
def test_an_almost_valid_topology_loads_or_says_where(workdir, data):
    loads_or_one_line(lambda p: presets.load(p, topology=True), workdir / "t.toml", data)


@default_settings(30)
@given(data=almost(SMALL_TOPOLOGIES))
def test_an_almost_valid_topology_solves_or_exits_2(workdir, capsys, data):
    path = workdir / "ts.toml"
    path.write_bytes(data)
    assert cli_runs_or_one_line(capsys, ["solve", "--preset", str(path), "--json",
                                         "--max-instances", "200"]) in (0, 2)


@pytest.mark.parametrize("key", ["a\nb", "\x1e", "\u2028", "\x00", "tab\there"])
def test_an_unknown_key_with_control_characters_is_one_line(workdir, capsys, key):
    """Found by the long profile: `"\x1e" = 0` under [emulator] printed the raw key, which
    splits the line (a newline in a key would split it on a terminal too)."""
    path = workdir / "k.toml"
    data = toml_bytes({**PRESETS["toy"], "emulator": {**PRESETS["toy"]["emulator"], key: 0}})
    assert loads_or_one_line(presets.load, path, data) is None
    assert cli_runs_or_one_line(capsys, ["run", "--preset", str(path), *TINY]) == 2


# -- drills ---------------------------------------------------------------------------------------------
@default_settings(400)
@given(data=almost(DRILLS))
def test_an_almost_valid_drill_loads_or_says_where(workdir, data):
    loads_or_one_line(load_drill, workdir / "d.toml", data)


# found by this test: load x Lambda_max overflowed to an infinite rate (a ValueError traceback)
HUGE_LOAD_DRILL = (b'preset = "paper-case-study"\n[workload]\nload = 1e+308\n[emulator]\n'
                   b'duration = "20 s"\n[[incidents]]\nkind = "instance-loss"\nstage = "pd-d"\n'
                   b'count = 2\nat = "5 s"\nduration = "5 s"\n')


@default_settings(120)
@given(data=almost(DRILLS))
@example(data=HUGE_LOAD_DRILL)
def test_an_almost_valid_drill_runs_or_exits_in_one_line(workdir, capsys, data):
    path = workdir / "e.toml"
    path.write_bytes(data)
    cli_runs_or_one_line(capsys, ["drill", str(path), "--json", *TINY])


@default_settings(100)
@given(data=st.binary(max_size=300), what=st.sampled_from(["preset", "drill"]))
def test_random_bytes_load_or_say_where(workdir, data, what):
    load = presets.load if what == "preset" else load_drill
    loads_or_one_line(load, workdir / f"r-{what}.toml", data)


# -- the long profile ------------------------------------------------------------------------------------
@pytest.mark.fuzz
def test_fuzz_presets_and_drills_for_a_budget(request, tmp_path):
    counter = [0]

    def make(s):
        @s
        @given(preset=st.one_of(almost(PRESETS), st.binary(max_size=400)), drill=almost(DRILLS))
        def prop(preset, drill):
            loads_or_one_line(presets.load, tmp_path / "p.toml", preset, counter)
            loads_or_one_line(load_drill, tmp_path / "d.toml", drill, counter)
        return prop

    assert long_profile(request, "presets and drills", make, counter) >= fuzz_budget(request.config)


@pytest.mark.fuzz
def test_fuzz_preset_and_drill_cli_for_a_budget(request, tmp_path, capsys):
    counter = [0]

    def make(s):
        @s
        @given(preset=almost(PRESETS), drill=almost(DRILLS))
        def prop(preset, drill):
            (tmp_path / "p.toml").write_bytes(preset)
            (tmp_path / "d.toml").write_bytes(drill)
            cli_runs_or_one_line(capsys, ["run", "--preset", str(tmp_path / "p.toml"),
                                          "--duration", "5", "--json", *TINY], counter)
            cli_runs_or_one_line(capsys, ["drill", str(tmp_path / "d.toml"), "--json", *TINY],
                                 counter)
        return prop

    assert long_profile(request, "preset and drill CLI runs", make, counter, batch=50) >= \
        fuzz_budget(request.config)


@pytest.mark.parametrize("command", ["solve", "run"])
def test_an_absurd_profile_value_is_refused_at_its_key(workdir, capsys, command):
    """Found by the fuzzer: a prefill of 2^53 + 1 seconds at 1K made HiGHS report a model error,
    and 1e308 s cancelled the table's first piece to 0 s ("prefill_time is 0 at 1024"). A value
    past the profile limits is refused where it is written."""
    for value in ("9007199254740993", "1e308"):
        text = (presets.presets_dir() / "toy-two-regions.toml").read_text().replace(
            'seconds = [0.5, 2.0]', f'seconds = [{value}, 2.0]')
        path = workdir / "huge.toml"
        path.write_text(text)
        argv = [command, "--preset", str(path), "--json"] + (["--duration", "5"]
                                                              if command == "run" else [])
        assert cli_runs_or_one_line(capsys, argv) == 2
        assert main(argv) == 2
        assert ("huge.toml: profiles.fast.prefill_time.seconds: every value must be > 0 and at "
                "most 1e+06 s") in capsys.readouterr().err


def test_an_absurd_coefficient_is_refused_without_overflow_warnings(workdir, capsys):
    """c = 1e300 s per token^2 overflows the curve: one line naming the profile, no numpy
    RuntimeWarning lines before it."""
    text = (presets.presets_dir() / "toy.toml").read_text().replace(
        'prefill_time = { lengths = ["1K", "32K"], seconds = [0.5, 2.0] }',
        'prefill_time = { a = 0.5, c = 1e300 }')
    path = workdir / "coef.toml"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["solve", "--preset", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "profiles.fast: prefill_time is 1.049e+306 at length 1024 " \
        "(must be at most 1e+06 s)" in err
    path.write_text((presets.presets_dir() / "toy.toml").read_text().replace(
        'bytes = ["100 MB", "800 MB"]', 'bytes = ["100 MB", 1e16]'))
    assert main(["solve", "--preset", str(path)]) == 2
    assert "profiles.fast.kv_size.bytes: every value must be > 0 and at most 1e+15 B" in \
        capsys.readouterr().err


@pytest.mark.parametrize("command", ["solve", "run"])
def test_a_topology_the_solver_cannot_take_is_one_line(workdir, capsys, monkeypatch, command):
    """HiGHS failing on the routing bound (a model error) reaches the user as one line naming
    the preset, not a traceback."""
    import emulator.topology.bound as bound

    failed = type("Failed", (), {"status": 4, "x": None,
                                 "message": "HiGHS Status 2: Model error"})()
    monkeypatch.setattr(bound, "milp", lambda *a, **k: failed)
    monkeypatch.setattr(bound, "linprog", lambda *a, **k: failed)
    path = workdir / "two.toml"
    path.write_text((presets.presets_dir() / "toy-two-regions.toml").read_text())
    argv = [command, "--preset", str(path), "--json"] + (["--duration", "5"] if command == "run"
                                                          else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "two.toml: the routing bound has no answer" in err and err.count("\n") == 1


