"""Issue 11: each command's default caps (emulator.budget.COMMAND_CAPS) keep it within 10 s on a
2-core machine; over them it is refused up front with one line naming the flag or key, the cap
and the `--max-*` flag that raises it. Checked on the estimates and on refusals, never by
running anything long."""

from __future__ import annotations

import pytest

from emulator import budget
from emulator.budget import caps_for
from prfaas_tui.cli import main
from tests.test_hostile_cli import preset, refused

RUN = caps_for("run")


@pytest.mark.parametrize("command", ["run", "drill", "snapshot", "plan"])
def test_help_shows_the_command_s_own_defaults(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"--max-requests N raise the cap on requests (default " \
           f"{caps_for(command).requests:,.0f})" in out


def test_the_fast_commands_have_tighter_caps_than_the_dashboard():
    dash = caps_for("dashboard")
    for command in ("run", "drill", "snapshot", "plan"):
        assert caps_for(command).requests < dash.requests
    assert caps_for("snapshot").requests < RUN.requests  # it also starts and renders the app
    assert caps_for("plan").runs < dash.runs


def test_snapshot_at_1e6_is_refused_up_front(capsys, tmp_path):
    """2.8M paper requests would run for minutes; the default cap refuses it at once."""
    line = refused(capsys, "snapshot", "--at", "1e6", "--out", str(tmp_path / "x.svg"))
    assert line.startswith("prfaas-tui: --rate/--load x --at")
    assert "over the cap of 100,000" in line and line.endswith("--max-requests N")


def test_run_cap_edge():
    assert budget.check_run(75.0, 2000.0, caps=RUN) == 150_000
    with pytest.raises(budget.BudgetError, match=r"^--rate x --duration: simulated requests "
                                                 r"= 152,000, over the cap of 150,000"):
        budget.check_run(76.0, 2000.0, caps=RUN)


def test_sampling_ticks_and_timers_count_together():
    """Each timer alone fits, all of them together do not."""
    ok = {"a": 2.0, "b": 2.0}
    budget.check_run(0.001, 140_000.0, caps=RUN)
    with pytest.raises(budget.BudgetError, match="^all timers together"):
        budget.check_run(0.001, 140_000.0, periods=ok, caps=RUN)


def test_a_scheduler_solve_weighs_more_than_a_tick():
    budget.check_run(0.001, 2400.0, periods={"x": 0.1}, caps=RUN)  # 24,000 plain timers
    with pytest.raises(budget.BudgetError, match=r"^scheduler.period: periodic events = 288,000"):
        budget.check_run(0.001, 2400.0, solves={"scheduler.period": 0.1}, caps=RUN)


def test_drill_compare_counts_both_runs():
    budget.check_run(37.5, 2000.0, caps=RUN)
    with pytest.raises(budget.BudgetError, match=r"\(x 2 runs\): simulated requests = 150,000"):
        budget.check_run(37.5, 2000.0, copies=2, caps=RUN.raised(requests=149_999))


def test_many_instances_on_a_link_weigh_each_request():
    assert budget.request_weight(12) == pytest.approx(1.15)
    assert budget.request_weight(8000) == pytest.approx(101.0)
    with pytest.raises(budget.BudgetError, match=r"x 101: 8,000 instances share a link"):
        budget.check_run(100.0, 60.0, instances=8000, caps=RUN)  # 6,000 requests, 606,000 weighed


def test_a_huge_local_pool_at_a_modest_rate_is_refused(capsys, tmp_path):
    """8,000 local instances at 100 req/s for a minute ran for minutes (every KV flow shares
    the link); refused before the pools are built."""
    path = preset(tmp_path, "local_gpus = 64 ", "local_gpus = 64000 ")
    line = refused(capsys, "run", "--preset", path, "--rate", "100", "--duration", "60")
    assert "8,000 instances share a link" in line and "--max-requests" in line


def test_scheduler_period_in_a_drill_is_refused(capsys, tmp_path):
    path = tmp_path / "d.toml"
    path.write_text('description = "x"\npreset = "paper-case-study"\n[emulator]\n'
                    'duration = "40 min"\n[scheduler]\nenabled = true\nperiod = "0.1 s"\n'
                    '[[incidents]]\nkind = "outage"\nat = "10 min"\nduration = "1 min"\n',
                    encoding="utf-8")
    line = refused(capsys, "drill", str(path))
    assert line.startswith(f"prfaas-tui: {path}: scheduler.period: periodic events = 288,000")
    assert line.endswith("--max-events N")


def test_plan_counts_its_runs_requests_together(capsys, tmp_path):
    line = refused(capsys, "plan", "--pool", "4:12", "--out", str(tmp_path / "p.jsonl"))
    assert "--duration x --seeds x --steps" in line and "over the cap of 300,000" in line
