"""Every TOML the tool writes reads back through the tool's own reader, whatever the names and
text in it: `new`, the dashboard's save, and `profile --import` (used by a preset). A name with
an emoji, quotes, backslashes or TOML's own syntax in it is escaped by the writer, not refused
by the reader."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import tomlkit

from emulator.scenario.presets import load
from emulator.scenario.writer import write_preset
from prfaas_tui.cli import main
from prfaas_tui.commands import profile

NAMES = ["fast 🚀", 'say "hi" \\ there', "日本語 モデル", "a'b", "x = 1 # y", "[[site]]",
         "e\u0301 combining", "ends with backslash \\", '"""', "'''"]
TEXTS = [*NAMES, "tab\there", "line\nbreak", "\u0001ctl", "\u2028sep"]  # descriptions too
TOY = Path(load("toy").path)


@pytest.mark.parametrize("name", NAMES)
def test_a_preset_written_by_new_reads_back(tmp_path, capsys, name):
    out = tmp_path / "new.toml"
    assert main(["new", "--model", "kimi-linear-48b-a3b", "--name", name, "--out", str(out)]) == 0
    assert tomllib.loads(out.read_text(encoding="utf-8"))["name"] == name
    assert load(str(out)).name == name
    capsys.readouterr()


@pytest.mark.parametrize("text", TEXTS)
def test_a_preset_saved_from_the_dashboard_reads_back(tmp_path, text):
    doc = tomlkit.parse(TOY.read_text(encoding="utf-8"))
    doc["description"] = text
    doc["profiles"]["fast"]["description"] = text
    src = tmp_path / "src.toml"
    src.write_text(tomlkit.dumps(doc), encoding="utf-8")
    sc = load(str(src))
    back = write_preset(sc, tmp_path / "saved.toml")  # loads it back, or PresetError
    assert back.source["description"] == text and back.controls == sc.controls


@pytest.mark.parametrize("name", TEXTS)
def test_an_imported_profile_is_read_by_a_preset(tmp_path, capsys, name):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"input_lens": [1024, 8192, 32768],
                                 "ttfts": [0.3, 0.9, 2.5]}), encoding="utf-8")
    prof = tmp_path / "measured.toml"
    assert profile.main(["--import", str(bench), "--card", "kimi-linear-48b-a3b", "--out",
                         str(prof), "--name", name, "--measured-on", name]) == 0
    doc = tomlkit.parse(TOY.read_text(encoding="utf-8"))
    doc["profiles"]["fast"] = {"file": prof.name}
    preset = tmp_path / "uses.toml"
    preset.write_text(tomlkit.dumps(doc), encoding="utf-8")
    assert load(str(preset)).profiles["fast"].name == name
    capsys.readouterr()
