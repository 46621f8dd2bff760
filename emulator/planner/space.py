"""The planner's search space: the deployments to compare, for a single pair or a topology.

One `Candidate` describes both: PrfaaS instances per site, bandwidth per link (and, where
searched, its TCP connections), and the routing.
A single pair is the 1x1 case (site `prfaas`, region `pd`, link `prfaas->pd`, as
`Topology.pair` names them) and also fixes its region's paradigm, split and threshold, because
the closed-form model scores those choices in bulk; a topology candidate leaves them to the
best threshold policy of its hardware (`emulator.topology.policy.search_policy`), or to the
routing bound's split for `lp`.

A candidate is a plain, hashable record so it can cross process boundaries (a process pool, a
Dask worker) and be written to a results file; its `key` is stable across runs, which is what
makes an interrupted sweep resumable. The pair's key and record fields are the ones its results
files have always held, so those files resume.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np

from emulator.model import Cluster
from emulator.paradigm import Paradigm
from emulator.scenario.knobs import retuned
from emulator.scenario.scenario import Scenario
from emulator.topology.spec import Link, Topology
from emulator.topology.transport import Transport
from emulator.units import GBPS, to_gbps

AUTO_T = -1.0  # "the model decides t" (the optimizer's best threshold for that deployment)
PAIR_SITE, PAIR_REGION = Cluster.PRFAAS.value, Cluster.PD.value  # the 1x1 topology's names
PAIR_LINK = f"{PAIR_SITE}->{PAIR_REGION}"


class Split(NamedTuple):
    """A region's fixed choice: paradigm, prefill and decode instances, threshold (tokens;
    AUTO_T lets the model pick it per deployment). A tuple: a pair's space builds 10^5."""

    paradigm: str
    n_p: int
    n_d: int
    t: float


@dataclass(frozen=True)
class Candidate:
    sites: tuple[tuple[str, int], ...]  # site -> PrfaaS instances
    links: tuple[tuple[str, float], ...]  # link -> bandwidth, bytes/s
    routing: str  # the topology's routing policy (the pair: its paradigm)
    split: Split | None = None  # the pair's region; None: its policy's best
    # link -> TCP connections, the links whose connections are searched: a topology's bandwidth
    # there is the line rate its goodput comes from; the pair's is the goodput already
    connections: tuple[tuple[str, int], ...] = ()

    @classmethod
    def pair(cls, paradigm: str, n_prfaas: int, n_p: int, n_d: int, t: float,
             bandwidth: float, connections: int | None = None) -> Candidate:
        """The single pair as the 1x1 case (`bandwidth`: its link's goodput)."""
        return cls(((PAIR_SITE, n_prfaas),), ((PAIR_LINK, bandwidth),), str(paradigm),
                   Split(str(paradigm), n_p, n_d, t),
                   () if connections is None else ((PAIR_LINK, connections),))

    @property
    def is_pair(self) -> bool:
        return self.split is not None

    # the pair's fields, by their single-pair names
    @property
    def paradigm(self) -> str:
        return self.split.paradigm  # type: ignore[union-attr]

    @property
    def n_prfaas(self) -> int:
        return self.sites[0][1]

    @property
    def n_p(self) -> int:
        return self.split.n_p  # type: ignore[union-attr]

    @property
    def n_d(self) -> int:
        return self.split.n_d  # type: ignore[union-attr]

    @property
    def t(self) -> float:
        return self.split.t  # type: ignore[union-attr]

    @property
    def bandwidth(self) -> float:
        return self.links[0][1]

    def to_dict(self, t: float | None = None) -> dict:
        """The candidate as its records write it (`t`: the threshold AUTO_T became)."""
        tcp = {"connections": dict(self.connections)} if self.connections else {}
        if self.split is None:
            return {"sites": dict(self.sites),
                    "links_gbps": {n: to_gbps(b) for n, b in self.links}, "routing": self.routing,
                    **tcp}
        return {"paradigm": self.paradigm, "n_prfaas": self.n_prfaas, "n_p": self.n_p,
                "n_d": self.n_d, "t": self.t if t is None else t, "bandwidth": self.bandwidth,
                **tcp}

    @classmethod
    def of(cls, c: dict) -> Candidate:
        """A record's candidate (`to_dict` read back)."""
        tcp = tuple((n, int(x)) for n, x in c.get("connections", {}).items())
        if "sites" in c:
            return cls(tuple((n, int(i)) for n, i in c["sites"].items()),
                       tuple((n, float(g) * GBPS) for n, g in c["links_gbps"].items()),
                       str(c["routing"]), connections=tcp)
        return cls.pair(c["paradigm"], int(c["n_prfaas"]), int(c["n_p"]), int(c["n_d"]),
                        float(c["t"]), float(c["bandwidth"]), tcp[0][1] if tcp else None)

    @cached_property
    def key(self) -> str:
        if self.split is None:
            s = ",".join(f"{n}={i}" for n, i in self.sites)
            k = ",".join(f"{n}={to_gbps(b):g}" for n, b in self.links)
            tcp = "".join(f"|{n}={x}c" for n, x in self.connections)
            return f"{self.routing}|{s}|{k}{tcp}"
        blob = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha1(blob.encode()).hexdigest()[:16]

    def label(self, resolved_t: float | None = None) -> str:
        """Short text for tables; `resolved_t` shows the threshold AUTO_T became."""
        if self.split is None:
            s = " ".join(f"{n}:{i}" for n, i in self.sites)
            tcp = dict(self.connections)
            k = " ".join(f"{n}:{to_gbps(b):g}G" + (f"/{tcp[n]}c" if n in tcp else "")
                         for n, b in self.links)
            return f"{s} {k} {self.routing}"
        from emulator.units import format_tokens
        t = resolved_t if resolved_t is not None else self.t
        t = "auto" if t == AUTO_T else "-" if not Paradigm(self.paradigm).threshold_routing else format_tokens(t)
        tcp = f"/{self.connections[0][1]}c" if self.connections else ""
        return (f"{self.paradigm} {self.n_prfaas}/{self.n_p}/{self.n_d} t={t} "
                f"B={to_gbps(self.bandwidth):g}G{tcp}")

    def wired(self, sc: Scenario) -> Scenario:
        """The pair `sc` with this candidate's connections in its link's TCP (its bandwidth,
        the goodput, is set with the rest of the system), so the emulator's pool is theirs."""
        if self.split is None or not self.connections:
            return sc
        return replace(sc, transport=replace(sc.transport or Transport(),
                                             connections=self.connections[0][1]))

    def topology(self, base: Topology) -> Topology:
        """`base` with this candidate's instances, bandwidths, connections (the link's goodput
        recomputed over its bandwidth as line rate) and routing."""
        inst, bw, tcp = dict(self.sites), dict(self.links), dict(self.connections)
        return replace(base, routing=self.routing if self.split is None else base.routing,
                       sites=tuple(replace(s, instances=inst.get(s.name, s.instances))
                                   for s in base.sites),
                       links=tuple(retuned(k, bw.get(k.name), connections=tcp[k.name])
                                   if k.name in tcp and self.split is None
                                   else replace(k, bandwidth=bw.get(k.name, k.bandwidth))
                                   for k in base.links))

    @classmethod
    def shipped(cls, topo: Topology) -> Candidate:
        """A topology as written, as a candidate: a link with a TCP by its line rate and
        connections, as the candidates that retune it are (what is leased, and priced)."""
        tcp = tuple((k.name, k.transport.n) for k in topo.links
                    if k.transport is not None and k.line is not None)
        return cls(tuple((s.name, s.instances) for s in topo.sites),
                   tuple((k.name, leased(k)) for k in topo.links), topo.routing,
                   connections=tcp)


def leased(k: Link) -> float:
    """The bytes per second a link's lease provides: its line rate whatever its loss and
    connections (a link with a TCP carries its goodput, and is paid for its line)."""
    return k.line if k.line is not None else k.bandwidth


@dataclass(frozen=True)
class Space:
    """The single pair's ranges around a base scenario: its site's instances, its link's
    bandwidths (and TCP connections), and its region's pools, each split every way (n_d >= 1),
    at each threshold and paradigm. The local pool of each candidate is n_p + n_d. With
    connections, each bandwidth is a line rate and a candidate's link its goodput there."""

    n_prfaas: tuple[int, ...]
    pools: tuple[int, ...]  # local pool sizes to split every way (n_d >= 1)
    homogeneous_pools: tuple[int, ...]
    thresholds: tuple[float, ...]  # AUTO_T or explicit token counts
    bandwidths: tuple[float, ...]
    paradigms: tuple[Paradigm, ...] = tuple(Paradigm)
    # (line rate, connections, goodput) per link option; empty: the bandwidths as they are
    wires: tuple[tuple[float, int, float], ...] = field(default=(), repr=False)

    def __repr__(self) -> str:  # a results file's header: without connections, as it always was
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr]
        if self.wires:
            shown.append(f"connections={tuple(sorted({n for _, n, _ in self.wires}))!r}")
        return f"Space({', '.join(shown)})"

    def _links(self) -> list[tuple[float, int | None]]:
        """(goodput, connections or None) of each link option."""
        if not self.wires:
            return [(bw, None) for bw in self.bandwidths]
        return [(g, n) for _, n, g in self.wires]

    def candidates(self) -> list[Candidate]:
        out: list[Candidate] = []
        for paradigm in self.paradigms:
            if paradigm == Paradigm.HOMOGENEOUS:  # its own pool of local-type instances, p = 0
                site, link = ((PAIR_SITE, 0),), ((PAIR_LINK, self.bandwidths[0]),)
                for pool in self.homogeneous_pools:
                    out += [Candidate(site, link, paradigm,
                                      Split(paradigm, n_p, pool - n_p, np.inf))
                            for n_p in range(1, pool)]
                continue
            for n_pf, pool, (bw, n) in itertools.product(self.n_prfaas, self.pools,
                                                         self._links()):
                if n_pf == 0:
                    continue
                site, link = ((PAIR_SITE, n_pf),), ((PAIR_LINK, bw),)
                tcp = () if n is None else ((PAIR_LINK, n),)
                if paradigm == Paradigm.NAIVE:
                    out.append(Candidate(site, link, paradigm, Split(paradigm, 0, pool, 0.0),
                                         tcp))
                    continue
                out += [Candidate(site, link, paradigm, Split(paradigm, n_p, pool - n_p, t), tcp)
                        for n_p, t in itertools.product(range(1, pool), self.thresholds)]
        return out

    @classmethod
    def around(cls, sc: Scenario, *, n_prfaas: tuple[int, ...] | None = None,
               pools: tuple[int, ...] | None = None,
               homogeneous_pools: tuple[int, ...] | None = None, thresholds: tuple[float, ...] = (AUTO_T,),
               bandwidths: tuple[float, ...] | None = None,
               paradigms: tuple[Paradigm, ...] = tuple(Paradigm),
               connections: tuple[int, ...] | None = None) -> Space:
        """The ranges given, the preset's value for each left out. With `connections` the
        bandwidths are line rates (default the preset's line) and each link option is the
        goodput of a line rate and a connection count over the preset's path (KnobError
        naming the knob when a goodput is out of range)."""
        s = sc.system
        homo = homogeneous_pools or ((s.homogeneous_pool,) if s.homogeneous_pool else ())
        line = sc.line_bandwidth if sc.line_bandwidth is not None else s.bandwidth
        wires: tuple[tuple[float, int, float], ...] = ()
        if connections:
            link = sc.topology.links[0]
            wires = tuple((bw, n, retuned(link, bw, connections=n).bandwidth)
                          for bw in bandwidths or (line,) for n in connections)
        return cls(n_prfaas=n_prfaas or (s.n_prfaas,), pools=pools or (s.local_pool,),
                   homogeneous_pools=homo,
                   thresholds=thresholds, bandwidths=bandwidths or (s.bandwidth,),
                   paradigms=paradigms, wires=wires)


@dataclass(frozen=True)
class TopologySpace:
    """A topology's ranges: per site the instance counts, per link the bandwidths (bytes/s)
    and the TCP connections, and the routings; an element not named keeps its preset value.
    On a link whose connections are searched each bandwidth is a line rate (default the
    link's line) and the candidate's link its goodput there. Splits and thresholds are not
    ranged: each candidate runs the best threshold policy of its hardware."""

    sites: dict[str, tuple[int, ...]]
    links: dict[str, tuple[float, ...]]
    routings: tuple[str, ...]
    connections: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def size(self, topo: Topology) -> int:
        n = len(self.routings)
        for s in topo.sites:
            n *= len(self.sites.get(s.name, (s.instances,)))
        for k in topo.links:
            n *= len(self._link_opts(k))
        return n

    def _link_opts(self, k) -> list[tuple[float, int | None]]:
        """(bandwidth, connections or None) of each option on link `k`."""
        if k.name not in self.connections:
            return [(b, None) for b in self.links.get(k.name, (k.bandwidth,))]
        line = k.line if k.line is not None else k.bandwidth
        return [(b, n) for b in self.links.get(k.name, (line,)) for n in self.connections[k.name]]

    def candidates(self, topo: Topology) -> list[Candidate]:
        site_opts = [[(s.name, i) for i in self.sites.get(s.name, (s.instances,))]
                     for s in topo.sites]
        link_opts = [[(k.name, b, n) for b, n in self._link_opts(k)] for k in topo.links]
        return [Candidate(tuple(ss), tuple((name, b) for name, b, _ in ls), r,
                          connections=tuple((name, n) for name, _, n in ls if n is not None))
                for r in self.routings
                for ss in itertools.product(*site_opts) for ls in itertools.product(*link_opts)]

    def describe(self) -> dict:
        tcp = {"connections": {k: list(v) for k, v in self.connections.items()}} \
            if self.connections else {}
        return {"sites": {k: list(v) for k, v in self.sites.items()},
                "links_gbps": {k: [to_gbps(x) for x in v] for k, v in self.links.items()},
                "routings": list(self.routings), **tcp}
