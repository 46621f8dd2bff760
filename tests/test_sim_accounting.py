"""`lost` is measured, not a counter: a request that disappears from every queue, instance,
link and batch shows up as lost 1 on the snapshot and fails the run."""

import pytest

from emulator.scenario.presets import load
from emulator.sim.accounting import Accounting, AccountingError
from emulator.sim.engine import Emulation


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
