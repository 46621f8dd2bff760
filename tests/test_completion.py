"""`prfaas-tui completion bash|zsh|fish`: scripts generated from the parser and the catalogs
the pickers read; bash (and fish, where installed) are driven for real."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from emulator.cards.gpu import shipped as gpus
from emulator.cards.model_card import shipped as models
from emulator.scenario.drills import list_drills
from emulator.scenario.presets import list_presets
from prfaas_tui import completion
from prfaas_tui.cli import COMMANDS, _parser, main

PRESETS = [n for n, *_ in list_presets()]
DRILLS = [n for n, _ in list_drills()]


@pytest.fixture(scope="module")
def scripts() -> dict[str, str]:
    return {sh: completion.script(sh, _parser([])) for sh in completion.SHELLS}


def test_the_command_prints_the_script(capsys, scripts):
    assert main(["completion", "bash"]) == 0
    assert capsys.readouterr().out == scripts["bash"]


@pytest.mark.parametrize("shell", sorted(completion.SHELLS))
def test_every_command_and_name_is_in_the_script(scripts, shell):
    text = scripts[shell]
    for word in [*COMMANDS, *PRESETS, *DRILLS, *models(), *gpus(), "--slo-ttft", "--n-prfaas"]:
        word = word.lstrip("-") if shell == "fish" else word  # fish writes -l slo-ttft
        assert word in text, f"{shell}: {word} missing"


def test_names_come_from_the_catalogs(monkeypatch):
    monkeypatch.setitem(completion.CATALOGS, "presets", lambda: ["my-new-preset"])
    assert "my-new-preset" in completion.script("bash", _parser([]))


def _bash(script: str, words: list[str]) -> list[str]:
    line = " ".join(f"'{w}'" for w in words)
    prog = (f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; COMPREPLY=()\n"
            "_prfaas_tui; printf '%s\\n' \"${COMPREPLY[@]}\"")
    out = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, check=True)
    return [x for x in out.stdout.splitlines() if x]


@pytest.mark.parametrize("words, expect", [
    (["prfaas-tui", "dr"], ["drill"]),
    (["prfaas-tui", "drill", "link-"], ["link-brownout", "link-outage"]),
    (["prfaas-tui", "solve", "--preset", "paper"], ["paper-case-study"]),
    (["prfaas-tui", "--drill", "prf"], ["prfaas-loss"]),
    (["prfaas-tui", "new", "--local-gpu", "h2"], ["h20", "h200"]),
    (["prfaas-tui", "new", "--model", "kimi"], ["kimi-linear-48b-a3b"]),
    (["prfaas-tui", "plan", "--slo-t"], ["--slo-ttft", "--slo-tpot"]),
    (["prfaas-tui", "run", "--paradigm", "n"], ["naive-heterogeneous"]),
    (["prfaas-tui", "completion", ""], ["bash", "zsh", "fish"]),
])
def test_bash_completes(scripts, tmp_path, monkeypatch, words, expect):
    monkeypatch.chdir(tmp_path)  # no files to offer beside the names
    assert sorted(_bash(scripts["bash"], words)) == sorted(expect)


def test_bash_offers_preset_files_too(scripts, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text("")
    (tmp_path / "notes.txt").write_text("")
    got = _bash(scripts["bash"], ["prfaas-tui", "--preset", ""])
    assert "mine.toml" in got and "notes.txt" not in got and set(PRESETS) <= set(got)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes(scripts, tmp_path):
    path = tmp_path / "c.fish"
    path.write_text(scripts["fish"])
    out = subprocess.run(["fish", "-c", f"source {path}; complete -C'prfaas-tui drill link-'; "
                                        "complete -C'prfaas-tui new --prefill-gpu b'"],
                         capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert [x.split("\t")[0] for x in out.splitlines()] == ["link-brownout", "link-outage", "b200"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_script_loads(scripts, tmp_path):
    path = tmp_path / "_prfaas-tui"
    path.write_text(scripts["zsh"])
    subprocess.run(["zsh", "-n", str(path)], check=True)
    out = subprocess.run(["zsh", "-c", f"autoload -U compinit; compinit -u -d {tmp_path}/zcd; "
                                       f"source {path}; whence -w _prfaas_tui"],
                         capture_output=True, text=True, check=True).stdout
    assert "_prfaas_tui: function" in out


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_offers_names_and_files_through_helpers(scripts, tmp_path):
    """Names-or-files actions go through helper functions (an inline `{_alternative ...}`
    needs quotes inside the spec's quotes, which broke at TAB time)."""
    text = scripts["zsh"]
    assert "{_alternative" not in text
    path = tmp_path / "_prfaas-tui"
    path.write_text(text)
    helper = next(line.split("(")[0] for line in text.splitlines()
                  if line.startswith("_prfaas_tui_names_") and "h200" in line)
    out = subprocess.run(["zsh", "-fc", f"compdef() {{ : }}; _alternative() {{ print -l -- $@ }}; "
                                        f"source {path}; {helper}"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "names:name:(" + " ".join(gpus()) + ")"
    assert out[1] == 'files:file:_files -g "*.toml"'

