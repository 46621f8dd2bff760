"""The knobs an operator turns, declared once: the registry every surface reads.

Each `Knob` declares how a value is written (`parse`: text from a flag or an editor, or a TOML
value), its range (static bounds, plus the bounds the deployment decides through `Limits`: t
up to the top of the length support, N_p and N_d within the local pool), its unit, label,
flag, preset keys and the topology elements it applies to. On a topology a knob is addressed
by element, `("link", "hub->west", "bandwidth")`, `("region", "east", "t")`,
`("site", "hub", "instances")`; the single pair is the 1x1 topology whose elements are named
`PAIR_SITE`, `PAIR_REGION` and `PAIR_LINK` (`Topology.pair`).

One rule per knob, the same on the command line, in a pair or a topology preset, in the
dashboard's and the topology view's editors and in the engine:

- bandwidth (B_out, a link's): 1 Mbps to 8 Pbps. Below 1 Mbps one request's KV cache takes
  hours to cross, so such a link strands remote requests rather than modelling a slow one; the
  top only keeps the arithmetic finite.
- t: any number of tokens from 0 to the top of the length support, fractions included: t is a
  cut on the length axis, not a count; the optimizer and the scheduler place it between counts
  and a saved preset writes it back as placed.
- N_prfaas (a site's instances): a whole number from 0 to 100,000; N_p from 0 and N_d from 1,
  whole, N_p + N_d within the local pool; the work caps (emulator.budget) may be lower.
- rate: a finite number of req/s, 0 or more.
- routing (a region's): one of `ROUTINGS`; lp needs the routing bound, best-cache a cache.

`Controls` is one complete setting of the pair's knobs and `Controls.validate` the one check
the CLI, the dashboard and the engine share; `check_element` is the same check for one
element of a topology. A failure is a `KnobError` naming the knob (and the element).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from emulator.cards.decode import tpot_problem
from emulator.model import Knobs, System
from emulator.paradigm import Paradigm
from emulator.topology.spec import PAIR_LINK, PAIR_REGION, PAIR_SITE, ROUTINGS, Link, Topology
from emulator.topology.transport import Goodput, Transport
from emulator.units import (
    GBPS,
    UnitError,
    format_tokens,
    parse_bandwidth,
    parse_duration,
    parse_tokens,
    shown,
    to_gbps,
)

MAX_INSTANCES = 100_000  # instances of one pool; the work cap (emulator.budget) is lower
MIN_BANDWIDTH = 1e6 / 8  # bytes/s: 1 Mbps
MAX_BANDWIDTH = 1e15  # bytes/s: 8 Pbps

class KnobError(ValueError):
    """An impossible knob setting. `reason` is the phrase after the knob's name (what a preset
    key or a flag is followed by); `element` ("link hub->west") the topology element it was
    set on, if any; str() is the whole line."""

    def __init__(self, knob: str, reason: str, element: str | None = None):
        self.knob, self.reason, self.element = knob, reason, element
        if element is None:
            line = f"{knob} {reason}" if reason.startswith("must") else reason
        else:
            line = f"{element}: {knob}{' ' if reason.startswith('must') else ': '}{reason}"
        super().__init__(line)


def whole(raw: Any) -> int:
    """A count from a flag (text) or a TOML value (an int, or a float that is one)."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str):
        try:
            return int(raw.strip())
        except ValueError:
            pass
    raise ValueError(f"must be a whole number, got {raw!r}")


def number(raw: Any) -> float:
    """A finite real number."""
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int of 400 digits
        raise ValueError(f"must be a number, got {shown(raw)}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be finite, got {raw!r}")
    return value


def show_bandwidth(bytes_per_second: float) -> str:
    """A bandwidth in the unit that reads best: '1 Mbps', '100 Gbps', '8 Pbps'."""
    g = to_gbps(bytes_per_second)
    for unit, scale in (("Pbps", 1e6), ("Tbps", 1e3), ("Gbps", 1.0)):
        if abs(g) >= scale or g == 0 and unit == "Gbps":
            return f"{g / scale:g} {unit}"
    return f"{g * 1e3:g} Mbps"


@dataclass(frozen=True)
class Limits:
    """The deployment's bounds on the knobs whose range it decides (None: not checked here)."""

    t_max: float | None = None  # top of the length distribution's support (tokens)
    pool: int | None = None  # local instances (N_p + N_d <= pool)
    lambda_max: float | None = None  # for a rate given as a share of Lambda_max ('90%')


@dataclass(frozen=True)
class Knob:
    """One knob: its Controls field, flag, parse, range, how people name it and where it
    lives (the pair's preset key; the topology elements, the knob's name on each and its key
    in that element's preset table)."""

    name: str  # the Controls field
    flag: str
    parse: Callable[[Any], Any]  # text (flag, editor) or TOML value -> the field's value
    label: str  # the paper's symbol, shown in the UI
    unit: str  # metavar / display unit
    help: str
    key: str | None  # the pair preset's key (None: no preset key)
    aliases: tuple[str, ...] = ()  # old spellings, accepted but not shown
    written: str = ""  # how a value is written, for hints and refusals
    lo: float = -math.inf
    hi: float = math.inf
    whole: bool = False
    show: Callable[[float], str] = lambda x: f"{x:g}"
    bound: str | None = None  # the Limits field that caps it ("t_max", "pool")
    lo_why: str = ""  # why the lower bound, said after it
    below: float | None = None  # an open upper bound: the range is [lo, below)
    # (element kind, the knob's name there, its key in a topology preset's table of that kind)
    elements: tuple[tuple[str, str, str], ...] = ()

    def bounds(self, limits: Limits | None = None) -> tuple[float, float]:
        hi = self.hi
        if self.bound is not None and limits is not None:
            cap = getattr(limits, self.bound)
            hi = hi if cap is None else min(hi, cap)
        return self.lo, hi

    def span(self, limits: Limits | None = None) -> str:
        """The range in words: '1 Mbps to 8 Pbps', '0 to 131,072 tokens', '0 req/s or more'."""
        lo, hi = self.bounds(limits)
        if self.below is not None and math.isinf(hi):  # an open upper bound
            return f"{self.show(lo)} to under {self.show(self.below)}"
        if math.isinf(hi):
            return f"{self.show(lo)} or more"
        a, b = self.show(lo).split(" "), self.show(hi).split(" ")
        return f"{a[0] if a[1:] == b[1:] else ' '.join(a)} to {' '.join(b)}"

    def problem(self, value: Any, limits: Limits | None = None) -> str | None:
        """Why `value` lies outside the range (None: inside); without `limits` only the bounds
        that do not depend on the deployment."""
        if self.whole and (isinstance(value, bool) or not isinstance(value, int)):
            return "must be a whole number"
        if math.isinf(self.lo) and math.isinf(self.hi) and self.bound is None:
            return None  # no range (the paradigm)
        lo, hi = self.bounds(limits)
        if self.below is not None:
            return None if lo <= value < self.below else \
                f"must be in [{self.show(lo)}, {self.show(self.below)})"  # NaN too
        if lo <= value <= hi:
            return None
        if value == math.inf and math.isinf(hi):
            return "must be finite"
        if self.bound == "t_max" and hi < self.hi and math.isfinite(value):
            return (f"{value:.0f} tokens lies outside the length distribution's support "
                    f"(any t from 0 to {hi:.0f} routes)")
        if value > hi:
            return f"must be at most {self.show(hi)}"
        return f"must be >= {self.show(lo)}{self.lo_why}"  # NaN too

    def refusal(self, value: Any, limits: Limits | None = None) -> str | None:
        """`problem` with the value it got, as the knob's flag or key is followed by."""
        why = self.problem(value, limits)
        if why is None or not why.startswith("must"):
            return why
        # abs() < 1e300, not isfinite(): an integer of 400 digits is finite but overflows a float
        got = self.show(value) if isinstance(value, int | float) and not isinstance(
            value, bool) and abs(value) < 1e300 and why != "must be a whole number" else \
            shown(value)
        return f"{why} (got {got})"

    def read(self, raw: Any, limits: Limits | None = None, *,
             at: tuple[str, str] | None = None) -> Any:
        """`raw` parsed and range-checked; KnobError naming the knob (and, `at` an element
        (kind, name), the element and the knob's name there)."""
        name, where = (self.name, None) if at is None else (self.at(at[0]), " ".join(at))
        try:
            value = self.parse(raw.strip() if isinstance(raw, str) else raw)
        except (UnitError, ValueError, TypeError) as exc:
            raise KnobError(name, str(exc), where) from None
        if (why := self.refusal(value, limits)) is not None:
            raise KnobError(name, why, where)
        return value

    def at(self, kind: str) -> str:
        """The knob's name on an element of `kind` (a site's `instances` is N_prfaas)."""
        return next((name for k, name, _ in self.elements if k == kind), self.name)


def _tokens(x: float) -> str:
    return f"{format_tokens(x)} tokens" if x == round(x) else f"{x:g} tokens"


KNOBS: dict[str, Knob] = {k.name: k for k in (
    Knob("t", "--t", parse_tokens, "t", "TOKENS", "routing threshold, e.g. 19400 or 32K",
         "deployment.threshold", written="a token count like 19400 or 32K", lo=0.0,
         show=_tokens, bound="t_max", elements=(("region", "t", "threshold"),)),
    Knob("n_p", "--np", whole, "N_p", "N",
         "local prefill (PD-P) instances; alone, keeps the preset's N_d", "deployment.n_p",
         written="a whole number of instances", lo=0, whole=True, bound="pool",
         elements=(("region", "n_p", "n_p"),)),
    Knob("n_d", "--nd", whole, "N_d", "N",
         "local decode (PD-D) instances; alone, keeps the preset's N_p", "deployment.n_d",
         written="a whole number of instances", lo=1, whole=True, bound="pool",
         lo_why=": every request needs decode", elements=(("region", "n_d", "n_d"),)),
    Knob("n_prfaas", "--n-prfaas", whole, "N_prfaas", "N", "PrfaaS prefill instances",
         "deployment.n_prfaas", aliases=("--nprfaas",), written="a whole number of instances",
         lo=0, hi=MAX_INSTANCES, whole=True, elements=(("site", "instances", "instances"),)),
    Knob("bandwidth", "--bandwidth", parse_bandwidth, "B_out", "GBPS",
         "cross-datacenter egress B_out in Gbps, or with a unit ('1000 MB/s'); 1 Mbps to "
         "8 Pbps", "deployment.bandwidth", written="a bandwidth like 100 Gbps or 1000 MB/s",
         lo=MIN_BANDWIDTH, hi=MAX_BANDWIDTH, show=show_bandwidth,
         elements=(("link", "bandwidth", "bandwidth"),)),
    Knob("rate", "--rate", number, "rate", "R", "offered rate, req/s", "workload.rate",
         written="a number of req/s", lo=0.0, show=lambda x: f"{x:g} req/s"),
    Knob("paradigm", "--paradigm", Paradigm, "paradigm", "PARADIGM",
         "prfaas-pd (threshold routing), homogeneous (all local, the preset's [homogeneous] "
         "pool) or naive-heterogeneous (all remote)", None),
)}

# a region's routing policy: a topology knob only (the pair routes by its threshold)
ROUTING = Knob("routing", "--routing", str, "routing", "POLICY",
               f"the region's site choice: {', '.join(ROUTINGS)}", None,
               written=f"one of {', '.join(ROUTINGS)}", elements=(("region", "routing", "routing"),))

# a link's TCP (emulator.topology.transport): the same rule for the preset keys (a [[link]]'s,
# the pair's [deployment]'s) and the topology view's link editor. Not Controls fields: the
# pair's live knobs stay the model's five
MAX_CONNECTIONS = 1_000_000
LOSS = Knob("loss", "--loss", number, "loss", "P", "packet loss probability on the link",
            "deployment.loss", written="a probability like 1e-4", lo=0.0, below=1.0,
            elements=(("link", "loss", "loss"),))
CONNECTIONS = Knob("connections", "--connections", whole, "connections", "N",
                   "TCP connections the site keeps to the region", "deployment.connections",
                   written="a whole number of connections", lo=1, hi=MAX_CONNECTIONS,
                   whole=True, lo_why=": a link needs at least 1 connection",
                   elements=(("link", "connections", "connections"),))
TRANSPORT_KNOBS = (LOSS, CONNECTIONS)

# the TPOT SLO of a decode derived from the cards (emulator.scenario.decode.CardStep): turning
# it derives BS_max and t_decode again (the model's Eq. 5 and the running decode stage's
# admission; the step is physics and stays). Not a Controls field: a preset with constant
# t_decode/bs_max has none, and its knobs read as before


def _tpot(raw: Any) -> float:
    """A TPOT SLO: a duration above 0 (no step takes no time), at most the cards' bound."""
    value = parse_duration(raw)
    if (why := tpot_problem(value)) is not None:
        raise ValueError(f"{why}, got {raw!r}")
    return value


TPOT = Knob("tpot", "--tpot", _tpot, "TPOT", "DURATION",
            "the TPOT SLO a decode from the cards derives BS_max under (from = \"cards\")",
            "decode.tpot", written="a duration like 25 ms", lo=0.0, hi=60.0,
            show=lambda x: f"{x:g} s", elements=(("region", "tpot", "tpot"),))
CONSTANT_DECODE = 'decode is constants t_decode/bs_max: set [decode] from = "cards"'
DECODE_KNOBS = (TPOT,)

# element kind -> {the knob's name there: the knob}
ELEMENT_KNOBS: dict[str, dict[str, Knob]] = {}
for _k in (*KNOBS.values(), ROUTING, *TRANSPORT_KNOBS, *DECODE_KNOBS):
    for _kind, _name, _ in _k.elements:
        ELEMENT_KNOBS.setdefault(_kind, {})[_name] = _k

# the pair's knobs by address (kind, element, knob name there)
PAIR_ADDRESSES: dict[str, tuple[str, str, str]] = {
    "t": ("region", PAIR_REGION, "t"), "n_p": ("region", PAIR_REGION, "n_p"),
    "n_d": ("region", PAIR_REGION, "n_d"), "n_prfaas": ("site", PAIR_SITE, "instances"),
    "bandwidth": ("link", PAIR_LINK, "bandwidth"),
}


def knob_at(kind: str, name: str) -> Knob:
    """The knob an element of `kind` calls `name` (KnobError: no such knob there)."""
    try:
        return ELEMENT_KNOBS[kind][name]
    except KeyError:
        known = ", ".join(ELEMENT_KNOBS.get(kind, {}))
        raise KnobError(name, f"no such knob on a {kind} (knobs: {known or 'none'})") from None


def read_at(kind: str, element: str, name: str, raw: Any) -> Any:
    """A value for knob `name` of element `element` (a `kind`), parsed and checked against
    the knob's static range; the deployment's bounds are `check_element`'s."""
    return knob_at(kind, name).read(raw, at=(kind, element))


@dataclass(frozen=True)
class Controls:
    """One setting of every live knob. `rate` None: the scenario's own offered rate."""

    t: float  # tokens
    n_p: int
    n_d: int
    n_prfaas: int
    bandwidth: float  # bytes per second
    rate: float | None = None  # req/s
    paradigm: Paradigm = Paradigm.PRFAAS_PD

    def validate(self, system: System) -> None:
        """Raise KnobError unless this setting can run on `system`."""
        par = Paradigm(self.paradigm)
        if (why := par.unavailable(system)) is not None:
            raise KnobError("paradigm", why)
        limits = Limits(t_max=system.lengths.support[1])  # the pool: the split's rule below
        for name in ("n_p", "n_d"):
            if why := KNOBS[name].refusal(getattr(self, name), limits):
                raise KnobError(name, why)
        pool = par.pool(system)
        if self.n_p + self.n_d > pool:
            raise KnobError("n_p", f"n_p + n_d = {self.n_p + self.n_d} exceeds the local pool "
                                   f"of {pool}")
        if (why := par.split_error(self.n_p)) is not None:
            raise KnobError("n_p", why)
        for name in ("n_prfaas", "bandwidth", "t", "rate"):
            value = getattr(self, name)
            if value is not None and (why := KNOBS[name].refusal(value, limits)):
                raise KnobError(name, why)

    def changed(self, system: System, **kw: Any) -> Controls:
        """A validated copy with some knobs changed; KnobError (and no copy) when impossible."""
        unknown = set(kw) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"no knob named {sorted(unknown)[0]!r}")
        if "paradigm" in kw:
            kw["paradigm"] = Paradigm(kw["paradigm"])
        out = replace(self, **kw)
        out.validate(system)
        return out

    def model_knobs(self) -> Knobs:
        """The closed-form model's knobs (rate and paradigm are not among them)."""
        return Knobs(t=self.t, n_p=self.n_p, n_d=self.n_d, n_prfaas=self.n_prfaas,
                     bandwidth=self.bandwidth)


# -- a topology's elements: the pair's check on the element's pair view ---------------------------
def best_cache_problem(sim) -> str | None:
    """Why best-cache routing cannot run on a preset with this [emulator]/[workload] config
    (None: it can): it routes by what the prefix caches hold, so it needs caches and prompts
    that share prefixes."""
    missing = [w for w, gone in (("a [cache] section", sim.cache is None),
                                 ("[workload] sessions", sim.sessions is None)) if gone]
    if not missing:
        return None
    return (f"best-cache routes by what the prefix caches hold: the preset needs "
            f"{' and '.join(missing)} (prompts that share prefixes); or use best-bandwidth, lp "
            f"or threshold")


def _pair_view(topo: Topology, region: str, site: str | None = None) -> Controls:
    """The pair view's controls of a region (with one of its sites) at the spec's settings."""
    r = topo.region(region)
    links = topo.links_of_region(region)
    link = next((k for k in links if k.site == site), links[0] if links else None)
    n_prfaas = topo.site(link.site).instances if link is not None else 0
    bw = link.bandwidth if link is not None else GBPS
    return Controls(t=r.threshold, n_p=r.n_p, n_d=r.n_d, n_prfaas=n_prfaas, bandwidth=bw)


def retuned(k: Link, bandwidth: float | None = None, loss: float | None = None,
            connections: int | None = None) -> Link:
    """Link `k` with its knobs turned. The bandwidth knob alone sets its effective rate (its
    transport stays for the incidents); a loss or connections recomputes its goodput from
    its line rate (`bandwidth` given with them: the new line rate) under the changed TCP.
    KnobError naming the link and the knob when a value or the goodput is out of range."""
    where = f"link {k.name}"
    for knob, value in ((LOSS, loss), (CONNECTIONS, connections)):
        if value is not None and (why := knob.refusal(value)) is not None:
            raise KnobError(knob.name, why, where)
    if loss is None and connections is None:
        return k if bandwidth is None else replace(k, bandwidth=bandwidth)
    line = bandwidth if bandwidth is not None else (k.line if k.line is not None else k.bandwidth)
    t = replace(k.transport or Transport(), **{n: v for n, v in
                                                (("loss", loss), ("connections", connections))
                                                if v is not None})
    if t.loss > 0 and k.rtt <= 0:
        raise KnobError("loss", "a loss rate needs a round trip above 0 (the link's rtt)", where)
    out = Link.over(k.site, k.region, float(line), k.rtt, t, long_share=k.long_share,
                    price_per_tb=k.price_per_tb, fluctuation=k.fluctuation)
    if (problem := goodput_problem(out.goodput)) is not None:
        raise KnobError(*problem, where)
    return out


def goodput_problem(g: Goodput) -> tuple[str, str] | None:
    """(knob, why) when a TCP holds a link below the bandwidth knob's range: the goodput
    must be a rate the bandwidth knob could be set to."""
    if (why := KNOBS["bandwidth"].problem(g.bytes_per_s)) is None:
        return None
    return ("connections" if g.cap != "line" else "loss",
            f"the link's goodput of {to_gbps(g.bytes_per_s):.3g} Gbps ({g.cap}-capped) {why}")


def check_element(topo: Topology, kind: str, name: str, *, has_bound: bool = True,
                  cache_problem: str | None = None, **knobs: Any) -> None:
    """KnobError, naming the element and its knob, unless element `name` (a "region", "site"
    or "link") can run with `knobs` set (the others as `topo` has them): `Controls.validate`
    on the element's pair view (`Topology.pair_system`), so a topology knob has the pair's
    range. A region's `routing` needs the routing bound for lp (`has_bound`) and, for
    best-cache, no `cache_problem`; `shares` are checked where they are applied."""
    where = f"{kind} {name}"
    for key in knobs:
        if key != "shares":
            knob_at(kind, key)
    if kind == "region":
        region, site = name, None
        routing = knobs.get("routing")
        change = {k: knobs[k] for k in ("t", "n_p", "n_d") if knobs.get(k) is not None}
    elif kind == "site":
        links = topo.links_of_site(name)
        if not links:
            raise KnobError("instances", "nothing reaches it: the site has no link", where)
        region, site, routing = links[0].region, name, None
        change = {"n_prfaas": knobs["instances"]}
    elif kind == "link":
        site, region = name.split("->", 1)
        k = retuned(topo.link(site, region), **knobs)
        routing, change = None, {"bandwidth": k.bandwidth}
    else:
        raise KnobError(kind, "no such element kind (region, site, link)")
    try:
        replace(_pair_view(topo, region, site), **change).validate(topo.pair_system(region, site))
    except KnobError as exc:
        field = KNOBS[exc.knob].at(kind) if exc.knob in KNOBS else exc.knob
        raise KnobError(field, exc.reason.replace("n_prfaas", "instances"), where) from None
    if routing is not None:
        if routing not in ROUTINGS:
            raise KnobError("routing", f"must be one of {', '.join(ROUTINGS)} (got {routing!r})",
                            where)
        if routing == "lp" and not has_bound:
            raise KnobError("routing", "lp needs the routing bound", where)
        if routing == "best-cache" and cache_problem is not None:
            raise KnobError("routing", cache_problem, where)
