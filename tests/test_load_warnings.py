"""Numbers that run away are named: an offered rate over what a deployment's own settings serve
(overall and per region) warns in `solve` and `run` (stderr and JSON `warnings`), the shipped
`global` opens at a load its policy serves, and `solve` flags an optimum with no local prefill
in the words `new` uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from emulator.scenario import presets
from emulator.topology.load import (
    NO_LOCAL_PREFILL,
    OVERLOADED,
    region_capacities,
    topology_load_warnings,
)
from prfaas_tui.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _global_at(tmp_path, load: float) -> str:
    text = (ROOT / "presets" / "global.toml").read_text()
    out = tmp_path / "global-hot.toml"
    out.write_text(re.sub(r"(?m)^load = .*$", f"load = {load}", text), encoding="utf-8")
    return str(out)


def test_global_opens_at_a_load_its_own_policy_serves():
    sc = presets.load("global", topology=True)
    lam, per = region_capacities(sc.topology)
    from emulator.topology.bound import routing_bound

    offered = sc.sim.load * routing_bound(sc.topology).lambda_max
    assert offered < lam
    assert all(r.share * offered < per[r.name] for r in sc.topology.regions)
    assert topology_load_warnings(sc.topology, offered) == []


def test_an_overloaded_region_is_named_in_solve(tmp_path, capsys):
    path = _global_at(tmp_path, 0.9)  # 192 req/s against the 152 its own settings serve
    assert main(["solve", "--preset", path, "--json"]) == 0
    cap = capsys.readouterr()
    warnings = json.loads(cap.out)["warnings"]
    assert warnings[0].startswith(OVERLOADED) and "151.9 req/s" in warnings[0]
    assert any(w.startswith(f"region sa-east {OVERLOADED}") for w in warnings)
    assert not any("region us-east" in w for w in warnings)  # only where it runs away
    assert all(f"warning: {w}" in cap.err for w in warnings)


def test_run_json_carries_the_overload(capsys):
    assert main(["run", "--preset", "toy", "--load", "1.2", "--duration", "60", "--json"]) == 0
    cap = capsys.readouterr()
    (line,) = [w for w in json.loads(cap.out)["warnings"] if w.startswith(OVERLOADED)]
    assert "1.20x" in line and "Lambda_max" in line
    assert main(["run", "--preset", "toy", "--load", "0.8", "--duration", "60", "--json"]) == 0
    assert "warnings" not in json.loads(capsys.readouterr().out)


def test_solve_flags_an_optimum_without_local_prefill(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # the long tmp path on one line (xdist sets 80)
    out = tmp_path / "kimi.toml"
    assert main(["new", "--model", "kimi-linear-48b-a3b", "--prfaas-gpus", "32",
                 "--local-gpus", "64", "--t-decode", "25 ms", "--bs-max", "20",
                 "--out", str(out)]) == 0
    new_line = capsys.readouterr().out
    assert main(["solve", "--preset", str(out), "--json"]) == 0
    (line,) = json.loads(capsys.readouterr().out)["warnings"]
    assert "N_p = 0" in line and "link outage" in line
    assert line in " ".join(new_line.split())  # the same words as `new`
    assert main(["solve", "--preset", "paper-case-study", "--json"]) == 0
    assert "warnings" not in json.loads(capsys.readouterr().out)


async def _topology_text(path: str) -> str:
    from prfaas_tui.app import PrfaasApp
    from prfaas_tui.commands.snapshot import normalize, screen_text

    app = PrfaasApp(path, live=False, at=60.0)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        return " ".join(screen_text(normalize(app.export_screenshot())).split())


@pytest.mark.asyncio
async def test_the_topology_view_names_the_overloaded_region(tmp_path):
    hot = await _topology_text(_global_at(tmp_path, 0.9))
    assert f"{OVERLOADED} in sa-east · Λ running policy" in hot
    served = await _topology_text("global")
    assert OVERLOADED not in served


@pytest.mark.asyncio
async def test_the_model_panel_flags_an_optimum_without_local_prefill(tmp_path, capsys):
    from prfaas_tui.app import PrfaasApp
    from prfaas_tui.widgets.model_panel import ModelPanel

    out = tmp_path / "kimi.toml"
    assert main(["new", "--model", "kimi-linear-48b-a3b", "--prfaas-gpus", "32",
                 "--local-gpus", "64", "--t-decode", "25 ms", "--bs-max", "20",
                 "--out", str(out)]) == 0
    for path, flagged in ((str(out), True), ("paper-case-study", False)):
        app = PrfaasApp(path, live=False, at=20.0)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            from prfaas_tui.commands.snapshot import normalize, screen_text

            text = " ".join(screen_text(normalize(app.export_screenshot())).split())
            assert (NO_LOCAL_PREFILL in text) is flagged, path
            assert app.screen.query_one(ModelPanel) is not None


@pytest.mark.asyncio
async def test_the_topology_view_has_a_rate_knob():
    from prfaas_tui.app import PrfaasApp
    from prfaas_tui.screens.dashboard import Dashboard
    from prfaas_tui.screens.prompt import ValuePrompt

    app = PrfaasApp("two-regions", live=False, at=30.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Dashboard)
        await pilot.press("r")
        assert isinstance(app.screen, ValuePrompt)
        await pilot.press("ctrl+a", "ctrl+k", *"0", "enter")
        assert isinstance(app.screen, ValuePrompt)  # refused as typed: the prompt stays
        await pilot.press("ctrl+a", "ctrl+k", *"3.5", "enter")
        await pilot.pause()
        driver = screen.session.driver
        assert driver.call(lambda emu: emu.topology.rate) == 3.5
        regions = driver.call(lambda emu: {r.name: r.workload.mean_rate
                                           for r in emu.topology.regions.values()})
        shares = {r.name: r.share for r in screen.session.scenario.declared_topology.regions}
        assert regions == pytest.approx({n: 3.5 * s for n, s in shares.items()})
        assert any(d.endswith("offered rate -> 3.500 req/s") for d in driver.decisions())
