"""Every emulator call the soak makes, in one place (issue 11): when the engine's public API is
renamed (the issue-10 refactor), re-point these functions and nothing else."""

from __future__ import annotations

from dataclasses import replace

from emulator.scenario import incidents, presets
from emulator.sim.books.accounting import Accounting
from emulator.sim.engine import Emulation

PRESETS = ("toy", "paper-case-study", "dense-contrast")
KINDS: tuple[str, ...] = tuple(incidents.KINDS)  # every incident kind the engine knows
STAGES = ("prfaas", "pd-p", "pd-d")


def scenario(name: str, *, scheduler: bool, max_queue: int | None = None):
    """A shipped preset with the scheduler on or off and optional admission control."""
    sc = presets.load(name)
    sim = replace(sc.sim, scheduler=replace(sc.sim.scheduler, enabled=scheduler),
                  max_queue=max_queue if max_queue is not None else sc.sim.max_queue)
    return replace(sc, sim=sim)


def base_knobs(sc) -> dict:
    s = sc.system
    return {"t": sc.t, "n_p": sc.n_p, "n_d": sc.n_d, "n_prfaas": s.n_prfaas,
            "bandwidth": s.bandwidth, "pool": s.local_pool,
            "homogeneous": s.homogeneous_pool > 0}


def decode_slots(sc) -> int:
    """Requests one decode instance batches (BS_max)."""
    return sc.system.decode.bs_max


def start(sc, *, seed: int, load: float, duration: float) -> Emulation:
    return Emulation(sc, seed=seed, load=load, duration=duration)


def lambda_max(emu: Emulation) -> float:
    return emu.model_point("exact").lambda_max


def incident(kind: str, **kw) -> incidents.Incident:
    return incidents.KINDS[kind](**kw)


def inject(emu: Emulation, inc: incidents.Incident) -> None:
    emu.inject(inc)


def active_labels(emu: Emulation) -> list[str]:
    return [act.label for act in emu.timeline.active]


def end_incident(emu: Emulation, label: str) -> None:
    emu.timeline.end(label)


def set_knob(emu: Emulation, name: str, value) -> None:
    """A live change as the dashboard makes it; ValueError when the engine refuses it."""
    if name == "split":
        emu.change(n_p=value[0], n_d=value[1])
    elif name in ("t", "n_prfaas", "bandwidth", "rate", "paradigm"):
        emu.change(**{name: value})
    else:
        raise KeyError(name)


def run_until(emu: Emulation, t: float) -> None:
    emu.run_until(t)


def now(emu: Emulation) -> float:
    return emu.now


def accounting(emu: Emulation) -> Accounting:
    return emu.accounting


def queues(emu: Emulation) -> tuple[int, int]:
    """Queued prefills at PrfaaS and PD-P (what admission control bounds)."""
    return len(emu.prfaas.queue), len(emu.pdp.queue)


def pending_timers(emu: Emulation) -> int:
    """Timers still scheduled on the virtual loop: a leak shows here first."""
    return emu.loop.pending_timers()
