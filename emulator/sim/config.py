"""The emulator's settings from a scenario file: arrivals, output lengths, run length, seed,
admission control, link and decode details, SLO targets. Parsed strictly through
`emulator.config.Reader`, so an unknown or bad key is one line naming the file and the key.

Keys (all optional):
  [workload]  arrival = "poisson" | "gamma" | "onoff", rate (req/s) or load (x Lambda_max),
              cv (gamma), on_mean / off_mean / off_level (onoff: mean period lengths and the off
              rate as a fraction of the on rate), output_lengths (a length table like `lengths`;
              its mean must equal decode.l_out), replay (a Mooncake .jsonl or Azure .csv trace,
              relative to the preset) and replay_time_scale (>1 stretches the trace in time)
  [decode]    kv_budget (bytes of KV one decode instance holds), step = { a, b, c } (step time
              a + b * batch + c * context tokens instead of the constant t_decode)
  [emulator]  duration, seed, max_queue (queued requests per stage), max_queue_seconds
              (expected queueing time), link_burst (token bucket, bytes), link_peak (rate while
              tokens last; default 2 x bandwidth), link_latency, rdma_latency, sample_interval,
              window (seconds behind windowed rates and percentiles), timeseries_rows,
              conversion_delay (seconds a local instance needs to change role)
  [slo]       ttft, tpot (targets; attainment is the share of requests meeting both)
  [scheduler] the dual-timescale scheduler (emulator.sim.scheduler.parse_scheduler)
  [[incidents]] a timeline of incidents (emulator.sim.incidents.parse_incidents)
  [cache], [workload] sessions = { ... }: the prefix cache (emulator.sim.cache_config)
  [prefill]   backend = "torch" and its model (emulator.sim.prefill_backend)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from emulator.config import Reader, between, non_negative, one_of, positive
from emulator.distributions import LengthDistribution
from emulator.lengths_config import parse_lengths
from emulator.scenario.incidents import Incident, parse_incidents
from emulator.sim.cache_config import CacheConfig, parse_cache, parse_sessions
from emulator.sim.prefill_backend import PrefillBackendConfig, parse_prefill
from emulator.sim.scheduler import SchedulerConfig, parse_scheduler
from emulator.sim.sessions import SessionWorkload
from emulator.traces import MOONCAKE_BLOCK_TOKENS
from emulator.units import parse_bandwidth, parse_bytes, parse_duration, parse_tokens

ARRIVALS = ("poisson", "gamma", "onoff")


@dataclass(frozen=True)
class StepProfile:
    """Decode step seconds = a + b * batch size + c * context tokens held by the batch."""

    a: float
    b: float = 0.0
    c: float = 0.0


@dataclass(frozen=True)
class SimConfig:
    arrival: str = "poisson"
    rate: float | None = None  # req/s; None means `load` x the model's Lambda_max
    load: float = 0.9
    cv: float = 1.0  # gamma arrivals: coefficient of variation of inter-arrival times
    on_mean: float = 60.0  # onoff: mean seconds of an on period
    off_mean: float = 60.0  # onoff: mean seconds of an off period
    off_level: float = 0.0  # onoff: off rate as a fraction of the on rate
    output_lengths: LengthDistribution | None = None  # None: every request decodes decode.l_out
    replay: str | None = None  # trace path
    replay_time_scale: float = 1.0
    duration: float = 600.0  # simulated seconds
    seed: int = 0
    max_queue: int | None = None  # admission control: queued requests per stage
    max_queue_seconds: float | None = None  # admission control: expected queueing time
    link_burst: float = 0.0  # token-bucket burst, bytes
    link_peak: float | None = None  # bytes/s while tokens last; None: 2 x bandwidth
    link_latency: float = 0.0  # propagation delay, seconds
    rdma_latency: float = 0.0
    kv_budget: float | None = None  # bytes of KV per decode instance
    step: StepProfile | None = None
    sample_interval: float = 1.0
    window: float = 30.0
    timeseries_rows: int = 4096
    conversion_delay: float = 0.0
    slo_ttft: float | None = None
    slo_tpot: float | None = None
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    incidents: tuple[Incident, ...] = ()
    cache: CacheConfig | None = None  # None: no prefix cache
    sessions: SessionWorkload | None = None  # multi-turn sessions instead of `arrival`
    prefill: PrefillBackendConfig | None = None  # None: service times from the profiles

    @property
    def admission_bounded(self) -> bool:
        return self.max_queue is not None or self.max_queue_seconds is not None


def parse_sim_config(root: Reader, work: Reader, dec: Reader, base_dir: Path,
                     lengths: LengthDistribution | None = None) -> SimConfig:
    """Reads the emulator keys of [workload] and [decode] and the optional [emulator], [slo],
    [cache] and [prefill] sections (`lengths`: the sessions' first turn by default)."""
    kw: dict = {}
    kw["arrival"] = work.get("arrival", str, "poisson", check=one_of(*ARRIVALS))
    kw["rate"] = work.get("rate", float, None, check=positive)
    kw["load"] = work.get("load", float, 0.9, check=positive)
    kw["cv"] = work.get("cv", float, 1.0, check=positive)
    kw["on_mean"] = work.get("on_mean", parse_duration, 60.0, check=positive)
    kw["off_mean"] = work.get("off_mean", parse_duration, 60.0, check=positive)
    kw["off_level"] = work.get("off_level", float, 0.0, check=between(0.0, 1.0))
    if (out := work.section("output_lengths")) is not None:
        dist = parse_lengths(out, base_dir)
        l_out = dec.get("l_out", parse_tokens)
        if abs(dist.mean - l_out) > 0.01 * l_out:
            raise work.error("output_lengths", f"mean {dist.mean:.1f} differs from decode.l_out = "
                             f"{l_out:g}: set l_out to the mean so that Eq. 5 describes this workload")
        kw["output_lengths"] = dist
    if work.has("replay"):
        p = Path(work.get("replay", str))
        kw["replay"] = str(p if p.is_absolute() else base_dir / p)
    kw["replay_time_scale"] = work.get("replay_time_scale", float, 1.0, check=positive)
    kw["cache"] = parse_cache(root)
    kw["prefill"] = parse_prefill(root)
    if (ses := work.section("sessions")) is not None:
        if "replay" in kw or kw["arrival"] != "poisson":
            raise work.error("sessions", "sessions bring their own arrivals: drop replay and "
                             "arrival")
        kw["sessions"] = parse_sessions(
            ses, base_dir, lengths=lengths, output_lengths=kw.get("output_lengths"),
            l_out=dec.get("l_out", parse_tokens),
            block_tokens=kw["cache"].block_tokens if kw["cache"] else MOONCAKE_BLOCK_TOKENS)

    kw["kv_budget"] = dec.get("kv_budget", parse_bytes, None, check=positive)
    if (st := dec.section("step")) is not None:
        kw["step"] = StepProfile(a=st.get("a", parse_duration, check=positive),
                                 b=st.get("b", parse_duration, 0.0, check=non_negative),
                                 c=st.get("c", float, 0.0, check=non_negative))
        st.finish()

    if (em := root.section("emulator")) is not None:
        kw["duration"] = em.get("duration", parse_duration, 600.0, check=positive)
        kw["seed"] = em.get("seed", int, 0, check=non_negative)
        kw["max_queue"] = em.get("max_queue", int, None, check=positive)
        kw["max_queue_seconds"] = em.get("max_queue_seconds", parse_duration, None, check=positive)
        kw["link_burst"] = em.get("link_burst", parse_bytes, 0.0, check=non_negative)
        kw["link_peak"] = em.get("link_peak", parse_bandwidth, None, check=positive)
        kw["link_latency"] = em.get("link_latency", parse_duration, 0.0, check=non_negative)
        kw["rdma_latency"] = em.get("rdma_latency", parse_duration, 0.0, check=non_negative)
        kw["sample_interval"] = em.get("sample_interval", parse_duration, 1.0, check=positive)
        kw["window"] = em.get("window", parse_duration, 30.0, check=positive)
        kw["timeseries_rows"] = em.get("timeseries_rows", int, 4096,
                                       check=lambda x: None if x >= 16 else "must be >= 16")
        kw["conversion_delay"] = em.get("conversion_delay", parse_duration, 0.0,
                                        check=non_negative)
        if kw["window"] < kw["sample_interval"]:
            raise em.error("window", "must be at least sample_interval")
        em.finish()
    if (slo := root.section("slo")) is not None:
        kw["slo_ttft"] = slo.get("ttft", parse_duration, None, check=positive)
        kw["slo_tpot"] = slo.get("tpot", parse_duration, None, check=positive)
        slo.finish()
    kw["scheduler"] = parse_scheduler(root.section("scheduler"))
    kw["incidents"] = parse_incidents(root.sections("incidents"), base_dir)
    if kw.get("replay") is not None or kw.get("sessions") is not None:
        for i, inc in enumerate(kw["incidents"]):
            if inc.changes_lengths:
                raise root.error(f"incidents[{i}].kind", f"{inc.kind}: a replayed trace or "
                                 "session workload brings its own lengths")
    return SimConfig(**kw)
