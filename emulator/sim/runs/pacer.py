"""Pacing a live run: virtual time advanced in slices of speed x wall time.

The pacer owns no clock and no thread: the caller (the UI's emulator thread) measures wall time
and hands it over, so the emulator keeps its rule of reading time only from its loop. Pause,
single step and 1x..1000x are just different slice sizes.
"""

from __future__ import annotations

import math

from emulator.sim.engine import Emulation


class Pacer:
    def __init__(self, emu: Emulation, speed: float = 20.0):
        self.emu = emu
        self.speed = speed  # simulated seconds per wall second
        self.paused = False

    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"speed must be a finite number > 0, got {value!r}")
        self._speed = float(value)

    def advance(self, wall_dt: float) -> float:
        """Run `speed x wall_dt` simulated seconds unless paused; returns how many ran."""
        if self.paused or wall_dt <= 0:
            return 0.0
        return self.step(self._speed * wall_dt)

    def step(self, sim_seconds: float) -> float:
        """Run exactly `sim_seconds` of simulated time (also while paused: single step)."""
        if sim_seconds <= 0:
            return 0.0
        start = self.emu.now
        self.emu.run_until(start + sim_seconds)
        return self.emu.now - start

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
