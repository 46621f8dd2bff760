"""Words on screen and in output say what they mean: hints name each key once, tables name
every column, one gap is quoted one way, decisions are shown whole, piped tables keep names
whole (help shown as written: tests/test_topology_view.py)."""

from __future__ import annotations

import pytest

from prfaas_tui.app import PrfaasApp


def test_the_fork_hint_names_each_key_once_with_what_it_does():
    from prfaas_tui.screens.fork import ForkControls

    parts = ForkControls.HINT.split("  ")
    assert parts == ["↑↓ knob", "←→ step", "t: set t"]


def _empty_headers(text: str) -> list[str]:
    """The tables (by title line) with a header cell blank on every header line."""
    out, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("┏"):
            continue
        head = []
        for row in lines[i + 1:]:
            if row.startswith("┡"):
                break
            head.append([c.strip() for c in row.strip("┃").split("┃")])
        for col in zip(*head, strict=True):
            if not any(col):
                out.append(lines[i - 1])
    return out


@pytest.mark.parametrize("argv", [
    ["solve", "--preset", "paper-case-study", "--slo-ttft", "6s"],
    ["solve", "--preset", "two-regions", "--slo-ttft", "10s"],
])
def test_every_table_column_has_a_header(argv, capsys, monkeypatch):
    from prfaas_tui.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "┏" in out and _empty_headers(out) == []


def test_solve_quotes_one_gap_to_the_bound(capsys, monkeypatch):
    import re

    from prfaas_tui.cli import main

    monkeypatch.setenv("COLUMNS", "300")
    assert main(["solve", "--preset", "global"]) == 0
    out = capsys.readouterr().out
    said = re.search(r"gap to the bound ([0-9.]+%)", out).group(1)
    reason = re.search(r"the gap is ([0-9.]+%)", out).group(1)
    assert said == reason


def test_the_maps_gap_names_the_policy_it_is_of():
    from types import SimpleNamespace

    from emulator.scenario import presets
    from prfaas_tui.widgets.topology_map import model_line

    topo = presets.load("two-regions", topology=True).declared_topology
    regions = {r.name: {"target_rate": 0.1} for r in topo.regions}
    fig = SimpleNamespace(topo=topo, model=SimpleNamespace(
        policy_lambda=5.28, bound_lambda=5.35, policy_binding=("link:hub->west",),
        policy_utilization={}), region=regions.get,
        region_state=lambda name: (float("inf"), None))
    line = model_line(fig)
    assert line.startswith("Λ running policy 5.28") and "its gap 1%" in line


@pytest.mark.asyncio
async def test_the_left_column_shows_the_newest_decisions_whole_at_160x48():
    from prfaas_tui.widgets.model_panel import DecisionLog

    app = PrfaasApp(None, live=False, at=1300.0, drill="link-brownout")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        from prfaas_tui.commands.snapshot import normalize, screen_rows

        log = app.screen.query_one(DecisionLog)
        x0, width = log.region.x, log.region.width
        rows = screen_rows(normalize(app.export_screenshot()))
        column = " ".join(rows.get(y, "")[x0:x0 + width].strip()
                          for y in range(log.region.y, log.region.bottom))
        for d in log.tick.snapshot.decisions[-2:]:  # the newest two, every word on screen
            assert " ".join(d.split()) in " ".join(column.split())


def test_piped_tables_keep_names_whole(capsys, monkeypatch):
    from prfaas_tui.cli import main

    monkeypatch.delenv("COLUMNS", raising=False)  # piped, no width asked for
    assert main(["solve", "--preset", "paper-case-study"]) == 0
    out = capsys.readouterr().out
    assert "naive-heterogeneous" in out and "N_prfaas/N_p/N_d" in out and "…" not in out
