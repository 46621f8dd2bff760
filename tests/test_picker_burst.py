"""The drill picker's filter keeps every key typed fast: keys that arrive in one burst (as a
terminal delivers typing or a paste) before the filter has the focus all land in it."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Input, OptionList

from prfaas_tui.app import PrfaasApp
from prfaas_tui.widgets.filter_list import FilterList

pytestmark = pytest.mark.asyncio


def burst(app: PrfaasApp, keys: str) -> None:
    names = {"/": "slash", "-": "minus", " ": "space"}
    for ch in keys:
        app._driver.send_message(events.Key(names.get(ch, ch), ch))


@pytest.mark.parametrize("live", [False, True])
@pytest.mark.parametrize("typed, want", [("/brownout", "brownout"), ("link-out", "link-out")])
async def test_a_burst_typed_into_the_drill_picker_is_kept_whole(typed, want, live):
    app = PrfaasApp("paper-case-study", live=live, at=None if live else 10.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        burst(app, "d" + typed)  # the picker opens and the keys follow, no pause between
        for _ in range(len(typed) + 3):  # a pause per key and a few for the picker to mount
            await pilot.pause()
        picker = app.screen.query_one(FilterList)
        assert picker.query_one(Input).value.removeprefix("/") == want
        ol = picker.query_one(OptionList)
        shown = [ol.get_option_at_index(i) for i in range(ol.option_count)]
        assert shown and all(want in o.text for o in shown if not o.disabled)
