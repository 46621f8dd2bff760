"""Latency in the closed-form model: predicted TTFT, the SLO-bound rate and the SLO-optimal
(t, N_p / N_d).

Lambda_max says where queues blow up; an operator needs the rate at which the TTFT quantile still
meets an SLO, which is lower and can prefer another (t, split). TTFT follows the emulator's
definition (docs/emulator-api.md): arrival to the end of the first decode step. Per path
(PrfaaS for L > t, PD-P for L <= t), with Poisson arrivals split by p:

    TTFT = W_prefill + X + delay + W_decode + first decode step

- W_prefill: the FIFO M/G/c wait of the path's prefill stage. Allen-Cunneen, fed with the exact
  first and second moments of the service time X (E[T(L)^k | side] from the distributions'
  partial moments; a profile is piecewise polynomial, so T^2 is too):
  P(W > 0) = C(c, a) (Erlang C), E[W] = C / (c mu - lambda) * (1 + Cs^2) / 2. It is exact for
  M/M/c and, with c = 1, for every M/G/1 (Pollaczek-Khinchine).
- X: prefill time T(L); on a batched profile (token_budget) the steps the request rides in at
  the offered rate, `steps` (W's moments stay T's: the instance's capacity). An instance is held
  until its KV has left (layer-wise pipelining: with ample bandwidth the transfer ends with prefill, so there is no tail); when the link binds
  (Theta_b < Theta_c in Eq. 3) the instances are paced: X = T(L) * Theta_c / Theta_b, which makes
  the stage saturate at Theta_prfaas as the emulator's does.
- delay: the link's (or RDMA's) propagation delay.
- W_decode: M/D/c wait for one of N_d * BS_max decode slots (service L_out * T_decode), its mean.
- first decode step: T_decode, plus half a step when the decode instance is already stepping
  (a request joins at the next step boundary).

Tail approximation (stated, since the exact M/G/c wait distribution has no closed form): the
wait is 0 with probability 1 - C and exponential beyond, with the Allen-Cunneen mean, as in
M/M/c; the service time's own distribution is kept exactly (conditional length quantiles mapped
through T), and the two are independent (FIFO). The overall quantile is that of the p-mixture of
the two paths.

Everything is vectorized over thresholds and splits like the optimizer: the SLO-bound rate is a
bisection on the rate done for the whole grid at once, checking P(TTFT > target) <= 1 - q.

Modules, each using only those below it: `search` (the SLO optimum over the grid), `point` (one
operating point's prediction and SLO-bound rate), `tails` (the TTFT distribution at a rate) and
`layout` (operating points as arrays), `steps` (a batched path's steps at a rate), `queueing` (Erlang / M/G/c, link pacing, decode slots),
`moments` (exact service moments and nodes), `quiet` (numpy's warnings off).
"""

from emulator.latency.layout import NODES, ExactStats, _take, layout_at
from emulator.latency.moments import _grid_stats, _partial_moment, length_nodes, service_moments
from emulator.latency.point import Prediction, predict, slo_rate
from emulator.latency.queueing import Layout, Path, PathState, erlang_c, mgc_wait, path_state
from emulator.latency.search import GRID_NODES, SLOOptimum, _GridLayouts, best_rate, slo_search
from emulator.latency.tails import (
    RateState,
    mean_ttft,
    path_tails,
    quantiles,
    rate_state,
    tail,
    tails_at,
)

__all__ = [
    "GRID_NODES", "NODES", "ExactStats", "Layout", "Path", "PathState", "Prediction",
    "SLOOptimum", "_GridLayouts", "_grid_stats", "_partial_moment", "_take", "best_rate",
    "erlang_c", "layout_at", "length_nodes", "mean_ttft", "mgc_wait", "path_state", "path_tails",
    "predict", "quantiles", "service_moments", "slo_rate", "slo_search", "tail",
    "RateState", "rate_state", "tails_at",
]
