"""What a WAN link's TCP connections carry: goodput under round trip, loss and window caps.

A link's line rate is what its lease promises; a transfer gets what its TCP connections can
carry. One connection in congestion avoidance delivers, by Mathis et al. (CCR 1997),

    (MSS / RTT) x sqrt(3/2) / sqrt(p)                                   for p up to 1%,

and above 1% the TFRC throughput equation (RFC 5348, section 3.1; the simplified form of
Padhye, Firoiu, Towsley and Kurose, SIGCOMM 1998, with b = 1 and RTO = 4 RTT), which adds the
retransmission timeouts that dominate at high loss:

    MSS / (RTT sqrt(2p/3) + 4 RTT x 3 sqrt(3p/8) x p (1 + 32 p^2)).

Either is capped by the connection's window over the RTT. The link's goodput is the line rate
or the connections' sum, whichever is less. With no loss and no window a connection is not
bounded and the goodput is the line rate itself (the very same float). A round trip of 0 with
loss is refused: the loss formulas divide by it.

Pure functions on numbers (bytes, bytes per second, seconds); nothing here reads a preset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

MATHIS_MAX_LOSS = 0.01  # above it, the TFRC (Padhye) form: timeouts matter
DEFAULT_MSS = 1460  # bytes: a 1500-byte Ethernet MTU less IP and TCP headers


@dataclass(frozen=True)
class Transport:
    """A link's TCP: loss probability, connections kept open (None: one), segment size and
    per-connection window in bytes (None: no window cap)."""

    loss: float = 0.0
    connections: int | None = None
    mss: float = DEFAULT_MSS
    window: float | None = None

    @property
    def n(self) -> int:
        return 1 if self.connections is None else self.connections

    @property
    def limits(self) -> bool:
        """Whether this transport can hold a link below its line rate at all."""
        return self.loss > 0 or self.window is not None


@dataclass(frozen=True)
class Goodput:
    """What a link carries (bytes/s), one connection's rate (inf: unbounded) and what caps the
    link: its line rate, its connections' loss-bound rate or their windows."""

    bytes_per_s: float
    per_connection: float
    cap: str


MIN_RTT = 1e-6  # seconds: below any network's round trip; the formulas' floor


def loss_rate(mss: float, rtt: float, loss: float) -> float:
    """One connection's loss-bound rate in bytes/s (inf when loss is 0): Mathis up to 1%,
    the TFRC equation above it."""
    if loss <= 0:
        return math.inf
    if rtt <= 0:
        raise ValueError("a loss rate needs a round trip above 0: the TCP formulas divide by it")
    rtt = max(rtt, MIN_RTT)  # a subnormal RTT would zero the TFRC denominator
    if loss <= MATHIS_MAX_LOSS:
        return mss / rtt * math.sqrt(1.5) / math.sqrt(loss)
    timeouts = 4 * rtt * 3 * math.sqrt(3 * loss / 8) * loss * (1 + 32 * loss * loss)
    return mss / (rtt * math.sqrt(2 * loss / 3) + timeouts)


def goodput(line: float, rtt: float, t: Transport | None) -> Goodput:
    """The link's goodput: min(line rate, connections x min(window / RTT, loss-bound rate))."""
    if t is None or not t.limits:
        return Goodput(line, math.inf, "line")
    by_loss = loss_rate(t.mss, rtt, t.loss)
    by_window = math.inf if t.window is None or rtt <= 0 else t.window / rtt
    per = min(by_loss, by_window)
    if t.n * per >= line:
        return Goodput(line, per, "line")
    return Goodput(t.n * per, per, "window" if by_window < by_loss else "loss")


def transport_problem(t: Transport, rtt: float) -> tuple[str, str] | None:
    """The first bad value as (key, reason): the keys a preset spells them with."""
    if not 0 <= t.loss < 1:
        return "loss", f"{t.loss:g} is not a probability in [0, 1)"
    if t.connections is not None and t.connections < 1:
        return "connections", f"{t.connections} connections: a link needs at least 1"
    if not (t.mss > 0 and math.isfinite(t.mss)):
        return "mss", f"{t.mss:g} bytes: a segment carries a finite number of bytes above 0"
    if t.window is not None and not math.isfinite(t.window):
        return "window", "must be finite (leave it out for no window cap)"
    if t.window is not None and t.window < t.mss:
        return "window", f"{t.window:g} bytes is smaller than one MSS ({t.mss:g} bytes)"
    if t.loss > 0 and rtt <= 0:
        return "loss", "a loss rate needs a round trip above 0 (the TCP formulas divide by it)"
    return None


# -- what incidents do to a path -----------------------------------------------------------------
LOSS_CEILING = 0.99  # a multiplied loss is held below 1 (a probability)
MAX_RTT = 60.0  # seconds: a link's round trip (its key's bound), held there under incidents too
HANDSHAKE_RTTS = 2  # a new connection: TCP's SYN / SYN-ACK, then a TLS 1.3 handshake (1 RTT)


@dataclass(frozen=True)
class PathChange:
    """One incident's change to a link's path: its loss set to `loss` (None: kept) and then
    multiplied by `loss_factor`; its round trip set to `rtt` (None: kept) and then multiplied
    by `rtt_factor`."""

    loss: float | None = None
    loss_factor: float = 1.0
    rtt: float | None = None
    rtt_factor: float = 1.0


def changed(rtt: float, t: Transport | None,
            changes: list[PathChange]) -> tuple[float, Transport | None]:
    """The round trip and transport under `changes` (oldest first): the newest value set wins,
    then every factor multiplies. A loss set on a link without transport keys is one
    connection's (the keys' defaults); a loss that would reach 1 is held at LOSS_CEILING, a
    round trip past a minute at MAX_RTT (a transfer would otherwise outlive any run)."""
    if not changes:
        return rtt, t
    loss = t.loss if t is not None else 0.0
    for c in changes:
        rtt = rtt if c.rtt is None else c.rtt
        loss = loss if c.loss is None else c.loss
    rtt = min(rtt * math.prod(c.rtt_factor for c in changes), MAX_RTT)
    loss = min(loss * math.prod(c.loss_factor for c in changes), LOSS_CEILING)
    if t is None and loss == 0:
        return rtt, None
    return rtt, Transport(loss=loss) if t is None else replace(t, loss=loss)


def path_goodput(line: float, rtt: float, t: Transport | None) -> Goodput:
    """`goodput`, also at a round trip of 0 (a route so short that no connection is bounded:
    the line rate)."""
    return goodput(line, rtt, t if rtt > 0 else None)
