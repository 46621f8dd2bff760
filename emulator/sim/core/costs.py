"""Per-request costs on the hot path: a profile's curves evaluated one scalar at a time.

`Curve.__call__` goes through numpy (about 10 us for one scalar); the emulator evaluates two
curves per request, so it reads the same piecewise-quadratic coefficients as plain Python lists
(about 0.3 us). The results are the same floats: same pieces (bisect_left = searchsorted 'left'),
same Horner form.
"""

from __future__ import annotations

from bisect import bisect_left

from emulator.profiles import Curve, Profile


class ScalarCurve:
    __slots__ = ("breaks", "coefs")

    def __init__(self, curve: Curve):
        self.breaks = [float(b) for b in curve.breaks]
        self.coefs = [(float(a), float(b), float(c)) for a, b, c in curve.coefs]

    def __call__(self, x: float) -> float:
        c0, c1, c2 = self.coefs[bisect_left(self.breaks, x)]
        return c0 + x * (c1 + x * c2)


class StepCosts:
    """A batched profile's step cost (profiles.StepCost) on the hot path, with its budget."""

    __slots__ = ("budget", "fixed", "mixer", "per_step", "per_request")

    def __init__(self, profile: Profile):
        step = profile.step
        self.budget = float(profile.token_budget)
        self.fixed = ScalarCurve(step.fixed)
        self.mixer = ScalarCurve(step.mixer)
        self.per_step = float(step.per_step)
        self.per_request = float(step.per_request)


class Costs:
    """What one instance of a profile spends on a request: prefill seconds and KV bytes; and,
    for a profile that batches prefill in steps, what a step costs (None: one at a time)."""

    __slots__ = ("t_prefill", "s_kv", "step")

    def __init__(self, profile: Profile):
        self.t_prefill = ScalarCurve(profile.prefill_time)
        self.s_kv = ScalarCurve(profile.kv_size)
        ok = profile.step is not None and profile.token_budget is not None
        self.step = StepCosts(profile) if ok else None
