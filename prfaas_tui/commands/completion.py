"""`prfaas-tui completion bash|zsh|fish`: a completion script for commands, flags and the names
of presets, drills, model cards and GPU cards (prfaas_tui/completion.py)."""

from __future__ import annotations

import argparse

from prfaas_tui.completion import SHELLS, script


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("completion", help="print a shell completion script",
                       description="Print a completion script for commands, flags and the names "
                                   "of presets, drills, model cards and GPU cards. bash: eval "
                                   "\"$(prfaas-tui completion bash)\"; zsh: prfaas-tui completion "
                                   "zsh > \"${fpath[1]}/_prfaas-tui\"; fish: prfaas-tui "
                                   "completion fish > ~/.config/fish/completions/prfaas-tui.fish")
    p.add_argument("shell", choices=list(SHELLS), help="the shell to complete in")
    return p


def main(args: argparse.Namespace) -> int:
    from prfaas_tui.cli import _parser

    print(script(args.shell, _parser([])), end="")
    return 0
