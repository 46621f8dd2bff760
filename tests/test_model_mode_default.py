"""One default mode on every surface: `solve`, the dashboard's model panel and status strip, its
snapshot JSON and the compare view evaluate the model in the preset's `mode` (the case study's is
paper: Lambda_max 3.184), and each says which mode beside the number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ui_support import screen_text

from emulator.model import evaluate
from emulator.scenario import presets
from prfaas_tui.app import PrfaasApp
from prfaas_tui.cli import main


@pytest.mark.parametrize("preset", ["paper-case-study", "two-regions"])
def test_solves_default_is_the_presets_mode_and_the_text_says_so(preset, capsys):
    sc = presets.load(preset, topology=True)
    assert main(["solve", "--preset", preset, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main(["solve", "--preset", preset]) == 0
    text = capsys.readouterr().out
    if sc.declared_topology is None:
        assert out["mode"] == sc.mode == "paper"
        lam = out["operating_point"]["lambda_max"]
        assert f"Lambda_max = {lam:.3f} req/s (paper mode)" in text
        assert "paradigms on the same hardware (paper mode)" in text
        assert main(["solve", "--preset", preset, "--mode", "exact"]) == 0
        assert "req/s (exact mode)" in capsys.readouterr().out
    else:
        assert out["mode"] == "exact"
    assert f"Lambda = {out['topology']['bound']['lambda_max']:.3f} req/s (exact mode)" in text


def test_the_dashboards_model_is_solves_default(tmp_path, capsys):
    """At a healthy live state the dashboard's Λmax is `solve`'s operating point, same mode."""
    sc = presets.load("paper-case-study")
    solved = evaluate(sc.system, sc.knobs, sc.mode).lambda_max
    out = tmp_path / "p.json"
    assert main(["snapshot", "--preset", "paper-case-study", "--at", "30", "--format", "json",
                 "--out", str(out)]) == 0
    snap = json.loads(out.read_text(encoding="utf-8"))
    assert snap["mode"] == snap["effective"]["mode"] == "paper"
    assert snap["effective"]["lambda_max"] == pytest.approx(solved, rel=1e-12)
    assert snap["effective"]["lambda_max_by_mode"]["exact"] != pytest.approx(solved)


@pytest.mark.asyncio
@pytest.mark.parametrize("mode, other", [("paper", "exact"), ("exact", "paper")])
async def test_the_model_panel_shows_the_mode_beside_lambda_max(mode, other, tmp_path):
    toy = Path(presets.resolve("toy")).read_text(encoding="utf-8")
    assert 'mode = "paper"' in toy
    path = tmp_path / "toy.toml"
    path.write_text(toy.replace('mode = "paper"', f'mode = "{mode}"'), encoding="utf-8")
    app = PrfaasApp(str(path), live=False, at=30.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        dash = app.screen
        assert dash.session.mode == mode
        lam = dash.session.effective.effective[mode].lambda_max
        assert f"Λmax {lam:.2f} {mode} ({other} " in screen_text(app)
        assert f"Λmax {lam:.2f} req/s ({mode})" in screen_text(app)  # the status strip
        await pilot.press("M")  # the other mode drives, and says so
        await pilot.pause()
        assert dash.session.mode == other
        assert f" {other} ({mode} " in screen_text(app)
