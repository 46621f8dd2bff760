"""The planner's search space: deployments, thresholds, links and paradigms to compare.

A candidate is a plain, hashable record so it can cross process boundaries (a process pool, a
Dask worker) and be written to a results file; its `key` is stable across runs, which is what
makes an interrupted sweep resumable.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass

import numpy as np

from emulator.paradigm import Paradigm
from emulator.scenario.scenario import Scenario

AUTO_T = -1.0  # "the model decides t" (the optimizer's best threshold for that deployment)


@dataclass(frozen=True)
class Candidate:
    paradigm: str
    n_prfaas: int
    n_p: int
    n_d: int
    t: float  # tokens; AUTO_T lets the model pick it per deployment
    bandwidth: float  # bytes per second

    @property
    def key(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha1(blob.encode()).hexdigest()[:16]

    def label(self, resolved_t: float | None = None) -> str:
        """Short text for tables; `resolved_t` shows the threshold AUTO_T became."""
        from emulator.units import format_tokens, to_gbps
        t = resolved_t if resolved_t is not None else self.t
        t = "auto" if t == AUTO_T else "-" if not Paradigm(self.paradigm).threshold_routing else format_tokens(t)
        return (f"{self.paradigm} {self.n_prfaas}/{self.n_p}/{self.n_d} t={t} "
                f"B={to_gbps(self.bandwidth):g}G")


@dataclass(frozen=True)
class Space:
    """Ranges around a base scenario. The local pool of each candidate is n_p + n_d."""

    n_prfaas: tuple[int, ...]
    pools: tuple[int, ...]  # local pool sizes to split every way (n_d >= 1)
    homogeneous_pools: tuple[int, ...]
    thresholds: tuple[float, ...]  # AUTO_T or explicit token counts
    bandwidths: tuple[float, ...]
    paradigms: tuple[Paradigm, ...] = tuple(Paradigm)

    def candidates(self) -> list[Candidate]:
        out: list[Candidate] = []
        for paradigm in self.paradigms:
            if paradigm == Paradigm.HOMOGENEOUS:  # its own pool of local-type instances, p = 0
                for pool in self.homogeneous_pools:
                    out += [Candidate(paradigm, 0, n_p, pool - n_p, np.inf, self.bandwidths[0])
                            for n_p in range(1, pool)]
                continue
            for n_pf, pool, bw in itertools.product(self.n_prfaas, self.pools, self.bandwidths):
                if n_pf == 0:
                    continue
                if paradigm == Paradigm.NAIVE:
                    out.append(Candidate(paradigm, n_pf, 0, pool, 0.0, bw))
                    continue
                for n_p, t in itertools.product(range(1, pool), self.thresholds):
                    out.append(Candidate(paradigm, n_pf, n_p, pool - n_p, t, bw))
        return out

    @classmethod
    def around(cls, sc: Scenario, *, n_prfaas: tuple[int, ...] | None = None,
               pools: tuple[int, ...] | None = None,
               homogeneous_pools: tuple[int, ...] | None = None, thresholds: tuple[float, ...] = (AUTO_T,),
               bandwidths: tuple[float, ...] | None = None,
               paradigms: tuple[Paradigm, ...] = tuple(Paradigm)) -> Space:
        s = sc.system
        homo = homogeneous_pools or ((s.homogeneous_pool,) if s.homogeneous_pool else ())
        return cls(n_prfaas=n_prfaas or (s.n_prfaas,), pools=pools or (s.local_pool,),
                   homogeneous_pools=homo,
                   thresholds=thresholds, bandwidths=bandwidths or (s.bandwidth,),
                   paradigms=paradigms)
