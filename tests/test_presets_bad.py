"""Broken presets: one clear line naming the file and the key, exit status 2, no traceback."""

import re
import subprocess
import sys

import pytest

from emulator.scenario import presets
from emulator.scenario.presets import presets_dir
from emulator.scenario.reader import PresetError
from prfaas_tui.cli import main

TOY = (presets_dir() / "toy.toml").read_text()


def _edit(old: str, new: str) -> str:
    assert old in TOY, old
    return TOY.replace(old, new, 1)


CASES = [
    ("missing key", _edit("n_prfaas = 2\n", ""), "deployment.n_prfaas", "missing"),
    ("unknown key", _edit("n_prfaas = 2\n", "n_prfaas = 2\nn_prefas = 3\n"), "deployment.n_prefas", "unknown key"),
    ("unknown section", TOY + "\n[decodee]\nx = 1\n", "decodee", "unknown key"),
    ("wrong unit", _edit('bandwidth = "1000 MB/s"', 'bandwidth = "1000 parsecs"'), "deployment.bandwidth", "unit"),
    ("negative bandwidth", _edit('bandwidth = "1000 MB/s"', 'bandwidth = "-5 Gbps"'), "deployment.bandwidth", ">= 1 Mbps"),
    ("zero bs_max", _edit("bs_max = 10", "bs_max = 0"), "decode.bs_max", "> 0"),
    ("negative t_decode", _edit('t_decode = "25 ms"', 't_decode = "-25 ms"'), "decode.t_decode", "> 0"),
    ("absurd bandwidth", _edit('bandwidth = "1000 MB/s"', 'bandwidth = "1e9 Tbps"'), "deployment.bandwidth", "at most 8 Pbps"),
    ("absurd round trip", _edit("seed = 1", 'seed = 1\nlink_latency = "1e300 s"'), "emulator.link_latency", "a minute"),
    ("absurd length", _edit('values = ["1K", "32K"]', 'values = ["1K", "32000M"]'), "workload.lengths.values", "16M"),
    ("absurd pool", _edit("local_pool = 3", "local_pool = 10000000"), "deployment.local_pool", "absurd"),
    ("split over pool", _edit("n_p = 1\nn_d = 2", "n_p = 2\nn_d = 2"), "deployment.n_p", "exceeds"),
    ("no decode", _edit("n_p = 1\nn_d = 2", "n_p = 1\nn_d = 0"), "deployment.n_d", "decode"),
    ("t outside support", _edit('threshold = "8K"', 'threshold = "64K"'), "deployment.threshold", "support"),
    ("malformed TOML", _edit("n_p = 1", "n_p = = 1"), "line", "malformed TOML"),
    ("probs do not sum", _edit("probs = [0.5, 0.5]", "probs = [0.5, 0.7]"), "workload.lengths.probs", "sum"),
    ("wrong type", _edit("n_prfaas = 2", 'n_prfaas = "two"'), "deployment.n_prfaas", "whole number"),
    ("bad profile ref", _edit('prfaas_profile = "fast"', 'prfaas_profile = "h100"'), "deployment.prfaas_profile", "no profile"),
    ("non-positive table", _edit("seconds = [0.5, 2.0]", "seconds = [0.5, -2.0]"), "profiles.fast.prefill_time.seconds", "> 0"),
    ("lengths not increasing", _edit('lengths = ["1K", "32K"], seconds', 'lengths = ["32K", "1K"], seconds'), "profiles.fast.prefill_time.lengths", "increasing"),
    ("unknown distribution", _edit('kind = "discrete"', 'kind = "zipf"'), "workload.lengths.kind", "one of"),
    ("gpus not divisible", _edit("n_prfaas = 2", "prfaas_gpus = 3\nparallelism = 2"), "deployment.prfaas_gpus", "whole number"),
]


@pytest.mark.parametrize("name,text,key,phrase", CASES, ids=[c[0] for c in CASES])
def test_bad_preset_names_the_key(tmp_path, capsys, name, text, key, phrase):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    with pytest.raises(PresetError) as err:
        presets.load(str(path))
    msg = str(err.value)
    assert str(path) in msg and key in msg and phrase in msg
    assert "\n" not in msg
    assert main(["solve", "--preset", str(path)]) == 2
    err_out = capsys.readouterr().err
    assert err_out.count("\n") == 1 and key in err_out and "Traceback" not in err_out


def test_cli_subprocess_no_traceback(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text(_edit("bs_max = 10", "bs_max = -1"))
    r = subprocess.run([sys.executable, "-m", "prfaas_tui.cli", "solve", "--preset", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert re.fullmatch(r"prfaas-tui: .*broken\.toml: decode\.bs_max: must be > 0.*\n", r.stderr)


@pytest.mark.parametrize("argv,needle", [
    (["solve", "--bandwidth", "-3"], "--bandwidth"),
    (["solve", "--np", "9", "--nd", "2"], "--np/--nd"),
    (["solve", "--t", "1000K"], "--t"),
    (["solve", "--preset", "no-such-preset"], "no preset of that name"),
    (["solve", "--preset", "missing/file.toml"], "no such preset file"),
])
def test_bad_flags(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_every_shipped_preset_loads_and_solves(capsys):
    for name, desc, _ in presets.list_presets():
        assert desc, name
        assert main(["solve", "--preset", name, "--json"]) == 0
    capsys.readouterr()
