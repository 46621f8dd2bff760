"""Behaviour lock for refactors: `solve --json`, `run --json` (minus `timing`) and `drill --json`
on every shipped preset and drill, written to a folder or diffed against one.

    python benchmarks/golden_cli.py --write DIR    # before a refactor
    python benchmarks/golden_cli.py --check DIR    # after: exit 1 and the differing cases
    python benchmarks/golden_cli.py --slo --write DIR  # the latency layer: solve --slo-ttft
                                                     # over presets x SLOs x quantiles x objectives
    python benchmarks/golden_cli.py --topology --write DIR  # two-regions and global: solve, run
                                                          # under each routing, their drills

Runs each command in-process (prfaas_tui.cli.main) so it takes about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

from prfaas_tui.cli import main as cli_main

PRESETS = ("toy", "paper-case-study", "dense-contrast")
DRILLS = ("link-brownout", "link-outage", "prfaas-loss", "long-surge", "diurnal-link",
          "decode-loss")
# The topology's lock (`--topology`): its runs under every routing, its drills, its solve.
TOPOLOGY_PRESETS = ("two-regions", "global")
TOPOLOGY_ROUTINGS = ("threshold", "lp", "best-bandwidth")
TOPOLOGY_DRILLS = ("region-link-brownout", "site-loss", "follow-the-sun")


SLOS = ("2s", "4s", "6s", "10s")  # 2 s: unreachable on every preset (rate 0)
QUANTILES = ("0.5", "0.9", "0.99")


def slo_cases() -> dict[str, list[str]]:
    """`solve --slo-ttft` on every preset, SLO, quantile and objective (the SLO search's
    optimum and rates, and the predicted TTFT at the operating point)."""
    return {f"solve-{p}-slo-{t}-q{q}-{o}": ["solve", "--preset", p, "--slo-ttft", t,
                                            "--slo-quantile", q, "--objective", o, "--json"]
            for p in PRESETS for t in SLOS for q in QUANTILES for o in ("lambda", "slo")}


def cases() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in PRESETS:
        out[f"solve-{p}"] = ["solve", "--preset", p, "--json"]
        out[f"solve-{p}-exact"] = ["solve", "--preset", p, "--mode", "exact", "--json"]
        out[f"run-{p}"] = ["run", "--preset", p, "--duration", "300", "--json"]
        for par in ("homogeneous", "naive-heterogeneous"):
            out[f"run-{p}-{par}"] = ["run", "--preset", p, "--duration", "300",
                                     "--paradigm", par, "--json"]
    for d in DRILLS:
        out[f"drill-{d}"] = ["drill", d, "--json"]
    return out


def topology_cases() -> dict[str, list[str]]:
    """`solve`, `run` under each routing and `drill` on the topology presets and drills."""
    out: dict[str, list[str]] = {}
    for p in TOPOLOGY_PRESETS:
        out[f"solve-{p}"] = ["solve", "--preset", p, "--json"]
        for r in TOPOLOGY_ROUTINGS:
            out[f"run-{p}-{r}"] = ["run", "--preset", p, "--duration", "60", "--routing", r,
                                   "--json"]
    for d in TOPOLOGY_DRILLS:
        out[f"drill-{d}"] = ["drill", d, "--json"]
    return out


def capture(argv: list[str]) -> tuple[int, str]:
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        try:
            rc = cli_main(argv) or 0
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    text = buf.getvalue()
    try:
        data = json.loads(text)
    except ValueError:
        return rc, text + err.getvalue()
    if isinstance(data, dict):
        data.pop("timing", None)
        data.pop("topology", None)  # solve's topology object: new beside the locked answers
    return rc, json.dumps(data, indent=1, sort_keys=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="DIR")
    g.add_argument("--check", metavar="DIR")
    ap.add_argument("--only", help="substring of the case names to run")
    kind = ap.add_mutually_exclusive_group()
    kind.add_argument("--slo", action="store_true",
                      help="the solve --slo-ttft cases instead (a folder of their own)")
    kind.add_argument("--topology", action="store_true",
                      help="the topology presets' and drills' cases instead (a folder of their own)")
    args = ap.parse_args()
    folder = Path(args.write or args.check)
    folder.mkdir(parents=True, exist_ok=True)
    bad = []
    for name, argv in (slo_cases() if args.slo else topology_cases() if args.topology else cases()).items():
        if args.only and args.only not in name:
            continue
        rc, text = capture(argv)
        blob = f"exit {rc}\n{text}\n"
        f = folder / f"{name}.json"
        if args.write:
            f.write_text(blob)
        elif not f.exists() or f.read_text() != blob:
            bad.append(name)
        print(f"{name}: {'ok' if name not in bad else 'DIFFERS'}", file=sys.stderr)
    if bad:
        print(f"{len(bad)} differ: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
