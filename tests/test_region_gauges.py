"""A topology region's detail draws the pair's gauges, fed the region's stages from the
engine's snapshot: its site, its link in, its PD-P and PD-D; another region draws its own; a
brownout raises its link's bar; a site or a link has none. Synchronous (live=False)."""

from __future__ import annotations

import re

import pytest
from test_ui_support import dash, select_element

from emulator.sim.books.snapshot import Feed, LinkSnap, RegionStages, StageSnap
from prfaas_tui.app import PrfaasApp
from prfaas_tui.pictures import region_gauges
from prfaas_tui.screens.dashboard import Dashboard
from prfaas_tui.widgets.gauges import Gauges


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):  # no user presets
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))


def _percent(text: str, label: str) -> list[int]:
    return [int(m) for m in re.findall(rf"{re.escape(label)}\s+[^\s%]+\s+(\d+)%", text)]


def _shown(screen: Dashboard) -> str:
    gauges = screen.query_one("#region-gauges", Gauges)
    assert gauges.display
    return gauges.content.plain


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@pytest.mark.asyncio
async def test_each_regions_gauges_are_its_stages_in_the_snapshot(size):
    app = PrfaasApp("two-regions", live=False, at=300.0)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = dash(app)
        await select_element(pilot, screen, ("site", "hub"))
        assert not screen.query_one("#region-gauges", Gauges).display
        shown = {}
        for name in ("east", "west"):
            await select_element(pilot, screen, ("region", name))
            r = screen.tick.snapshot.regions[name]
            text = _shown(screen)
            assert _percent(text, "PD-D") == [round(r.pd_d.utilization * 100)]
            assert _percent(text, "PD-P") == [round(r.pd_p.utilization * 100)]
            (feed,) = r.feeds
            assert _percent(text, "link") == [round(feed.link_snap.utilization * 100)]
            assert _percent(text, "PrfaaS") == [round(feed.stage.utilization * 100)]
            shown[name] = text
            gauges = screen.query_one("#region-gauges", Gauges)
            assert gauges.region.y + gauges.region.height <= size[1] - 2  # above the status
        assert shown["east"] != shown["west"]
        if size == (160, 48):
            assert "of 100 Gbps" in shown["east"] and "of 40 Gbps" in shown["west"]


@pytest.mark.asyncio
async def test_a_brownout_raises_its_links_bar():
    bars = []
    for at in (590.0, 720.0):  # region-link-brownout: hub->west at 15% from 600 s
        app = PrfaasApp(None, live=False, at=at, drill="region-link-brownout")
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen = dash(app)
            await select_element(pilot, screen, ("region", "west"))
            (link,) = [g for g in screen.region_gauges() if g.key == "link"]
            assert _percent(_shown(screen), "link") == [round(link.utilization * 100)]
            bars.append(link.utilization)
    assert bars[1] > bars[0] + 0.2


def _stage(util: float) -> StageSnap:
    return StageSnap(instances=4, busy=1, utilization=util, queue=2, served_rate=1.0, failed=1)


def _region(hottest: str) -> RegionStages:
    link = LinkSnap(capacity=5e9, utilization=0.5, bytes_in_flight=0.0, queued_bytes=0.0,
                    flows=1)
    feeds = (Feed("a", "a->r", _stage(0.2), link), Feed("b", "b->r", _stage(0.3), link))
    return RegionStages(feeds, _stage(0.6), _stage(0.9), hottest)


def test_the_model_names_the_binding_gauge_else_the_measured_hottest():
    r = _region("pd-d:r")
    g = region_gauges("r", r, None)
    assert [x.key for x in g] == ["prfaas", "link", "prfaas", "link", "pd-p", "pd-d"]
    assert [x.binding for x in g] == [False] * 5 + [True]
    model = {"site:b": 1.0, "link:a->r": 0.4, "pd-p:r": 0.8, "pd-d:r": 0.7, "site:x": 2.0}
    g = region_gauges("r", r, model)
    assert [x.binding for x in g] == [False, False, True, False, False, False]
    assert g[0].note.startswith("a 4/5 alive") and g[1].note == "a: 20.0 of 40 Gbps"
    assert g[4].note == "4/5 alive · queue 2"


@pytest.mark.asyncio
async def test_a_regions_throughput_chart_follows_its_own_lambda_through_a_brownout():
    app = PrfaasApp(None, live=False, at=720.0, drill="region-link-brownout")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = dash(app)
        await select_element(pilot, screen, ("region", "west"))
        chart = screen.query_one("#region-throughput")
        assert chart.display and screen.query_one("#topology-chart").display
        el, xs, series = chart.data
        assert el == ("throughput", "west") and len(xs) == len(series["own Λ"]) > 10
        fig = screen.figures()
        assert series["own Λ"][-1] == pytest.approx(fig.region_state("west")[0])
        assert series["served"][-1] == fig.region("west")["served_rate"]
        before = [lam for x, lam in zip(xs, series["own Λ"], strict=True) if x < -130]
        assert before and min(before) > series["own Λ"][-1] * 1.2  # the link binds it now
        await select_element(pilot, screen, ("site", "hub"))
        assert not chart.display
