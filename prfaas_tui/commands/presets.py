"""`prfaas-tui presets`: the shipped scenarios with a one-line description each."""

from __future__ import annotations

import argparse

from rich.table import Table

from emulator.scenario.presets import list_presets, presets_dir
from prfaas_tui.console import make_console


def add_parser(sub) -> argparse.ArgumentParser:
    return sub.add_parser("presets", help="list the shipped presets and drills")


def main(args: argparse.Namespace) -> int:
    table = Table(title="presets (load with --preset NAME or a path)", title_justify="left")
    table.add_column("name", style="bold cyan")
    table.add_column("description")
    pairs = {name for name, _, _ in list_presets(topology=False)}
    for name, desc, _ in list_presets():
        table.add_row(name, desc if name in pairs else f"{desc} [dim](a topology of sites, "
                      "regions and links: `prfaas-tui --preset NAME` opens its map)[/]")
    drills = sorted(p.stem for p in (presets_dir() / "drills").glob("*.toml"))
    console = make_console()
    console.print(table)
    if drills:
        console.print(f"drills (prfaas-tui drill NAME): {', '.join(drills)}")
    return 0
