"""Paradigm behaviour and the one knob check (Controls.validate) shared by CLI, UI and engine."""

import json
from dataclasses import replace

import pytest

from emulator.optimizer import homogeneous, naive
from emulator.paradigm import Cluster, Paradigm, Stage
from emulator.scenario.knobs import KNOBS, Controls, KnobError, whole
from emulator.scenario.presets import load

TOY = load("toy")


def controls(**kw) -> Controls:
    base = Controls(t=TOY.t, n_p=TOY.n_p, n_d=TOY.n_d, n_prfaas=TOY.system.n_prfaas,
                    bandwidth=TOY.system.bandwidth)
    return replace(base, **kw)


def test_spellings_are_the_json_and_cli_strings():
    assert [str(p) for p in Paradigm] == ["prfaas-pd", "homogeneous", "naive-heterogeneous"]
    assert [str(s) for s in Stage] == ["prfaas", "pd-p", "pd-d"]
    assert [str(c) for c in Cluster] == ["prfaas", "pd"]
    assert json.dumps({Stage.PD_P: Paradigm.NAIVE}) == '{"pd-p": "naive-heterogeneous"}'
    with pytest.raises(ValueError, match="paradigm must be one of prfaas-pd, homogeneous"):
        Paradigm("naive")


@pytest.mark.parametrize("paradigm, short, long", [
    (Paradigm.PRFAAS_PD, False, True),
    (Paradigm.HOMOGENEOUS, False, False),
    (Paradigm.NAIVE, True, True),
])
def test_router_rule(paradigm, short, long):
    assert paradigm.remote(1000, t=8192) is short
    assert paradigm.remote(9000, t=8192) is long


def test_stages_and_clusters():
    assert Paradigm.PRFAAS_PD.stages == (Stage.PRFAAS, Stage.PD_P, Stage.PD_D)
    assert Stage.PRFAAS not in Paradigm.HOMOGENEOUS.stages
    assert Paradigm.HOMOGENEOUS.clusters == (Cluster.PD,)
    assert Stage.PD_P not in Paradigm.NAIVE.stages
    assert Paradigm.NAIVE.clusters == (Cluster.PRFAAS, Cluster.PD)


def test_model_evaluation_per_paradigm():
    s = TOY.system
    lo, hi = s.lengths.support
    k = controls().model_knobs()
    assert Paradigm.PRFAAS_PD.model_knobs(s, k) == k
    homo = Paradigm.HOMOGENEOUS.model_knobs(s, k)
    assert (homo.t, homo.n_prfaas) == (hi, 0)
    assert Paradigm.NAIVE.model_knobs(s, k).t == max(lo - 1, 0)
    assert Paradigm.NAIVE.evaluate(s, k).p == 1.0
    assert Paradigm.HOMOGENEOUS.evaluate(s, k).p == 0.0
    assert naive(s).p == 1.0 and naive(s).knobs.n_p == 0
    h = homogeneous(s)
    assert h is not None and h.knobs.n_p + h.knobs.n_d == s.homogeneous_pool


def test_cost_per_hour():
    s = replace(TOY.system, price_local=2.0, price_prfaas=5.0)
    assert Paradigm.HOMOGENEOUS.cost_per_hour(s) == s.homogeneous_pool * 2.0
    assert Paradigm.PRFAAS_PD.cost_per_hour(s) == s.n_prfaas * 5.0 + s.local_pool * 2.0
    assert Paradigm.NAIVE.cost_per_hour(replace(s, price_prfaas=None)) is None
    assert Paradigm.HOMOGENEOUS.cost_per_hour(replace(s, price_local=None)) is None


def test_controls_of_the_preset_validate():
    c = controls()
    c.validate(TOY.system)
    assert c.model_knobs() == TOY.knobs


@pytest.mark.parametrize("kw, knob, text", [
    ({"n_p": -1}, "n_p", "n_p must be >= 0 (got -1)"),
    ({"n_d": 0}, "n_d", "n_d must be >= 1: every request needs decode (got 0)"),
    ({"n_p": 2, "n_d": 2}, "n_p", "n_p + n_d = 4 exceeds the local pool of 3"),
    ({"n_p": 1.5}, "n_p", "n_p must be a whole number (got 1.5)"),
    ({"n_prfaas": -2}, "n_prfaas", "n_prfaas must be >= 0 (got -2)"),
    ({"bandwidth": 0.0}, "bandwidth", "bandwidth must be >= 1 Mbps (got 0 Gbps)"),
    ({"bandwidth": float("inf")}, "bandwidth", "bandwidth must be at most 8 Pbps"),
    ({"t": 64 * 1024}, "t", "65536 tokens lies outside the length distribution's support"),
    ({"t": -1.0}, "t", "lies outside"),
    ({"rate": -1.0}, "rate", "rate must be >= 0"),
    ({"rate": float("nan")}, "rate", "rate must be >= 0"),
    ({"paradigm": Paradigm.NAIVE, "n_p": 1}, "n_p", "naive-heterogeneous prefills everything "
                                                     "remotely: n_p must be 0"),
])
def test_impossible_controls_name_the_knob(kw, knob, text):
    with pytest.raises(KnobError) as err:
        controls(**kw).validate(TOY.system)
    assert err.value.knob == knob
    assert text in str(err.value) and "\n" not in str(err.value)


def test_homogeneous_needs_its_pool():
    s = replace(TOY.system, homogeneous_pool=0)
    with pytest.raises(KnobError, match=r"needs a \[homogeneous\] section") as err:
        controls(paradigm=Paradigm.HOMOGENEOUS).validate(s)
    assert err.value.knob == "paradigm"
    # its split is checked against its own pool
    big = controls(paradigm=Paradigm.HOMOGENEOUS, n_p=1, n_d=TOY.system.homogeneous_pool)
    with pytest.raises(KnobError, match=f"local pool of {TOY.system.homogeneous_pool}"):
        big.validate(TOY.system)


def test_changed_is_a_validated_copy():
    c = controls()
    d = c.changed(TOY.system, n_p=0, paradigm="naive-heterogeneous")
    assert (d.n_p, d.paradigm) == (0, Paradigm.NAIVE) and c.n_p == TOY.n_p
    with pytest.raises(KnobError):
        c.changed(TOY.system, n_d=0)
    with pytest.raises(TypeError, match="no knob named 'speed'"):
        c.changed(TOY.system, speed=3)


def test_knob_table_covers_every_control_and_parses():
    assert set(KNOBS) == {"t", "n_p", "n_d", "n_prfaas", "bandwidth", "rate", "paradigm"}
    assert KNOBS["n_prfaas"].flag == "--n-prfaas" and "--nprfaas" in KNOBS["n_prfaas"].aliases
    assert KNOBS["t"].parse("32K") == 32 * 1024
    assert KNOBS["bandwidth"].parse("100") == pytest.approx(100e9 / 8)
    assert KNOBS["paradigm"].parse("homogeneous") is Paradigm.HOMOGENEOUS
    assert whole("4") == 4 and whole(4.0) == 4
    for bad in ("1.5", 1.5, True, "x", None):
        with pytest.raises(ValueError, match="must be a whole number"):
            whole(bad)
    with pytest.raises(ValueError, match="must be finite"):
        KNOBS["rate"].parse("inf")
