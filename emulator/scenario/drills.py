"""Drill files (an incident rehearsal: a preset, a timeline of incidents, an SLO and
expectations) loaded into `Drill`s (emulator.scenario.drill), which the simulator runs and
scores (emulator.sim.runs.drills).

A drill file (presets/drills/NAME.toml) names its base preset and overrides it section by
section; everything but the drill's own keys goes through the preset parser, so a drill is
checked as strictly as a preset and a bad key is one line naming the drill file and the key:

    name = "link-brownout"            # optional (the file's stem)
    description = "..."
    preset = "paper-case-study"       # base preset: a name, or a path relative to this file
    [deployment] / [workload] / [emulator] / [slo] / [scheduler]   # merged over the base
    [[incidents]]                     # the timeline (emulator.scenario.incidents), replaces
                                      # the base's
    [expect]                          # bars the scorecard checks: lost (at most, default 0),
                                      # slo_attainment (at least), recovery_seconds,
                                      # peak_ttft_p90, ttft_p90_during (at most)
    [score]                           # recovery_window, tolerance (defaults: Scoring)

`drill_on` runs a drill on another preset (`prfaas-tui drill NAME --preset P`, the dashboard's
`d`): that preset keeps its deployment, and the drill brings what it rehearses.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

from emulator.scenario.drill import EXPECT_MAX, EXPECT_MIN, Drill, Scoring
from emulator.scenario.incidents import (
    Brownout,
    Diurnal,
    Flap,
    Incident,
    InstanceLoss,
    Outage,
    count_problem,
    site_count_problem,
)
from emulator.scenario.presets import from_dict, load, presets_dir, resolve
from emulator.scenario.reader import (
    PresetError,
    Reader,
    between,
    non_negative,
    read_fields,
    read_toml,
)
from emulator.scenario.scenario import Scenario
from emulator.units import parse_duration

DRILL_KEYS = ("name", "description", "preset", "expect", "score")
# What a drill brings to another preset: the offered load, the run, the SLO, the scheduler,
# the site policy and the incidents. The rest of a drill file ([deployment], [profiles],
# [decode], sites, regions, links, [cache], [prefill], the other [workload] keys) describes
# its own base preset's deployment, which the other preset replaces.
REHEARSED = ("emulator", "slo", "scheduler", "incidents", "routing")
OFFERED = ("rate", "load")  # of [workload]
LINK_WIDE = (Brownout, Outage, Flap, Diurnal)  # without a `link`: the single pair's link


def drills_dir() -> Path:
    return presets_dir() / "drills"


def list_drills() -> list[tuple[str, str]]:
    """(name, description) of the shipped drills."""
    out = []
    for p in sorted(drills_dir().glob("*.toml")):
        try:
            desc = str(tomllib.loads(p.read_text(encoding="utf-8")).get("description", ""))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            desc = f"(unreadable: {exc})"
        out.append((p.stem, desc))
    return out


def drills_for(sc: Scenario) -> list[tuple[str, str]]:
    """(name, description) of the shipped drills that fit `sc` (`misfit`: it has what they
    target); a broken drill file fits nothing."""
    out = []
    for name, desc in list_drills():
        try:
            fits = misfit(_load_drill(name), sc) is None
        except PresetError:
            fits = False
        if fits:
            out.append((name, desc))
    return out


def load_drill(name_or_path: str | Path, preset: str | Path | None = None) -> Drill:
    """A shipped drill by name, or a drill file by path; PresetError (one line naming the file
    and the key) when it is broken. With `preset` (a name or path), the drill runs on that
    preset instead of its own base (`drill_on`)."""
    drill = _load_drill(name_or_path)
    if preset is None:
        return drill
    return drill_on(drill, load(preset, topology=True), called=str(preset))


def _load_drill(name_or_path: str | Path) -> Drill:
    raw = str(name_or_path)
    p = Path(raw)
    if not (p.suffix == ".toml" or "/" in raw or p.exists()):
        p = drills_dir() / f"{raw}.toml"
        if not p.is_file():
            known = ", ".join(n for n, _ in list_drills())
            raise PresetError(raw, "", f"no drill of that name (shipped: {known})")
    if not p.exists():
        raise PresetError(p, "", "no such drill file")
    return drill_from_dict(read_toml(p, "drill"), p)


def drill_from_dict(data: dict, path: Path) -> Drill:
    r = Reader(data, path)
    name = r.get("name", str, path.stem)
    description = r.get("description", str, "")
    ref = r.get("preset", str)
    if Path(ref).suffix == ".toml" or "/" in ref:  # a path, relative to the drill file
        ref = str(path.parent / ref)
    try:
        base = resolve(ref)
        base_data = read_toml(base)
        from_dict(base_data, base, topology=True)  # a broken base is the base's error, reported as such
    except PresetError as exc:
        raise r.error("preset", f"{ref!r}: {exc}") from None
    overrides = {k: v for k, v in data.items() if k not in DRILL_KEYS}
    merged = merge(base_data, overrides)
    try:
        scenario = from_dict(merged, base, topology=True)
    except PresetError as exc:  # the base alone was fine: the drill's overrides broke it
        raise PresetError(path, exc.key, exc.message) from None
    if not scenario.sim.incidents:
        raise r.error("incidents", "a drill needs at least one [[incidents]] entry")
    scoring = _scoring(r.section("expect"), r.section("score"))
    r.used.update(overrides)
    r.finish()
    return Drill(name, description, str(path), scenario, scoring, overrides)


def _scoring(expect: Reader | None, score: Reader | None) -> Scoring:
    bars = dict(Scoring().expect)
    if expect is not None:
        bars["lost"] = expect.get("lost", int, bars["lost"], check=non_negative)
        for key in EXPECT_MIN + EXPECT_MAX[1:]:
            conv = float if key == "slo_attainment" else parse_duration
            check = between(0.0, 1.0) if key == "slo_attainment" else non_negative
            if (value := expect.get(key, conv, None, check=check)) is not None:
                bars[key] = value
        expect.finish()
    if score is None:
        return Scoring(bars)
    kw = read_fields(Scoring, score)
    score.finish()
    return Scoring(bars, **kw)


def merge(base: dict, over: dict) -> dict:
    """A preset's TOML with `over` laid on top: tables merge key by key; anything else
    (values, arrays of tables such as [[incidents]]) replaces."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def drill_on(drill: Drill, sc: Scenario, called: str | None = None) -> Drill:
    """The drill run on `sc` (a loaded preset, or the dashboard's running scenario) instead of
    its own base preset: `sc`'s deployment at its current knobs, with the drill's offered load
    ([workload] rate/load), [emulator], [slo], [scheduler], routing and [[incidents]]
    (`REHEARSED`); its [expect] and [score] judge the run. DrillMisfit (one line naming what
    is missing, `sc` by what the user `called` it, default its name) when `sc` lacks something
    the drill targets; PresetError when the combination is broken otherwise."""
    if (why := misfit(drill, sc, called)) is not None:
        raise DrillMisfit(f"drill {drill.name} --preset {called or sc.name}", "", why)
    over = {k: v for k, v in drill.overrides.items() if k in REHEARSED}
    if sc.declared_topology is None:
        over.pop("routing", None)  # a site policy: only a topology has sites to choose from
    data = dict(sc.source)
    if offered := {k: v for k, v in drill.overrides.get("workload", {}).items() if k in OFFERED}:
        work = dict(data.get("workload", {}))
        for k in OFFERED:
            work.pop(k, None)
        data["workload"] = work | offered
    merged = from_dict(merge(data, over), sc.path, topology=True)
    if sc.declared_topology is None:  # the knobs the scenario runs at (a plan's, an edit's)
        merged = merged.with_controls(sc.controls)
    else:
        topo = replace(sc.declared_topology, routing=merged.topology.routing)
        merged = replace(merged, declared_topology=topo)
    return replace(drill, scenario=merged)


class DrillMisfit(PresetError):
    """A preset lacks what a drill targets; str() is the one line that names it."""


def misfit(drill: Drill, sc: Scenario, called: str | None = None) -> str | None:
    """What the drill targets that `sc` lacks, as one line (None: every incident has its
    target). A pair's link, site and region are "prfaas->pd", "prfaas" and "pd"; a pair
    drill's link incident without a `link` needs a preset with one link, its instance losses
    and length changes need a single pair."""
    topo, name, pair = sc.topology, called or sc.name, sc.declared_topology is None
    sites = {s.name: s for s in topo.sites}
    regions = tuple(r.name for r in topo.regions)
    links = tuple(k.name for k in topo.links)
    for inc in drill.scenario.sim.incidents:
        if (why := _misfit(inc, name, pair, sites, regions, links)) is not None:
            return why
        if pair and (msg := count_problem(inc, sc.system.n_prfaas, sc.system.local_pool)):
            return f"the drill {msg.replace('the deployment', name)}"
        if msg := site_count_problem(inc, sc.topology):
            return f"the drill's {msg} in {name}"
        if inc.changes_lengths and (sc.sim.replay is not None or sc.sim.sessions is not None):
            return f"the drill's {inc.label} re-weights the length mix, and {name} replays " \
                   "its own lengths (a trace or sessions)"
    return None


def _misfit(inc: Incident, name: str, pair: bool, sites: dict, regions: tuple[str, ...],
            links: tuple[str, ...]) -> str | None:
    for key, names, what in (("link", links, "link"), ("site", tuple(sites), "site"),
                             ("region", regions, "region")):
        target = getattr(inc, key, None)
        if target is not None and target not in names:
            return f"the drill targets {what} {target}, which {name} does not have"
    for region, _ in getattr(inc, "offsets", None) or ():
        if region not in regions:
            return f"the drill targets region {region}, which {name} does not have"
    cluster = getattr(inc, "cluster", None)
    if cluster is not None and cluster not in tuple(sites) + regions:
        return f"the drill targets cluster {cluster}, which {name} does not have"
    if isinstance(inc, LINK_WIDE) and getattr(inc, "link", None) is None and len(links) > 1:
        return (f"the drill's {inc.label} targets a single pair's link, and {name} has "
                f"{len(links)} ({', '.join(links)}): it needs a drill that names one")
    if not pair and isinstance(inc, InstanceLoss) and inc.where is None:
        return f"the drill targets a single pair's {inc.stage} stage, which {name} (a " \
               "topology) does not have"
    if not pair and inc.changes_lengths:
        return f"the drill's {inc.label} re-weights a single pair's length mix, which {name} " \
               "(a topology, lengths per region) does not have"
    return None
