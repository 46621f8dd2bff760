"""`lost` is measured, not a counter: a request that disappears from every queue, instance,
link and batch shows up as lost 1 on the snapshot and fails the run; a stage that
swallows one request (takes it and never queues, serves or hands it on) leaves an imbalance of
exactly one."""

from __future__ import annotations

import pytest

from emulator.scenario.presets import load
from emulator.sim.books.accounting import Accounting, AccountingError
from emulator.sim.engine import Emulation
from emulator.sim.stages.decode import DecodeStage
from emulator.sim.stages.prefill import PrefillStage


def test_a_dropped_request_is_measured_as_lost_and_fails_the_run():
    with Emulation(load("toy"), load=3.0, duration=200, seed=1) as emu:
        emu.run_until(100)
        assert emu.snapshot().lost == 0 and emu.accounting.balanced
        stage = max((emu.prfaas, emu.pdp, emu.pdd), key=lambda s: len(s.queue))
        assert stage.queue, "the overload left nothing queued"
        stage.queue.pop()  # a bug that drops a queued request on the floor
        assert emu.snapshot().lost == 1 and emu.accounting.lost == 1
        with pytest.raises(AccountingError, match=r"\+1 unaccounted"):
            emu.run()


def test_the_json_names_the_imbalance():
    acc = Accounting(arrived=10, completed=6, in_flight=2, rejected={"queue-full:pd-d": 1})
    assert acc.lost == 1 and not acc.balanced
    assert acc.to_dict()["lost_reasons"] == {"unaccounted": 1}
    sound = Accounting(arrived=10, completed=7, in_flight=2, rejected={"queue-full:pd-d": 1})
    assert sound.to_dict()["lost"] == 0 and sound.to_dict()["lost_reasons"] == {}

DROP_AT = 5  # the n-th request a stage class receives is swallowed


def swallow_nth(monkeypatch: pytest.MonkeyPatch, stage_class: type) -> list[object]:
    """Patch `stage_class.submit` to drop the DROP_AT-th request; returns the dropped ones."""
    original = stage_class.submit
    seen: list[object] = []
    dropped: list[object] = []

    def submit(self, req) -> None:
        seen.append(req)
        if len(seen) == DROP_AT:
            dropped.append(req)
            return
        original(self, req)

    monkeypatch.setattr(stage_class, "submit", submit)
    return dropped


def imbalance(emu: Emulation) -> int:
    acc = emu.accounting
    return acc.arrived - acc.completed - acc.in_flight - acc.rejected_total


def emulation(scenario) -> Emulation:
    return Emulation(scenario, load=0.8, duration=600, seed=3)


def test_an_honest_run_balances(toy):
    with emulation(toy) as emu:
        acc = emu.run().accounting
        assert acc.arrived > 50 * DROP_AT and acc.completed > 0
        assert imbalance(emu) == 0


@pytest.mark.parametrize("stage_class", [PrefillStage, DecodeStage], ids=["prefill", "decode"])
def test_a_swallowed_request_fails_the_run(toy, monkeypatch, stage_class):
    dropped = swallow_nth(monkeypatch, stage_class)
    with emulation(toy) as emu:
        with pytest.raises(AccountingError, match="accounting broken"):
            emu.run()
        assert len(dropped) == 1
        assert imbalance(emu) == 1
