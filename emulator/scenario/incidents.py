"""Incidents: timed disturbances of a running emulation (link brownout, outage, flap, diurnal
swing, loss spike, round-trip change, instance loss, traffic surge, length-mix shift, cache
flush), and the `[[incidents]]` parser of presets and drills.

An incident is a frozen description. Each kind declares its TOML keys (field metadata), its own
checks and what it does, expressed against `Faults`: the running emulation's public fault API,
which composes the effects of every active incident (the link delivers B_out times the product
of the active link factors and its goodput share under the active path changes, the offered
rate is multiplied by every active surge, the newest active length shift wins) and never drops
a request (a lost instance hands its work back, a dead link only stalls its flows). The
simulator's `Timeline` starts and stops them; this module knows nothing of the simulator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Protocol

from emulator.distributions import LengthDistribution, Reweighted
from emulator.model import STAGES
from emulator.scenario.knobs import LOSS
from emulator.scenario.lengths import parse_lengths
from emulator.scenario.reader import Reader, at_most, non_negative, one_of, positive, setting
from emulator.topology.transport import MAX_RTT, PathChange
from emulator.units import parse_duration, parse_tokens


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Faults(Protocol):
    """What an incident may do to a running emulation (the engine satisfies this). `key` names
    the incident's contribution, so ending one incident removes only its own."""

    @property
    def now(self) -> float: ...

    @property
    def base_lengths(self) -> LengthDistribution:
        """The scenario's length mix (what a length shift re-weights)."""

    @property
    def base_threshold(self) -> float:
        """The scenario's threshold t (a long-request surge's default cut)."""

    def call_at(self, when: float, fn: Callable[..., Any], *args: Any) -> Cancellable: ...

    def set_link_factor(self, key: Hashable, factor: float | None,
                        link: str | None = None) -> None:
        """`link`: one link by its name "site->region" (the pair's: "prfaas->pd"; None: every
        link)."""

    def set_link_path(self, key: Hashable, change: PathChange | None,
                      link: str | None = None) -> None:
        """`key`'s change to `link`'s loss and round trip (None link: every link, the pair's
        one)."""

    def set_rate_multiplier(self, key: Hashable, factor: float | None,
                            region: str | None = None) -> None:
        """`region`: one region's arrivals (the pair's: "pd"; None: every region's)."""

    @property
    def region_names(self) -> tuple[str, ...]:
        """The regions' names (the pair: "pd")."""

    def set_length_distribution(self, key: Hashable,
                                dist: LengthDistribution | None) -> None: ...

    def live_instances(self, stage: str, where: str | None = None) -> list[int]:
        """Ids of the live instances serving `stage` at `where`: a site for "prfaas", a region
        for "pd-p" / "pd-d" (the pair's: "prfaas", "pd"; None: the only one there is)."""

    def fail_instance(self, stage: str, idx: int, where: str | None = None) -> None: ...

    def restore_instance(self, stage: str, idx: int, where: str | None = None) -> None: ...

    def flush_cache(self, cluster: str | None = None) -> int: ...


class Running(Protocol):
    """One started incident's state in a run (also its key in the fault API)."""

    timer: Cancellable | None  # flap / diurnal ticks
    machines: list[int]  # instance loss: the instances it failed

    def cancel_timer(self) -> None: ...


FIXED_LENGTHS = "a replayed trace or session workload brings its own lengths"
HAND_OPEN = ("at", "duration")  # what an incident started by hand may leave open


def _below_one(x: float) -> str | None:
    return None if 0 <= x < 1 else "must be in [0, 1) (a share of B_out)"


@dataclass(frozen=True)
class Spelling:
    """Another name of an incident kind: the keys a file must give with it, the defaults it
    changes."""

    required: tuple[str, ...]
    defaults: dict[str, Any] = field(default_factory=dict)


LINK_KEY = "link"  # a link incident's target: "site->region" (the pair's: "prfaas->pd")


def _on(link: str | None, what: str) -> str:
    """A link incident's label: "link ..." on the pair's (or every) link, "hub->west ..." on
    one named link."""
    return f"{link if link is not None else 'link'} {what}"


# -- the kinds ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Incident:
    """Starts at `at` (simulated seconds; None = when injected) and lasts `duration` seconds
    (None = until ended by hand)."""

    at: float | None = setting(None, parse=parse_duration, check=non_negative)
    duration: float | None = setting(None, parse=parse_duration, check=positive)
    kind: ClassVar[str] = ""
    describe: ClassVar[str] = ""
    instant: ClassVar[bool] = False  # over as soon as it starts (no duration)
    # keys a scripted incident (TOML) must give, though one built by hand may leave them open
    required: ClassVar[tuple[str, ...]] = ("at", "duration")
    # other names the kind is written as (shipped drill files use them): each with the keys it
    # requires and the defaults it changes
    spellings: ClassVar[dict[str, Spelling]] = {}

    @property
    def label(self) -> str:
        return self.kind

    @property
    def changes_lengths(self) -> bool:
        """Whether it changes the length mix (impossible when a trace brings the lengths)."""
        return False

    @classmethod
    def read(cls, r: Reader, base_dir: Path, by_hand: bool = False,
             spelling: str | None = None) -> dict[str, Any]:
        """The constructor's arguments from one `[[incidents]]` table (keys from the fields).
        `by_hand`: typed by an operator, it starts now (no `at`) and may stay open (no
        `duration`); every other key is checked as in a drill file. `spelling`: the kind as
        written, when it is one of `spellings`."""
        sp = cls.spellings.get(spelling or "", Spelling(cls.required))
        kw = {}
        for f in fields(cls):
            meta = f.metadata
            if "parse" not in meta or (cls.instant and f.name == "duration") or \
                    (by_hand and f.name == "at"):
                continue
            if f.name in sp.required and not r.has(f.name) and not (
                    by_hand and f.name in HAND_OPEN):
                raise r.error(f.name, "missing (required)")
            kw[f.name] = r.get(f.name, meta["parse"], sp.defaults.get(f.name, f.default),
                               check=meta["check"])
        return kw

    # what it does; `run` is its state in this run and its key in the fault API
    def start(self, faults: Faults, run: Running) -> None:
        raise NotImplementedError

    def stop(self, faults: Faults, run: Running) -> None:
        pass


@dataclass(frozen=True)
class Brownout(Incident):
    """A link delivers `factor` x its bandwidth; on a topology the site's egress share it cannot
    use goes to its other links. `link` names it ("site->region"; None: every link, the pair's
    one)."""

    factor: float = setting(0.2, check=_below_one)  # share of its bandwidth the link delivers
    link: str | None = setting(None, parse=str)
    kind: ClassVar[str] = "brownout"
    required: ClassVar[tuple[str, ...]] = ("at", "duration", "factor")
    spellings: ClassVar[dict[str, Spelling]] = {
        "link-brownout": Spelling(("at", "duration", "link", "factor"))}
    describe: ClassVar[str] = "the link delivers factor x B_out"

    @property
    def label(self) -> str:
        return _on(self.link, f"brownout to {self.factor:.0%}")

    def start(self, faults, run):
        faults.set_link_factor(run, self.factor, self.link)

    def stop(self, faults, run):
        faults.set_link_factor(run, None, self.link)


@dataclass(frozen=True)
class Outage(Incident):
    link: str | None = setting(None, parse=str)  # one link "site->region" (None: every link)
    kind: ClassVar[str] = "outage"
    describe: ClassVar[str] = "the link delivers nothing (flows stall, nothing is dropped)"

    @property
    def label(self) -> str:
        return _on(self.link, "outage")

    def start(self, faults, run):
        faults.set_link_factor(run, 0.0, self.link)

    def stop(self, faults, run):
        faults.set_link_factor(run, None, self.link)


@dataclass(frozen=True)
class Flap(Incident):
    """The link goes down for `down` seconds, up for `up` seconds, repeatedly."""

    down: float = setting(10.0, parse=parse_duration, check=positive)
    up: float = setting(20.0, parse=parse_duration, check=positive)
    link: str | None = setting(None, parse=str)  # one link "site->region" (None: every link)
    kind: ClassVar[str] = "flap"
    describe: ClassVar[str] = "the link goes down and up repeatedly"

    @property
    def label(self) -> str:
        return _on(self.link, f"flap ({self.down:g} s down / {self.up:g} s up)")

    def start(self, faults, run):
        def toggle(down: bool) -> None:
            faults.set_link_factor(run, 0.0 if down else None, self.link)
            run.timer = faults.call_at(faults.now + (self.down if down else self.up),
                                       toggle, not down)
        toggle(True)

    def stop(self, faults, run):
        run.cancel_timer()
        faults.set_link_factor(run, None, self.link)


@dataclass(frozen=True)
class Diurnal(Incident):
    """Link capacity follows a cosine between 1 and `low` x B_out over `period` seconds (a
    compressed day of a shared VPC link), updated every `step` seconds."""

    low: float = setting(0.3, check=_below_one)
    period: float = setting(1200.0, parse=parse_duration, check=positive)
    step: float = setting(30.0, parse=parse_duration, check=positive)
    link: str | None = setting(None, parse=str)  # a topology's link "site->region" (None: all)
    kind: ClassVar[str] = "diurnal"
    describe: ClassVar[str] = "link capacity swings between B_out and low x B_out"

    @property
    def label(self) -> str:
        where = f" on {self.link}" if self.link is not None else ""
        return f"diurnal link swing to {self.low:.0%}{where} (period {self.period:g} s)"

    def factor_at(self, elapsed: float) -> float:
        return 1.0 - (1.0 - self.low) * (1.0 - math.cos(2 * math.pi * elapsed / self.period)) / 2

    def start(self, faults, run):
        t0 = faults.now

        def tick() -> None:
            faults.set_link_factor(run, self.factor_at(faults.now - t0), self.link)
            run.timer = faults.call_at(faults.now + self.step, tick)
        tick()

    def stop(self, faults, run):
        run.cancel_timer()
        faults.set_link_factor(run, None, self.link)


def _parse_offsets(value: object) -> tuple[tuple[str, float], ...]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError("give a table of region = hours from UTC, e.g. { east = -5 }")
    out = []
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not -12 <= v <= 14:
            raise ValueError(f"{k}: hours from UTC must be a number in [-12, 14]")
        out.append((k, float(v)))
    return tuple(out)


@dataclass(frozen=True)
class DiurnalRate(Incident):
    """Every region's arrival rate follows its local time of day: x (1 + (1 - low) cos(2 pi
    (local hour - peak_hour) / 24)), between `low` at night and 2 - low at `peak_hour`, a mean
    of 1 over the day. A day lasts `period` simulated seconds (24 h: real time); the run starts
    at `start_hour` UTC; `offsets` give each region's hours from UTC (0 when not named). The
    multipliers move every `step` seconds."""

    low: float = setting(0.3, check=_below_one)
    peak_hour: float = setting(14.0, check=lambda x: None if 0 <= x < 24 else
                               "must be an hour in [0, 24)")
    start_hour: float = setting(0.0, check=lambda x: None if 0 <= x < 24 else
                                "must be an hour in [0, 24)")
    period: float = setting(86400.0, parse=parse_duration, check=positive)
    step: float = setting(300.0, parse=parse_duration, check=positive)
    offsets: tuple[tuple[str, float], ...] | None = setting(None, parse=_parse_offsets)
    kind: ClassVar[str] = "diurnal-rate"
    describe: ClassVar[str] = "regions' rates follow their local time of day"

    @property
    def label(self) -> str:
        return f"regions' rates follow their local day (trough {self.low:.0%})"

    def factor_at(self, elapsed: float, offset: float) -> float:
        hour = (self.start_hour + 24.0 * elapsed / self.period + offset) % 24.0
        return 1.0 + (1.0 - self.low) * math.cos(2 * math.pi * (hour - self.peak_hour) / 24.0)

    def start(self, faults, run):
        t0 = faults.now
        offsets = dict(self.offsets or ())
        names = faults.region_names

        def tick() -> None:
            for name in names:
                faults.set_rate_multiplier(run, self.factor_at(faults.now - t0,
                                                               offsets.get(name, 0.0)), name)
            run.timer = faults.call_at(faults.now + self.step, tick)
        tick()

    def stop(self, faults, run):
        run.cancel_timer()
        for name in faults.region_names:
            faults.set_rate_multiplier(run, None, name)


@dataclass(frozen=True)
class PathIncident(Incident):
    """A change to a link's path for a while: its value x `factor`, or set to a value (`SET`
    names the key; give one of the two, neither: `DEFAULT_FACTOR`). `link` names it
    ("site->region"; None: every link, the pair's one)."""

    factor: float | None = setting(None, check=positive)
    link: str | None = setting(None, parse=str)
    SET: ClassVar[str] = ""
    DEFAULT_FACTOR: ClassVar[float] = 1.0

    def __post_init__(self) -> None:
        if self.factor is not None and getattr(self, self.SET) is not None:
            raise ValueError(f"{self.kind}: give factor or {self.SET}, not both")

    @classmethod
    def read(cls, r, base_dir, by_hand=False, spelling=None):
        if r.has("factor") and r.has(cls.SET):
            raise r.error(cls.SET, f"give factor or {cls.SET}, not both")
        return super().read(r, base_dir, by_hand, spelling)

    @property
    def k(self) -> float:
        """The factor in force (the default when neither key is given)."""
        if self.factor is not None:
            return self.factor
        return self.DEFAULT_FACTOR if getattr(self, self.SET) is None else 1.0

    def change(self) -> PathChange:
        raise NotImplementedError

    def start(self, faults, run):
        faults.set_link_path(run, self.change(), self.link)

    def stop(self, faults, run):
        faults.set_link_path(run, None, self.link)


@dataclass(frozen=True)
class LossSpike(PathIncident):
    """The link's packet loss x `factor` (or set to `loss`) for a while: where its connections
    bind, its goodput falls as 1 / sqrt(loss) (emulator.topology.transport). A link without
    transport keys has no loss to multiply: give `loss`, which its one connection then sees."""

    loss: float | None = setting(None, check=LOSS.problem)  # the link knob's rule
    kind: ClassVar[str] = "loss-spike"
    SET: ClassVar[str] = "loss"
    DEFAULT_FACTOR: ClassVar[float] = 10.0
    describe: ClassVar[str] = "the link's packet loss x factor (or set to loss)"

    @property
    def label(self) -> str:
        what = f"loss {self.loss:.3g}" if self.loss is not None else f"loss x{self.k:g}"
        return _on(self.link, what)

    def change(self) -> PathChange:
        return PathChange(loss=self.loss, loss_factor=self.k)


@dataclass(frozen=True)
class RttChange(PathIncident):
    """A route flap: the link's round trip x `factor` (or set to `rtt`) for a while. Transfers
    arrive that much later, and where its connections bind the goodput falls with the round
    trip (window / RTT, and the loss-bound rate's MSS / RTT)."""

    rtt: float | None = setting(None, parse=parse_duration, check=lambda x: non_negative(x) or
                                at_most(MAX_RTT, "a minute of round trip")(x))
    kind: ClassVar[str] = "rtt-change"
    SET: ClassVar[str] = "rtt"
    DEFAULT_FACTOR: ClassVar[float] = 2.0
    describe: ClassVar[str] = "route flap: the link's round trip x factor (or set to rtt)"

    @property
    def label(self) -> str:
        what = f"RTT {self.rtt * 1e3:g} ms" if self.rtt is not None else f"RTT x{self.k:g}"
        return _on(self.link, what)

    def change(self) -> PathChange:
        return PathChange(rtt=self.rtt, rtt_factor=self.k)


@dataclass(frozen=True)
class InstanceLoss(Incident):
    """`count` instances serving `stage` die (the highest-numbered live ones; None: all of
    them) and come back at the end: a site's ("prfaas"; `site` names it) or a region's ("pd-p",
    "pd-d"; `region` names it), each defaulting to the only one there is (the pair's). A lost
    prefill restarts from the head of its queue, which waits for the survivors or the recovery
    (the site policies see the loss in the site's expected wait); a lost decode batch lost its
    KV, so those requests go back through the router and are prefilled and decoded again (their
    TTFT counts from the original arrival). Nothing is dropped either way."""

    stage: str = setting("prfaas", parse=str, check=one_of(*STAGES))
    count: int | None = setting(1, parse=int, check=positive)
    site: str | None = setting(None, parse=str)
    region: str | None = setting(None, parse=str)
    kind: ClassVar[str] = "instance-loss"
    spellings: ClassVar[dict[str, Spelling]] = {
        "site-loss": Spelling(("at", "duration", "site"), {"count": None})}
    describe: ClassVar[str] = "instances of a stage die and later recover"

    def __post_init__(self) -> None:
        if (why := _stage_problem(self.stage, self.site, self.region)) is not None:
            raise ValueError(f"instance-loss: {why[0]}: {why[1]}")

    @classmethod
    def read(cls, r, base_dir, by_hand=False, spelling=None):
        kw = super().read(r, base_dir, by_hand, spelling)
        if (why := _stage_problem(kw["stage"], kw["site"], kw["region"])) is not None:
            raise r.error(*why)
        return kw

    @property
    def where(self) -> str | None:
        """The site or region it strikes (None: the only one)."""
        return self.site if self.stage == "prfaas" else self.region

    @property
    def label(self) -> str:
        n = self.count
        if self.site is not None:
            what = "all instances" if n is None else f"{n} instance{'s' if n != 1 else ''}"
            return f"site {self.site} loses {what}"
        where = f" in {self.region}" if self.region is not None else ""
        if n is None:
            return f"all {self.stage} instances lost{where}"
        return f"{n} {self.stage} instance{'s' if n != 1 else ''} lost{where}"

    def start(self, faults, run):
        live = faults.live_instances(self.stage, self.where)[::-1]
        run.machines = live if self.count is None else live[: self.count]
        for idx in run.machines:
            faults.fail_instance(self.stage, idx, self.where)

    def stop(self, faults, run):
        for idx in run.machines:
            faults.restore_instance(self.stage, idx, self.where)


def _stage_problem(stage: str, site: str | None, region: str | None) -> tuple[str, str] | None:
    """(key, why) when an instance loss's stage and its site or region do not go together."""
    if stage not in STAGES:
        return "stage", f"must be one of {', '.join(STAGES)}"
    if site is not None and stage != "prfaas":
        return "stage", "a site's instances prefill for PrfaaS: stage must be prfaas"
    if region is not None and stage == "prfaas":
        return "region", "a region holds pd-p and pd-d instances: name a site for prfaas"
    return None


def _read_mix(kw: dict[str, Any], other: str, r: Reader, base_dir: Path) -> dict[str, Any]:
    """`kw` plus exactly one of `other` or long_factor (+ cut)."""
    if r.has(other) == r.has("long_factor"):
        raise r.error("long_factor", f"give exactly one of {other} or long_factor")
    if r.has("long_factor"):
        kw["long_factor"] = r.get("long_factor", float, check=positive)
        kw["cut"] = r.get("cut", parse_tokens, None, check=positive)
    elif other == "factor":
        kw["factor"] = r.get("factor", float, check=positive)
    else:
        kw["lengths"] = parse_lengths(r.section("lengths", required=True), base_dir)
    return kw


def _long_mix(faults: Faults, cut: float | None, factor: float) -> Reweighted:
    """The scenario's mix with the odds above `cut` (default: its threshold) x `factor`."""
    return Reweighted.of(faults.base_lengths, faults.base_threshold if cut is None else cut,
                         factor)


@dataclass(frozen=True)
class Surge(Incident):
    """The offered rate x `factor`; or, with `long_factor`, only requests longer than `cut`
    tokens (default: the preset's threshold) arrive `long_factor` times as often (re-weighting
    the preset's length mix; the newest active length change wins)."""

    factor: float | None = None
    long_factor: float | None = None
    cut: float | None = None
    region: str | None = setting(None, parse=str)  # a topology's region (None: all of them)
    kind: ClassVar[str] = "surge"
    describe: ClassVar[str] = "traffic surge: offered rate x factor (or long requests only)"

    @property
    def label(self) -> str:
        where = f" in {self.region}" if self.region is not None else ""
        if self.long_factor is not None:
            return f"{self.long_factor:g}x long-request surge{where}"
        return f"{self.factor:g}x traffic surge{where}"

    @property
    def changes_lengths(self) -> bool:
        return self.long_factor is not None

    @classmethod
    def read(cls, r, base_dir, by_hand=False, spelling=None):
        return _read_mix(super().read(r, base_dir, by_hand, spelling), "factor", r, base_dir)

    def start(self, faults, run):
        if self.long_factor is None:
            if self.region is None:
                faults.set_rate_multiplier(run, self.factor)
            else:
                faults.set_rate_multiplier(run, self.factor, self.region)
            return
        shifted = _long_mix(faults, self.cut, self.long_factor)
        faults.set_length_distribution(run, shifted)
        faults.set_rate_multiplier(run, shifted.mass)  # short requests keep their rate

    def stop(self, faults, run):
        if self.region is None:
            faults.set_rate_multiplier(run, None)
        else:
            faults.set_rate_multiplier(run, None, self.region)
        if self.long_factor is not None:  # only a long surge changed the mix (a replayed
            faults.set_length_distribution(run, None)  # trace or sessions have no mix to reset)


@dataclass(frozen=True)
class LengthShift(Incident):
    """New requests draw from another length mix at the same rate: the preset's mix with the
    odds of being longer than `cut` x `long_factor`, or a whole new distribution (`lengths`)."""

    long_factor: float | None = None
    cut: float | None = None
    lengths: LengthDistribution | None = field(default=None, compare=False)
    kind: ClassVar[str] = "length-shift"
    describe: ClassVar[str] = "length-mix shift at the same rate"

    @property
    def label(self) -> str:
        if self.lengths is not None:
            return f"length mix -> {self.lengths.describe()}"
        return f"long share odds x{self.long_factor:g}"

    @property
    def changes_lengths(self) -> bool:
        return True

    @classmethod
    def read(cls, r, base_dir, by_hand=False, spelling=None):
        return _read_mix(super().read(r, base_dir, by_hand, spelling), "lengths", r, base_dir)

    def start(self, faults, run):
        dist = self.lengths
        if dist is None:
            dist = _long_mix(faults, self.cut, self.long_factor)
        faults.set_length_distribution(run, dist)

    def stop(self, faults, run):
        faults.set_length_distribution(run, None)


@dataclass(frozen=True)
class CacheFlush(Incident):
    """The prefix cache of `cluster` (a pair's "prfaas" or "pd", a topology's site or region;
    None: every one) is emptied at once (counted even without a [cache])."""

    cluster: str | None = setting(None, parse=str)
    kind: ClassVar[str] = "cache-flush"
    describe: ClassVar[str] = "empty the prefix caches"
    instant: ClassVar[bool] = True

    @property
    def label(self) -> str:
        return f"prefix-cache flush ({self.cluster or 'both clusters'})"

    def start(self, faults, run):
        faults.flush_cache(self.cluster)


CLASSES: tuple[type[Incident], ...] = (
    Brownout, Outage, Flap, Diurnal, InstanceLoss, Surge, LengthShift, CacheFlush, DiurnalRate,
    LossSpike, RttChange)
# every spelling of a kind: its own name and its other names
KINDS: dict[str, type[Incident]] = {name: c for c in CLASSES
                                    for name in (c.kind, *c.spellings)}


def catalog() -> list[tuple[str, str, Incident]]:
    """(label, description, a ready-made open-ended incident) for a UI's injection menu; the
    ones started by hand end with `Emulation.end_manual_incidents()`."""
    ready = [Brownout(factor=0.2), Outage(), Flap(), Diurnal(), InstanceLoss(stage="prfaas", count=1),
             InstanceLoss(stage="pd-d", count=1), Surge(factor=1.5), Surge(long_factor=3.0),
             LengthShift(long_factor=3.0), CacheFlush(), LossSpike(), RttChange()]
    return [(i.label, i.describe, i) for i in ready]


TARGET_KEYS = ("link", "site", "region")  # where an incident strikes, by element name


def hand_keys(ready: Incident, *, targets: bool = False) -> list[str]:
    """The keys an operator may set when starting `ready` (a catalog entry) by hand: its
    `setting()` fields but `at` (it starts now), the mix knobs it uses (factor or long_factor,
    and the cut that goes with long_factor), and with `targets` the element it strikes (a
    single pair has one of each: nothing to choose)."""
    keys = []
    for f in fields(ready):
        if f.name == "at" or (ready.instant and f.name == "duration") or f.name == "lengths" \
                or (not targets and f.name in TARGET_KEYS):
            continue
        if "parse" in f.metadata or getattr(ready, f.name) is not None or (
                f.name == "cut" and getattr(ready, "long_factor", None) is not None):
            keys.append(f.name)
    return keys


def count_problem(inc: Incident, n_prfaas: int, pool: int) -> str | None:
    """Why an instance loss claims more instances than the deployment has (None: it fits)."""
    if not isinstance(inc, InstanceLoss) or inc.count is None:
        return None
    have = n_prfaas if inc.stage == "prfaas" else pool
    if inc.count <= have:
        return None
    where = "PrfaaS instances" if inc.stage == "prfaas" else "local instances in the pool"
    return f"loses {inc.count} {inc.stage} instances but the deployment has {have} {where}"


def site_count_problem(inc: Incident, topology) -> str | None:
    """Why a site loss claims more instances than its site has (None: it fits)."""
    if not isinstance(inc, InstanceLoss) or inc.site is None or inc.count is None:
        return None
    have = next((s.instances for s in topology.sites if s.name == inc.site), None)
    if have is None or inc.count <= have:
        return None
    return f"site {inc.site!r} loses {inc.count} instances but has {have}"


def cut_problem(inc: Incident, lengths: LengthDistribution) -> str | None:
    """Why a re-weighting cut has nothing on one side of it (None: it splits the mix)."""
    cut = getattr(inc, "cut", None)
    if cut is None or 0 < lengths.p_above(cut) < 1:
        return None
    lo, hi = lengths.support
    return (f"{cut:.6g} tokens leaves no lengths on one side: give a cut inside the lengths' "
            f"support [{lo:.0f}, {hi:.0f}]")


def by_hand(kind: str, values: dict[str, Any], *, n_prfaas: int, pool: int,
            lengths: LengthDistribution | None) -> Incident:
    """An incident an operator typed ({key: value}, values as TOML would give them), checked
    exactly as a drill file's `[[incidents]]` entry: same ranges, same caps, same one line
    (a PresetError "brownout: factor: must be in [0, 1) (a share of B_out) (got 1.5)").
    `lengths` None: a trace or session workload brings the lengths (no mix change)."""
    cls = KINDS[kind]
    r = Reader(values, kind)
    inc = cls(**cls.read(r, Path.cwd(), by_hand=True, spelling=kind))
    r.finish()
    if msg := count_problem(inc, n_prfaas, pool):
        raise r.error("count", msg)
    if lengths is None and inc.changes_lengths:
        raise r.error("", FIXED_LENGTHS)
    if lengths is not None and (msg := cut_problem(inc, lengths)):
        raise r.error("cut", msg)
    return inc


# -- parsing [[incidents]] -------------------------------------------------------------------------
def parse_incidents(items: list[Reader], base_dir: Path) -> tuple[Incident, ...]:
    """The `[[incidents]]` array of a preset or drill, strictly: every bad key is one line."""
    out = []
    for r in items:
        kind = r.get("kind", str, check=one_of(*KINDS))
        cls = KINDS[kind]
        kw = cls.read(r, base_dir, spelling=kind)
        r.finish()
        out.append(cls(**kw))
    return tuple(out)


def target_problem(inc: Incident, sites: tuple[str, ...], regions: tuple[str, ...],
                   links: tuple[str, ...], pair: bool) -> tuple[str, str] | None:
    """(key, why) when an incident names a site, region or link the deployment lacks, or is a
    single-pair kind with no meaning on a declared topology (None: it fits). `pair`: a
    [deployment] preset, whose names are those of its 1x1 topology: site "prfaas", region
    "pd", link "prfaas->pd"."""
    for key, names, what in (("link", links, "link"), ("site", sites, "site"),
                             ("region", regions, "region")):
        name = getattr(inc, key, None)
        if name is not None and name not in names:
            return key, f"no {what} named {name!r} (defined: {', '.join(names)})"
    if isinstance(inc, DiurnalRate):
        for name, _ in inc.offsets or ():
            if name not in regions:
                return "offsets", f"no region named {name!r} (defined: {', '.join(regions)})"
    if isinstance(inc, InstanceLoss) and inc.where is None:
        key, names = ("site", sites) if inc.stage == "prfaas" else ("region", regions)
        if len(names) != 1:
            return key, (f"{inc.stage} instances are in every {key}: name one "
                         f"({', '.join(names)})")
    if not pair and inc.changes_lengths:
        return "kind", f"{inc.kind} re-weights the pair's one length mix: not on a topology"
    if isinstance(inc, CacheFlush) and inc.cluster is not None \
            and inc.cluster not in sites + regions:
        return "cluster", (f"no site or region named {inc.cluster!r} (defined: "
                           f"{', '.join(sites + regions)})")
    return None
