"""GPU cards written before a [calibration] key existed still read: the later key takes the
older key's efficiency and the card says so in one line; the pre-per-operation format
(mfu, attn_mfu) is refused with the way to convert."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulator.cards import CardError
from emulator.cards.gpu import LATER_KEYS, read_gpu

H200 = Path(__file__).resolve().parents[1] / "emulator" / "cards" / "gpus" / "h200.toml"


def _card(tmp_path: Path, drop: tuple[str, ...] = (), add: str = "") -> Path:
    text = H200.read_text(encoding="utf-8")
    for key in drop:
        text, n = re.subn(rf"(?m)^{key}\s*=.*\n", "", text)
        assert n == 1, key
    out = tmp_path / "old.toml"
    out.write_text(text.replace("[calibration]\n", f"[calibration]\n{add}"), encoding="utf-8")
    return out


def test_a_card_from_before_the_later_keys_reads_with_the_older_efficiencies(tmp_path):
    card = read_gpu(_card(tmp_path, drop=tuple(LATER_KEYS)))
    cal, now = card.calibration, read_gpu(H200).calibration
    assert set(cal.derived) == set(LATER_KEYS)
    for key, older in LATER_KEYS.items():
        assert getattr(cal, key) == getattr(now, older)
    notes = cal.notes(card.name)
    assert len(notes) == len(LATER_KEYS)
    assert all("\n" not in n and f"calibration.{k}" in n for n, k in zip(notes, LATER_KEYS,
                                                                            strict=True))
    assert read_gpu(H200).calibration.derived == ()


def test_a_card_without_the_older_key_either_is_refused_at_a_missing_key(tmp_path):
    with pytest.raises(CardError, match=r"calibration\.moe: missing"):
        read_gpu(_card(tmp_path, drop=("moe", "moe_int4")))


def test_the_first_format_is_refused_with_the_way_to_convert(tmp_path):
    with pytest.raises(CardError, match="calibration.mfu.*per-operation"):
        read_gpu(_card(tmp_path, add="mfu = 0.4\n"))


def test_new_names_the_stand_in_keys(tmp_path, capsys, monkeypatch):
    from prfaas_tui.cli import main

    monkeypatch.chdir(tmp_path)
    old = _card(tmp_path, drop=("attention_mla",))
    assert main(["new", "--model", "kimi-linear-48b-a3b", "--prefill-gpu", str(old),
                 "--local-gpu", "h20", "--prfaas-gpus", "32", "--local-gpus", "64",
                 "--bandwidth", "100 Gbps", "--out", "mine.toml"]) in (0, None)
    out = capsys.readouterr().out
    assert "calibration.attention_mla not given" in out and "moe_int4 not given" not in out


def test_models_names_the_stand_in_keys(tmp_path, capsys):
    from prfaas_tui.cli import main

    old = _card(tmp_path, drop=("moe_int4",))
    assert main(["models", "--gpu", str(old)]) == 0
    out = capsys.readouterr().out
    assert "calibration.moe_int4 not given" in " ".join(out.split())
