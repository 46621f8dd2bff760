"""A derived profile (T' = time_offset + time_scale * T) is bounded where it is read: an absurd
scale or offset is refused naming its key, instead of overflowing the curve's coefficients to
inf (the RuntimeWarning at Curve.affine every test run used to show, from the fuzzer)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from emulator.scenario import presets
from emulator.scenario.reader import PresetError

PAPER = Path(presets.presets_dir()) / "paper-case-study.toml"


def _with(tmp_path, old: str, new: str) -> Path:
    text = PAPER.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "p.toml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


@pytest.mark.parametrize("old, new, key", [
    ("time_scale = 3.09", "time_scale = 1e308", "time_scale"),
    ("time_scale = 3.09", "time_scale = 2e6", "time_scale"),
    ("time_offset = -0.69", 'time_offset = "1e308 s"', "time_offset"),
    ("time_offset = -0.69", "time_offset = -1e9", "time_offset"),
])
def test_absurd_derivations_are_refused_without_overflow(tmp_path, old, new, key):
    path = _with(tmp_path, old, new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way to the refusal
        with pytest.raises(PresetError) as info:
            presets.load(str(path))
    line = str(info.value)
    assert "\n" not in line and key in line and "p.toml" in line


def test_a_large_but_sane_scale_loads(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sc = presets.load(str(_with(tmp_path, "time_scale = 3.09", "time_scale = 1000")))
    assert sc.system.local.t_prefill(1024.0) > 100
