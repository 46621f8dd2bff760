"""A batched path's own prefill time as its instances run it: steps packed up to the token
budget, long prompts in chunks, at the offered rate.

The queue's wait keeps T's moments (T is a request's share of full steps, the instance's
capacity, so the wait grows and blows up where the engine's does). What the steps change is
the time a request spends from its arrival at the head of the queue to its last chunk:

- an arrival that finds an idle instance starts a step of its own (Profile.latency_time: the
  fixed part and the per-step overhead paid in full, a part-full step);
- one that finds every instance stepping waits for the next step boundary and rides a step
  shared with the others queued by then.

How full the steps run follows from the load (a mean-field fixed point): an instance that keeps
stepping packs, each step, the tokens that arrived while it ran, N = min(budget,
max(E[min(L, budget)], lambda E[L] D(N) / c)), D(N) = fixed(N) + overhead per step + N x
(overhead per request + E[attention]) / E[L]. The instances step a fraction u = lambda E[L]
D(N) / (N c) of the time; an arrival finds them all stepping with the Erlang C probability at
c u servers busy (1 once u reaches 1, at least the wait's). With c instances in random phase
the next boundary is D(N) / (c + 1) away on average (the latency layer spreads it uniformly
over twice that), and that step carries the tokens that arrived over as long. Exact as the load goes to 0; measured against the emulator in
docs/prefill-batching.md."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from emulator.profiles import Profile, StepCost

FILL_ITERATIONS = 40  # the fill's fixed point: monotone, converged well before this


@dataclass(frozen=True)
class Steps:
    """A batched path's step terms, as arrays broadcastable like its Path's: the length nodes
    (the Path's nodes are their idle-instance times), E[L], E[min(L, budget)] and the cost a
    token of other prompts adds to a step besides the fixed part."""

    cost: StepCost
    budget: float
    lengths: np.ndarray  # length quantile nodes, trailing axis
    mean_len: np.ndarray
    first: np.ndarray  # E[min(L, budget)]: a step's tokens when it carries one prompt
    per_other: np.ndarray

    @classmethod
    def of(cls, prof: Profile, lengths: np.ndarray,
           weights: np.ndarray | None = None) -> Steps | None:
        """The terms of `prof` over length nodes (None: not a step-timed profile)."""
        if prof.token_budget is None or prof.step is None:
            return None
        lengths = np.nan_to_num(np.asarray(lengths, dtype=float))
        b, sc = prof.token_budget, prof.step

        def avg(a: np.ndarray) -> np.ndarray:
            return a.mean(axis=-1) if weights is None else a @ weights

        mean_len = avg(lengths)
        mix = avg(np.asarray(sc.mixer(lengths)) * (lengths > 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            per_other = np.where(mean_len > 0, (sc.per_request + mix) / mean_len, 0.0)
        return cls(sc, float(b), lengths, mean_len, avg(np.minimum(lengths, b)), per_other)

    def pick(self, f) -> Steps:
        """The terms with `f` applied to each point array and to the nodes (take, add axes)."""
        return Steps(self.cost, self.budget, f(self.lengths, True), f(self.mean_len, False),
                     f(self.first, False), f(self.per_other, False))

    def step_time(self, n: np.ndarray) -> np.ndarray:
        """D(N): a step of N tokens of the side's mean mix."""
        return np.asarray(self.cost.fixed(n)) + self.cost.per_step + self.per_other * n

    def at_rate(self, lam: np.ndarray,
                c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(u, the fraction of time the instances step; for an arrival that finds them all
        stepping, its time from the next boundary through its last chunk, nodes; its mean time
        to that boundary) at the path's offered rate `lam` on `c` instances."""
        tokens = lam * self.mean_len
        cs = np.maximum(c, 1.0)
        n = np.broadcast_to(self.first, np.broadcast(tokens, cs, self.first).shape)
        for _ in range(FILL_ITERATIONS):
            n = np.minimum(self.budget, np.maximum(self.first, tokens * self.step_time(n) / cs))
        d = self.step_time(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(n > 0, tokens * d / (n * cs), 0.0)
        gap = d / (cs + 1.0)
        others = np.asarray(tokens * gap)[..., None]
        ride = self.cost.ride(self.lengths, self.budget, others,
                              np.asarray(self.per_other)[..., None])
        return u, ride, gap
