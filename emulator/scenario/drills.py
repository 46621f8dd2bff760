"""Drill files (an incident rehearsal: a preset, a timeline of incidents, an SLO and
expectations) loaded into `Drill`s (emulator.scenario.drill), which the simulator runs and
scores (emulator.sim.drills).

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
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from emulator.scenario.drill import EXPECT_MAX, EXPECT_MIN, Drill, Scoring
from emulator.scenario.presets import from_dict, presets_dir, resolve
from emulator.scenario.reader import (
    PresetError,
    Reader,
    between,
    non_negative,
    read_fields,
    read_toml,
)
from emulator.units import parse_duration

DRILL_KEYS = ("name", "description", "preset", "expect", "score")


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


def load_drill(name_or_path: str | Path) -> Drill:
    """A shipped drill by name, or a drill file by path; PresetError (one line naming the file
    and the key) when it is broken."""
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
    return Drill(name, description, str(path), scenario, scoring)


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
