"""The emulator's settings from a scenario file: arrivals, output lengths, run length, seed,
admission control, link and decode details, SLO targets. Parsed strictly through
`emulator.scenario.reader.Reader`, so an unknown or bad key is one line naming the file and the key.

Keys (all optional):
  [workload]  arrival = "poisson" | "gamma" | "onoff", rate (req/s) or load (x Lambda_max),
              cv (gamma), on_mean / off_mean / off_level (onoff: mean period lengths and the off
              rate as a fraction of the on rate), output_lengths (a length table like `lengths`;
              its mean must equal decode.l_out), replay (a Mooncake .jsonl or Azure .csv trace,
              relative to the preset) and replay_time_scale (>1 stretches the trace in time)
  [decode]    kv_budget (bytes of KV one decode instance holds), step = { a, b, c } (step time
              a + b * batch + c * context tokens instead of the constant t_decode; from = "cards"
              steps at the cards' T_step instead: emulator.scenario.decode)
  [emulator]  duration, seed, max_queue (queued requests per stage), max_queue_seconds
              (expected queueing time), link_burst (token bucket, bytes), link_peak (rate while
              tokens last; default 2 x bandwidth), link_latency, rdma_latency, sample_interval,
              window (seconds behind windowed rates and percentiles), timeseries_rows,
              conversion_delay (seconds a local instance needs to change role)
  [slo]       ttft, tpot (targets; attainment is the share of requests meeting both)
  [scheduler] the dual-timescale scheduler (emulator.scenario.scheduler)
  [[incidents]] a timeline of incidents (emulator.scenario.incidents.parse_incidents)
  [cache], [workload] sessions = { ... }: the prefix cache (emulator.scenario.cache)
  [prefill]   backend = "torch" and its model (emulator.scenario.prefill)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from emulator.distributions import LengthDistribution
from emulator.files import FileRefused, checked
from emulator.scenario.cache import CacheConfig, SessionWorkload, parse_cache, parse_sessions
from emulator.scenario.decode import CardStep
from emulator.scenario.incidents import FIXED_LENGTHS, Incident, cut_problem, parse_incidents
from emulator.scenario.knobs import KNOBS
from emulator.scenario.lengths import parse_lengths
from emulator.scenario.prefill import PrefillBackendConfig, parse_prefill
from emulator.scenario.reader import (
    Reader,
    a_load,
    a_seed,
    at_least,
    at_most,
    between,
    non_negative,
    one_of,
    positive,
    read_fields,
    setting,
)
from emulator.scenario.scheduler import SchedulerConfig, parse_scheduler
from emulator.topology.transport import MAX_RTT
from emulator.traces import MOONCAKE_BLOCK_TOKENS
from emulator.units import parse_bandwidth, parse_bytes, parse_duration, parse_tokens

ARRIVALS = ("poisson", "gamma", "onoff")


@dataclass(frozen=True)
class StepProfile:
    """Decode step seconds = a + b * batch size + c * context tokens held by the batch."""

    a: float = setting(parse=parse_duration, check=positive)
    b: float = setting(0.0, parse=parse_duration, check=non_negative)
    c: float = setting(0.0, check=non_negative)

    def coefficients(self, batch: int, ctx: float, steps: int) -> tuple[float, float, float]:
        """(a, c, inf): step seconds = a + c x the batch's context, in every segment
        (CardStep's interface)."""
        return self.a + self.b * batch, self.c, math.inf

    def fastest(self, context: float) -> float:
        """The shortest step a request of `context` tokens can take (alone in its batch)."""
        return self.a + self.b + self.c * context


WORK, DEC, EMU, SLO = "workload", "decode", "emulator", "slo"


@dataclass(frozen=True)
class SimConfig:
    arrival: str = setting("poisson", parse=str, check=one_of(*ARRIVALS), section=WORK)
    # req/s (the rate knob's rule); None: `load`
    rate: float | None = setting(None, check=KNOBS["rate"].problem, section=WORK)
    load: float = setting(0.9, check=a_load, section=WORK)  # x the model's Lambda_max
    cv: float = setting(1.0, check=positive, section=WORK)  # gamma: CV of inter-arrival times
    on_mean: float = setting(60.0, parse=parse_duration, check=positive, section=WORK)  # onoff
    off_mean: float = setting(60.0, parse=parse_duration, check=positive, section=WORK)
    off_level: float = setting(0.0, check=between(0.0, 1.0), section=WORK)  # off / on rate
    output_lengths: LengthDistribution | None = None  # None: every request decodes decode.l_out
    replay: str | None = None  # trace path
    replay_time_scale: float = setting(1.0, check=positive, section=WORK)
    duration: float = setting(600.0, parse=parse_duration, check=positive, section=EMU)  # s
    seed: int = setting(0, parse=int, check=a_seed, section=EMU)
    # admission control: queued requests per stage / expected queueing time
    max_queue: int | None = setting(None, parse=int, check=positive, section=EMU)
    max_queue_seconds: float | None = setting(None, parse=parse_duration, check=positive,
                                              section=EMU)
    link_burst: float = setting(0.0, parse=parse_bytes, check=non_negative, section=EMU)
    # bytes/s while burst tokens last; None: 2 x bandwidth
    link_peak: float | None = setting(None, parse=parse_bandwidth, check=positive, section=EMU)
    link_latency: float = setting(0.0, parse=parse_duration, section=EMU,  # the pair's RTT
                                  check=lambda x: non_negative(x) or
                                  at_most(MAX_RTT, "a minute of round trip")(x))
    rdma_latency: float = setting(0.0, parse=parse_duration, check=non_negative, section=EMU)
    kv_budget: float | None = setting(None, parse=parse_bytes, check=positive, section=DEC)
    step: StepProfile | CardStep | None = None  # None: every step lasts t_decode
    sample_interval: float = setting(1.0, parse=parse_duration, check=positive, section=EMU)
    window: float = setting(30.0, parse=parse_duration, check=positive, section=EMU)
    timeseries_rows: int = setting(4096, parse=int, check=at_least(16), section=EMU)
    conversion_delay: float = setting(0.0, parse=parse_duration, check=non_negative,
                                      section=EMU)  # seconds a local instance changes role in
    slo_ttft: float | None = setting(None, parse=parse_duration, check=positive, key="ttft",
                                     section=SLO)
    slo_tpot: float | None = setting(None, parse=parse_duration, check=positive, key="tpot",
                                     section=SLO)
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
    kw: dict = read_fields(SimConfig, work, WORK)
    if (out := work.section("output_lengths")) is not None:
        dist = parse_lengths(out, base_dir)
        l_out = dec.get("l_out", parse_tokens)
        if abs(dist.mean - l_out) > 0.01 * l_out:
            raise work.error("output_lengths", f"mean {dist.mean:.1f} differs from decode.l_out = "
                             f"{l_out:g}: set l_out to the mean so that Eq. 5 describes this workload")
        kw["output_lengths"] = dist
    if work.has("replay"):
        p = Path(work.get("replay", str))
        kw["replay"] = str(p if p.is_absolute() else base_dir / p)  # checked below
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

    kw |= read_fields(SimConfig, dec, DEC)
    if (st := dec.section("step")) is not None:
        kw["step"] = StepProfile(**read_fields(StepProfile, st))
        st.finish()

    if (em := root.section("emulator")) is not None:
        kw |= read_fields(SimConfig, em, EMU)
        if kw["window"] < kw["sample_interval"]:
            raise em.error("window", "must be at least sample_interval")
        em.finish()
    if (slo := root.section("slo")) is not None:
        kw |= read_fields(SimConfig, slo, SLO)
        slo.finish()
    kw["scheduler"] = parse_scheduler(root.section("scheduler"))
    kw["incidents"] = parse_incidents(root.sections("incidents"), base_dir)
    if lengths is not None:  # a cut with nothing on one side has nothing to re-weight
        for i, inc in enumerate(kw["incidents"]):
            if msg := cut_problem(inc, lengths):
                raise root.error(f"incidents[{i}].cut", msg)
    if kw.get("replay") is not None or kw.get("sessions") is not None:
        for i, inc in enumerate(kw["incidents"]):
            if inc.changes_lengths:
                raise root.error(f"incidents[{i}].kind", f"{inc.kind}: {FIXED_LENGTHS}")
    if kw.get("replay") is not None:  # last: the file's own problems after the keys'
        check_replay(work, Path(kw["replay"]))
    return SimConfig(**kw)


def check_replay(work: Reader, path: Path) -> Path:
    """A replay trace as the preset is loaded: a regular file within the trace cap (not
    /dev/zero, a FIFO or a folder), of a replayable format, and not the preset itself."""
    if path.suffix not in (".jsonl", ".json", ".csv"):
        raise work.error("replay", f"{path}: expected a Mooncake .jsonl or Azure .csv trace")
    try:
        checked(path, "trace")
    except FileRefused as exc:
        raise work.error("replay", str(exc)) from None
    if work.path is not None and path.resolve() == Path(work.path).resolve():
        raise work.error("replay", f"{path} is this preset itself, not a trace")
    return path
