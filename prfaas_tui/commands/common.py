"""What the headless commands share: knob flags generated from emulator.scenario.knobs.KNOBS,
parsed flag values, and turning them into validated Controls (Controls.validate, the check the
dashboard and the engine use too)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from emulator import budget
from emulator.budget import FLAGS, BudgetError, Caps, caps_for
from emulator.files import cap_help
from emulator.optimizer import starting_split
from emulator.paradigm import Paradigm
from emulator.scenario.knobs import KNOBS, TPOT, TRANSPORT_KNOBS, Controls, KnobError, number
from emulator.scenario.presets import load
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario, as_pair, with_tpot, with_transport
from prfaas_tui.errors import UsageError, parse_flag

if TYPE_CHECKING:
    from emulator.sim.engine import Emulation
    from emulator.traces import Trace

# the knobs every scenario command takes; `run` adds rate and paradigm
DEPLOYMENT_KNOBS = ("t", "n_p", "n_d", "n_prfaas", "bandwidth")


def add_scenario_flags(p: argparse.ArgumentParser,
                       names: Iterable[str] = DEPLOYMENT_KNOBS) -> None:
    """--preset and one flag per knob, spelled as KNOBS says (old spellings stay as hidden
    aliases)."""
    p.add_argument("--preset", default="paper-case-study", metavar="NAME|PATH",
                   help="shipped preset name or TOML path (default: paper-case-study; a path is "
                        f"{cap_help('preset')})")
    for name in names:
        k = KNOBS[name]
        choices = {"choices": list(Paradigm)} if k.parse is Paradigm else {}
        p.add_argument(k.flag, dest=name, metavar=k.unit, help=k.help, **choices)
        for alias in k.aliases:
            p.add_argument(alias, dest=name, help=argparse.SUPPRESS)
    for k in TRANSPORT_KNOBS:  # the pair's link TCP: its goodput follows (docs/transport.md)
        p.add_argument(k.flag, dest=k.name, metavar=k.unit,
                       help=f"{k.help} (the pair's; {k.span()})")
    p.add_argument(TPOT.flag, dest=TPOT.name, metavar=TPOT.unit,
                   help=f"{TPOT.help}; BS_max and t_decode follow (docs/decode.md)")


def transport_from_args(sc: Scenario, args: argparse.Namespace) -> Scenario:
    """`sc` with --loss and --connections applied to the pair's link (its bandwidth becomes
    the goodput over its line rate); a topology's links keep theirs in its [[link]] tables.
    --tpot derives the pair's decode from the cards again first (`tpot_from_args`)."""
    sc = tpot_from_args(sc, args)
    given = {k.name: parse_flag(k.flag, k.parse, getattr(args, k.name, None))
             for k in TRANSPORT_KNOBS if getattr(args, k.name, None) is not None}
    if not given:
        return sc
    flag = next(k.flag for k in TRANSPORT_KNOBS if k.name in given)
    if sc.declared_topology is not None:
        raise UsageError(f"{flag}: a topology preset sets each link's TCP in its [[link]] "
                         "table; edit the preset")
    if getattr(args, "bandwidth", None) is not None:  # it would leave the TCP behind
        raise UsageError(f"{flag}: the goodput comes from the preset's line rate, and "
                         f"{KNOBS['bandwidth'].flag} sets the link's rate by hand: give one")
    try:
        return with_transport(sc, **given)
    except KnobError as exc:
        flag = next((k.flag for k in TRANSPORT_KNOBS if k.name == exc.knob), flag)
        raise UsageError(f"{flag}: {exc.reason}") from None


def tpot_from_args(sc: Scenario, args: argparse.Namespace) -> Scenario:
    """`sc` with --tpot applied: BS_max and t_decode derived again under it (a pair whose
    [decode] is from = "cards"; one line, exit 2, otherwise)."""
    raw = getattr(args, TPOT.name, None)
    if raw is None:
        return sc
    tpot = parse_flag(TPOT.flag, TPOT.parse, raw, TPOT.problem)
    if sc.declared_topology is not None:
        raise UsageError(f"{TPOT.flag}: a topology preset sets each region's TPOT in its "
                         "[decode] tables; edit the preset")
    try:
        return with_tpot(sc, tpot)
    except KnobError as exc:
        raise UsageError(f"{TPOT.flag}: {exc.reason}") from None


def knob_error(exc: KnobError) -> UsageError:
    """A KnobError in flag terms: the split's checks name both split flags."""
    if exc.knob in ("n_p", "n_d"):
        return UsageError(f"{KNOBS['n_p'].flag}/{KNOBS['n_d'].flag}: {exc}")
    return UsageError(f"{KNOBS[exc.knob].flag}: {exc.reason}")


def controls_from_args(sc: Scenario, args: argparse.Namespace,
                       mode: str = "exact") -> tuple[Controls, dict[str, Any]]:
    """The scenario's controls with the knob flags applied and validated, and the flags that
    were given ({knob: value}). One meaning everywhere: a flag sets its knob and nothing else
    (--np alone keeps the preset's N_d); a paradigm starts from its own split."""
    given = {name: parse_flag(k.flag, k.parse, getattr(args, name))
             for name, k in KNOBS.items() if getattr(args, name, None) is not None}
    base = sc.controls
    paradigm = given.get("paradigm", base.paradigm)
    n_p, n_d = starting_split(sc.system, paradigm, (base.n_p, base.n_d), mode)
    try:
        c = base.changed(sc.system, **{"paradigm": paradigm, "n_p": n_p, "n_d": n_d, **given})
    except KnobError as exc:
        raise knob_error(exc) from None
    return c, given


def as_the_pair(sc: Scenario, flag: str, why: str) -> Scenario:
    """`sc` for a single-pair `flag`: a declared 1x1 topology is the pair and runs as it
    (`as_pair`); a larger topology refuses the flag in one line, `why` saying what it does
    instead."""
    topo = sc.declared_topology
    if topo is None:
        return sc
    if not topo.is_pair:
        counts = ", ".join(f"{len(xs)} {what}{'' if len(xs) == 1 else 's'}" for what, xs in
                           (("site", topo.sites), ("region", topo.regions), ("link", topo.links)))
        raise UsageError(f"{flag}: a single-pair flag (a 1x1 topology runs as the pair); "
                         f"{sc.name} has {counts}: {why}")
    try:
        return as_pair(sc)
    except PresetError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def scenario_from_args(args: argparse.Namespace, *, topology: bool = False) -> Scenario:
    """Load the preset and deploy it at the knob flags. With `topology` a preset of sites,
    regions and links loads too (as declared: its knobs live in its tables, so knob flags are
    refused); without, it is refused in one line."""
    sc = transport_from_args(load(args.preset, topology=topology), args)
    if sc.declared_topology is not None:
        for name, k in KNOBS.items():
            if getattr(args, name, None) is not None:
                raise UsageError(f"{k.flag}: a topology preset sets its knobs per [[region]], "
                                 "[[site]] and [[link]]; edit the preset")
        return sc
    c, _ = controls_from_args(sc, args)
    return sc.with_controls(c)


# -- bounded work: the caps of emulator.budget, raised by --max-* flags ---------------------------
def add_budget_flags(p: argparse.ArgumentParser, names: Iterable[str]) -> None:
    """One `--max-*` flag per cap in `names` (fields of emulator.budget.Caps), with the
    default of the command `p` parses (emulator.budget.COMMAND_CAPS)."""
    defaults = caps_for(p.prog.split()[-1])
    for name in names:
        p.add_argument(FLAGS[name], dest=f"max_{name}", metavar="N",
                       help=f"raise the cap on {name.replace('_', ' ')} "
                            f"(default {getattr(defaults, name):,.0f})")
    p.set_defaults(budget_command=p.prog.split()[-1])


def caps_from_args(args: argparse.Namespace) -> Caps:
    """The command's caps with the `--max-*` flags given applied; a bad value is a
    UsageError."""
    raw = {name: getattr(args, f"max_{name}", None) for name in FLAGS}
    values = {name: parse_flag(FLAGS[name], number, v) for name, v in raw.items()}
    try:
        return caps_for(args.budget_command).raised(**values)
    except BudgetError as exc:
        raise UsageError(str(exc)) from None


def check_scenario_instances(sc: Scenario, caps: Caps) -> None:
    """Every pool an emulation of `sc` builds, before it is built (start-up work grows with
    instances)."""
    system = sc.system
    budget.check_instances({"deployment.n_prfaas (--n-prfaas)": system.n_prfaas,
                            "deployment.local_pool": system.local_pool,
                            "homogeneous.pool": system.homogeneous_pool}, caps)


def check_emulation(emu: Emulation, caps: Caps, *, trace: Trace | None = None,
                    until: float | None = None, rate_flag: str = "--rate/--load",
                    duration_flag: str = "--duration", copies: int = 1) -> None:
    """The work an emulation built (not yet run) will do up to `until` (default: its end),
    `copies` times: requests at the peak rate (every surge factor), sampling ticks, scheduler
    re-solves and incident timers; a replay by its trace's requests and simulated span."""
    sim = emu.scenario.sim
    end = emu.duration if until is None else until
    rate = emu.workload.rate if emu.topology is None else emu.topology.rate  # the total
    if trace is not None:
        budget.check_trace(len(trace), end, None, None, sample_interval=sim.sample_interval,
                           rate_flag=rate_flag, caps=caps)
    factors = budget.surge_factors(sim.incidents)
    solves = {}
    if sim.scheduler.enabled:
        solves["scheduler.period"] = sim.scheduler.period
        if sim.scheduler.long_period > 0:
            solves["scheduler.long_period"] = sim.scheduler.long_period
    periods = {}
    if sim.arrival == "onoff" and trace is None:  # each phase switch is a timer event
        periods["workload.on_mean/off_mean (on/off phase switches)"] = \
            (sim.on_mean + sim.off_mean) / 2
    budget.check_run(budget.peak_rate(rate, factors) if trace is None else 0.0, end,
                     sample_interval=sim.sample_interval, periods=periods, solves=solves,
                     copies=copies, instances=_instances(emu),
                     rate_flag=rate_flag + (" (x surge factors)" if factors else ""),
                     duration_flag=duration_flag, caps=caps)
    emu.set_arrival_cap(caps.requests / copies)  # counted again as generated: see engine
    budget.check_incidents(
        [(f"incidents[{i}] ({inc.kind})", inc.kind,
          math.inf if inc.duration is None else inc.duration, budget.incident_params(inc))
         for i, inc in enumerate(sim.incidents)], end, caps)


def _instances(emu: Emulation) -> int:
    """The largest pool the run builds (a topology: its largest site or region)."""
    if emu.topology is not None:
        topo = emu.topology.topo
        return max([s.instances for s in topo.sites] + [r.pool for r in topo.regions])
    s = emu.scenario.system
    return max(s.n_prfaas, s.local_pool, s.homogeneous_pool)


def check_capacity(emu: Emulation) -> None:
    """Refuse a run with nothing to emulate: a stage that gets traffic but (by the model, at the
    run's knobs and paradigm) cannot serve one request in the whole run -- no PD-P instance
    under threshold routing, no PrfaaS instance or a 1e-300 Gbps link for remote traffic.
    Such a run reports 0 req/s (or a queue that only grows) with exit 0 otherwise."""
    op = emu.model_point("exact")
    if op.lambda_max * emu.duration >= 1:
        return
    stage = str(op.binding)
    if stage == "prfaas":
        source = ("--bandwidth (deployment.bandwidth)" if op.prfaas_term == "bandwidth"
                  else "--n-prfaas (deployment.n_prfaas / prfaas_gpus)")
    else:
        source = {"pd-p": "--np (deployment.n_p)", "pd-d": "--nd (deployment.n_d)"}[stage]
    raise UsageError(f"{source}: nothing to emulate: the {stage} stage gets traffic but serves "
                     f"{op.lambda_max:.3g} req/s of it (Lambda_max, exact mode), not one "
                     f"request in {emu.duration:g} s; give it capacity or route traffic away "
                     "(--t, --paradigm)")
