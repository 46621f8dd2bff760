"""The drill comparison marks each run's own figure: static's failing SLO attainment gets ✗
beside it, not the scheduler's ✓ in a shared column."""

from __future__ import annotations

from emulator.scenario.drills import load_drill
from prfaas_tui.commands.drill import _print


def _run(attainment: float, ok: bool) -> dict:
    card = {"lost": 0, "slo_attainment": attainment, "ttft_p90_during": 5.0,
            "peak_ttft_p90": 9.0, "recovery_seconds": 0.0,
            "peak_queue": {"prfaas": 1, "pd-p": 2, "pd-d": 0}, "conversions": 0, "decisions": [],
            "expectations": {"lost": {"bar": 0, "value": 0, "ok": True},
                             "slo_attainment": {"bar": 0.9, "value": attainment, "ok": ok}}}
    return {"preset": "paper-case-study", "seed": 3, "simulated_seconds": 2400.0,
            "offered_rate": 1.9, "knobs": {"bandwidth_gbps": 30.0}, "scorecard": card}


def test_each_mark_is_beside_its_own_figure(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "120")
    _print(load_drill("link-brownout"), {"scheduler": _run(0.958, True),
                                         "static": _run(0.852, False)})
    row = next(x for x in capsys.readouterr().out.splitlines() if "SLO attainment" in x)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells == ["SLO attainment", "95.8% ✓", "85.2% ✗", ">= 90.0%"]
