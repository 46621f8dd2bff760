"""`prfaas-tui models`: the shipped model cards (or one config.json) with what serving cost
depends on; with --gpu, the prefill profile on one instance, kernel and overhead apart:

    prfaas-tui models --config F --gpu G [--parallelism P] [--lengths 8K,32K,128K]
        [--tp N] [--ep N] [--dtype bf16|fp8] [--kv-dtype bf16|fp8] [--overhead 0.39s]
        [--profile-source builtin|aiconfigurator] [--decode-batches 1,8,32,128 --contexts 4K,32K
        [--tpot 25ms]] [--prefill-batches 1,4,16] --json

With --config, --json prints one object (`layers` by kind, `layer_groups`: kind, count,
kv_bytes_per_token and aux_bytes_per_token per layer, window, chunk, topk, state_bytes of the
group; `windows` and `chunks`: layers per size; `s_kv`: length, kv_bytes; `kv_bytes_per_token`,
`state_bytes`; with --gpu `profile`: length, kernel_s, overhead_s, t_prefill_s, kv_bytes,
phi_kv_gbps; with --decode-batches, `decode`: batch, context, step_s, weights_s, kv_s, compute_s,
comm_s, overhead_s, and `bs_max`: context, batch, binds; with --prefill-batches,
`prefill_batches`: batch, length, tokens, kernel_s of one step over `batch` prompts of `length`,
per_request_s, one_by_one_s, speedup, tokens_per_s, experts_touched, parts); for the shipped
list, a list of them. The text output of one config adds the table of its layer kinds and S_kv
at each length."""

from __future__ import annotations

import argparse

from rich.table import Table

from emulator.cards import CardError
from emulator.cards.decode import MAX_BATCH, bs_max, step_time, tpot_problem
from emulator.cards.gpu import GpuCard, load_gpu
from emulator.cards.kernel import DTYPES, Setup
from emulator.cards.memory import check_memory, memory_per_gpu
from emulator.cards.model_card import ModelCard, load_card, read_config, shipped
from emulator.cards.prefill_batch import batch_row
from emulator.cards.roofline import DEFAULT_OVERHEAD_S, DEFAULT_OVERHEAD_SOURCE
from emulator.cards.sources import PROFILE_SOURCES, card_profile
from emulator.files import cap_help
from emulator.scenario.knobs import whole
from emulator.scenario.reader import positive
from emulator.units import format_bytes, format_tokens, parse_duration
from prfaas_tui import json_out
from prfaas_tui.commands.profile import parse_lengths
from prfaas_tui.console import make_console
from prfaas_tui.errors import UsageError, parse_flag

DEFAULT_LENGTHS = "1K,8K,32K,128K"
DEFAULT_CONTEXTS = "4K,32K"
PARALLELISM = 8


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("models", help="list the shipped model cards, or read one config.json")
    p.add_argument("--config", metavar="PATH", help=f"read this Hugging Face config.json instead ({cap_help('model card')})")
    p.add_argument("--gpu", metavar="NAME|card.toml",
                   help="add the prefill profile (kernel + overhead) on one instance of these GPUs "
                        f"(a card path is {cap_help('GPU card')})")
    add_setup_flags(p, parallelism_flag="--parallelism")
    p.add_argument("--lengths", default=DEFAULT_LENGTHS, metavar="TOKENS,...",
                   help=f"prompt lengths of the profile, K = 1024 (default {DEFAULT_LENGTHS})")
    p.add_argument("--decode-batches", metavar="B,...",
                   help="add the decode step (emulator/cards/decode.py) at these batch sizes, and "
                        "BS_max at each of --contexts (needs --gpu)")
    p.add_argument("--contexts", default=DEFAULT_CONTEXTS, metavar="TOKENS,...",
                   help=f"decode contexts, K = 1024 (default {DEFAULT_CONTEXTS})")
    p.add_argument("--tpot", default="25 ms", metavar="DURATION",
                   help="TPOT SLO that bounds BS_max (default 25 ms, 40 tokens/s)")
    p.add_argument("--prefill-batches", metavar="B,...",
                   help="add the kernel time of one batched prefill step of B prompts at each of "
                        "--lengths, against the same prompts one by one "
                        "(emulator/cards/prefill_batch.py; needs --gpu)")
    p.add_argument("--json", action="store_true",
                   help="JSON: one object with --config, else a list")
    return p


MAX_STEP_TOKENS = 1 << 24


def prefill_batch_options(args: argparse.Namespace, lengths: list[int]) -> list[int] | None:
    """--prefill-batches, checked (None without it)."""
    if args.prefill_batches is None:
        return None
    if not args.gpu:
        raise UsageError("--prefill-batches: needs --gpu")
    if args.profile_source != "builtin":
        raise UsageError("--prefill-batches: needs --profile-source builtin (aiconfigurator's "
                         "adapter asks for one request at a time)")
    batches = [parse_flag("--prefill-batches", whole, item.strip(), positive)
               for item in str(args.prefill_batches).split(",")]
    if max(batches) * max(lengths) > MAX_STEP_TOKENS:
        raise UsageError(f"--prefill-batches: a step of {max(batches):,} x {max(lengths):,} tokens "
                         f"is over {MAX_STEP_TOKENS:,} tokens")
    return sorted(set(batches))


def decode_options(args: argparse.Namespace, cards: list[ModelCard]) -> dict | None:
    """--decode-batches, --contexts and --tpot, checked (None without --decode-batches)."""
    if args.decode_batches is None:
        return None
    if not args.gpu:
        raise UsageError("--decode-batches: needs --gpu")
    batches = []
    for item in str(args.decode_batches).split(","):
        b = parse_flag("--decode-batches", whole, item.strip(), positive)
        if b > MAX_BATCH:
            raise UsageError(f"--decode-batches: at most {MAX_BATCH:,} (got {b:,})")
        batches.append(b)
    try:
        contexts = parse_lengths(args.contexts)
    except UsageError as exc:
        raise UsageError(str(exc).replace("--lengths", "--contexts", 1)) from None
    for card in cards:
        limit = card.config.get("max_position_embeddings") if isinstance(card.config, dict) else None
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 and max(contexts) > limit:
            raise UsageError(f"--contexts: {max(contexts):,} tokens is beyond {card.name}'s "
                             f"max_position_embeddings ({limit:,})")
    tpot = parse_flag("--tpot", parse_duration, args.tpot,
                      tpot_problem)
    return {"batches": sorted(set(batches)), "contexts": contexts, "tpot_s": tpot}


def decode_rows(card: ModelCard, gpu: GpuCard, setup: Setup, dec: dict, strict: bool = True) -> dict:
    """The decode step at every batch x context, and BS_max at each context; a context where no
    batch of 1 runs raises the one-line CardError (`strict`) or is a row with batch 0, binds
    "none" and its `error` (the shipped list)."""
    keys = ("batch", "context", "step_s", "weights_s", "kv_s", "compute_s", "comm_s", "overhead_s")
    steps = [step_time(card, gpu, setup, b, n).to_dict() for n in dec["contexts"] for b in dec["batches"]]
    limits = []
    for n in dec["contexts"]:
        try:
            lim = bs_max(card, gpu, setup, n, dec["tpot_s"])
            limits.append({"context": n, "batch": lim.batch, "binds": lim.binds, "step_s": lim.step.step_s})
        except CardError as exc:
            if strict:
                raise
            limits.append({"context": n, "batch": 0, "binds": "none", "step_s": None, "error": exc.message})
    return {"decode": [{k: s[k] for k in keys} for s in steps], "tpot_s": dec["tpot_s"],
            "bs_max": limits}


def add_setup_flags(p: argparse.ArgumentParser, parallelism_flag: str | None) -> None:
    """The flags `models` and `new` share: how one instance serves the model."""
    if parallelism_flag:
        p.add_argument(parallelism_flag, default=str(PARALLELISM), metavar="P",
                       help=f"GPUs per instance (default {PARALLELISM})")
    p.add_argument("--tp", metavar="N", help="tensor-parallel degree (default: the instance's GPUs)")
    p.add_argument("--ep", metavar="N",
                   help="expert-parallel degree (default: the instance's GPUs for an MoE model, else 1)")
    p.add_argument("--dtype", choices=DTYPES,
                   help="GEMM dtype (default: the checkpoint's torch_dtype / quantization_config); "
                        "int4: 4-bit experts in bf16 GEMMs; mxfp4: MXFP4 experts (gpt-oss); "
                        "nvfp4: NVFP4 weights")
    p.add_argument("--kv-dtype", choices=("bf16", "fp8"),
                   help="KV-cache dtype (default bf16, or the checkpoint's); fp8 halves S_kv")
    p.add_argument("--overhead", metavar="SECONDS",
                   help=f"per-request serving overhead added to the kernel time (default "
                        f"{DEFAULT_OVERHEAD_SOURCE})")
    p.add_argument("--profile-source", default="builtin", choices=PROFILE_SOURCES,
                   help="kernel time from the built-in kernel model (default) or aiconfigurator's "
                        "database (pip install -e '.[aic]')")


def setup_options(args: argparse.Namespace) -> dict:
    """The shared flags, checked, as keyword arguments of card_profile / NewSpec."""
    def positive_whole(flag: str, raw):
        return parse_flag(flag, whole, raw, positive)

    overhead = parse_flag("--overhead", parse_duration, args.overhead,
                          lambda x: None if 0 <= x <= 60 else "must be between 0 and 60 s")
    return {"tp": positive_whole("--tp", args.tp), "ep": positive_whole("--ep", args.ep),
            "dtype": args.dtype, "kv_dtype": args.kv_dtype,
            "overhead_s": DEFAULT_OVERHEAD_S if overhead is None else overhead,
            "profile_source": args.profile_source}


def describe(card: ModelCard, gpu: GpuCard | None = None, gpus: int = PARALLELISM,
             lengths: list[int] | None = None, strict: bool = True, decode: dict | None = None,
             prefill_batches: list[int] | None = None, **opts) -> dict:
    """The card's fields and, with a GPU, its profile; a model that does not fit its GPUs
    raises the one-line CardError (`strict`) or carries it as `memory_error` (the list)."""
    d = card.to_dict()
    lengths = lengths or parse_lengths(DEFAULT_LENGTHS)
    served = card.with_kv_dtype(opts["kv_dtype"]) if opts.get("kv_dtype") else card
    d["s_kv"] = [{"length": n, "kv_bytes": float(served.kv_bytes(n))} for n in lengths]
    if gpu is None:
        return d
    prof, setup, kernel = card_profile(card, gpu, gpus, **opts)
    try:
        fit = check_memory(card, gpu, setup, max(lengths))
        d["memory_error"] = None
    except CardError as exc:
        if strict:
            raise
        fit, d["memory_error"] = memory_per_gpu(card, gpu, setup, max(lengths)), exc.message
    served = card.with_kv_dtype(setup.kv_dtype)
    d.update({"kv_bytes_per_token": served.kv_bytes_per_token, "kv_dtype": setup.kv_dtype,
              "gpu": gpu.name, "gpu_calibrated": gpu.calibrated,
              "gpu_calibration_source": gpu.calibration.source,
              "gpu_notes": gpu.calibration.notes(gpu.name), "parallelism": gpus,
              "tp": setup.tp, "ep": setup.ep, "dtype": setup.dtype,
              "overhead_s": setup.overhead_s, "profile_source": opts.get("profile_source", "builtin"),
              "memory_per_gpu": fit.to_dict(), "description": prof.description})
    d["profile"] = [{"length": n, "kernel_s": float(kernel(n)), "overhead_s": setup.overhead_s,
                     "t_prefill_s": float(prof.t_prefill(n)), "kv_bytes": float(prof.s_kv(n)),
                     "phi_kv_gbps": float(prof.phi_kv(n)) * 8 / 1e9} for n in lengths]
    if decode is not None:
        d.update(decode_rows(card, gpu, setup, decode, strict))
    if prefill_batches is not None:
        d["prefill_batches"] = [batch_row(card, gpu, setup, b, n).to_dict()
                                for n in lengths for b in prefill_batches]
    return d


def main(args: argparse.Namespace) -> int:
    cards = [read_config(args.config)] if args.config else [load_card(n) for n in shipped()]
    gpu = load_gpu(args.gpu) if args.gpu else None
    gpus = parse_flag("--parallelism", whole, args.parallelism, positive)
    if gpus > 4096:
        raise UsageError(f"--parallelism: must be between 1 and 4096 (got {gpus})")
    lengths = parse_lengths(args.lengths)
    opts = setup_options(args) if gpu else {}
    dec = decode_options(args, cards)
    batches = prefill_batch_options(args, lengths)
    rows = [describe(c, gpu, gpus, lengths, strict=bool(args.config), decode=dec,
                     prefill_batches=batches, **opts) for c in cards]
    if args.json:
        print(json_out.dumps(rows[0] if args.config else rows, indent=2))
        return 0
    title = "model cards"
    if gpu:
        title += f" on {gpus} x {gpu.name}" + (" (UNCALIBRATED GPU: borrowed efficiencies)"
                                                if not gpu.calibrated else "")
    t = Table(title=title, title_justify="left")
    # the name is what a user types next (--model NAME): never cut, the other columns give way
    t.add_column("name", no_wrap=True, min_width=max(len(d["name"]) for d in rows))
    for col in ("family", "layers", "KV/token", "state/request", "active params"):
        t.add_column(col, overflow="fold")
    if gpu:
        heads = "/".join(format_tokens(n) for n in lengths)
        t.add_column(f"kernel s {heads}", justify="right", overflow="fold")
        t.add_column(f"Phi_kv Gbps {heads}", justify="right", overflow="fold")
    for d in rows:
        cells = [d["name"], d["family"], " ".join(f"{k}:{v}" for k, v in d["layers"].items()),
                 format_bytes(d["kv_bytes_per_token"]), format_bytes(d["state_bytes"]),
                 f"{d['active_params'] / 1e9:.1f}B"]
        if gpu:
            cells.append(" / ".join(f"{p['kernel_s']:.3f}" for p in d["profile"]))
            cells.append(" / ".join(f"{p['phi_kv_gbps']:.2f}" for p in d["profile"]))
            if d["memory_error"]:
                cells[0] += " (does not fit)"
        t.add_row(*cells)
    console = make_console()
    console.print(t)
    if args.config:
        console.print(layer_table(cards[0], rows[0]))
    for d in rows:
        if gpu and d["memory_error"]:
            console.print(f"{d['name']}: {d['memory_error']}", style="yellow", highlight=False)
    if gpu:
        r = rows[0]
        console.print(f"T_prefill = overhead {r['overhead_s']:g} s + kernel "
                      f"({r['profile_source']}); {gpu.name}: {gpu.calibration.source}",
                      highlight=False)
        for note in gpu.calibration.notes(gpu.name):
            console.print(note, style="yellow", highlight=False)
    if dec is not None:
        for d in rows:
            console.print(decode_table(d, gpu))
            for x in d["bs_max"]:
                if x["batch"] == 0:
                    console.print(f"{d['name']}: {x['error']}", style="yellow", highlight=False)
    if batches is not None:
        for d in rows:
            console.print(prefill_batch_table(d, gpu))
    return 0


def prefill_batch_table(row: dict, gpu: GpuCard) -> Table:
    """One step's kernel ms by batch (rows) and prompt length (columns), with the speedup over
    the same prompts one by one."""
    mark = f", {gpu.mark.upper()} GPU" if gpu.mark else ""
    t = Table(title=f"{row['name']}: batched prefill step ms on {row['parallelism']} x "
                    f"{gpu.name}{mark} (x: speedup over one by one)", title_justify="left")
    t.add_column("batch", justify="right")
    lengths = sorted({r["length"] for r in row["prefill_batches"]})
    for n in lengths:
        t.add_column(format_tokens(n), justify="right")
    by = {(r["batch"], r["length"]): r for r in row["prefill_batches"]}
    for b in sorted({r["batch"] for r in row["prefill_batches"]}):
        t.add_row(str(b), *(f"{by[(b, n)]['kernel_s'] * 1e3:.1f} ({by[(b, n)]['speedup']:.2f}x)"
                            for n in lengths))
    t.caption = ("one step: GEMMs, experts and collectives over the batch's tokens, attention per "
                 "prompt (emulator/cards/prefill_batch.py); kernel only, no serving overhead")
    t.caption_justify = "left"
    return t


def decode_table(row: dict, gpu: GpuCard) -> Table:
    """Step ms by batch (rows) and context (columns), and BS_max per context with its limit."""
    contexts = [b["context"] for b in row["bs_max"]]
    mark = f", {gpu.mark.upper()} GPU" if gpu.mark else ""
    t = Table(title=f"{row['name']}: decode step ms on {row['parallelism']} x {gpu.name}{mark}",
              title_justify="left")
    t.add_column("batch", justify="right")
    for n in contexts:
        t.add_column(format_tokens(n), justify="right")
    by = {(s["batch"], s["context"]): s["step_s"] for s in row["decode"]}
    for b in sorted({s["batch"] for s in row["decode"]}):
        t.add_row(str(b), *(f"{by[(b, n)] * 1e3:.2f}" for n in contexts))
    t.add_row(f"BS_max @ {row['tpot_s'] * 1e3:g} ms",
              *(f"{x['batch']:,} ({x['binds']})" if x["batch"] else "none"
                for x in row["bs_max"]))
    t.caption = ("T_step = max(HBM reads, compute) + collectives + launches "
                 "(emulator/cards/decode.py); BS_max: TPOT SLO or KV+state in HBM")
    t.caption_justify = "left"
    return t


def layer_table(card: ModelCard, row: dict) -> Table:
    """What each kind of layer keeps per request, and S_kv at the lengths asked for."""
    t = Table(title=f"{card.name}: cache per layer kind", title_justify="left")
    for col in ("kind", "layers", "KV/token/layer", "window/chunk", "state/request"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    for g in row["layer_groups"]:
        per = format_bytes(g["kv_bytes_per_token"]) if g["kv_bytes_per_token"] else "-"
        if g["aux_bytes_per_token"]:
            per += f" + {format_bytes(g['aux_bytes_per_token'])} index"
        cap = (f"window {g['window']:,}" if g["window"] else f"chunk {g['chunk']:,}" if g["chunk"]
               else "all tokens" if g["kv_bytes_per_token"] else "-")
        if g["topk"]:
            cap += f" (attends {g['topk']:,})"
        t.add_row(g["kind"], str(g["count"]), per, cap,
                  format_bytes(g["state_bytes"]) if g["state_bytes"] else "-")
    t.caption = "S_kv: " + ", ".join(f"{format_tokens(p['length'])} {format_bytes(p['kv_bytes'])}"
                                     for p in row["s_kv"])
    t.caption_justify = "left"
    return t
