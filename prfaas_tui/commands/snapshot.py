"""`prfaas-tui snapshot`: render the dashboard headless at a simulated time, as SVG, plain
text or the panels' numbers in JSON.

    prfaas-tui snapshot --preset NAME|PATH [--drill NAME] --at SIM_SECONDS [--size 160x48]
                        [--press KEYS] [--format svg|txt|json] (--out FILE | --check FILE)

The emulator runs synchronously to --at before the first render (no wall clock), so the same
inputs give the same output. `txt` is the screen as plain text rows (diffable in an operator's
CI); `json` what the panels show (prfaas_tui.snapshot_json: the effective and nominal model
points, stability). --check renders and compares with a stored file: exit 1 with a short
summary of the rows (or keys) that differ.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulator.budget import BudgetError
from emulator.files import FileRefused, cap_help, printable, read_text
from emulator.planner.store import check_writable
from emulator.scenario import presets
from emulator.scenario.knobs import whole
from emulator.scenario.reader import a_seed
from emulator.units import parse_duration
from prfaas_tui import json_out
from prfaas_tui.commands.common import (
    add_budget_flags,
    caps_from_args,
    check_emulation,
    check_scenario_instances,
)
from prfaas_tui.errors import UsageError, parse_flag

if TYPE_CHECKING:
    from prfaas_tui.live import Emulator

CHAR_WIDTH = 12.2  # Rich's SVG export: 0.61 x its 20 px font
_ID = re.compile(r"terminal-\d+")
_ROW = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
                  r'clip-path="url\(#terminal-line-(\d+)\)">([^<]*)</text>')


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("snapshot", help="render the dashboard headless at a simulated time "
                                        "(SVG, text or JSON)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default=None, metavar="NAME|PATH",
                   help=f"preset name or TOML path (default paper-case-study; "
                        f"{cap_help('preset')})")
    p.add_argument("--drill", default=None, metavar="NAME|PATH",
                   help="run this drill (name or path) on --preset when given (refused when "
                        "the preset lacks what it targets), else on the drill's own base "
                        "preset; at or past its end the scorecard shows")
    p.add_argument("--at", required=True, metavar="SIM_SECONDS",
                   help="simulated time to render at: seconds, or '5 min'")
    p.add_argument("--size", default="160x48", metavar="COLSxROWS", help="terminal size (160x48)")
    p.add_argument("--theme", default="textual-dark", metavar="NAME", help="Textual theme")
    p.add_argument("--seed", default=None, metavar="N", help="workload seed (default: the preset's)")
    p.add_argument("--press", default="", metavar="KEYS",
                   help=f"comma-separated keys to press before the capture, e.g. 'c' or 'f1' "
                        f"(at most {MAX_PRESS}; a character or a Textual key name)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="svg (the default, or the file's extension), txt: the screen as plain "
                        "text, json: the panels' numbers")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--out", metavar="FILE", help="write it here")
    out.add_argument("--check", metavar="FILE",
                     help="compare with this file (a snapshot this command wrote: "
                          f"{cap_help('snapshot')}); exit 1 if it differs")
    add_budget_flags(p, ("requests", "events", "instances"))
    return p


FORMATS = ("svg", "txt", "json")
MAX_PRESS = 64  # keys one snapshot presses: each is a render; thousands would run for minutes


def parse_press(raw: str) -> tuple[str, ...]:
    """--press as key names, each a single printable character or a key Textual knows
    (f1, tab, ctrl+c, ...), at most MAX_PRESS of them; UsageError naming the first bad one."""
    from textual.keys import KEY_ALIASES, Keys, _character_to_key

    keys = tuple(k.strip() for k in raw.split(",") if k.strip())
    if len(keys) > MAX_PRESS:
        raise UsageError(f"--press: {len(keys):,} keys, over the {MAX_PRESS} one snapshot "
                         "presses")
    known = ({k.value for k in Keys} | set(KEY_ALIASES) | {"enter"}
             | {_character_to_key(chr(c)) for c in range(32, 127)})  # plus, question_mark
    for key in keys:
        if not ((len(key) == 1 and key.isprintable()) or key in known):
            raise UsageError(f"--press: unknown key {key[:40]!r} (a character, or a key name "
                             "like f1, tab, escape, ctrl+c)")
    return keys


def read_expected(path: str, fmt: str) -> str:
    """The --check file through the bounded reader, and recognisably a snapshot of `fmt`
    (one line otherwise, not a diff against garbage)."""
    try:
        text = read_text(path, "snapshot")
    except FileRefused as exc:
        raise UsageError(f"--check: {exc}") from None
    if not text.strip():
        raise UsageError(f"--check: {path}: empty, not a snapshot")
    if fmt == "svg" and not screen_rows(text):
        raise UsageError(f"--check: {path}: not an SVG snapshot (no terminal rows in it)")
    if fmt == "json":
        try:
            ok = isinstance(json.loads(text), dict)
        except (ValueError, RecursionError):
            ok = False
        if not ok:
            raise UsageError(f"--check: {path}: not a JSON snapshot (not one JSON object)")
    return text


def parse_size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not m or not (20 <= int(m.group(1)) <= 1000 and 8 <= int(m.group(2)) <= 500):
        raise UsageError(f"--size: expected COLSxROWS like 160x48, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def normalize(svg: str) -> str:
    """Rich names an SVG's ids after a hash of its content; drop it so diffs show real changes."""
    return _ID.sub("terminal", svg)


def screen_rows(svg: str) -> dict[int, str]:
    """The text of each terminal row, each span put back at its column."""
    rows: dict[int, list[str]] = {}
    for x, line, text in _ROW.findall(normalize(svg)):
        row = rows.setdefault(int(line), [])
        col = round(float(x) / CHAR_WIDTH)
        for i, ch in enumerate(html.unescape(text).replace("\xa0", " ")):
            row.extend(" " * (col + i + 1 - len(row)))
            row[col + i] = ch
    return {k: "".join(v).rstrip() for k, v in sorted(rows.items())}


def _changed(a: str, b: str, width: int = 90) -> tuple[str, str]:
    """The stretch of two rows around their first difference."""
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    lo = max(0, i - 10)
    return a[lo:lo + width], b[lo:lo + width]


def diff_summary(expected: str, actual: str, fmt: str = "svg") -> str:
    """One line: how many rows (svg, txt) or values (json) differ and the first of them, cut
    to the stretch around the change; the files themselves hold the rest."""
    if fmt == "json":
        try:
            old_doc, new_doc = json.loads(expected), json.loads(actual)
        except ValueError:
            pass
        else:
            keys = _json_differences(old_doc, new_doc)
            if not keys:
                return "the same values; spacing or key order differ"
            path, old, new = keys[0]
            return (f"{len(keys)} value{'s' if len(keys) != 1 else ''} differ, first "
                    f"{path or '(the top level)'}: {_brief(old)} -> {_brief(new)}")
    if fmt == "svg":
        a, b = screen_rows(expected), screen_rows(actual)
        what, empty = "rows", "the screen text is the same; colors or styles differ"
    else:
        a, b = dict(enumerate(expected.splitlines())), dict(enumerate(actual.splitlines()))
        what, empty = "lines", "the same lines; line endings differ"
    differ = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    if not differ:
        return empty
    old, new = _changed(a.get(differ[0], ""), b.get(differ[0], ""), width=40)
    return (f"{len(differ)} of {max(len(a), len(b))} {what} differ, first {what[:-1]} "
            f"{differ[0] + 1}: {old.strip()!r} -> {new.strip()!r}")


def _json_differences(a: object, b: object, path: str = "") -> list[tuple[str, object, object]]:
    """Every differing leaf of two JSON documents as (dotted path, old, new), in key order."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{k}" if path else str(k)
            out += _json_differences(a.get(k, "(missing)"), b.get(k, "(missing)"), sub) \
                if k in a and k in b else [(sub, a.get(k, "(missing)"), b.get(k, "(missing)"))]
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _json_differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


def _brief(value: object) -> str:
    text = printable(json.dumps(value, sort_keys=True))
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True)
class Capture:
    svg: str
    data: dict[str, Any] | None  # snapshot_json of the dashboard's session (None: no tick)
    warnings: tuple[str, ...] = ()  # emulator.sim.runs.health's lines for the run so far

    def as_format(self, fmt: str) -> str:
        if fmt == "txt":
            return screen_text(self.svg)
        if fmt == "json":
            return json.dumps(self.data, indent=2, sort_keys=True) + "\n"
        return self.svg


def screen_text(svg: str) -> str:
    """The screen as plain text, one line per terminal row (blank rows kept)."""
    rows = screen_rows(svg)
    return "\n".join(rows.get(i, "") for i in range(max(rows, default=-1) + 1)) + "\n"


async def capture(preset: str | None, at: float, size: tuple[int, int], *, drill: str | None = None,
                  theme: str = "textual-dark", seed: int | None = None,
                  press: tuple[str, ...] = ()) -> Capture:
    """The dashboard after running the emulator synchronously to `at` seconds: its SVG and
    the numbers its panels show (from the same session, so they agree). `preset` None: the
    drill's base, or the default preset."""
    from prfaas_tui.app import PrfaasApp
    from prfaas_tui.screens.dashboard import Dashboard
    from prfaas_tui.snapshot_json import snapshot_json

    app = PrfaasApp(preset, live=False, at=at, drill=drill, theme=theme, seed=seed)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for key in press:
            await pilot.press(key)
            await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        svg = normalize(app.export_screenshot())
        session = next(s for s in app.screen_stack if isinstance(s, Dashboard)).session
        if session.topology is not None:  # a declared topology: its objects and model
            data = None if session.tick is None or session.model is None else topology_json(
                session.scenario, session.topology.routing, session.tick.snapshot,
                session.model)
            return Capture(svg, with_scorecard(data, app), _warnings(session.driver))
        data = None
        if session.tick is not None and session.effective is not None:
            data = snapshot_json(session.tick.snapshot, session.effective, session.report)
        return Capture(svg, with_scorecard(data, app), _warnings(session.driver))


def with_scorecard(data: dict | None, app: Any) -> dict | None:
    """The JSON object with the drill's scorecard when the screen shows it (at or past the
    drill's end), as the txt and svg show it: `drill` (its name) and `scorecard`, the object
    `drill --json` has under the same key."""
    from prfaas_tui.screens.drills import ScorecardScreen, TopologyScorecard

    shown = next((s for s in reversed(app.screen_stack)
                  if isinstance(s, ScorecardScreen | TopologyScorecard)), None)
    if data is None or shown is None:
        return data
    return {**data, "drill": shown.drill, "scorecard": shown.card}


def _warnings(driver: Emulator | None) -> tuple[str, ...]:
    return () if driver is None else tuple(driver.warnings())


async def render(preset: str | None, at: float, size: tuple[int, int], **kwargs: Any) -> str:
    """The dashboard as SVG after running the emulator synchronously to `at` seconds."""
    return (await capture(preset, at, size, **kwargs)).svg


def _format_of(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    ext = Path(args.out or args.check).suffix.lower().lstrip(".")
    return ext if ext in FORMATS else "svg"


def _check_theme(name: str) -> str | None:
    from textual.theme import BUILTIN_THEMES

    return None if name in BUILTIN_THEMES else f"no such theme (choose from " \
        f"{', '.join(sorted(BUILTIN_THEMES))})"


def _scenario(args: argparse.Namespace):
    """What the snapshot runs: the drill (on --preset when one is named, never swapping it
    for the drill's base), else the preset."""
    from emulator.scenario.drills import load_drill
    from prfaas_tui.app import DEFAULT_PRESET

    if args.drill:
        return load_drill(args.drill, args.preset).scenario
    return presets.load(args.preset or DEFAULT_PRESET, topology=True)


def _check_work(args: argparse.Namespace, sc, at: float, seed: int | None) -> None:
    """Refuse an --at (or a preset) whose run up to `at` is over a cap, before the app starts:
    the dashboard runs the emulator synchronously to `at`."""
    caps = caps_from_args(args)
    if sc.declared_topology is None:
        check_scenario_instances(sc, caps)
    try:
        emu = _emulation(sc, seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    with emu:
        try:
            check_emulation(emu, caps, until=at, duration_flag="--at")
        except BudgetError as exc:
            raise UsageError(str(exc)) from None


def _emulation(sc, seed: int | None):
    from emulator.sim.engine import Emulation
    from emulator.sim.runtime.topology import topology_bound

    if sc.declared_topology is None:
        return Emulation(sc, seed=seed)
    return Emulation(sc, seed=seed, bound=topology_bound(sc))


def topology_snapshot(sc, at: float, seed: int | None) -> dict[str, Any]:
    """A topology's snapshot at `at` simulated seconds as JSON: the totals and its `regions`,
    `sites` and `links` objects over the window (the run's objects, at one instant)."""
    from emulator.sim.runs.health import served_warnings
    from emulator.sim.runtime.topology_live import live_state
    from emulator.topology.live import live_model

    with _emulation(sc, seed) as emu:
        emu.run_until(at)
        snap = emu.snapshot()
        state = live_state(emu)
        warnings = served_warnings(emu)
    out = topology_json(sc, emu.routing, snap, live_model(sc.declared_topology, state))
    return out | ({"warnings": warnings} if warnings else {})


def topology_json(sc, routing: str, snap, model) -> dict[str, Any]:
    """The JSON of a topology's snapshot: its totals, its `regions`, `sites` and `links`
    objects (the engine's) and `model` (emulator.topology.live.LiveModel at the live state):
    the numbers the topology view draws."""
    objects = {k: v for k, v in snap.topology.items() if k in ("regions", "sites", "links")}
    return {"preset": sc.name, "routing": routing, "sim_time": snap.sim_time,
            "offered_rate": snap.offered_rate, "served_rate": snap.served_rate,
            "target_rate": snap.target_rate, "arrived": snap.arrived,
            "completed": snap.completed, "in_flight": snap.in_flight,
            "rejected": snap.rejected, "lost": snap.lost,
            "ttft": {"p50": _num(snap.ttft_p50), "p90": _num(snap.ttft_p90),
                     "p99": _num(snap.ttft_p99)},
            "incidents": list(snap.incidents), **objects, "model": model.to_dict()}


def _num(x: float) -> float | None:
    return x if x == x and abs(x) != float("inf") else None


def main(args: argparse.Namespace) -> int:
    size = parse_size(args.size)
    try:
        at = parse_duration(args.at)
    except ValueError as exc:
        raise UsageError(f"--at: {exc}") from None
    if not at >= 0:
        raise UsageError(f"--at: must be >= 0 seconds (got {args.at})")
    seed = parse_flag("--seed", whole, args.seed, a_seed)
    parse_flag("--theme", str, args.theme, _check_theme)
    if args.out is not None:
        try:
            check_writable(args.out, "--out")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    expected = None
    fmt = _format_of(args)
    press = parse_press(args.press)
    if args.check:
        expected = read_expected(args.check, fmt)
    sc = _scenario(args)
    _check_work(args, sc, at, seed)
    if sc.declared_topology is not None and fmt == "json" and not press:
        # the engine's snapshot (the view draws the same); keys pressed need the view itself
        doc = topology_snapshot(sc, at, seed)
        warnings = tuple(doc.get("warnings", ()))
        text = json_out.dumps(doc, indent=2, sort_keys=True) + "\n"
    else:
        os.environ.pop("NO_COLOR", None)  # it changes the colors, so the SVG
        cap = asyncio.run(capture(args.preset, at, size, drill=args.drill, theme=args.theme,
                                  seed=seed, press=press))
        if fmt == "json" and cap.data is None:
            raise UsageError("--format json: the emulator produced no snapshot")
        warnings = cap.warnings
        if fmt == "json" and warnings:
            cap = replace(cap, data={**cap.data, "warnings": list(warnings)})
        text = cap.as_format(fmt)
    for line in warnings:
        print(f"prfaas-tui snapshot: warning: {line}", file=sys.stderr)
    if args.out is not None:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--out: cannot write {args.out}: {exc.strerror}") from None
        print(f"wrote {args.out} ({fmt}, {size[0]}x{size[1]}, simulated {at:g} s)")
        return 0
    assert expected is not None
    same = normalize(expected) == text if fmt == "svg" else expected == text
    if same:
        print(f"{args.check}: same")
        return 0
    print(f"{args.check}: differs: {diff_summary(expected, text, fmt)}", file=sys.stderr)
    return 1
