"""`prfaas-tui new` says when its optimum has no local prefill (N_p = 0): the throughput is the
best, but a link outage then stops all prefill in the region, which the numbers do not show."""

import json

import pytest

from prfaas_tui.cli import main

# a decode of 20 at 25 ms (the cards derive ~217) makes decode the bottleneck: an N_p = 0 optimum
KIMI = ["new", "--model", "kimi-linear-48b-a3b", "--prefill-gpu", "h200", "--local-gpu", "h20",
        "--prfaas-gpus", "32", "--local-gpus", "64", "--t-decode", "25 ms", "--bs-max", "20"]


def _new(tmp_path, capsys, bandwidth: str, *extra: str) -> str:
    out = tmp_path / "mine.toml"
    assert main([*KIMI, "--bandwidth", bandwidth, "--out", str(out), *extra]) == 0
    return capsys.readouterr().out


def test_an_optimum_with_no_local_prefill_is_flagged(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # piped with no width asked: lines stay whole
    text = " ".join(_new(tmp_path, capsys, "100 Gbps").split())  # piped output wraps
    assert "N_prfaas/N_p/N_d = 4/0/8" in text
    (line,) = text.split("warning: ")[1:]  # one warning
    assert "N_p = 0" in line and "link outage" in line and "no prefill at all" in line
    assert f"prfaas-tui drill link-outage --preset {tmp_path / 'mine.toml'}" in line


@pytest.mark.parametrize("bandwidth, flagged", [("100 Gbps", True), ("10 Gbps", False)])
def test_json_carries_it(tmp_path, capsys, bandwidth, flagged):
    answer = json.loads(_new(tmp_path, capsys, bandwidth, "--json"))
    assert (answer["optimum"]["n_p"] == 0) is flagged
    assert answer["no_local_prefill"] is flagged
    assert len(answer["warnings"]) == flagged


def test_an_optimum_with_local_prefill_says_nothing(tmp_path, capsys):
    text = _new(tmp_path, capsys, "10 Gbps")
    assert "N_p = 0" not in text and "warning" not in text
