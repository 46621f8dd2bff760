"""The accounting catches a dropped request: a stage that swallows one request (takes it and
never queues, serves or hands it on) makes the run fail with AccountingError, and the measured
imbalance (arrived - completed - in flight - rejected) is exactly the requests swallowed. This is
what makes "lost 0" elsewhere a measurement rather than a field nobody writes."""

from __future__ import annotations

import pytest

from emulator.sim.accounting import AccountingError
from emulator.sim.decode import DecodeStage
from emulator.sim.engine import Emulation
from emulator.sim.prefill import PrefillStage

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
