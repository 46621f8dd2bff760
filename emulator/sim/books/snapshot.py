"""Immutable views of a running emulation, cheap to build (O(stages)) and safe to hand to
another thread: the UI renders them, the CLI prints the last one."""

from __future__ import annotations

from dataclasses import dataclass, field

from emulator.distributions import LengthDistribution
from emulator.model import Knobs, OperatingPoint, System
from emulator.paradigm import Paradigm


@dataclass(frozen=True)
class LiveKnobs:
    """The configured knobs (the operator's or the scheduler's targets). An instance loss does
    not move them: `StageSnap.instances` / `.failed` say what serves and what is down."""

    t: float  # tokens
    n_p: int
    n_d: int
    n_prfaas: int
    bandwidth: float  # configured B_out, bytes per second
    paradigm: Paradigm

    def model_point(self, system: System, mode: str) -> OperatingPoint:
        """The closed-form model at these knobs, as the paradigm deploys them."""
        knobs = Knobs(t=self.t, n_p=self.n_p, n_d=self.n_d, n_prfaas=self.n_prfaas,
                      bandwidth=self.bandwidth)
        return self.paradigm.evaluate(system, knobs, mode)


@dataclass(frozen=True)
class StageSnap:
    instances: int  # taking work
    busy: int  # requests in service (decode: holding a batch slot)
    utilization: float  # over the window (PrfaaS: compute time over instance time)
    queue: int
    served_rate: float  # req/s leaving the stage served, over the window
    draining: int = 0  # instances finishing their work before a role change
    failed: int = 0  # instances assigned to the stage (its knob) that are down (incidents)


@dataclass(frozen=True)
class LinkSnap:
    capacity: float  # bytes per second now (incidents change it)
    utilization: float  # bytes sent / nominal capacity over the window
    bytes_in_flight: float  # KV not yet delivered (unsent + on the wire)
    queued_bytes: float  # produced but not yet sent
    flows: int


@dataclass(frozen=True)
class Feed:
    """A site feeding a region: the site's PrfaaS stage (its utilization the compute time
    over instance time, as the pair's) and the link from it into the region."""

    site: str
    link: str  # "site->region"
    stage: StageSnap
    link_snap: LinkSnap


@dataclass(frozen=True)
class RegionStages:
    """One region of a topology over the window, stage by stage as the pair's snapshot carries
    its chain: the sites feeding it with their links in, its PD-P and PD-D. A site feeding
    several regions has one figure, the same in each of them. `hottest` is the measured busiest
    of them, named as the model's rows ("site:hub", "link:hub->east", "pd-p:east",
    "pd-d:east")."""

    feeds: tuple[Feed, ...]
    pd_p: StageSnap
    pd_d: StageSnap
    hottest: str


@dataclass(frozen=True)
class CacheSnap:
    """One cluster's prefix cache, cumulative since the start (a flush counts as evictions)."""

    hit_rate: float  # share of lookups (prefills here) that reused a prefix
    token_hit_rate: float  # share of their prompt tokens not recomputed
    lookups: int
    evicted_blocks: int
    evicted_states: int  # linear-attention state snapshots
    used_bytes: float  # prefix blocks + snapshots + pinned transfer blocks
    capacity_bytes: float
    pinned_bytes: float  # transfer-cache blocks (KV tails waiting for the link)
    transfers_out: int  # cache moves that left this cluster
    bytes_out: float  # their bytes


@dataclass(frozen=True)
class CacheView:
    scarce: bool  # the routing rule in force (scarce: no cache moves)
    clusters: dict[str, CacheSnap]  # "prfaas", "pd"
    moving: int  # requests waiting for a cache move
    waiting: int  # PrfaaS instances held because the transfer cache is full


@dataclass(frozen=True)
class Snapshot:
    sim_time: float
    knobs: LiveKnobs
    offered_rate: float  # req/s over the window
    served_rate: float
    arrived: int
    completed: int
    in_flight: int
    rejected: int
    lost: int  # measured: arrived - completed - in flight - rejected (0 when sound)
    stages: dict[str, StageSnap]
    link: LinkSnap
    ttft_p50: float
    ttft_p90: float
    ttft_p99: float
    tpot_p50: float
    slo_attainment: float | None
    bottleneck: str | None  # prfaas, pd-p, pd-d or link: measured busiest (metrics.bottleneck)
    decisions: tuple[str, ...]
    events: int
    incidents: tuple[str, ...]
    target_rate: float = 0.0  # the offered rate asked for (req/s), on/off phase included
    cache: CacheView | None = None  # None without a [cache] section
    scheduler_changes: int = 0  # knob changes the scheduler applied so far (t or split)
    # (start, end or None while open, label) of every incident planned or played so far
    incident_windows: tuple[tuple[float, float | None, str], ...] = ()
    # the scheduler: None without one, else on/off; its last decision; the knobs pinned by hand
    scheduler_enabled: bool | None = None
    scheduler_last: str | None = None  # "660.0s short: link 6.0 Gbps now (...) -> t 19,400 -> ..."
    pinned: tuple[str, ...] = ()
    # (q, seconds) of the TTFT distribution over the window (Latencies.ttft_cdf): the TTFT CDF
    ttft_cdf: tuple[tuple[float, float], ...] = ()
    # the length mix new requests draw from now (a shift or surge of long requests changes
    # it): the effective model evaluates there. None: the preset's. Not compared (large).
    lengths: LengthDistribution | None = field(default=None, compare=False, repr=False)
    # a topology: its `regions`, `sites` and `links` objects over the window
    # (emulator.sim.reports.topology_report.objects); None for the single pair
    topology: dict | None = field(default=None, compare=False, repr=False)
    # a topology: each region's stages over the window (the pair's `stages` and `link` per
    # region); None for the single pair
    regions: dict[str, RegionStages] | None = field(default=None, compare=False, repr=False)
