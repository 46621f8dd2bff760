"""A scenario the engine refuses while it is being built leaves no open event loop behind (a
test run warned 'unclosed event loop' when such an emulation was garbage-collected)."""

import pytest

from emulator.scenario.knobs import KnobError
from emulator.scenario.presets import load
from emulator.sim import engine


def test_a_refused_emulation_closes_its_loop(monkeypatch):
    made = []

    class Recording(engine.VirtualTimeLoop):
        def __init__(self):
            super().__init__()
            made.append(self)

    monkeypatch.setattr(engine, "VirtualTimeLoop", Recording)
    with pytest.raises(KnobError, match="site policies need a topology"):
        engine.Emulation(load("toy"), routing="lp")
    assert len(made) == 1 and made[0].is_closed()
    with engine.Emulation(load("toy"), rate=1.0) as emu:  # an accepted one stays open
        assert not emu.loop.is_closed()
