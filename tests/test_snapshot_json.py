"""Issue 12: the headless JSON mid-brownout and mid-loss holds the model evaluated at the live
state (not the nominal one) and says whether the queues grow; strict JSON (no inf/nan)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from emulator.effective import effective_view
from emulator.model import Knobs, evaluate
from emulator.stability import assess
from prfaas_tui.snapshot_json import snapshot_json
from tests.emu_probe import drill_at

KEYS = {"lambda_max", "binding", "prfaas_term", "ceilings", "link_capacity_gbps", "alive"}


@pytest.fixture(scope="module")
def brownout():
    return drill_at("link-brownout", 15 * 60)


@pytest.fixture(scope="module")
def loss():
    return drill_at("prfaas-loss", 15 * 60)


def _json(p):
    view = effective_view(p.system, p.state)
    out = snapshot_json(p.snapshot, view, assess(p.rows, view.point))
    return json.loads(json.dumps(out, allow_nan=False))


def test_mid_brownout_json_is_the_model_at_the_live_link(brownout):
    out = _json(brownout)
    assert {"sim_time", "knobs", "stable", "unstable_stages", "effective", "nominal"} <= set(out)
    assert set(out["effective"]) >= KEYS and set(out["nominal"]) >= KEYS
    s, st = brownout.system, brownout.state
    live = evaluate(replace(s, bandwidth=st.link_capacity),
                    Knobs(st.t, st.alive.pd_p, st.alive.pd_d, st.alive.prfaas, st.link_capacity),
                    "exact")
    eff, nom = out["effective"], out["nominal"]
    assert eff["lambda_max"] == pytest.approx(live.lambda_max)
    assert eff["ceilings"]["prfaas"] == pytest.approx(live.ceilings["prfaas"])
    assert eff["link_capacity_gbps"] == pytest.approx(6.0) and nom["link_capacity_gbps"] == 30.0
    assert eff["prfaas_term"] == "bandwidth" and eff["binding"] == "prfaas"
    assert nom["lambda_max"] > 1.5 * eff["lambda_max"]
    assert "link 6.0 of 30 Gbps" in out["differences"]
    # the static threshold at load 0.6 overloads PrfaaS at 6 Gbps: its queue grows
    assert out["stable"] is False and "prfaas" in out["unstable_stages"]


def test_mid_loss_json_counts_two_of_four(loss):
    out = _json(loss)
    eff, nom = out["effective"], out["nominal"]
    assert eff["alive"] == {"prfaas": 2, "pd-p": 3, "pd-d": 5}
    assert nom["alive"] == {"prfaas": 4, "pd-p": 3, "pd-d": 5}
    s, st = loss.system, loss.state
    live = evaluate(s, Knobs(st.t, 3, 5, 2, st.link_capacity), "exact")
    assert eff["lambda_max"] == pytest.approx(live.lambda_max)
    assert eff["prfaas_term"] == "compute"
    assert eff["lambda_max_by_mode"]["paper"] != eff["lambda_max_by_mode"]["exact"]
    assert out["optimum"]["lambda_max"] > eff["lambda_max"]
    assert out["differences"][0] == "PrfaaS 2 of 4 alive (2 down)"


def test_stages_carry_routed_rates_and_the_events_are_structured(brownout, loss):
    """What the router sent per stage (not what left served), the scheduler's state, and the
    incident and the scheduler's decisions as rows with a kind."""
    for probe in (brownout, loss):
        out = _json(probe)
        stages, report = out["stages"], assess(probe.rows, effective_view(probe.system,
                                                                         probe.state).point)
        assert set(stages) == {"prfaas", "pd-p", "pd-d"}
        for name, row in stages.items():
            assert row["routed_rate"] == pytest.approx(report.stages[name].routed_rate)
            assert row["served_rate"] == pytest.approx(probe.snapshot.stages[name].served_rate)
            assert row["growing"] == (name in out["unstable_stages"])
        # the router sends every request to PD-D, and to PrfaaS or PD-P: the two prefill
        # paths together carry what PD-D gets
        assert (stages["prfaas"]["routed_rate"] + stages["pd-p"]["routed_rate"]
                == pytest.approx(stages["pd-d"]["routed_rate"], rel=0.15))
        assert out["routed_share"] == pytest.approx(report.routed_share)
        kinds = {e["kind"] for e in out["events"]}
        assert "incident" in kinds and all(e["kind"] in ("knob", "incident", "scheduler")
                                           for e in out["events"])
        assert out["scheduler"]["enabled"] == probe.snapshot.scheduler_enabled
    assert _json(loss)["stages"]["prfaas"]["failed"] == 2
