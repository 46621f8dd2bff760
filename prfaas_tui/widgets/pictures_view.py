"""The pictures view (`g`): utilization gauges, the heat map of Λmax over (t, N_p), the length
CDF and the TTFT CDF, all at the live state the session holds.

Nothing is computed while the view is hidden. The heat map is rebuilt only when the live state
or the driving mode changes (cached by state); the analytic TTFT is the model panel's
(`modelview.live_latency`, cached on the state and the rate). When live, a new live state is
drawn at once and new measurements at most REDRAW_HZ, never shortly after a keypress, so a key
never waits on a picture.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical

from emulator.paradigm import Paradigm
from prfaas_tui.modelview import live_latency
from prfaas_tui.pictures import (
    HeatMap,
    Topology,
    gauges,
    heat_map,
    length_cdf,
    live_lengths,
    ttft_cdf,
)
from prfaas_tui.widgets.cdf import LengthCDFChart, TTFTCDFChart
from prfaas_tui.widgets.gauges import Gauges
from prfaas_tui.widgets.heatmap import HeatMapView

if TYPE_CHECKING:
    from prfaas_tui.session import Session

PRFAAS_PD = Paradigm.PRFAAS_PD
REDRAW_HZ = 2.0
INPUT_QUIET_S = 0.15  # no redraw this long after a keypress


class PicturesView(Vertical):
    DEFAULT_CSS = """
    PicturesView { display: none; }
    PicturesView > Horizontal { height: 1fr; }
    PicturesView #pic-cdfs { width: 1fr; }
    PicturesView HeatMapView { width: 1fr; }
    """

    def __init__(self, session: Session, *, live: bool, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session
        self.live = live
        self.last_input = 0.0  # perf_counter of the last keypress (the dashboard sets it)
        self._heat_key: Any = None
        self._heat: HeatMap | None = None
        self._pending = False

    def compose(self) -> ComposeResult:
        yield Gauges(id="gauges")
        with Horizontal():
            yield HeatMapView(id="heatmap")
            with Vertical(id="pic-cdfs"):
                yield LengthCDFChart(id="length-cdf")
                yield TTFTCDFChart(id="ttft-cdf")

    def on_mount(self) -> None:
        if self.live:
            self.set_interval(1 / REDRAW_HZ, self._due)

    def show(self, now: bool = False) -> None:
        """A new tick to draw: at once when not live. Live: with `now` (the view was just
        opened) right after the screen has answered the key; when the live state changed
        (instances, link, mix, knobs: rare) at once, so the pictures agree with the topology
        strip; otherwise (new TTFTs, utilizations) at the next slot."""
        if not self.display:
            return
        if not self.live:
            self.redraw()
        elif now:
            self.call_after_refresh(self.redraw)
        elif self._state_key() != self._heat_key and self._quiet():
            self.redraw()
        else:
            self._pending = True

    def _state_key(self) -> Any:
        s = self.session
        return None if s.effective is None else (id(s.system), s.effective.state, s.mode)

    def _quiet(self) -> bool:
        return time.perf_counter() - self.last_input > INPUT_QUIET_S

    def _due(self) -> None:
        if self._pending and self.display and self._quiet():
            self.redraw()

    def redraw(self) -> None:
        self._pending = False
        s = self.session
        view, tick = s.effective, s.tick
        if view is None or tick is None:
            self.query_one(HeatMapView).show(None, "Λmax over (t, N_p): waiting for the emulator…")
            return
        state, system = view.state, s.system
        key = self._state_key()
        if key != self._heat_key:  # the expensive part: only when the live state changed
            self._heat_key = key
            self._heat = heat_map(system, state, s.mode) if state.paradigm == PRFAAS_PD else None
        top = Topology.of(view)
        self.query_one(Gauges).show(gauges(tick.snapshot, top))
        self.query_one(HeatMapView).show(self._heat, None if self._heat else (
            f"{Paradigm(state.paradigm).label} runs its own split and has no t: the heat map "
            f"is PrfaaS-PD's (t, N_p) plane (m switches back)"))
        lengths = live_lengths(system, state)
        self.query_one(LengthCDFChart).set_data(length_cdf(lengths, state.t),
                                                (id(lengths), state.t))
        lat = live_latency(s.settings, view)  # the model panel's TTFT line (cached on state)
        model = (lat.p50, lat.p90)
        snap = tick.snapshot
        self.query_one(TTFTCDFChart).set_data(ttft_cdf(snap, lat.target, model),
                                              (snap.sim_time, snap.ttft_cdf, model, lat.target))
