"""The keys the pair's dashboard and the topology view share: the scheduler (`S`, `U`), an
incident by hand (`i`), save (`ctrl+s`) and the SVG (`x`).

Both screens hold a `Session`; each key here acts on it and tells the operator in one notice, so
the two screens answer a key the same way. `redraw` is the screen's own refresh after a change.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path

from textual.screen import Screen

from emulator.files import escapes, file_stem
from emulator.paradigm import Paradigm
from emulator.scenario.incidents import (
    Incident,
    by_hand,
    hand_keys,
    site_count_problem,
    target_problem,
)
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario
from emulator.scenario.topology import TRANSPORT_KEYS
from emulator.scenario.writer import _bandwidth as format_bandwidth
from emulator.scenario.writer import write_preset
from emulator.topology.spec import Topology
from emulator.units import format_duration
from prfaas_tui.live import END_ALL, incident_catalog, incident_kinds
from prfaas_tui.screens.drills import IncidentForm, InjectPicker
from prfaas_tui.screens.new_preset import free_name
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.session import Session

BIG = 1 << 30  # the pair's instance counts: a topology checks its site's (site_count_problem)


def toggle_scheduler(screen: Screen, session: Session, redraw: Callable[[], None]) -> None:
    """The scheduler on or off live; a scenario without one says so and changes nothing."""
    tick = session.tick
    snap = tick.snapshot if tick else None
    if snap is None or snap.scheduler_enabled is None:
        screen.notify("this scenario runs without a scheduler", severity="warning")
        return
    session.set_scheduler(not snap.scheduler_enabled)
    redraw()
    screen.notify(f"scheduler {'off: t and the split stay as they are' if snap.scheduler_enabled else 'on'}")


def release_pins(screen: Screen, session: Session, redraw: Callable[[], None]) -> None:
    session.release_pins()
    redraw()
    screen.notify("pins released: the scheduler may move t and the split again")


def inject(screen: Screen, session: Session, redraw: Callable[[], None],
           build: Callable[[str, dict[str, object]], Incident], *,
           target: tuple[str, str] | None = None) -> None:
    """Pick an incident (or end one started here), then its parameters, which `build` checks
    as a drill file's entry. `target` (a topology's selected element) prefills the element the
    incident strikes, and the form then asks for it; the pair's incidents have one of each."""
    kinds = incident_catalog()
    if target is not None:  # a mix change re-weights the pair's one length mix
        kinds = [(label, desc, inc) for label, desc, inc in kinds if not inc.changes_lengths]
    ready = {label: (desc, aimed(inc, target)) for label, desc, inc in kinds}

    def started(incident: Incident | None) -> None:
        if incident is None:
            return
        session.inject(incident)
        redraw()
        until = (f" for {format_duration(incident.duration)}" if incident.duration
                 else " until you end it (i, end all)")
        screen.notify(f"incident: {incident.label}{until}")

    on = {f"end {label} (#{i + 1})": i for i, label in session.hand_incidents()}

    def picked(label: str | None) -> None:
        if label == END_ALL:
            session.inject(END_ALL)
            redraw()
        elif label in on:  # one of them, the others go on
            session.end_incident(on[label])
            redraw()
            screen.notify(f"ended {label.removeprefix('end ')}")
        elif label:
            desc, inc = ready[label]
            screen.app.push_screen(IncidentForm(
                label, desc, hand_keys(inc, targets=target is not None), inc,
                lambda values: build(inc.kind, values)), started)
    ends = [(text, "end this one; the others go on") for text in on]
    menu = [(label, desc) for label, (desc, _) in ready.items()] + [
        (label, desc) for label, desc in incident_kinds() if label == END_ALL]
    screen.app.push_screen(InjectPicker(ends + menu), picked)


def aimed(inc: Incident, target: tuple[str, str] | None) -> Incident:
    """The catalog's incident aimed at the selected element where it strikes that kind."""
    if target is None:
        return inc
    kind, name = target
    if kind in {f.name for f in fields(inc)}:
        return replace(inc, **{kind: name})
    return inc


def topology_incident(kind: str, values: dict[str, object], topo: Topology, *, rate: float,
                      duration: float) -> Incident:
    """An incident typed by hand on a topology, checked as a topology drill file's entry: the
    ranges, the element it names, a site loss within its site, the dashboard's work caps;
    PresetError, one line naming the key."""
    from emulator import budget

    inc = by_hand(kind, values, n_prfaas=BIG, pool=BIG, lengths=None)
    names = (tuple(s.name for s in topo.sites), tuple(r.name for r in topo.regions),
             tuple(f"{ln.site}->{ln.region}" for ln in topo.links))
    if (problem := target_problem(inc, *names, pair=False)) is not None:
        raise PresetError(kind, problem[0], problem[1])
    if (msg := site_count_problem(inc, topo)) is not None:
        raise PresetError(kind, "count", msg)
    try:
        budget.check_hand_incident(inc, rate=rate, run_duration=duration,
                                   caps=budget.caps_for("dashboard"))
    except budget.BudgetError as exc:
        raise PresetError(kind, "", str(exc)) from None
    return inc


def screenshot(screen: Screen, scenario: str, at: float) -> Path:
    """An SVG of the screen under a name of its own (simulated time in it; never over an
    earlier one)."""
    path = free_name(Path.cwd() / f"prfaas-{file_stem(scenario)}-{int(at)}s.svg")
    saved = screen.app.save_screenshot(path.name, str(path.parent))
    screen.notify(f"saved {saved}")
    return Path(saved)


def at_knobs(sc: Scenario, running: Topology | None, routing: frozenset[str] = frozenset()) -> Scenario:
    """`sc` with its topology's element knobs as they run now (site instances, a region's t and
    split, a link's bandwidth) written into its source, so a saved preset loads back at them.
    Only the elements that moved are rewritten: the rest stays as the file said it. `routing`,
    the regions' policies now, is the file's `routing` when they all run one (the preset key is
    one policy for every region)."""
    declared = sc.declared_topology
    if declared is None or running is None:
        return sc
    source = copy.deepcopy(sc.source)
    for entry in source.get("site", []):
        was, now = declared.site(entry["name"]), running.site(entry["name"])
        if now.instances != was.instances:
            entry.pop("gpus", None)
            entry["instances"] = now.instances
    for entry in source.get("region", []):
        was, now = declared.region(entry["name"]), running.region(entry["name"])
        if (now.n_p, now.n_d, now.threshold) != (was.n_p, was.n_d, was.threshold):
            entry["n_p"], entry["n_d"] = now.n_p, now.n_d
            t = now.threshold
            entry["threshold"] = int(t) if float(t).is_integer() else float(t)
    for entry in source.get("link", []):
        was = declared.link(entry["site"], entry["region"])
        now = running.link(entry["site"], entry["region"])
        if was is not None and now is not None and now.bandwidth != was.bandwidth:  # the knob moved: the transport it came from goes
            entry["bandwidth"] = format_bandwidth(now.bandwidth)
            for key in TRANSPORT_KEYS:
                entry.pop(key, None)
    if len(routing) == 1:
        source["routing"] = next(iter(routing))
    return replace(sc, source=source, declared_topology=running)


def save_preset(screen: Screen, scenario: Scenario, *, rate: float | None,
                paradigm: Paradigm | None) -> None:
    """Ask for a new file and write the scenario there as a preset that loads back (never over
    an existing file, never outside the folder it names)."""
    def done(text: str | None) -> None:
        if text is None:
            return
        if (why := escapes(text)) is not None:
            screen.notify(f"not saved: {why}", severity="error")
            return
        try:
            path = Path(text)
            write_preset(scenario, path, rate=rate, paradigm=paradigm)
        except (OSError, PresetError) as exc:
            screen.notify(f"not saved: {exc}", severity="error")
            return
        screen.notify(f"saved {path} (loads back with --preset {path})")

    screen.app.push_screen(ValuePrompt("save the scenario as a preset TOML",
                                       str(free_name(Path(f"{file_stem(scenario.name)}"
                                                          "-saved.toml"))),
                                       "the knobs and offered rate as they are now; "
                                       "never over an existing file", new_file), done)


def new_file(text: str) -> str | None:
    """A file that does not exist yet, in this folder or one below it that exists."""
    if (why := escapes(text)) is not None:
        return why
    p = Path(text)
    if p.exists():
        return f"{p} exists: type another name (nothing is overwritten)"
    return None if p.parent.is_dir() else f"no such directory: {p.parent}"
