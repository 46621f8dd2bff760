"""A topology as config objects: PrfaaS sites, PD regions and the links between them.

API (what the model, the simulator and the UI read; nothing here parses TOML):

- ``Site(name, profile, instances, egress=None, parallelism=1, price=None)``: a PrfaaS cluster;
  ``egress`` (bytes/s) caps all of its links together, None: only the links cap it.
- ``Region(name, profile, pool, n_p, n_d, threshold, share, lengths, decode, parallelism=1,
  rdma_bandwidth=800 Gbps, price=None)``: a PD cluster with its own users; ``share`` is its part
  of the total offered rate (the shares sum to 1); ``lengths``/``decode`` are its own (the
  preset's top-level tables unless ``[region.workload]``/``[region.decode]`` override them).
- ``Link(site, region, bandwidth, rtt=0, long_share=1, price_per_tb=None, fluctuation=0,
  transport=None, line=None)``: ``bandwidth`` bytes/s (with a transport: its TCP goodput, built
  by ``Link.over(site, region, line, rtt, transport)``; ``Link.goodput`` says what caps it), ``rtt`` seconds (the delay a remote request adds to its TTFT: its trip
  to the site and its KV's trip back), ``long_share`` the part of the region's long requests
  (above its threshold) the threshold policy sends over this link (a region's shares sum to 1),
  ``fluctuation`` the fraction of capacity another tenant may take. ``Link.name`` is
  ``"site->region"``.
- ``Topology(sites, regions, links, routing="threshold")``: tuples in file order; lookups
  ``site(name)``, ``region(name)``, ``link(site, region)``, ``links_of_region(name)``,
  ``links_of_site(name)``; ``is_pair`` (one site, one region, one link); ``problems()`` lists
  every cross-table inconsistency as (key, message) with the table index (``link[3].site``), the
  one check the preset reader and programmatic builders share.
- ``Scenario.topology`` (emulator.scenario.scenario) is the one to read: the declared topology of a
  [[site]]/[[region]]/[[link]] preset (``Scenario.declared_topology``), else the single pair at the
  scenario's current knobs. ``presets.load(name, topology=True)`` loads topology presets; without
  ``topology=True`` they are refused in one line (callers that run single pairs only).
- ``Topology.pair(system, t, n_p, n_d, rtt=0, transport=None, line=None)``: the 1x1 topology of a single-pair model
  ``System`` (site ``prfaas``, region ``pd``, link ``prfaas->pd``); ``pair_system(region, site)``
  is the inverse view, one region with one of its sites as a ``System`` for the single-pair model.

Units are the project's: bytes, bytes per second, seconds, tokens, instances. Names are the keys
everywhere (constraint names, JSON, the emulator's lookups) and share one namespace.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property

from emulator.distributions import LengthDistribution
from emulator.model import Cluster, DecodeSpec, System
from emulator.profiles import Profile
from emulator.topology.transport import Goodput, Transport, goodput
from emulator.units import GBPS, format_tokens

ROUTINGS = ("threshold", "lp", "best-bandwidth", "best-cache")  # the site choice (emulator)
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # no '>' or ':': names join into keys
MAX_SITES, MAX_REGIONS, MAX_LINKS = 32, 64, 256  # 64 regions x 256 links: solve in ~30 s
SHARE_TOLERANCE = 1e-6
DEFAULT_RDMA = 800 * GBPS
# the single pair's elements as the 1x1 topology names them (`Topology.pair`)
PAIR_SITE, PAIR_REGION = Cluster.PRFAAS.value, Cluster.PD.value
PAIR_LINK = f"{PAIR_SITE}->{PAIR_REGION}"


@dataclass(frozen=True)
class Site:
    """A PrfaaS cluster: prefill instances of one profile behind one egress."""

    name: str
    profile: Profile
    instances: int
    egress: float | None = None  # bytes/s over all its links; None: the links alone cap it
    parallelism: int = 1  # GPUs per instance
    price: float | None = None  # per instance-hour

    @property
    def gpus(self) -> int:
        return self.instances * self.parallelism


@dataclass(frozen=True)
class Region:
    """A PD cluster with its own users, length mix and decode constants."""

    name: str
    profile: Profile
    pool: int  # local instances, split into n_p prefill and n_d decode
    n_p: int
    n_d: int
    threshold: float  # tokens: longer requests go to a site (threshold policy)
    share: float  # its part of the total offered rate
    lengths: LengthDistribution
    decode: DecodeSpec
    parallelism: int = 1
    rdma_bandwidth: float = DEFAULT_RDMA  # PD-P -> PD-D, bytes/s
    price: float | None = None  # per instance-hour
    # a trace the emulator replays as this region's arrivals (its times rescaled to the region's
    # share of the offered rate, its own input and output lengths); `lengths` are its inputs'
    replay: str | None = None
    # a decode from the cards: the step its emulated decode runs (a CardStep, built by
    # emulator.scenario.decode); None: every step lasts decode.t_decode
    step: object | None = None

    @property
    def gpus(self) -> int:
        return self.pool * self.parallelism


@dataclass(frozen=True)
class Link:
    """A site's path to a region: bandwidth, round trip, the threshold policy's share."""

    site: str
    region: str
    bandwidth: float  # bytes/s
    rtt: float = 0.0  # seconds
    long_share: float = 1.0  # of the region's requests above its threshold
    price_per_tb: float | None = None  # per 10^12 bytes carried
    fluctuation: float = 0.0  # fraction of the capacity another tenant may take
    # its TCP (emulator.topology.transport); with one, `bandwidth` is the goodput and `line`
    # the lease's line rate it was computed from
    transport: Transport | None = None
    line: float | None = None

    @property
    def name(self) -> str:
        return f"{self.site}->{self.region}"

    @property
    def goodput(self) -> Goodput:
        """What the link carries and what caps it (its bandwidth: the goodput already)."""
        if self.transport is None or self.line is None:
            return goodput(self.bandwidth, self.rtt, None)
        return goodput(self.line, self.rtt, self.transport)

    @classmethod
    def over(cls, site: str, region: str, line: float, rtt: float = 0.0,
             transport: Transport | None = None, **rest) -> Link:
        """A link of line rate `line` whose bandwidth is its goodput under `transport` (the
        line rate itself, the very same float, when the transport limits nothing)."""
        if transport is None:
            return cls(site, region, line, rtt, **rest)
        return cls(site, region, goodput(line, rtt, transport).bytes_per_s, rtt, **rest,
                   transport=transport, line=line)


@dataclass(frozen=True)
class Topology:
    """Sites, regions and links in file order, and the routing policy the emulator runs."""

    sites: tuple[Site, ...]
    regions: tuple[Region, ...]
    links: tuple[Link, ...]
    routing: str = "threshold"

    @cached_property
    def _by_name(self) -> tuple[dict[str, Site], dict[str, Region], dict[tuple[str, str], Link]]:
        return ({s.name: s for s in self.sites}, {r.name: r for r in self.regions},
                {(k.site, k.region): k for k in self.links})

    @cached_property
    def _by_end(self) -> tuple[dict[str, tuple[Link, ...]], dict[str, tuple[Link, ...]]]:
        by_region: dict[str, list[Link]] = {}
        by_site: dict[str, list[Link]] = {}
        for k in self.links:
            by_region.setdefault(k.region, []).append(k)
            by_site.setdefault(k.site, []).append(k)
        return ({n: tuple(v) for n, v in by_region.items()},
                {n: tuple(v) for n, v in by_site.items()})

    def site(self, name: str) -> Site:
        return self._by_name[0][name]

    def region(self, name: str) -> Region:
        return self._by_name[1][name]

    def link(self, site: str, region: str) -> Link | None:
        return self._by_name[2].get((site, region))

    def links_of_region(self, name: str) -> tuple[Link, ...]:
        return self._by_end[0].get(name, ())

    def links_of_site(self, name: str) -> tuple[Link, ...]:
        return self._by_end[1].get(name, ())

    @property
    def is_pair(self) -> bool:
        return len(self.sites) == 1 and len(self.regions) == 1 and len(self.links) == 1

    @property
    def gpus(self) -> int:
        return sum(s.gpus for s in self.sites) + sum(r.gpus for r in self.regions)

    def problems(self) -> list[tuple[str, str]]:
        """Every cross-table inconsistency as (key, message), keys with their table index:
        names, counts, unknown or misdirected link ends, duplicate links, rate and long-request
        shares, splits, and regions that no link reaches but whose threshold sends requests out."""
        out: list[tuple[str, str]] = []
        for table, items, cap in (("site", self.sites, MAX_SITES),
                                  ("region", self.regions, MAX_REGIONS),
                                  ("link", self.links, MAX_LINKS)):
            if len(items) > cap:
                return [(table, f"{len(items)} [[{table}]] tables is more than {cap}")]
        if not self.regions:
            return [("region", "define at least one [[region]] (a PD cluster with users)")]
        if self.routing not in ROUTINGS:
            out.append(("routing", f"must be one of {', '.join(ROUTINGS)}"))
        seen: dict[str, str] = {}
        for table, items in (("site", self.sites), ("region", self.regions)):
            for i, x in enumerate(items):
                key = f"{table}[{i}].name"
                if not NAME_RE.fullmatch(x.name):
                    out.append((key, f"{x.name!r} is not a name: letters, digits, '_', '.', '-' "
                                     "(up to 64, starting with a letter or digit)"))
                elif x.name in seen:
                    out.append((key, f"{x.name!r} is already the name of a {seen[x.name]}"))
                else:
                    seen[x.name] = table
        pairs: set[tuple[str, str]] = set()
        for i, k in enumerate(self.links):
            for end, want in (("site", "site"), ("region", "region")):
                name = getattr(k, end)
                if seen.get(name) is None:
                    known = ", ".join(x for x, t in seen.items() if t == want) or "none"
                    out.append((f"link[{i}].{end}", f"no {want} named {name!r} (defined: {known})"))
                elif seen[name] != want:
                    out.append((f"link[{i}].{end}", f"{name!r} is a {seen[name]}, not a {want}: "
                                                    "a link runs from a site to a region"))
            if (k.site, k.region) in pairs:
                out.append((f"link[{i}]", f"a second link {k.name}: one link per site and region"))
            pairs.add((k.site, k.region))
        total = math.fsum(r.share for r in self.regions)
        if abs(total - 1.0) > SHARE_TOLERANCE:
            out.append((f"region[{len(self.regions) - 1}].share",
                        f"the regions' shares sum to {total:.6g}, not 1"))
        for i, r in enumerate(self.regions):
            key = f"region[{i}]"
            if r.n_p + r.n_d > r.pool:
                out.append((f"{key}.n_p", f"n_p + n_d = {r.n_p + r.n_d} exceeds the pool of {r.pool}"))
            if r.n_d < 1:
                out.append((f"{key}.n_d", "must be >= 1: every request needs decode"))
            links = self.links_of_region(r.name)
            lo, hi = r.lengths.support
            if r.n_p == 0 and r.threshold >= lo:
                out.append((f"{key}.n_p",
                            f"region {r.name!r} has n_p = 0 (no local prefill), yet its threshold "
                            f"{format_tokens(r.threshold)} keeps requests from "
                            f"{format_tokens(lo)} tokens local: set threshold below {lo:.0f} "
                            "(every request prefilled at a site) or n_p >= 1"))
            if self.routing == "threshold" and r.threshold < hi:
                # the threshold rule sends every long request over the links, in their shares;
                # the other routings weigh the region's own PD-P too
                dead = [k for k in links if k.long_share != 0 and seen.get(k.site) == "site"
                        and self.site(k.site).instances == 0]
                if dead:
                    k = dead[0]
                    out.append((f"link[{self.links.index(k)}]",
                                f"region {r.name!r} sends requests above its threshold "
                                f"{format_tokens(r.threshold)} over {k.name} to site "
                                f"{k.site!r}, which has 0 instances: nothing would prefill them"))
            if not links and r.threshold < hi:
                out.append((f"{key}.threshold",
                            f"no [[link]] reaches region {r.name!r}, yet its threshold "
                            f"{format_tokens(r.threshold)} sends requests up to "
                            f"{format_tokens(hi)} to a site: raise it to {hi:.0f} or add a link"))
            if links:
                s = math.fsum(k.long_share for k in links)
                if abs(s - 1.0) > SHARE_TOLERANCE:
                    j = self.links.index(links[-1])
                    out.append((f"link[{j}].long_share", f"region {r.name!r}'s links carry "
                                f"long_share summing to {s:.6g}, not 1"))
        return out

    # -- the single pair ---------------------------------------------------------------------
    @classmethod
    def pair(cls, system: System, t: float, n_p: int, n_d: int, rtt: float = 0.0,
             transport: Transport | None = None, line: float | None = None) -> Topology:
        """The 1x1 topology of a single-pair deployment (its link carries every long request);
        with a `transport`, `system.bandwidth` is its goodput over the `line` rate."""
        site = Site(PAIR_SITE, system.prfaas, system.n_prfaas,
                    parallelism=system.parallelism, price=system.price_prfaas)
        region = Region(PAIR_REGION, system.local, system.local_pool, n_p, n_d, t, 1.0,
                        system.lengths, system.decode, parallelism=system.parallelism,
                        price=system.price_local)
        link = Link(site.name, region.name, system.bandwidth, rtt, transport=transport, line=line)
        return cls((site,), (region,), (link,))

    def pair_system(self, region: str, site: str | None = None) -> System:
        """One region with one of its linked sites (default: its first link's) as a single-pair
        model System; a region with no link gets a site of 0 instances."""
        r = self.region(region)
        links = self.links_of_region(region)
        k = self.link(site, region) if site is not None else (links[0] if links else None)
        if site is not None and k is None:
            raise KeyError(f"no link {site}->{region}")
        s = self.site(k.site) if k else None
        return System(prfaas=s.profile if s else r.profile, local=r.profile, lengths=r.lengths,
                      decode=r.decode, n_prfaas=s.instances if s else 0, local_pool=r.pool,
                      bandwidth=k.bandwidth if k else 1.0, parallelism=r.parallelism,
                      price_prfaas=s.price if s else None, price_local=r.price)
