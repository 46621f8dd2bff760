"""`prfaas-tui new`: a preset for your model, your GPUs and your traffic, written as commented
TOML, and the model's answer for it (optimum, the three paradigms, egress).

Why: "is PrfaaS-PD worth it for us, at which t and split?" should not need hand-made
prefill-time and KV-size tables. The profiles are roofline profiles (emulator.cards) that the
preset names, so editing a GPU card or the model's config changes the preset's answer; the
initial knobs are the optimum. The dashboard's `n` form calls `build_preset` too.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from emulator.files import cap_help
from emulator.scenario.knobs import whole
from emulator.scenario.reader import positive
from emulator.units import format_tokens, parse_tokens
from prfaas_tui import json_out
from prfaas_tui.commands.models import add_setup_flags, setup_options
from prfaas_tui.commands.trace_flags import add_trace_flags
from prfaas_tui.console import make_console
from prfaas_tui.errors import UsageError, parse_flag
from prfaas_tui.preset_builder import NewSpec, uncalibrated_notes, write_preset

HELP = "build a preset from a model (config.json or card), GPU cards and a trace or length law"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("new", help=HELP, description=HELP + ".")
    p.add_argument("--model", required=True, metavar="NAME|config.json",
                   help="a shipped model card (prfaas-tui models) or a Hugging Face config.json "
                        f"({cap_help('model card')})")
    p.add_argument("--prefill-gpu", default="h200", metavar="NAME|card.toml",
                   help=f"PrfaaS (remote prefill) GPU card (default h200; {cap_help('GPU card')})")
    p.add_argument("--local-gpu", default="h20", metavar="NAME|card.toml",
                   help=f"local PD cluster GPU card (default h20; {cap_help('GPU card')})")
    p.add_argument("--parallelism", default="8", metavar="P", help="GPUs per instance (default 8)")
    p.add_argument("--prfaas-gpus", default="32", metavar="N", help="PrfaaS GPUs (default 32)")
    p.add_argument("--local-gpus", default="64", metavar="N", help="local PD GPUs (default 64)")
    p.add_argument("--homogeneous-gpus", metavar="N",
                   help="the homogeneous baseline's GPUs of the local type (default: both clusters')")
    p.add_argument("--bandwidth", default="100 Gbps", metavar="BW",
                   help="cross-datacenter link, e.g. '100 Gbps' (default)")
    p.add_argument("--lengths", metavar="lognormal:MU,SIGMA[,LO,HI]",
                   help="input-length law when there is no --trace (default lognormal:9.9,1.0,128,128K)")
    add_trace_flags(p)
    p.add_argument("--tpot", default="25 ms", metavar="DURATION",
                   help="TPOT SLO that bounds the derived decode batch (default 25 ms)")
    p.add_argument("--decode", default="constants", metavar="constants|cards",
                   help="write [decode] as constants from the cards (default) or as from = "
                        "\"cards\": derived on load, and the emulator steps at T_step(batch, "
                        "context)")
    p.add_argument("--t-decode", metavar="DURATION",
                   help="decode step time at the SLO (default: the cards' step at BS_max)")
    p.add_argument("--bs-max", metavar="N",
                   help="decode batch size at the SLO (default: from the cards, the largest batch "
                        "that meets --tpot and fits the local GPUs' memory)")
    p.add_argument("--l-out", metavar="TOKENS",
                   help="mean output tokens (default 1024, or the trace's mean output)")
    add_setup_flags(p, parallelism_flag=None)
    p.add_argument("--name", metavar="NAME", help="preset name (default MODEL-PREFILLGPU-LOCALGPU)")
    p.add_argument("--out", metavar="FILE.toml",
                   help="where to write (default ./NAME.toml, NAME made a plain file name: "
                        "letters, digits and ._+- only)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out")
    p.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    return p


def main(args: argparse.Namespace) -> int:
    if args.trace and args.lengths:
        raise UsageError("--trace/--lengths: give one or the other")
    if args.columns and not args.trace:
        raise UsageError("--columns: needs --trace FILE")
    spec = NewSpec(
        model=args.model, prefill_gpu=args.prefill_gpu, local_gpu=args.local_gpu,
        parallelism=parse_flag("--parallelism", whole, args.parallelism, positive),
        prfaas_gpus=parse_flag("--prfaas-gpus", whole, args.prfaas_gpus, positive),
        local_gpus=parse_flag("--local-gpus", whole, args.local_gpus, positive),
        homogeneous_gpus=parse_flag("--homogeneous-gpus", whole, args.homogeneous_gpus),
        bandwidth=args.bandwidth, lengths=args.lengths, trace=args.trace, columns=args.columns,
        incremental=args.incremental, t_decode=args.t_decode, tpot=args.tpot, decode=args.decode,
        bs_max=parse_flag("--bs-max", whole, args.bs_max, positive),
        l_out=parse_flag("--l-out", parse_tokens, args.l_out, positive), name=args.name,
        **setup_options(args))
    answer = write_preset(spec, Path(args.out) if args.out else None, force=args.force)
    if args.json:
        print(json_out.dumps(answer, indent=2))
    else:
        render(answer, make_console())
    return 0


def render(answer: dict, console: Console) -> None:
    b = answer["optimum"]
    console.print(f"wrote [bold]{answer['preset']}[/] (open it: prfaas-tui --preset {answer['preset']})")
    for note in [*uncalibrated_notes(answer), *answer["warnings"]]:
        console.print(note, style="yellow", highlight=False)
    console.print(f"optimum: t = {format_tokens(b['t'])} tokens, N_prfaas/N_p/N_d = "
                  f"{b['n_prfaas']}/{b['n_p']}/{b['n_d']}, p = {b['p']:.3f}, Lambda_max = "
                  f"[bold]{b['lambda_max']:.3f}[/] req/s ({b['binding']} binds, PrfaaS "
                  f"{b['prfaas_term']}-bound)")
    console.print(f"egress at the optimum {b['egress_gbps']:.1f} Gbps of {b['bandwidth_gbps']:.0f} "
                  f"({b['link_utilization']:.0%}); Eq. 2 demand {b['egress_demand_gbps']:.1f} Gbps")
    for name, d in answer["paradigms"].items():
        vs = d.get("vs_homogeneous")
        console.print(f"  {name:20s} Lambda_max {d['lambda_max']:.3f} req/s"
                      + (f"  ({vs:.2f}x homogeneous)" if vs else ""))
