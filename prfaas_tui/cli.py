"""`prfaas-tui` entry point: no subcommand opens the dashboard; subcommands run headless.

Every expected failure (a broken preset, a bad flag value, a malformed trace) ends as one line
on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from typing import NoReturn

from emulator.budget import BudgetError
from emulator.cards import CardError
from emulator.files import FileRefused, os_error_text, printable, undecodable
from emulator.scenario.reader import PresetError
from emulator.topology.errors import BoundError
from emulator.torch_prefill import TorchUnavailable
from emulator.traces import TraceError
from emulator.units import UnitError
from prfaas_tui.errors import UsageError

# subcommand -> module under prfaas_tui.commands (imported lazily: `solve` must not pay for Textual)
COMMANDS = ("presets", "solve", "run", "drill", "profile", "plan", "snapshot", "new", "models",
            "completion", "serve")
DEFAULT_PRESET = "paper-case-study"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help with each flag's default appended where its own help does not already
    say it ("(default: 3)"), so `--help` shows what a bare command does."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (action.option_strings and action.nargs != 0 and "default" not in text
                and default not in (None, False, argparse.SUPPRESS, "")):
            text += " (default: %(default)s)"
        return text


class OneLineParser(argparse.ArgumentParser):
    """argparse with a one-line error: `prfaas-tui SUBCOMMAND: error: ...`, exit 2 (the usage
    block argparse prints first would make it 3-4 lines, unlike every other error). Subparsers
    inherit the class. argparse takes a value that starts with '-' (`--slo-ttft -5ms`) for a
    flag and reports the flag before it as missing its value; the line then says how to pass
    such a value (`--slo-ttft=-5ms`), which reaches the flag's own check."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        line = " ".join(message.split())
        if m := re.fullmatch(r"argument (--[\w-]+)(?:/\S+)?: expected one argument", line):
            line += f" (a value that starts with '-' is written {m.group(1)}=VALUE)"
        self.exit(2, f"{self.prog}: error: {line}\n")


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="prfaas-tui",
        description="What-if dashboard, emulator and throughput model for cross-datacenter "
                    "prefill-decode serving (PrfaaS-PD). Without a subcommand, opens the dashboard.")
    parser.add_argument("--preset", default=None, metavar="NAME|PATH",
                        help=f"preset name or TOML path for the dashboard (default {DEFAULT_PRESET}, "
                             "or the base preset of --plan)")
    parser.add_argument("--plan", metavar="FILE",
                        help="open the dashboard on a plan's results (prfaas-tui plan --out FILE): "
                             "pick a candidate to run it")
    parser.add_argument("--drill", metavar="NAME",
                        help="open the dashboard playing a drill (a shipped name or a TOML path), "
                             "on --preset when given, else on the drill's own base preset")
    parser.add_argument("--export-dir", metavar="DIR",
                        help="the dashboard's export folder (e: time series, E x: events; "
                             "default ./prfaas-exports, created on the first export)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = next((a for a in argv if a in COMMANDS), None)
    for name in COMMANDS:
        try:
            mod = importlib.import_module(f"prfaas_tui.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("prfaas_tui.commands"):
                continue  # a command not built in this checkout
            if name == wanted:
                raise
            continue
        p = mod.add_parser(sub)
        p.set_defaults(func=mod.main)
        if p.description is None:  # the line `prfaas-tui --help` lists, atop its own --help
            p.description = next((a.help for a in sub._choices_actions if a.dest == name), None)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if bad := undecodable(argv):
        print(f"prfaas-tui: {bad}", file=sys.stderr)
        return 2
    parser = _parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the subcommand that got them, like its other errors
        subs = next((a.choices for a in parser._actions
                     if isinstance(a, argparse._SubParsersAction)), {})
        subs.get(getattr(args, "command", None), parser).error(
            f"unrecognized arguments: {' '.join(extra)}")
    try:
        if getattr(args, "func", None) is None:
            from prfaas_tui.app import run_app
            return run_app(args.preset, plan=args.plan, drill=args.drill,
                           export_dir=args.export_dir)
        return int(args.func(args) or 0)
    except (PresetError, TraceError, UnitError, UsageError, TorchUnavailable, BudgetError,
            CardError, FileRefused) as exc:
        print(f"prfaas-tui: {printable(str(exc))}", file=sys.stderr)  # one line, always
        return 2
    except BoundError as exc:  # numbers out of the solver's range (a prefill of 10^15 s)
        where = getattr(args, "preset", None) or "the preset"
        print(f"prfaas-tui: {printable(str(where))}: the routing bound has no answer for these "
              f"numbers ({printable(str(exc))}): check the profiles' times and sizes, the "
              "bandwidths and the rates for values off by orders of magnitude", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("prfaas-tui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path the user named: too long, a folder, not writable
        if exc.filename is None:
            raise
        print(f"prfaas-tui: {os_error_text(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
