"""The TPOT knob of a decode from the cards: turning it derives BS_max and t_decode again, in the
model (Eq. 5) and in the running decode stage (new joins obey the new BS_max, requests already
in a batch stay), on the command line, the engine, the dashboard and a topology's regions; on a
constant decode it is refused in one line, as is a TPOT no batch of 1 meets."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from emulator.cards.decode import bs_max
from emulator.scenario import presets
from emulator.scenario.decode import CardStep
from emulator.scenario.knobs import CONSTANT_DECODE, KnobError
from emulator.scenario.presets import from_dict
from emulator.scenario.scenario import with_tpot
from emulator.sim.engine import Emulation
from prfaas_tui.cli import main
from prfaas_tui.fork import Fork
from prfaas_tui.live import ElementChange, check_element, set_element
from prfaas_tui.modelview import Refused, Settings
from prfaas_tui.screens.element_knobs import parse_knobs
from prfaas_tui.session import Session

CONFIGS = Path(__file__).parent / "configs"


@pytest.fixture(scope="module")
def preset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tpot") / "p.toml"
    assert main(["new", "--model", str(CONFIGS / "qwen3-30b-a3b.json"), "--decode", "cards",
                 "--out", str(out), "--force", "--json"]) == 0
    return out


def _limit(step: CardStep, tpot: float):
    return bs_max(step.card, step.gpu, step.setup, step.context, tpot)


def _quiet() -> dict:
    return {"post_tick": lambda tick: None, "post_error": lambda text, gen: None}


def test_with_tpot_derives_eq5_again(preset):
    sc = presets.load(preset)
    slower = with_tpot(sc, 0.05)
    lim = _limit(sc.sim.step, 0.05)
    assert slower.sim.step.tpot == 0.05 and slower.sim.step.limit == lim
    assert (slower.system.decode.bs_max, slower.system.decode.t_decode) == \
        (lim.batch, lim.step.step_s) and lim.batch > sc.system.decode.bs_max
    assert slower.system.decode.l_out == sc.system.decode.l_out
    assert slower.sim.step._memo is sc.sim.step._memo  # the step is physics: its memo stays


def test_the_cli_flag_moves_the_decode_ceiling(preset, capsys):
    def pd_d(*flags: str) -> float:
        assert main(["solve", "--preset", str(preset), "--json", *flags]) == 0
        return json.loads(capsys.readouterr().out)["optimum"]["ceilings"]["pd-d"]

    assert pd_d("--tpot", "25 ms") == pytest.approx(pd_d())  # the preset's own SLO
    assert pd_d("--tpot", "50ms") > pd_d()


@pytest.mark.parametrize("flags, words", [
    (["--tpot", "0"], "must be > 0 s"),
    (["--tpot", "1 us"], "below one decode step"),
    (["--tpot", "90 s"], "at most 60 s"),
    (["--tpot", "fast"], "a duration"),
])
def test_a_bad_tpot_flag_is_one_line(preset, capsys, flags, words):
    assert main(["solve", "--preset", str(preset), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("prfaas-tui: --tpot:") and words in err[0], err


@pytest.mark.parametrize("command", ["solve", "run"])
def test_the_flag_on_a_constant_decode_says_what_to_set(capsys, command):
    extra = ["--duration", "10"] if command == "run" else []
    assert main([command, "--preset", "toy", "--tpot", "30ms", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(f"--tpot: {CONSTANT_DECODE}"), err


def test_a_running_decode_takes_the_new_batch_and_keeps_its_requests(preset):
    sc = presets.load(preset)
    with Emulation(sc, load=0.9, duration=600, seed=1) as emu:
        emu.run_until(200.0)
        stage = emu.pdd
        before = max(w.n for w in stage.workers)
        lambda_before = emu.model_point("exact").theta_pdd
        emu.set_tpot(0.009)  # tighter: a smaller batch
        lim = _limit(sc.sim.step, 0.009)
        assert (stage.bs_max, stage.t_decode) == (lim.batch, lim.step.step_s)
        assert stage.step.tpot == 0.009 and emu.tpot() == 0.009
        assert emu.scenario.system.decode.bs_max == lim.batch
        assert emu.model_point("exact").theta_pdd < lambda_before
        assert before > lim.batch  # some batches ran above the new limit: they stay, and drain
        assert "TPOT -> 9 ms" in emu.decisions[-1]
        out = emu.run().json  # runs the accounting check: nothing lost
    assert out["accounting"]["completed"] > 0
    assert all(w.n <= lim.batch for w in stage.workers)


def test_a_constant_decode_refuses_and_changes_nothing():
    with Emulation(presets.load("toy"), load=0.5, duration=60, seed=1) as emu:
        with pytest.raises(KnobError, match="set \\[decode\\] from"):
            emu.set_tpot(0.03)
        assert emu.tpot() is None and emu.pdd.step is None


def test_a_topology_region_turns_its_own(preset):
    from test_decode_from_cards import _two_regions

    sc = from_dict(_two_regions(tomllib.loads(preset.read_text())), preset.parent / "t.toml",
                   topology=True)
    with Emulation(sc, rate=2.0, duration=120, seed=1) as emu:
        east, west = emu.regions["east"].pdd, emu.regions["west"].pdd
        change = ElementChange.of("region", "west", {"tpot": 0.05})
        check_element(emu, change)
        set_element(emu, change)
        assert west.step.tpot == 0.05 and east.step.tpot == 0.025
        assert west.bs_max == _limit(west.step, 0.05).batch > east.bs_max
        spec = {r.name: r for r in emu.scenario.declared_topology.regions}
        assert spec["west"].decode.bs_max == west.bs_max and spec["east"].decode.bs_max == \
            east.bs_max
        with pytest.raises(KnobError, match="^region west: tpot"):
            check_element(emu, ElementChange.of("region", "west", {"tpot": 1e-6}))
        emu.run()


def test_the_topology_editor_reads_tpot_through_the_registry():
    assert parse_knobs("region", "west", "tpot=50ms 4/4") == {"tpot": 0.05, "n_p": 4, "n_d": 4}
    with pytest.raises(KnobError, match="region west: tpot"):
        parse_knobs("region", "west", "tpot=0")


def test_settings_carry_it_and_refuse_on_constants(preset):
    s = Settings.initial(presets.load(preset))
    assert s.tpot == 0.025
    t = s.apply(tpot=0.04, rate=1.0)
    assert t.tpot == 0.04 and t.rate == 1.0
    assert t.scenario.system.decode.bs_max == _limit(s.scenario.sim.step, 0.04).batch
    with pytest.raises(Refused, match="set \\[decode\\] from"):
        Settings.initial(presets.load("toy")).apply(tpot=0.04)


def test_a_fork_replays_a_tpot_change(preset):
    s = Session(presets.load(preset), live=False, **_quiet())
    s.start(60.0)
    try:
        s.request(tpot=0.04)
        s.step(60.0)
        assert s.driver.call(lambda emu: emu.tpot()) == 0.04
        fork = Fork(s, **_quiet())
        fork.start()
        try:
            assert fork.verdict.ok and fork.verdict.changes == 1, fork.verdict.text()
            assert fork.session.driver.call(lambda emu: emu.pdd.bs_max) == \
                _limit(s.settings.scenario.sim.step, 0.04).batch
        finally:
            fork.drop()
    finally:
        s.stop()


@pytest.mark.asyncio
async def test_the_dashboard_steps_the_tpot(preset):
    from test_ui_support import dash, screen_text

    from prfaas_tui.app import PrfaasApp
    from prfaas_tui.widgets.controls import ControlPanel

    app = PrfaasApp(str(preset), live=False, at=5.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        panel = app.screen.query_one(ControlPanel)
        panel.select("tpot")
        panel.focus()
        await pilot.press("right")
        await pilot.pause()
        s = dash(app).session
        assert s.settings.tpot == pytest.approx(0.026)
        assert s.driver.call(lambda emu: emu.tpot()) == pytest.approx(0.026)
        assert "TPOT" in screen_text(app)


@pytest.mark.asyncio
async def test_a_constant_dashboard_shows_no_tpot():
    from test_ui_support import dash

    from prfaas_tui.app import PrfaasApp
    from prfaas_tui.widgets.controls import ControlPanel

    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        panel = app.screen.query_one(ControlPanel)
        assert "tpot" not in [k.key for k in panel.knobs]
        assert dash(app).settings.tpot is None
