"""The one parser of length tables (`[workload.lengths]`, `output_lengths`, the sessions'
tables), shared by emulator.scenario.presets and the emulator's settings without an import cycle."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from emulator.distributions import Discrete, Empirical, LengthDistribution, TruncatedLogNormal
from emulator.scenario.reader import Reader, at_most, one_of, positive
from emulator.trace_formats import read_workload
from emulator.traces import MAX_TOKENS, TraceError
from emulator.units import parse_tokens


def parse_lengths(r: Reader, base_dir: Path) -> LengthDistribution:
    """A length table: kind = "discrete" (values, probs), "lognormal" (mu, sigma, lo, hi) or
    "empirical" (samples, or a trace file relative to `base_dir`: Mooncake, Azure, BurstGPT, or
    any CSV with `columns`; `incremental` for Mooncake's lengths after prefix reuse)."""
    kind = r.get("kind", str, check=one_of("discrete", "lognormal", "empirical"))
    if kind == "discrete":
        vals = r.raw("values")
        probs = r.raw("probs")
        if not isinstance(vals, list) or not isinstance(probs, list):
            raise r.error("values", "values and probs must be lists")
        try:
            lv = [parse_tokens(v) for v in vals]
        except ValueError as exc:
            raise r.error("values", str(exc)) from None
        if any(v <= 0 or v > MAX_TOKENS for v in lv):
            raise r.error("values", "every length must be in (0, 16M] tokens")
        try:
            dist: LengthDistribution = Discrete.of(lv, [float(p) for p in probs])
        except (TypeError, ValueError) as exc:
            raise r.error("probs", str(exc)) from None
    elif kind == "lognormal":
        mu = r.get("mu", float)
        sigma = r.get("sigma", float, check=positive)
        lo = r.get("lo", parse_tokens, 1.0, check=positive)
        hi = r.get("hi", parse_tokens, check=lambda x: positive(x) or at_most(MAX_TOKENS, "16M tokens")(x))
        if lo >= hi:
            raise r.error("hi", f"must be above lo ({lo:.0f})")
        key = "sigma" if sigma * sigma > abs(mu) else "mu"  # the one that overflows
        try:
            with np.errstate(all="ignore"):
                dist = TruncatedLogNormal(mu, sigma, lo, hi)
                finite = all(np.all(np.isfinite(m)) for m in dist.partial_moments(lo, hi))
        except ValueError as exc:
            raise r.error(key, str(exc)) from None
        except OverflowError:
            finite = False
        if not finite:  # exp(k mu + k^2 sigma^2 / 2) of the moment formula overflows
            raise r.error(key, f"mu = {mu:g}, sigma = {sigma:g} overflow the distribution's "
                          "moments (a log-normal of log-tokens has sigma of a few units)")
    else:
        if r.has("samples"):
            try:
                dist = Empirical.of([parse_tokens(v) for v in r.raw("samples")], "preset")
            except (TypeError, ValueError) as exc:
                raise r.error("samples", str(exc)) from None
        else:  # any trace format emulator.trace_formats reads, streamed and bounded
            p = Path(r.get("trace", str))
            p = p if p.is_absolute() else base_dir / p
            columns = r.get("columns", str, None)
            incremental = r.get("incremental", bool, False)
            try:
                wl = read_workload(p, columns, incremental)
            except TraceError as exc:
                key = "columns" if exc.args[0].startswith("--columns") else "trace"
                raise r.error(key, str(exc)) from None
            dist = wl.lengths
    r.finish()
    return dist
