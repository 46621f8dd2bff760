"""Random topologies, sane and broken (0-3 sites, 1-3 regions, any links, 0 instances, n_p = 0,
thresholds anywhere), through `solve` and `run` under every routing: each is either refused in
one line with exit 2 or answered with its books balanced. Never a traceback, a division by
zero, or a run that strands requests without a word."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from prfaas_tui.cli import main

HEAD = """name = "fuzz"
mode = "exact"

[profiles.h200]
prefill_time = { lengths = ["1K", "32K", "128K"], seconds = [0.44, 1.84, 7.40] }
kv_size = { lengths = ["1K", "32K", "128K"], bytes = ["190.8 MiB", "701.3 MiB", "2316.3 MiB"] }

[decode]
t_decode = "25 ms"
bs_max = 20
l_out = 256

[workload]
lengths = { kind = "lognormal", mu = 9.90, sigma = 1.00, lo = 128, hi = "128K" }
arrival = "poisson"
load = 0.5

[emulator]
duration = "20 s"
seed = 1
"""


@st.composite
def topologies(draw) -> str:
    n_sites = draw(st.integers(0, 3))
    n_regions = draw(st.integers(1, 3))
    out = [HEAD]
    for i in range(n_sites):
        out.append(f'[[site]]\nname = "s{i}"\nprofile = "h200"\n'
                   f'instances = {draw(st.integers(0, 4))}\n')
    linked: set[int] = set()
    links = []
    for i in range(n_sites):
        for j in range(n_regions):
            if draw(st.integers(0, 9)) < 7:
                linked.add(j)
                bw = draw(st.sampled_from(["1 Mbps", "1 Gbps", "100 Gbps"]))
                links.append(f'[[link]]\nsite = "s{i}"\nregion = "r{j}"\nbandwidth = "{bw}"\n'
                             f'rtt = "{draw(st.sampled_from(["0 ms", "20 ms"]))}"\n')
    for j in range(n_regions):
        pool = draw(st.integers(1, 6))
        n_p = draw(st.integers(0, pool - 1)) if draw(st.integers(0, 4)) == 0 else min(1, pool - 1)
        sane = 131072 if j not in linked else 19400 if n_p else 0
        threshold = draw(st.sampled_from([0, 127, 128, 4096, 19400, 131072])) \
            if draw(st.integers(0, 3)) == 0 else sane
        out.append(f'[[region]]\nname = "r{j}"\nprofile = "h200"\npool = {pool}\nn_p = {n_p}\n'
                   f'n_d = {pool - n_p}\nthreshold = {threshold}\n')
    out.extend(links)
    return "\n".join(out)


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv) or 0
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=topologies(), routing=st.sampled_from(["threshold", "lp", "best-bandwidth"]))
def test_every_topology_is_refused_in_one_line_or_runs_with_its_books_balanced(tmp_path, text,
                                                                               routing):
    preset = tmp_path / "fuzz.toml"
    preset.write_text(text, encoding="utf-8")
    rc, out, err = _cli(["solve", "--preset", str(preset), "--json"])
    assert rc in (0, 2), err
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and "fuzz.toml" in err, err
        event("refused at load")
        return
    json.loads(out)
    rc, out, err = _cli(["run", "--preset", str(preset), "--routing", routing, "--json"])
    assert rc in (0, 2), err
    if rc == 2:
        assert len(err.strip().splitlines()) == 1, err
        event("refused by run")
        return
    event("ran")
    books = json.loads(out)["accounting"]
    assert books["lost"] == 0
    assert books["arrived"] == books["completed"] + books["in_flight"] + books["rejected"]
    if books["arrived"] and not books["completed"]:
        assert "warning" in err, "a run that served nothing must say so"


def _two_regions(edit) -> str:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "presets" / "two-regions.toml").read_text()
    return edit(text)


def _site_gpus(n: int):
    def edit(s: str) -> str:
        i = s.index("[[site]]")
        j = s.index("gpus = 64", i)
        return s[:j] + f"gpus = {n}" + s[j + len("gpus = 64"):]
    return edit


@pytest.mark.parametrize("edit, key", [
    (lambda s: s.replace('bandwidth = "40 Gbps"\n', "", 1), "link[1].bandwidth"),
    (lambda s: s.replace("n_p = 3", "n_p = 0", 1), "region[0].n_p"),
    (_site_gpus(0), "link[0]"),
    (lambda s: s.replace('rtt = "10 ms"', 'rtt = "10 ms"\nprice_per_tb = 1e308', 1),
     "link[0].price_per_tb"),
    (lambda s: s.replace("price = 2.0", "price = 1e308", 1), "site[0].price"),
])
@pytest.mark.parametrize("command", [["solve"], ["run", "--duration", "10"]])
def test_a_topology_that_cannot_serve_is_refused_at_its_key(tmp_path, edit, key, command):
    preset = tmp_path / "broken.toml"
    text = _two_regions(edit)
    assert text != _two_regions(lambda s: s)
    preset.write_text(text, encoding="utf-8")
    rc, out, err = _cli([*command, "--preset", str(preset), "--json"])
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and f"broken.toml: {key}" in err, err


@pytest.mark.parametrize("routing", ["best-bandwidth", "lp"])
def test_no_policy_sends_work_to_a_site_without_instances(tmp_path, routing):
    """A site of 0 instances looks free (an empty queue) but never serves: the policies that
    weigh where a request finishes first keep everything local instead."""
    preset = tmp_path / "empty-site.toml"
    preset.write_text(f'routing = "{routing}"\n' + _two_regions(_site_gpus(0)), encoding="utf-8")
    rc, out, err = _cli(["run", "--preset", str(preset), "--duration", "60", "--json"])
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["sites"]["hub"]["queue"] == 0 and doc["sites"]["hub"]["served_rate"] == 0
    books = doc["accounting"]
    assert books["completed"] > 0 and books["lost"] == 0


DRILL = """description = "fuzz"
preset = "two-regions"
routing = "{routing}"

[emulator]
duration = "30 s"
seed = 5

[[incidents]]
kind = "{kind}"
{target}
at = "10 s"
duration = "10 s"
"""
TARGETS = {"site-loss": 'site = "s0"\ncount = {count}', "link-brownout": 'link = "s0->r0"\nfactor = 0.1',
           "link-outage": 'link = "s0->r0"', "surge": 'region = "r0"\nfactor = 2.0'}
KEYS = ["up", "down", "left", "right", "enter", "escape", "space", "full_stop", "o", "O", "d",
        "w", "y", "1", "2", "f", "E", "c", "P", "f1", "greater_than_sign", "less_than_sign"]


def _refused_or_balanced(rc: int, out: str, err: str, books_in_json: bool = False) -> bool:
    """rc 0 with balanced books (when the command prints them), or rc 2 with one line; True
    when it ran."""
    assert rc in (0, 2), err
    if rc == 2:
        assert len(err.strip().splitlines()) == 1, err
        return False
    if books_in_json:
        _balanced(json.loads(out)["accounting"])
    return True


def _balanced(books: dict) -> None:
    assert books["lost"] == 0
    assert books["arrived"] == books["completed"] + books["in_flight"] + books["rejected"]


@settings(max_examples=8, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=topologies(), routing=st.sampled_from(["threshold", "lp", "best-bandwidth",
                                                   "best-cache"]),
       keys=st.lists(st.sampled_from(KEYS), max_size=5), kind=st.sampled_from(sorted(TARGETS)),
       count=st.integers(0, 6))
@example(text=HEAD + '[[region]]\nname = "r0"\nprofile = "h200"\npool = 2\nn_p = 1\nn_d = 1\n'
         'threshold = 131072\n', routing="threshold", keys=["down"], kind="surge", count=0)
def test_every_command_on_a_random_topology_answers_or_refuses_in_one_line(
        tmp_path, text, routing, keys, kind, count):
    """snapshot (json and txt, keys pressed on the topology view), drill and plan on the
    topologies that load: no traceback, no hang, the books balanced where they are printed."""
    preset = tmp_path / "fuzz.toml"
    preset.write_text(text, encoding="utf-8")
    if not _refused_or_balanced(*_cli(["solve", "--preset", str(preset), "--json"])):
        return
    for fmt in ("json", "txt"):
        argv = ["snapshot", "--preset", str(preset), "--at", "12", "--format", fmt,
                "--out", str(tmp_path / f"snap.{fmt}")]
        rc, out, err = _cli(argv + (["--press", ",".join(keys)] if keys else []))
        if _refused_or_balanced(rc, out, err) and fmt == "json":
            _balanced(json.loads((tmp_path / "snap.json").read_text()))
    drill = tmp_path / "drill.toml"
    drill.write_text(DRILL.format(routing=routing, kind=kind,
                                  target=TARGETS[kind].format(count=count)), encoding="utf-8")
    _refused_or_balanced(*_cli(["drill", str(drill), "--preset", str(preset), "--json"]),
                         books_in_json=True)
    _refused_or_balanced(*_cli(["plan", "--preset", str(preset), "--json", "--duration", "20",
                                "--seeds", "1", "--steps", "1", "--workers", "1"]))
