"""`prfaas-tui models [--config PATH] [--gpu NAME] [--json]`: the shipped model cards (or one
config.json) with what serving cost depends on; with --gpu, the roofline T_prefill and
Phi_kv at 1K / 8K / 32K / 128K on one 8-GPU instance."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from emulator.cards.gpu import load_gpu
from emulator.cards.model_card import ModelCard, load_card, read_config, shipped
from emulator.cards.roofline import roofline_profile
from emulator.units import format_bytes

LENGTHS = {"1K": 1024, "8K": 8192, "32K": 32768, "128K": 131072}
PARALLELISM = 8


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("models", help="list the shipped model cards, or read one config.json")
    p.add_argument("--config", metavar="PATH", help="read this Hugging Face config.json instead")
    p.add_argument("--gpu", metavar="NAME|card.toml",
                   help="add the roofline T_prefill and Phi_kv on 8 of these GPUs")
    p.add_argument("--json", action="store_true", help="one JSON object per model (a list)")
    return p


def describe(card: ModelCard, gpu=None) -> dict:
    d = card.to_dict()
    if gpu is not None:
        prof = roofline_profile(card, gpu, PARALLELISM)
        d["gpu"] = gpu.name
        d["parallelism"] = PARALLELISM
        d["t_prefill_s"] = {k: float(prof.t_prefill(v)) for k, v in LENGTHS.items()}
        d["phi_kv_gbps"] = {k: float(prof.phi_kv(v)) * 8 / 1e9 for k, v in LENGTHS.items()}
    return d


def main(args: argparse.Namespace) -> int:
    cards = [read_config(args.config)] if args.config else [load_card(n) for n in shipped()]
    gpu = load_gpu(args.gpu) if args.gpu else None
    rows = [describe(c, gpu) for c in cards]
    if args.json:
        print(json.dumps(rows, indent=2, allow_nan=False))
        return 0
    t = Table(title="model cards" + (f" (roofline on {PARALLELISM}x{gpu.name})" if gpu else ""),
              title_justify="left")
    # the name is what a user types next (--model NAME): never cut, the other columns give way
    t.add_column("name", no_wrap=True, min_width=max(len(d["name"]) for d in rows))
    for col in ("family", "layers", "KV/token", "state/request", "active params"):
        t.add_column(col, overflow="fold")
    if gpu:
        t.add_column("Phi_kv Gbps 1K/8K/32K/128K", justify="right", overflow="fold")
    for d in rows:
        cells = [d["name"], d["family"], " ".join(f"{k}:{v}" for k, v in d["layers"].items()),
                 format_bytes(d["kv_bytes_per_token"]), format_bytes(d["state_bytes"]),
                 f"{d['active_params'] / 1e9:.1f}B"]
        if gpu:
            cells.append(" / ".join(f"{x:.2f}" for x in d["phi_kv_gbps"].values()))
        t.add_row(*cells)
    Console().print(t)
    return 0
