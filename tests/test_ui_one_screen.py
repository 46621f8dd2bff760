"""One dashboard for every scenario: the pair and a topology open the same screen class, whose
map is the pair's 1x1 strip or the topology's map; the arrows walk the pair's three elements as
they walk a topology's; a key that needs the pair's panels answers a topology with one line.
Synchronous (live=False): simulated time only."""

from __future__ import annotations

import pytest
from test_ui_support import screen_text

from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.dashboard import Dashboard
from prfaas_tui.screens.presets import PresetPicker
from prfaas_tui.widgets.topology import TopologyStrip
from prfaas_tui.widgets.topology_map import TopologyMap

SITE, LINK, REGION = ("site", "prfaas"), ("link", "prfaas->pd"), ("region", "pd")


@pytest.fixture(autouse=True)
def _no_user_presets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.asyncio
@pytest.mark.parametrize("preset, mapped, map_widget", [
    ("paper-case-study", False, TopologyStrip),
    ("two-regions", True, TopologyMap),
])
async def test_the_pair_and_a_topology_open_the_same_screen_class(preset, mapped, map_widget):
    app = PrfaasApp(preset, live=False, at=5.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert type(app.screen) is Dashboard
        assert app.screen.mapped is mapped
        assert len(app.screen.query(map_widget)) == 1  # its map on top
        other = TopologyMap if map_widget is TopologyStrip else TopologyStrip
        assert not app.screen.query(other)


@pytest.mark.asyncio
async def test_the_arrows_walk_the_pairs_three_elements_and_the_strip_marks_each():
    """The knob panel's up/down walk its rows, each a knob of the site, the link or the
    region (the strip marks it); with the panel unfocused the arrows walk the elements in the
    strip's order, as on a topology's map."""
    from emulator.topology.spec import PAIR_LINK, PAIR_REGION, PAIR_SITE

    assert (SITE, LINK, REGION) == (("site", PAIR_SITE), ("link", PAIR_LINK),
                                    ("region", PAIR_REGION))
    app = PrfaasApp("paper-case-study", live=False, at=5.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        seen = []
        for _ in range(8):
            if screen.selected is not None and screen.selected not in seen:
                seen.append(screen.selected)
            await pilot.press("down")
            await pilot.pause()
        assert set(seen) == {SITE, LINK, REGION}
        screen.set_focus(None)  # the screen's own arrows
        await pilot.pause()
        walked = []
        for _ in range(3):
            await pilot.press("right")
            await pilot.pause()
            walked.append(screen.selected)
            kind = screen.selected[0]
            strip = screen.query_one(TopologyStrip).render()
            marked = "".join(strip.plain[s.start:s.end] for s in strip.spans
                             if "underline" in str(s.style))
            assert marked.startswith(kind) and strip.plain.count("▸") == 1
            assert f"▸{kind}" in strip.plain
        assert walked == [SITE, LINK, REGION]  # from t (the region's), in the strip's order
        await pilot.press("left")
        await pilot.pause()
        assert screen.selected == walked[-2]


@pytest.mark.asyncio
@pytest.mark.parametrize("key, says", [
    ("M", "M: the exact/paper mode"),
    ("m", "m: a topology runs PrfaaS-PD"),
    ("v", "v: it switches the pair's live charts"),
    ("g", "g: the pictures"),
    ("e", "e: the time series export is the pair's"),
])
async def test_a_pair_only_key_on_a_topology_answers_with_one_line(key, says):
    app = PrfaasApp("two-regions", live=False, at=5.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        before = screen.session.running_spec()
        await pilot.press(key)
        await pilot.pause()
        assert app.screen is screen  # no prompt, nothing toggled
        notes = [str(n.message) for n in app._notifications]
        assert len(notes) == 1 and notes[0].startswith(says) and "\n" not in notes[0]
        assert screen.session.running_spec() == before
        assert not screen.has_class("-pictures") and not screen.has_class("-show-model")


@pytest.mark.asyncio
async def test_O_is_the_slo_optimum_on_the_pair_and_the_bound_on_a_topology():
    """One key, one meaning per shape: help and the palette list the running shape's."""
    from prfaas_tui.screens.help import HelpScreen

    for preset, mine, other in (("paper-case-study", "SLO optimum [O]", "Bound [O]"),
                                ("two-regions", "Bound [O]", "SLO optimum [O]")):
        app = PrfaasApp(preset, live=False, at=5.0)
        async with app.run_test(size=(160, 120)) as pilot:  # tall: help's keys in full
            await pilot.pause()
            titles = {c.title for c in app.get_system_commands(app.screen)}
            assert mine in titles and other not in titles
            await pilot.press("f1")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            text = " ".join(screen_text(app).split())
            assert ("routing bound's split" in text) == (preset == "two-regions")
            assert ("highest SLO-bound rate" in text) == (preset == "paper-case-study")
            # the pair panels' keys: one row of their own on a topology, each its row on the pair
            pair = preset == "paper-case-study"
            assert ("exact or paper mode drives the model panel" in text) == pair
            assert ("M, m, v, g, e the pair's panels' keys" in text) != pair
            assert ("Mode [M]" in titles) == pair


@pytest.mark.asyncio
async def test_p_on_the_pair_lists_and_loads_a_topology_on_the_one_dashboard():
    app = PrfaasApp("toy", live=False, at=5.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        pair = app.screen
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PresetPicker)
        for ch in "two-regions":
            await pilot.press(ch)
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        assert type(screen) is Dashboard and screen is not pair and screen.mapped
        assert screen.session.scenario.name.endswith("two-regions")  # the first that matches
        assert screen.query_one(TopologyMap) is not None
