"""The pair's link in the topology view's link dialog: the pair is the 1x1 topology, its link
`prfaas->pd`; loss and connections turned there reach the model, the emulator's link and the
change log (so a fork's replay takes them too)."""

from __future__ import annotations

import pytest
from test_ui_support import dash, screen_text

from emulator.scenario import presets
from emulator.topology.transport import Transport, goodput
from prfaas_tui.app import PrfaasApp
from prfaas_tui.screens.prompt import ValuePrompt

pytestmark = pytest.mark.asyncio
SIZE = (160, 48)
LINE = 1000e6  # toy's lease, bytes/s


def _lossy_toy(tmp_path) -> str:
    """The toy pair over a 30 ms path (a loss needs a round trip)."""
    text = (presets.presets_dir() / "toy.toml").read_text(encoding="utf-8")
    path = tmp_path / "lossy.toml"
    path.write_text(text.replace("seed = 1", 'seed = 1\nlink_latency = "30 ms"', 1),
                    encoding="utf-8")
    return str(path)


async def test_the_pairs_link_dialog_turns_its_loss_and_connections_live(tmp_path):
    async with PrfaasApp(_lossy_toy(tmp_path), live=False, at=10.0).run_test(size=SIZE) as pilot:
        app = pilot.app
        session = dash(app).session
        await pilot.press("b")
        assert isinstance(app.screen, ValuePrompt)
        assert "link prfaas->pd" in screen_text(app)
        await pilot.press("ctrl+a", "ctrl+k", *"connections=0", "enter")  # refused: it stays
        assert isinstance(app.screen, ValuePrompt)
        assert "connections must be >= 1" in screen_text(app)
        await pilot.press("ctrl+a", "ctrl+k", *"loss=1e-4 connections=4", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, ValuePrompt)
        want = goodput(LINE, 0.03, Transport(loss=1e-4, connections=4)).bytes_per_s
        sc = session.settings.scenario
        assert sc.transport == Transport(loss=1e-4, connections=4)
        assert sc.line_bandwidth == LINE and sc.system.bandwidth == pytest.approx(want)
        assert session.view.settings.scenario.system.bandwidth == pytest.approx(want)  # model
        link = session.driver.call(lambda emu: (emu.link.bandwidth, emu.link.pool,
                                                emu.link.transport))
        assert link[0] == pytest.approx(want) and link[1:] == (4, sc.transport)
        last = session.driver.log[-1].change  # what a fork replays
        assert last.kind == "settings" and last.value.scenario.transport == sc.transport
        assert any("4 connections -> goodput" in d for d in session.driver.decisions())
        # with a loss, the bandwidth typed beside it is the new line rate
        await pilot.press("b", "ctrl+a", "ctrl+k", *"16 connections=8", "enter")
        await pilot.pause()
        sc = session.settings.scenario
        assert sc.line_bandwidth == 2 * LINE and sc.transport.n == 8
        assert sc.system.bandwidth == pytest.approx(
            goodput(2 * LINE, 0.03, Transport(loss=1e-4, connections=8)).bytes_per_s)


async def test_the_pairs_only_element_is_its_link(tmp_path):
    from emulator.scenario.knobs import KnobError
    async with PrfaasApp(_lossy_toy(tmp_path), live=False, at=1.0).run_test(size=SIZE) as pilot:
        session = dash(pilot.app).session
        with pytest.raises(KnobError, match="one element is its link prfaas->pd"):
            session.check_element("link", "hub->west", loss=1e-4)
        with pytest.raises(KnobError, match="a link has no knob 'instances'"):
            session.check_element("link", "prfaas->pd", instances=3)


async def test_a_loss_on_a_pair_without_a_round_trip_names_its_link_latency():
    async with PrfaasApp("toy", live=False, at=1.0).run_test(size=SIZE) as pilot:
        session = dash(pilot.app).session
        from emulator.scenario.knobs import KnobError
        with pytest.raises(KnobError, match=r"link prfaas->pd: loss: .*\[emulator\] link_latency"):
            session.check_element("link", "prfaas->pd", loss=1e-4)
        session.set_element("link", "prfaas->pd", connections=8)  # no loss: the line rate
        assert session.settings.scenario.system.bandwidth == 1000e6
        assert session.settings.scenario.transport.n == 8
        # the dialog shows the refusal whole: "[emulator]" is text, not markup
        await pilot.press("b", "ctrl+a", "ctrl+k", *"loss=1e-4", "enter")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ValuePrompt)
        shown = " ".join(screen_text(pilot.app).split())
        assert "set the preset's [emulator]" in shown and "link_latency" in shown
        assert "bandwidth [loss=P] [connections=N] = ?" in shown
        assert "loss= 0 to under 1" in shown
