"""The one knob check at its edges: each bound accepts its last legal value and refuses the next,
naming the knob, so the CLI, the dashboard and the engine agree to the last token and byte/s
(these edges are where mutation testing found the checks untested)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from emulator.paradigm import Paradigm
from emulator.scenario.knobs import (
    MAX_BANDWIDTH,
    MAX_INSTANCES,
    MIN_BANDWIDTH,
    Controls,
    KnobError,
    number,
)


@pytest.fixture
def base(toy) -> Controls:
    return toy.controls


@pytest.mark.parametrize("knob, ok, bad", [
    ("n_prfaas", 0, -1),
    ("n_prfaas", MAX_INSTANCES, MAX_INSTANCES + 1),
    ("bandwidth", MIN_BANDWIDTH, MIN_BANDWIDTH * (1 - 1e-9)),
    ("bandwidth", MAX_BANDWIDTH, MAX_BANDWIDTH * (1 + 1e-9)),
    ("bandwidth", MIN_BANDWIDTH, float("inf")),
    ("t", 0.0, -1.0),
    ("rate", 0.0, -1e-9),
    ("rate", 0.0, float("nan")),
])
def test_each_bound_takes_its_last_legal_value_and_refuses_the_next(toy, base, knob, ok, bad):
    replace(base, **{knob: ok}).validate(toy.system)
    with pytest.raises(KnobError) as err:
        replace(base, **{knob: bad}).validate(toy.system)
    assert err.value.knob == knob
    assert "\n" not in str(err.value) and str(err.value)


def test_the_upper_bounds_say_what_the_limit_is(toy, base):
    with pytest.raises(KnobError, match=f"at most {MAX_INSTANCES}"):
        replace(base, n_prfaas=MAX_INSTANCES + 1).validate(toy.system)
    with pytest.raises(KnobError, match="at most 8 Pbps"):
        replace(base, bandwidth=MAX_BANDWIDTH * 2).validate(toy.system)


def test_t_may_sit_anywhere_in_the_support(toy, base):
    _, hi = toy.system.lengths.support
    replace(base, t=hi).validate(toy.system)
    with pytest.raises(KnobError):
        replace(base, t=hi + 1).validate(toy.system)


def test_changed_turns_a_paradigm_name_into_the_enum(toy, base):
    out = base.changed(toy.system, paradigm="naive-heterogeneous", n_p=0)
    assert out.paradigm is Paradigm.NAIVE


def test_number_names_what_it_got():
    with pytest.raises(ValueError, match="must be a number, got 'fast'"):
        number("fast")
    with pytest.raises(ValueError, match="must be finite"):
        number("inf")
    assert number("2.5") == 2.5
