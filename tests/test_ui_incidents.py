"""Issue 12 on screen: during an incident the model panel, `o` and the status line use the live
state (alive instances, the link now), not the configured deployment. Headless (live=False,
the emulator run synchronously to `at`): no wall clock."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest
from test_ui_support import dash, screen_text

from emulator.effective import LiveState, effective_optimum, targets_for
from emulator.figure5 import figure5a
from emulator.model import Knobs, evaluate
from emulator.optimizer import search
from emulator.units import format_tokens
from prfaas_tui.app import PrfaasApp
from prfaas_tui.widgets.plots import CeilingsVsTChart, LambdaVsNpChart

pytestmark = pytest.mark.asyncio

MID = 800.0  # the drills' incidents run from 10 to 20 min


def model_at_live_state(system, snap, mode="exact"):
    """Eqs. 3-5 with what the snapshot says is alive and what the link delivers now, built
    here from the snapshot's raw fields (not through emulator.effective)."""
    st, k = snap.stages, snap.knobs
    live = replace(system, n_prfaas=st["prfaas"].instances, bandwidth=snap.link.capacity)
    return evaluate(live, Knobs(t=k.t, n_p=st["pd-p"].instances, n_d=st["pd-d"].instances,
                                n_prfaas=st["prfaas"].instances,
                                bandwidth=snap.link.capacity), mode)


def panel_rows(app) -> dict[str, list[str]]:
    """The model panel's stage rows: stage -> its numbers (Θ, driving mode, the other,
    nominal)."""
    rows = {}
    for line in screen_text(app).splitlines():
        for stage in ("PrfaaS", "PD-P", "PD-D"):
            m = re.search(rf"▏ {re.escape(stage)}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*([\d.]*)",
                          line)
            if m:
                rows[stage] = [g for g in m.groups() if g]
    assert set(rows) == {"PrfaaS", "PD-P", "PD-D"}, screen_text(app)
    return rows


@pytest.mark.parametrize("drill,stage,text", [
    ("link-brownout", "PrfaaS", "link 6.0 of 30 Gbps"),
    ("prfaas-loss", "PrfaaS", "PrfaaS 2 of 4 alive"),
])
async def test_panel_ceilings_are_the_model_at_the_live_state(drill, stage, text):
    app = PrfaasApp(drill=drill, live=False, at=MID)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        d = dash(app)
        snap = d.tick.snapshot
        system = d.session.system
        mode = d.settings.scenario.mode  # the panel's default: the preset's, as solve's
        assert d.session.effective.driving == mode
        live = model_at_live_state(system, snap, mode)
        healthy = evaluate(system, Knobs(t=snap.knobs.t, n_p=snap.knobs.n_p, n_d=snap.knobs.n_d,
                                         n_prfaas=snap.knobs.n_prfaas,
                                         bandwidth=snap.knobs.bandwidth), mode)
        rows = panel_rows(app)
        key = {"PrfaaS": "prfaas", "PD-P": "pd-p", "PD-D": "pd-d"}
        for label, numbers in rows.items():
            assert float(numbers[1]) == pytest.approx(live.ceilings[key[label]], abs=0.006)
            assert float(numbers[3]) == pytest.approx(healthy.ceilings[key[label]], abs=0.006)
        # the incident really moved the ceiling the panel shows, and says why
        assert live.ceilings["prfaas"] < 0.8 * healthy.ceilings["prfaas"]
        screen = screen_text(app)
        assert text in screen
        assert f"Λmax {live.lambda_max:.2f} {mode}" in screen
        routed = d.session.report.routed_share  # entering, not served, rates
        assert routed is not None and f"sent {routed:.0%}" in screen


async def test_o_during_an_incident_applies_the_effective_optimum():
    app = PrfaasApp(drill="prfaas-loss", live=False, at=MID)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        d = dash(app)
        system = d.session.system
        state = LiveState.of(d.tick.snapshot)
        want = targets_for(effective_optimum(system, state, "exact"), state)
        healthy = search(system, "exact").best.knobs
        assert (healthy.t, healthy.n_p, healthy.n_d) != pytest.approx(want)  # a real choice
        await pilot.press("o")
        await pilot.pause()
        sc = d.settings.scenario
        assert (sc.t, sc.n_p, sc.n_d) == pytest.approx(want)
        k = d.tick.snapshot.knobs  # the emulation took it
        assert (k.t, k.n_p, k.n_d) == pytest.approx(want)


async def test_m_switches_the_mode_driving_the_panel():
    app = PrfaasApp(drill="link-brownout", live=False, at=MID)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert "paper drives ([M] exact)" in screen_text(app)  # the case study's mode
        await pilot.press("M")
        await pilot.pause()
        assert "exact drives ([M] paper)" in screen_text(app)
        assert dash(app).session.effective.driving == "exact"


async def run_at_load(load: float, seconds: float = 600.0) -> tuple[str, object]:
    app = PrfaasApp("paper-case-study", live=False, at=1.0, seed=3)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        d = dash(app)
        lam = d.session.effective.effective["exact"].lambda_max
        assert d.request(rate=load * lam)
        d.session.step(seconds)
        d.sync()
        await pilot.pause()
        return screen_text(app), d.session.report


async def test_instability_banner_at_1_3x_and_not_at_0_8x():
    text, report = await run_at_load(1.3)
    assert report.judged and not report.stable
    status = text.splitlines()[-2]
    assert "⚠ unstable:" in status and "backlog" in status
    text, report = await run_at_load(0.8)
    assert report.judged and report.stable
    assert "unstable" not in text


async def drill_t_after(keys: tuple[str, ...] = (), t: float | None = None,
                        until: float = 900.0) -> tuple[float, float, str, object]:
    """link-brownout from 1 s: press `keys` (or set t by hand), run to `until`; (t before, t
    after, the router panel's text, the last snapshot)."""
    app = PrfaasApp(drill="link-brownout", live=False, at=1.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        d = dash(app)
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        if t is not None:
            assert d.request(t=t)
        before = d.tick.snapshot.knobs.t
        d.session.step(until - d.tick.snapshot.sim_time)
        d.sync()
        await pilot.pause()
        text = screen_text(app)
        return before, d.tick.snapshot.knobs.t, text, d.tick.snapshot


async def test_the_scheduler_moves_t_in_the_brownout_and_its_badge_says_so():
    before, after, text, snap = await drill_t_after()
    assert after != before and snap.scheduler_enabled
    assert "scheduler on [S]" in text
    assert snap.scheduler_last and "last " + snap.scheduler_last[:18] in text


async def test_scheduler_off_holds_t_through_the_drill():
    before, after, text, snap = await drill_t_after(("S",))
    assert after == before and snap.scheduler_enabled is False
    assert "scheduler off [S]" in text


async def test_a_t_set_by_hand_is_pinned_and_left_alone():
    before, after, text, snap = await drill_t_after(t=12000.0)
    assert before == after == 12000.0 and snap.scheduler_enabled
    assert snap.pinned == ("t",) and "scheduler on · pin t" in text


async def test_figure5_is_drawn_at_the_live_state_with_n_p_star_on_its_curve():
    app = PrfaasApp(drill="prfaas-loss", live=False, at=MID)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        d = dash(app)
        data = d.query_one(LambdaVsNpChart).data
        state = d.session.effective.state
        a = figure5a(d.session.system, Knobs(t=state.t, n_p=0, n_d=0, n_prfaas=4,
                                             bandwidth=state.bandwidth), "exact")
        assert state.alive.prfaas == 2  # the curve counts 2 PrfaaS instances, not 4
        assert data.a.best < a.best and data.t_now == state.t
        assert data.a.lambda_max[data.a.n_p_star] == data.a.lambda_max.max()
        assert d.query_one(CeilingsVsTChart).data is data


@pytest.mark.parametrize("drill", ["link-brownout", "prfaas-loss"])
async def test_panel_ttft_is_the_latency_model_at_the_live_state(drill):
    """The TTFT line predicts what is alive now (emulator.latency on the live instances and
    link, built here from the snapshot's raw fields), not the configured deployment; `O`
    applies the SLO optimum of the alive instances, failed ones kept in their stage."""
    from emulator.latency import predict, slo_rate, slo_search
    from prfaas_tui.modelview import slo_target

    app = PrfaasApp(drill=drill, live=False, at=MID)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        d = dash(app)
        sc, snap = d.settings.scenario, d.tick.snapshot
        st, k = snap.stages, snap.knobs
        live = replace(d.session.system, n_prfaas=st["prfaas"].instances,
                       bandwidth=snap.link.capacity)
        knobs = Knobs(t=k.t, n_p=st["pd-p"].instances, n_d=st["pd-d"].instances,
                      n_prfaas=st["prfaas"].instances, bandwidth=snap.link.capacity)
        lat = {"link_latency": sc.sim.link_latency, "rdma_latency": sc.sim.rdma_latency}
        target = slo_target(sc)
        want = predict(live, knobs, d.settings.rate, **lat)
        rate = slo_rate(live, knobs, target, **lat)
        nominal = d.view.latency  # at the configured deployment
        assert (want.p90, rate) != pytest.approx((nominal.p90, nominal.slo_rate), rel=0.02)
        screen = screen_text(app)
        slo = f"SLO≤{target:g}s {rate:.2f}/s"
        if math.isfinite(want.p90):
            assert f"TTFT P50 {want.p50:.2f} · P90 {want.p90:.2f} s · {slo}" in screen
        else:  # an unbounded queue reads as such, with the SLO-bound rate beside it
            line = next(r for r in screen.splitlines() if "TTFT ∞ unstable: " in r)
            assert slo in line
        state = LiveState.of(snap)
        pool = state.n_p + state.n_d - state.failed.pd_p - state.failed.pd_d
        best = slo_search(live, target, n_prfaas=knobs.n_prfaas, bandwidth=knobs.bandwidth,
                          pool=pool, **lat)
        t, n_p, n_d = targets_for(best, state)
        assert f"SLO {format_tokens(t)} · {n_p}/{n_d} · {best.rate:.2f}/s" in screen
        await pilot.press("O")
        await pilot.pause()
        now = d.settings.scenario
        assert (now.t, now.n_p, now.n_d) == pytest.approx((t, n_p, n_d))


async def drill_split_after(keys: tuple[str, ...] = (), until: float = 900.0):
    """link-brownout from 1 s with the split set by hand to 2/6, then `keys`; the snapshot at
    `until`."""
    app = PrfaasApp(drill="link-brownout", live=False, at=1.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        d = dash(app)
        assert d.request(n_p=2, n_d=6)
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        d.session.step(until - d.tick.snapshot.sim_time)
        d.sync()
        await pilot.pause()
        return d.tick.snapshot, screen_text(app)


async def test_a_split_set_by_hand_is_pinned_and_left_alone():
    snap, text = await drill_split_after()
    assert (snap.knobs.n_p, snap.knobs.n_d) == (2, 6) and snap.scheduler_enabled
    assert "split" in snap.pinned and "scheduler on · pin split" in text


async def test_u_releases_the_pins_and_the_scheduler_moves_the_split_again():
    snap, _ = await drill_split_after(("U",))
    assert snap.pinned == () and snap.scheduler_enabled
    assert (snap.knobs.n_p, snap.knobs.n_d) != (2, 6)  # the scheduler converted toward its optimum
