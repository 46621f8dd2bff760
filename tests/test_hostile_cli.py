"""Issue 11's hostile inputs, in-process: each ends in exit 2 and exactly one stderr line
naming the flag or key (and, for a cap, how to raise it), or finishes quickly when valid.

Nothing here runs a long emulation: every refusal happens before the run starts, so a
regression (the old hang) shows as a test that does not return, not as a slow pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.scenario.presets import presets_dir
from prfaas_tui.cli import main

BASE = (presets_dir() / "paper-case-study.toml").read_text(encoding="utf-8")


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI; assert exit 2 and one stderr line; return that line."""
    rc = main(list(argv))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1, err
    return err[0]


def preset(tmp_path: Path, old: str, new: str, name: str = "p.toml") -> str:
    """The paper preset with one line replaced, written to tmp_path."""
    assert old in BASE
    path = tmp_path / name
    path.write_text(BASE.replace(old, new, 1), encoding="utf-8")
    return str(path)


# -- bounded work: run ------------------------------------------------------------------------
@pytest.mark.parametrize("argv, names", [
    (["--rate", "1e30"], "--max-requests"),
    (["--load", "1e6"], "--max-requests"),  # the largest load: in range, over the cap
    (["--duration", "1e30"], "--max-requests"),
    (["--duration", "1e12 h"], "--max-requests"),
    (["--n-prfaas", "100000"], "--max-instances"),
    (["--duration", "60", "--max-requests", "10"], "--max-requests"),
])
def test_run_over_a_cap_is_refused(capsys, argv, names):
    line = refused(capsys, "run", *argv)
    assert names in line and "over the cap" in line


def test_run_cap_flag_takes_a_positive_number(capsys):
    assert "--max-requests" in refused(capsys, "run", "--max-requests", "-3")


def test_raised_cap_lets_the_run_finish(capsys):
    # 60 s at ~2.8 req/s is ~170 requests: refused under a cap of 100, runs under 1000
    refused(capsys, "run", "--duration", "60", "--max-requests", "100")
    assert main(["run", "--duration", "60", "--max-requests", "1000", "--json"]) == 0


@pytest.mark.parametrize("old, new, key", [
    ("load = 0.9", "rate = 1e300", "--max-requests"),
    ("load = 0.9", "load = 1e300", "workload.load: must be <= 1e+06"),
    ('duration = "10 min"', 'duration = "1e12 h"', "--max-requests"),
    ('duration = "10 min"', 'duration = "10 min"\nsample_interval = "1e-9 s"\nwindow = "1 s"',
     "--max-events"),
    ("prfaas_gpus = 32 ", "prfaas_gpus = 8000000000000000000 ", "prfaas_gpus"),
    ("local_gpus = 64 ", "local_gpus = 800000 ", "--max-instances"),
])
def test_preset_over_a_cap_is_refused(capsys, tmp_path, old, new, key):
    assert key in refused(capsys, "run", "--preset", preset(tmp_path, old, new))


@pytest.mark.parametrize("value", ["1e30", "1e308", "inf"])
def test_a_load_out_of_its_range_names_the_flag_or_key(capsys, tmp_path, value):
    """load x Lambda_max overflowed to an infinite rate (a fuzzed drill with load = 1e308 ended
    in a ValueError traceback); the load's one range refuses it wherever it is given."""
    assert refused(capsys, "run", "--load", value).startswith("prfaas-tui run: error: --load: must")
    path = preset(tmp_path, "load = 0.9", f"load = {value}")
    for argv in (["run", "--preset", path], ["solve", "--preset", path],
                 ["snapshot", "--preset", path, "--at", "10", "--out", str(tmp_path / "x.svg")]):
        assert "workload.load: must" in refused(capsys, *argv)


INCIDENT = '\n[[incidents]]\nkind = "{kind}"\nat = "10 s"\nduration = "1 min"\n{extra}\n'


@pytest.mark.parametrize("kind, extra", [
    ("flap", 'down = "1e-9 s"\nup = "1e-9 s"'),
    ("diurnal", 'step = "1e-9 s"\nperiod = "1 min"'),
    ("surge", "factor = 1e6"),
])
def test_incident_timers_and_surges_count(capsys, tmp_path, kind, extra):
    path = tmp_path / "p.toml"
    path.write_text(BASE + INCIDENT.format(kind=kind, extra=extra), encoding="utf-8")
    line = refused(capsys, "run", "--preset", str(path))
    assert ("incidents[0]" in line or "surge" in line) and "--max-" in line


def test_replay_stretched_by_a_tiny_load_is_refused(capsys, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(f'{{"timestamp": {i * 1000}, "input_length": 1000, '
                             f'"output_length": 10}}\n' for i in range(20)), encoding="utf-8")
    assert "the replay spans" in refused(capsys, "run", "--trace", str(trace), "--load", "1e-9")
    line = refused(capsys, "run", "--trace", str(trace), "--duration", "1e30")
    assert line.startswith("prfaas-tui run: error: --duration (the replay spans")
    assert main(["run", "--trace", str(trace), "--json"]) == 0


# -- bounded work: drill, snapshot --------------------------------------------------------------
DRILL = 'description = "x"\npreset = "paper-case-study"\n[emulator]\nduration = "{d}"\n'


def test_drill_duration_over_the_cap(capsys, tmp_path):
    path = tmp_path / "d.toml"
    path.write_text(DRILL.format(d="1e9 s") + INCIDENT.format(kind="outage", extra=""),
                    encoding="utf-8")
    line = refused(capsys, "drill", str(path))
    assert str(path) in line and "--max-requests" in line


@pytest.mark.parametrize("at", ["1e30", "1e6"])
def test_snapshot_at_over_the_cap(capsys, tmp_path, at):
    out = str(tmp_path / "x.svg")
    line = refused(capsys, "snapshot", "--at", at, "--out", out, "--max-requests", "1000000")
    assert "--at" in line and "--max-requests" in line


# -- bounded work: plan, profile ------------------------------------------------------------------
@pytest.mark.parametrize("argv, flag", [
    (["--nprfaas", "0:100000000"], "--max-instances"),
    (["--pool", "100000"], "--max-instances"),
    (["--pool", "9000", "--nprfaas", "1:20"], "--max-candidates"),
    (["--seeds", "1000000"], "--max-runs"),
    (["--duration", "1e9 s"], "--max-requests"),
])
def test_plan_over_a_cap_is_refused(capsys, tmp_path, argv, flag):
    line = refused(capsys, "plan", *argv, "--out", str(tmp_path / "p.jsonl"))
    assert flag in line
    assert not (tmp_path / "p.jsonl").exists()


@pytest.mark.parametrize("argv, flag", [
    (["--lengths", "16K", "--repeats", "10000"], "--max-profile-tokens"),
    (["--lengths", "1000000000"], "--lengths"),
    (["--lengths", "1e30"], "--lengths"),
    (["--seed", "99999999999999999999"], "--seed"),
    (["--threads", "99999999999999999999"], "--threads"),
    (["--repeats", "1e20"], "--repeats"),
])
def test_profile_bounds(capsys, argv, flag):
    pytest.importorskip("torch")
    assert flag in refused(capsys, "profile", *argv)


# -- total TOML readers ------------------------------------------------------------------------
@pytest.mark.parametrize("data", [bytes(range(256)) * 2, b'name = "\xff\xfe"\n'])
@pytest.mark.parametrize("command", ["run", "drill", "solve"])
def test_binary_or_non_utf8_toml(capsys, tmp_path, data, command):
    path = tmp_path / "bad.toml"
    path.write_bytes(data)
    argv = [command, str(path)] if command == "drill" else [command, "--preset", str(path)]
    line = refused(capsys, *argv)
    assert f"{path}: expected UTF-8 text" in line


def test_binary_profile_file(capsys, tmp_path):
    (tmp_path / "prof.toml").write_bytes(b"\x00\xff" * 64)
    text = BASE.replace('[profiles.h20]\ndescription = "derived from Table 6: T_H20 = -0.69 s + '
                        '3.09 T_H200 (stated assumption)"\nderive = "h200"\ntime_offset = -0.69\n'
                        'time_scale = 3.09', '[profiles.h20]\nfile = "prof.toml"')
    assert text != BASE
    (tmp_path / "p.toml").write_text(text, encoding="utf-8")
    line = refused(capsys, "solve", "--preset", str(tmp_path / "p.toml"))
    assert "prof.toml: expected UTF-8 text" in line


LOGNORMAL = 'mu = 9.90, sigma = 1.00'


@pytest.mark.parametrize("new, key", [
    ("mu = 9.90, sigma = 1e300", "workload.lengths.sigma"),
    ("mu = 9.90, sigma = 100", "workload.lengths.sigma"),
    ("mu = 1e300, sigma = 1.00", "workload.lengths.mu"),
])
def test_lognormal_overflow_names_the_key(capsys, tmp_path, new, key):
    line = refused(capsys, "solve", "--preset", preset(tmp_path, LOGNORMAL, new))
    assert key in line and "p.toml" in line


def test_probabilities_outside_0_1(capsys, tmp_path):
    path = preset(tmp_path, '{ kind = "lognormal", mu = 9.90, sigma = 1.00, lo = 128, hi = "128K" }',
                  '{ kind = "discrete", values = [1000, 2000], probs = [-0.5, 1.5] }')
    line = refused(capsys, "solve", "--preset", path)
    assert "workload.lengths.probs" in line and "[0, 1]" in line and "-0.5" in line


SURGE_CUT = ('\n[[incidents]]\nkind = "surge"\nat = "1 min"\nduration = "1 min"\n'
             'long_factor = 3\ncut = {cut}\n')


@pytest.mark.parametrize("cut", ['"1M"', "1e30", "64"])
def test_surge_cut_beyond_the_lengths(capsys, tmp_path, cut):
    path = tmp_path / "p.toml"
    path.write_text(BASE + SURGE_CUT.format(cut=cut), encoding="utf-8")
    assert "incidents[0].cut" in refused(capsys, "run", "--preset", str(path))
    drill = tmp_path / "d.toml"
    drill.write_text('description = "x"\npreset = "paper-case-study"\n' + SURGE_CUT.format(cut=cut),
                     encoding="utf-8")
    line = refused(capsys, "drill", str(drill))
    assert "d.toml: incidents[0].cut" in line


# -- nothing to emulate ----------------------------------------------------------------------
@pytest.mark.parametrize("argv, source", [
    (["--np", "0"], "--np"),
    (["--np", "0", "--rate", "2"], "--np"),
    (["--paradigm", "naive-heterogeneous", "--n-prfaas", "0"], "--n-prfaas"),
])
def test_run_with_a_stage_that_cannot_serve(capsys, argv, source):
    line = refused(capsys, "run", "--duration", "30", *argv)
    assert line.startswith(f"prfaas-tui run: error: {source}") and "nothing to emulate" in line


@pytest.mark.parametrize("old, new, source", [
    ("prfaas_gpus = 32 ", "prfaas_gpus = 0 ", "--n-prfaas"),
    ('bandwidth = "100 Gbps"', 'bandwidth = "1 Mbps"', "--bandwidth"),  # the least B_out
])
def test_preset_with_a_stage_that_cannot_serve(capsys, tmp_path, old, new, source):
    line = refused(capsys, "run", "--preset", preset(tmp_path, old, new), "--duration", "30")
    assert source in line and "nothing to emulate" in line


def test_naive_heterogeneous_without_pd_p_still_runs():
    assert main(["run", "--np", "0", "--paradigm", "naive-heterogeneous", "--duration", "30",
                 "--json"]) == 0


@pytest.mark.parametrize("stage, have", [("prfaas", 4), ("pd-d", 8)])
def test_drill_losing_more_instances_than_exist(capsys, tmp_path, stage, have):
    path = tmp_path / "d.toml"
    path.write_text('description = "x"\npreset = "paper-case-study"\n'
                    + INCIDENT.format(kind="instance-loss", extra=f'count = 100\nstage = "{stage}"'),
                    encoding="utf-8")
    line = refused(capsys, "drill", str(path))
    assert "incidents[0].count" in line and f"has {have}" in line


@pytest.mark.parametrize("argv, flag", [
    (["--slo-tpot", "0"], "--slo-tpot"),
    (["--slo-tpot=-5ms"], "--slo-tpot"),
    (["--slo-ttft", "0"], "--slo-ttft"),
    (["--t", "1e30"], "--t"),
    (["--workers", "-5"], "--workers"),
    (["--per-config", "0"], "--per-config"),
    (["--top", "-1"], "--top"),
    (["--seeds", "0"], "--seeds"),
    (["--max-candidates", "0"], "--max-candidates"),
])
def test_plan_flag_ranges(capsys, tmp_path, argv, flag):
    line = refused(capsys, "plan", *argv, "--out", str(tmp_path / "p.jsonl"))
    assert line.startswith(f"prfaas-tui: {flag}")


def test_plan_too_short_to_keep_up_warns(capsys, tmp_path, monkeypatch):
    import prfaas_tui.commands.plan as plan_cmd

    monkeypatch.setattr(plan_cmd, "run_plan", lambda *a, **k: {"ranked": []})
    monkeypatch.setattr(plan_cmd, "render", lambda *a, **k: None)
    assert main(["plan", "--duration", "1 min", "--out", str(tmp_path / "p.jsonl")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--duration" in err[0] and "103 s" in err[0]
    assert main(["plan", "--duration", "10 min", "--out", str(tmp_path / "p.jsonl")]) == 0
    assert capsys.readouterr().err.strip() == ""


def test_plan_unmeetable_slo_ttft_warns(capsys, tmp_path, monkeypatch):
    import prfaas_tui.commands.plan as plan_cmd

    monkeypatch.setattr(plan_cmd, "run_plan", lambda *a, **k: {"ranked": []})
    monkeypatch.setattr(plan_cmd, "render", lambda *a, **k: None)
    assert main(["plan", "--slo-ttft", "1 ms", "--out", str(tmp_path / "p.jsonl")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("prfaas-tui plan: warning: --slo-ttft")


def test_plan_slo_tpot_below_the_decode_step_is_refused(capsys, tmp_path):
    """No candidate's decode steps faster than t_decode: a TPOT target below it is refused
    before any work, as on a topology (where the line names the region)."""
    line = refused(capsys, "plan", "--slo-tpot", "1 ms", "--out", str(tmp_path / "p.jsonl"))
    assert line.startswith("prfaas-tui: --slo-tpot: 0.001 s is below the decode step "
                           "(t_decode = 0.025 s)")
    assert not (tmp_path / "p.jsonl").exists()


@pytest.mark.parametrize("argv, flag", [
    (["--n-prfaas", "99999999999999999999"], "--n-prfaas"),
    (["--bandwidth", "1e30"], "--bandwidth"),
])
def test_solve_knob_ranges(capsys, argv, flag):
    assert refused(capsys, "solve", *argv).startswith(f"prfaas-tui: {flag}")


@pytest.mark.parametrize("argv, flag", [
    (["--seed", "-1"], "--seed"),
    (["--seed", "99999999999999999999"], "--seed"),
    (["--theme", "bogus"], "--theme"),
])
def test_snapshot_flag_ranges(capsys, tmp_path, argv, flag):
    line = refused(capsys, "snapshot", "--at", "1", "--out", str(tmp_path / "x.svg"), *argv)
    assert line.startswith(f"prfaas-tui: {flag}")


def test_snapshot_out_is_a_directory(capsys, tmp_path):
    assert "--out" in refused(capsys, "snapshot", "--at", "1", "--out", str(tmp_path))


def test_snapshot_check_on_a_binary_file(capsys, tmp_path):
    path = tmp_path / "x.svg"
    path.write_bytes(b"\xff\x00" * 100)
    assert "expected UTF-8" in refused(capsys, "snapshot", "--at", "1", "--check", str(path))


# -- one-line errors -------------------------------------------------------------------------
@pytest.mark.parametrize("argv, prog", [
    (["bogus"], "prfaas-tui"),
    (["--nope"], "prfaas-tui"),
    (["run", "--rate"], "prfaas-tui run"),
    (["run", "--nope"], "prfaas-tui run"),
    (["run", "--backend", "x"], "prfaas-tui run"),
    (["plan", "--slo-tpot", "-5ms"], "prfaas-tui plan"),
    (["snapshot", "--at", "1"], "prfaas-tui snapshot"),
    (["solve", "--mode", "x"], "prfaas-tui solve"),
    (["drill", "--compare", "x"], "prfaas-tui drill"),
    (["profile", "--nope"], "prfaas-tui profile"),
])
def test_argparse_errors_are_one_line(capsys, argv, prog):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{prog}: error: "), err


def test_profile_module_parser_is_one_line(capsys):
    from prfaas_tui.commands import profile

    with pytest.raises(SystemExit):
        profile.main(["--nope"])
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_dask_without_a_scheduler(capsys, tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")

    class NoScheduler(distributed.Client):  # what Client does after its connect timeout
        def __init__(self, address, timeout=None):
            raise OSError(f"Timed out trying to connect to {address} after {timeout}")

    monkeypatch.setattr(distributed, "Client", NoScheduler)
    line = refused(capsys, "plan", "--dask", "tcp://127.0.0.1:1", "--nprfaas", "4", "--pool", "8",
                   "--paradigm", "prfaas-pd", "--out", str(tmp_path / "p.jsonl"))
    assert line.startswith("prfaas-tui: --dask: cannot reach") and "127.0.0.1:1" in line


def test_run_seed_range(capsys):
    assert "--seed" in refused(capsys, "run", "--seed", "99999999999999999999")


@pytest.mark.parametrize("old, new, key", [
    ("local_gpus = 64 ", "local_pool = 100000 ", "--max-instances"),
    ("local_gpus = 64 ", "local_gpus = 9223372036854775800 ", "local_gpus"),
    ("prfaas_gpus = 32 ", "n_prfaas = 100000 ", "--max-instances"),
])
def test_solve_instances_are_bounded(capsys, tmp_path, old, new, key):
    assert key in refused(capsys, "solve", "--preset", preset(tmp_path, old, new))


def test_preset_n_prfaas_100000_run_is_refused_fast(capsys, tmp_path):
    path = preset(tmp_path, "prfaas_gpus = 32 ", "n_prfaas = 100000 ")
    assert "--max-instances" in refused(capsys, "run", "--preset", path)


@pytest.mark.parametrize("argv", [["--warmup", "1e20"], ["--warmup", "100000000000000000000"],
                                  ["--warmup", "100000"]])
def test_profile_warmup_bounds(capsys, argv):
    pytest.importorskip("torch")
    assert "--warmup" in refused(capsys, "profile", *argv)


@pytest.mark.parametrize("change", [{"rate": 1e30}, {"n_prfaas": 100000}])
def test_dashboard_live_changes_obey_the_caps(change):
    from emulator.scenario.presets import load
    from prfaas_tui.modelview import Refused, Settings

    settings = Settings.initial(load("paper-case-study"))
    with pytest.raises(Refused, match="over the cap"):
        settings.apply(**change)
    assert settings.apply(rate=2.0).rate == 2.0


@pytest.mark.parametrize("content, words", [
    ("hello\n", "not a prfaas-tui plan results file"),
    ('{"header": {"scenario": "another"}}\n', "--out"),
])
def test_plan_refuses_a_bad_resume_file_before_any_warning(capsys, tmp_path, content, words):
    """A run too short for its requests is only a warning: a --out file this plan cannot resume
    is the one line, exit 2, printed alone."""
    out = tmp_path / "p.jsonl"
    out.write_text(content)
    line = refused(capsys, "plan", "--duration", "1 min", "--out", str(out))
    assert words in line and "warning" not in line
    assert out.read_text() == content


def test_plan_refuses_a_bad_workers_or_csv_before_any_warning(capsys, tmp_path):
    assert "--workers" in refused(capsys, "plan", "--duration", "1 min", "--workers", "0")
    assert "--csv" in refused(capsys, "plan", "--duration", "1 min", "--csv",
                              str(tmp_path / "no" / "x.csv"))
