"""Shell completion scripts (bash, zsh, fish) generated from the CLI's own parser, so a new
command or flag completes without a second list. Names come from the catalogs the dashboard's
pickers read: presets and drills (emulator.scenario), model and GPU cards (emulator.cards),
the torch models of `profile`. The names are written into the script when it is generated."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass, field


def _presets() -> list[str]:
    from emulator.scenario.presets import list_presets
    return [name for name, *_ in list_presets()]


def _drills() -> list[str]:
    from emulator.scenario.drills import list_drills
    return [name for name, _ in list_drills()]


def _models() -> list[str]:
    from emulator.cards.model_card import shipped
    return shipped()


def _gpus() -> list[str]:
    from emulator.cards.gpu import shipped
    return shipped()


def _torch_models() -> list[str]:
    from emulator.torch_prefill.config import MODEL_NAMES
    return list(MODEL_NAMES)


CATALOGS: dict[str, Callable[[], list[str]]] = {
    "presets": _presets, "drills": _drills, "models": _models, "gpus": _gpus,
    "torch_models": _torch_models}
# a name from the catalog, or the path of a file of that kind
FILE_GLOBS = {"presets": "*.toml", "drills": "*.toml", "models": "*.json", "gpus": "*.toml"}
FLAG_KINDS = {"--preset": "presets", "--drill": "drills", "--model": "models", "--gpu": "gpus",
              "--prefill-gpu": "gpus", "--local-gpu": "gpus"}
COMMAND_FLAG_KINDS = {("profile", "--model"): "torch_models", ("profile", "--compare"): "torch_models"}
POSITIONAL_KINDS = {"drill": "drills"}
FILE_WORDS = re.compile(r"FILE|PATH|DIR|\.toml|\.json")


@dataclass
class Option:
    flags: list[str]
    help: str
    takes_value: bool
    values: list[str] = field(default_factory=list)  # names or choices to offer
    files: bool = False  # also (or only) complete file names
    glob: str = ""  # only those matching this pattern (and folders)


@dataclass
class Command:
    name: str
    help: str
    options: list[Option]
    positional: Option | None = None


def _first_sentence(text: str | None) -> str:
    text = " ".join((text or "").split())
    return re.split(r"(?<=[a-z0-9)])[.;:] (?=[A-Z])", text, maxsplit=1)[0][:80]


def _option(cmd: str, a: argparse.Action, names: dict[str, list[str]]) -> Option:
    kind = COMMAND_FLAG_KINDS.get((cmd, a.option_strings[0])) or FLAG_KINDS.get(a.option_strings[0])
    takes = a.nargs != 0
    opt = Option(list(a.option_strings), _first_sentence(a.help), takes)
    if not takes:
        return opt
    if a.choices:
        opt.values = [str(c) for c in a.choices]
    elif kind:
        opt.values = names[kind]
        opt.files, opt.glob = kind in FILE_GLOBS, FILE_GLOBS.get(kind, "")
    else:
        opt.files = bool(FILE_WORDS.search(str(a.metavar or "")))
    return opt


def commands(parser: argparse.ArgumentParser) -> list[Command]:
    """The top level (name "") and every subcommand, with their options and value lists."""
    names = {k: fn() for k, fn in CATALOGS.items()}
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}

    def options(cmd: str, p: argparse.ArgumentParser) -> list[Option]:
        return [_option(cmd, a, names) for a in p._actions
                if a.option_strings and a.help != argparse.SUPPRESS]

    out = [Command("", "", options("", parser))]
    for name, p in sub.choices.items():
        pos = next((a for a in p._actions if not a.option_strings and a.help != argparse.SUPPRESS),
                   None)
        positional = None
        if pos is not None:
            kind = POSITIONAL_KINDS.get(name)
            positional = Option([], _first_sentence(pos.help), True,
                                [str(c) for c in pos.choices] if pos.choices else
                                names[kind] if kind else [], files=kind in FILE_GLOBS,
                                glob=FILE_GLOBS.get(kind, ""))
        out.append(Command(name, _first_sentence(helps.get(name)), options(name, p), positional))
    return out


# -- bash ------------------------------------------------------------------------------------
def bash(cmds: list[Command]) -> str:
    top = next(c for c in cmds if c.name == "")
    subs = [c for c in cmds if c.name]
    lines = ["# prfaas-tui completion for bash: eval \"$(prfaas-tui completion bash)\"",
             "_prfaas_tui() {",
             '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
             '    local cmd="" i',
             "    for ((i = 1; i < COMP_CWORD; i++)); do",
             f'        case "${{COMP_WORDS[i]}}" in {"|".join(c.name for c in subs)}) '
             'cmd="${COMP_WORDS[i]}"; break;; esac',
             "    done",
             '    case "$cmd $prev" in']
    for c in cmds:
        for o in c.options:
            if not o.takes_value:
                continue
            pattern = "|".join(f'"{c.name} {f}"' for f in o.flags)
            lines.append(f"        {pattern})")
            lines.append(_bash_values(o))
            lines.append("            return;;")
    lines.append("    esac")
    lines.append('    case "$cmd" in')
    for c in [top, *subs]:
        flags = " ".join(f for o in c.options for f in o.flags)
        words = flags + (" " + " ".join(s.name for s in subs) if c is top else "")
        lines.append(f'        "{c.name}")')
        if c.positional is not None:
            lines.append('            if [[ "$cur" != -* ]]; then')
            lines.append("    " + _bash_values(c.positional))
            lines.append("                return")
            lines.append("            fi")
        lines.append(f'            COMPREPLY=($(compgen -W "{words}" -- "$cur"));;')
    lines += ["    esac", "}", "complete -o default -F _prfaas_tui prfaas-tui", ""]
    return "\n".join(lines)


def _bash_values(o: Option) -> str:
    parts = []
    if o.values:
        parts.append(f'$(compgen -W "{" ".join(o.values)}" -- "$cur")')
    if o.files and o.glob:
        parts.append(f"$(compgen -f -X '!{o.glob}' -- \"$cur\") $(compgen -d -- \"$cur\")")
    elif o.files:
        parts.append('$(compgen -f -- "$cur")')
    return f"            COMPREPLY=({' '.join(parts)})" if parts else "            COMPREPLY=()"


# -- zsh -------------------------------------------------------------------------------------
def _zq(text: str) -> str:
    """Text inside a zsh _arguments spec: no brackets, colons or single quotes."""
    return re.sub(r"[\[\]:']", " ", text).replace("\\", "")


def _zsh_action(o: Option, helpers: dict[tuple, str]) -> str:
    """A spec's action: a list of names, files, or a helper function offering both (defined at
    the script's top: an inline `{_alternative ...}` would need quotes inside quotes)."""
    if o.values and o.files:
        return helpers.setdefault((tuple(o.values), o.glob), f"_prfaas_tui_names_{len(helpers) + 1}")
    if o.values:
        return f"({' '.join(o.values)})"
    if o.files:
        return f"_files -g {o.glob}" if o.glob else "_files"
    return " "


def _zsh_helpers(helpers: dict[tuple, str]) -> list[str]:
    out = []
    for (values, glob), name in helpers.items():
        files = f"_files -g \"{glob}\"" if glob else "_files"
        out.append(f"{name}() {{ _alternative 'names:name:({' '.join(values)})' "
                   f"'files:file:{files}' }}")
    return out


def _zsh_specs(c: Command, helpers: dict[tuple, str]) -> list[str]:
    specs = []
    for o in c.options:
        group = o.flags[0] if len(o.flags) == 1 else "{" + ",".join(o.flags) + "}"
        excl = f"({' '.join(o.flags)})" if len(o.flags) > 1 else ""
        spec = f"'{excl}'{group}'[{_zq(o.help)}]" if excl else f"'{group}[{_zq(o.help)}]"
        if o.takes_value:
            spec += f":{_zq(o.flags[-1].lstrip('-'))}:{_zsh_action(o, helpers)}"
        specs.append(spec + "'")
    if c.positional is not None:
        specs.append(f"'1:{_zq(c.positional.help) or 'argument'}:"
                     f"{_zsh_action(c.positional, helpers)}'")
    return specs


def zsh(cmds: list[Command]) -> str:
    top = next(c for c in cmds if c.name == "")
    subs = [c for c in cmds if c.name]
    helpers: dict[tuple, str] = {}
    specs = {c.name: _zsh_specs(c, helpers) for c in cmds}
    lines = ["#compdef prfaas-tui",
             "# prfaas-tui completion for zsh: prfaas-tui completion zsh > \"${fpath[1]}/_prfaas-tui\"",
             *_zsh_helpers(helpers),
             "_prfaas_tui() {",
             "    local curcontext=\"$curcontext\" state line",
             "    local -a commands",
             "    commands=(" + " ".join(f"'{c.name}:{_zq(c.help)}'" for c in subs) + ")",
             "    _arguments -C \\"]
    lines += [f"        {s} \\" for s in specs[top.name]]
    lines += ["        '1: :->command' \\", "        '*:: :->args'",
              "    case $state in",
              "        command) _describe -t commands 'prfaas-tui command' commands;;",
              "        args)",
              "            case $words[1] in"]
    for c in subs:
        lines.append(f"                {c.name}) _arguments \\")
        lines += [f"                    {s} \\" for s in specs[c.name]]
        lines[-1] = lines[-1][:-2] if specs[c.name] else lines[-1]
        lines[-1] += ";;"
    lines += ["            esac;;", "    esac", "}", "compdef _prfaas_tui prfaas-tui", ""]
    return "\n".join(lines)


# -- fish ------------------------------------------------------------------------------------
def _fq(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_glob(glob: str) -> str:
    """The files matching `glob` that start with the word being typed (a glob with no match
    in a `for` list is empty, not an error)."""
    return f"(for f in (commandline -ct){glob}; echo $f; end)"


def fish(cmds: list[Command]) -> str:
    subs = [c for c in cmds if c.name]
    lines = ["# prfaas-tui completion for fish: prfaas-tui completion fish > "
             "~/.config/fish/completions/prfaas-tui.fish",
             "complete -c prfaas-tui -f"]
    for c in subs:
        lines.append(f"complete -c prfaas-tui -n '__fish_use_subcommand' -a {c.name} "
                     f"-d {_fq(c.help)}")
    for c in cmds:
        cond = ("__fish_use_subcommand" if not c.name else f"__fish_seen_subcommand_from {c.name}")
        for o in c.options:
            longs = " ".join(f"-l {f[2:]}" for f in o.flags if f.startswith("--"))
            shorts = " ".join(f"-s {f[1:]}" for f in o.flags if not f.startswith("--"))
            spec = f"complete -c prfaas-tui -n '{cond}' {longs} {shorts}".rstrip()
            if o.takes_value:
                spec += " -r -F" if o.files and not o.glob else " -r -f"
                words = " ".join(o.values)
                if o.glob:
                    words += " " + _fish_glob(o.glob)
                if words.strip():
                    spec += f" -a {_fq(words.strip())}"
            lines.append(f"{spec} -d {_fq(o.help)}")
        if c.positional is not None and (c.positional.values or c.positional.files):
            spec = f"complete -c prfaas-tui -n '{cond}; and not __fish_seen_subcommand_from " \
                   f"{' '.join(c.positional.values)}'"
            words = " ".join(c.positional.values)
            if c.positional.glob:
                words += " " + _fish_glob(c.positional.glob)
            elif c.positional.files:
                spec += " -F"
            if words.strip():
                spec += f" -a {_fq(words.strip())}"
            lines.append(spec)
    return "\n".join(lines) + "\n"


SHELLS = {"bash": bash, "zsh": zsh, "fish": fish}


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    return SHELLS[shell](commands(parser))
