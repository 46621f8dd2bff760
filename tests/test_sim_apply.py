"""Emulation.apply: the engine diffs the desired Controls against its own, applies only what
differs, and changes nothing when the whole setting is impossible."""

from dataclasses import replace

import pytest

from emulator.paradigm import Paradigm
from emulator.scenario.knobs import KnobError
from emulator.scenario.presets import load
from emulator.sim.engine import Emulation


def test_an_impossible_setting_changes_nothing():
    with Emulation(load("toy"), rate=1.0, duration=100, seed=1) as emu:
        emu.run_until(10)
        before, notes = emu.controls, len(emu.decisions)
        with pytest.raises(KnobError, match="exceeds the local pool"):
            emu.apply(replace(before, t=1024, n_p=3, n_d=3))  # t fine, the split is not
        assert emu.controls == before and emu.t == before.t and len(emu.decisions) == notes


def test_only_the_difference_is_applied():
    with Emulation(load("toy"), rate=1.0, duration=100, seed=1) as emu:
        emu.run_until(10)
        assert emu.apply(emu.controls) == emu.controls and not emu.decisions
        now = emu.apply(replace(emu.controls, t=4096, bandwidth=2e9))
        assert (now.t, now.bandwidth, emu.router.t, emu.link.capacity) == (4096, 2e9, 4096, 2e9)
        assert [d.split("s ", 1)[1] for d in emu.decisions] == [
            "threshold -> 4096 tokens", "bandwidth -> 16.00 Gbps"]


def test_a_paradigm_switch_alone_deploys_its_own_split_and_comes_back():
    with Emulation(load("paper-case-study"), load=0.5, duration=900, seed=1) as emu:
        pd = emu.controls
        emu.run_until(100)
        homo = emu.change(paradigm="homogeneous")
        assert homo.paradigm is Paradigm.HOMOGENEOUS and homo.n_prfaas == pd.n_prfaas
        assert emu.knobs.n_prfaas == 0 and (homo.n_p, homo.n_d) != (pd.n_p, pd.n_d)
        naive = emu.change(paradigm="naive-heterogeneous")
        assert naive.n_p == 0 and emu.knobs.n_prfaas == pd.n_prfaas
        back = emu.change(paradigm="prfaas-pd")
        assert back == pd
        emu.run()


def test_a_split_given_with_the_switch_is_the_one_a_later_switch_returns_to():
    with Emulation(load("paper-case-study"), load=0.5, duration=600, seed=1,
                   paradigm="homogeneous") as emu:
        pd = emu.change(paradigm="prfaas-pd", n_p=2, n_d=6)
        assert (pd.n_p, pd.n_d) == (2, 6)
        emu.change(paradigm="naive-heterogeneous")
        assert (emu.change(paradigm="prfaas-pd").n_p, emu.controls.n_d) == (2, 6)
