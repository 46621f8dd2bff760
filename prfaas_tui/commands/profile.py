"""`prfaas-tui profile`: measure T_prefill, S_kv and Phi_kv of a real model on this machine, or
import measured prefill latencies, and write a profile TOML that any preset can use.

    prfaas-tui profile --backend torch --model hybrid-small --lengths 1K,4K,16K \
        [--device cuda|cpu] [--repeats N] [--compare [MODEL]] --out FILE.toml
    prfaas-tui profile --backend torch --config PATH/config.json --lengths 4K,16K \
        [--dtype bf16|fp16|fp32] [--gpu CARD --compare-card] --out FILE.toml
    prfaas-tui profile --import results.json|latencies.csv --card NAME|config.json \
        [--columns input=COL,seconds=COL] [--kv-dtype fp8] [--measured-on TEXT] --out FILE.toml

--compare is opt-in: bare, it profiles the same-size model of the other family
(hybrid-small <-> dense-small); with a name, that model. It then adds the dense/hybrid Phi_kv
ratio per length. --config builds a published architecture from its config.json (random
weights, no download) and times it by two depths per layer kind; --compare-card puts the
roofline's kernel time for the same model on the GPU card beside it. Every bad input is one line
naming the flag, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from emulator import budget, torch_prefill
from emulator.budget import caps_for
from emulator.cards import CardError
from emulator.files import os_error_text
from emulator.scenario.knobs import number
from emulator.scenario.reader import MAX_SEED
from emulator.torch_prefill.config import MODEL_NAMES, counterpart, get_config
from emulator.traces import MAX_TOKENS, TraceError
from emulator.units import parse_tokens
from prfaas_tui.console import make_console
from prfaas_tui.errors import UsageError, parse_flag

BACKENDS = ("torch",)
PROG = "prfaas-tui"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `profile` on a subparsers object. Values are checked in main(), so every error
    is one line naming its flag."""
    p = subparsers.add_parser(
        "profile", help="measure T_prefill / S_kv / Phi_kv of a real model; write a profile",
        description=__doc__.split("\n\n")[0])
    _add_arguments(p)
    p.set_defaults(func=main)
    return p


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="torch", metavar="torch", help="measurement backend: torch (default)")
    p.add_argument("--model", default=None, metavar="NAME",
                   help=f"model to profile (default hybrid-tiny): {', '.join(MODEL_NAMES)}")
    p.add_argument("--config", default=None, metavar="PATH/config.json",
                   help="profile this architecture instead (a config.json or a shipped card name): "
                        "random seeded weights, two depths per layer kind, batch 1, one device")
    p.add_argument("--dtype", default=None, metavar="bf16|fp16|fp32",
                   help="with --config: compute dtype (default bf16 on a GPU, fp32 on a CPU, "
                        "where bf16 matmuls are slow)")
    p.add_argument("--depths", default=None, metavar="D1,D2",
                   help="with --config: the two depths each layer kind is timed at (default 1,2)")
    p.add_argument("--gpu", default=None, metavar="CARD",
                   help="with --compare-card: the GPU card (h200, h100...; default: the CUDA "
                        "device's, when a card matches its name)")
    p.add_argument("--compare-card", action="store_true",
                   help="with --config: print the roofline's kernel time for the same model on "
                        "the GPU card beside the measured time, with the ratio per length")
    p.add_argument("--lengths", default="1K,4K,16K", metavar="TOKENS,...",
                   help="comma-separated prompt lengths in tokens, K = 1024 (default 1K,4K,16K)")
    p.add_argument("--device", default=None, metavar="cuda|cpu", help="cuda or cpu (default: cuda when present)")
    p.add_argument("--repeats", default="5", metavar="N",
                   help="timed runs per length; the median is kept (default 5)")
    p.add_argument("--warmup", default="2", metavar="N", help="untimed runs per length first (default 2)")
    p.add_argument("--seed", default="0", metavar="N", help="seed of weights and token ids (default 0)")
    p.add_argument("--threads", default=None, metavar="N",
                   help="CPU threads for torch (default: torch's); 1 is steadier on a busy machine")
    p.add_argument("--compare", nargs="?", const="auto", default=None, metavar="MODEL",
                   help="also profile MODEL (bare: the same-size model of the other family) "
                        "and print the dense/hybrid Phi_kv ratio")
    p.add_argument("--out", default=None, metavar="FILE.toml", help="write the --model profile here (TOML)")
    p.add_argument("--compare-out", default=None, metavar="FILE.toml", help="write the --compare profile here")
    p.add_argument("--import", dest="import_file", metavar="FILE",
                   help="build the profile from measured prefill latencies instead: a CSV of "
                        "input_tokens,seconds or vLLM/SGLang benchmark JSON (input_lens, ttfts)")
    p.add_argument("--card", metavar="NAME|config.json",
                   help="with --import: the model card whose S_kv the profile carries")
    p.add_argument("--columns", metavar="MAP",
                   help="with --import: CSV column map, e.g. input=prompt_len,seconds=latency "
                        "(or ms=COL)")
    p.add_argument("--kv-dtype", choices=("bf16", "fp8"), default=None,
                   help="with --import: the KV-cache dtype the measured stack used (default: the card's)")
    p.add_argument("--measured-on", metavar="TEXT", default="",
                   help="with --import: what it ran on, e.g. '8xH200, vLLM 0.11, TP8' (kept in the profile)")
    p.add_argument("--name", default=None, metavar="NAME", help="with --import: the profile's name (default: the file's)")
    p.add_argument("--max-profile-tokens", default=None, metavar="N",
                   help=f"raise the cap on prefill tokens computed (default "
                        f"{caps_for('profile').profile_tokens:,.0f})")


MAX_THREADS = 4096


def _int(flag: str, value: str, lo: int, hi: int = MAX_SEED) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{flag}: expected a whole number, got {value!r}") from None
    if not lo <= n <= hi:
        raise UsageError(f"{flag}: must be between {lo} and {hi}, got {n}")
    return n


def parse_lengths(text: str) -> list[int]:
    """'1K,4K,16K' -> [1024, 4096, 16384] (sorted, unique, whole tokens >= 1)."""
    out = []
    for item in str(text).split(","):
        try:
            x = parse_tokens(item.strip())
        except (ValueError, TypeError) as exc:
            raise UsageError(f"--lengths: {exc}") from None
        if not 1 <= x <= MAX_TOKENS or x != int(x):
            raise UsageError(f"--lengths: need whole token counts from 1 to {MAX_TOKENS:,}, "
                             f"got {item.strip()!r}")
        out.append(int(x))
    return sorted(set(out))


def _model(flag: str, name: str) -> str:
    try:
        get_config(name)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    return name


def _out_path(flag: str, value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value)
    if not path.parent.is_dir():
        raise UsageError(f"{flag}: directory {str(path.parent)!r} does not exist")
    return path


def _fmt_s(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.3f} s"


def _fmt_b(b: int) -> str:
    return f"{b / 2**20:.2f} MiB"


def _table(profiles: list, ratios: dict[int, float] | None):  # -> rich Table
    """One row per (length, model); the ratio sits on each length's first row."""
    from rich.table import Table

    first = profiles[0]
    threads = "" if first.threads is None else f", {first.threads} thread(s)"
    t = Table(title=f"prefill on {first.device_name} ({first.dtype}{threads}), median of "
                    f"{first.repeats} after {first.warmup} warm-up(s)")
    for col in ("tokens", "model", "T_prefill", "S_kv", "Phi_kv"):
        t.add_column(col, justify="left" if col == "model" else "right")
    if ratios is not None:
        t.add_column("Phi_kv dense/hybrid", justify="right")
    for point in first.points:
        for i, prof in enumerate(profiles):
            p = prof.point(point.length)
            row = [f"{p.length:,}" if i == 0 else "", prof.model, _fmt_s(p.seconds),
                   _fmt_b(p.kv_bytes), f"{p.phi_gbps:.3f} Gbps"]
            if ratios is not None:
                row.append(f"{ratios[p.length]:.2f}x" if i == 0 else "")
            t.add_row(*row, end_section=i == len(profiles) - 1 and ratios is not None)
    return t


def _import(args: argparse.Namespace) -> int:
    """--import: measured latencies + the card's S_kv -> a profile file."""
    from emulator.cards.measured import read_measurements
    from emulator.cards.model_card import load_card

    if args.card is None:
        raise UsageError("--card: --import needs the model card (NAME or config.json) for S_kv")
    if args.out is None:
        raise UsageError("--out: --import writes a profile file: give its path")
    if args.name is not None and not args.name.strip():
        raise UsageError("--name: give the profile a name (or leave --name out: the file's stem)")
    out = _out_path("--out", args.out)
    card = load_card(args.card)
    if args.kv_dtype:
        card = card.with_kv_dtype(args.kv_dtype)
    m = read_measurements(args.import_file, args.columns)
    name = args.name or Path(args.import_file).stem
    on = f" on {args.measured_on}" if args.measured_on else ""
    desc = (f"measured: {m.origin}{on}; median TTFT per input length of {m.requests} request(s); "
            f"S_kv from the {card.name} card ({card.kv_dtype} KV)")
    from emulator.torch_prefill.profile_file import profile_toml

    text = profile_toml(f"written by prfaas-tui profile --import {Path(args.import_file).name}",
                        name, desc, str(Path(args.import_file).resolve()), list(m.lengths),
                        m.seconds, [float(card.kv_bytes(n)) for n in m.lengths])
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--out: cannot write {out}: {exc.strerror}") from None
    print(f"wrote {out} (profile {name!r}: {len(m.lengths)} lengths from {m.requests} request(s); "
          f"{desc})")
    return 0


def _common(args: argparse.Namespace) -> tuple[list[int], int, int, int, int | None]:
    """--lengths, --repeats, --warmup, --seed, --threads, checked against the token budget."""
    lengths = parse_lengths(args.lengths)
    repeats = _int("--repeats", args.repeats, 1)
    warmup = _int("--warmup", args.warmup, 0)
    seed = _int("--seed", args.seed, 0)
    threads = None if args.threads is None else _int("--threads", args.threads, 1, MAX_THREADS)
    try:
        given = None if args.max_profile_tokens is None \
            else parse_flag("--max-profile-tokens", number, args.max_profile_tokens)
        caps = caps_for("profile").raised(profile_tokens=given)
        budget.check_profile(lengths, repeats, warmup, caps)
    except budget.BudgetError as exc:
        raise UsageError(str(exc)) from None
    return lengths, repeats, warmup, seed, threads


def _run(args: argparse.Namespace) -> int:
    if args.import_file is not None:
        return _import(args)
    if args.backend not in BACKENDS:
        raise UsageError(f"--backend: unknown backend {args.backend!r} (choose from torch)")
    torch_prefill._require_torch()  # the install hint, before anything else needs torch
    if args.config is not None:
        return _run_config(args)
    for flag, given in (("--dtype", args.dtype), ("--depths", args.depths), ("--gpu", args.gpu),
                        ("--compare-card", args.compare_card or None)):
        if given is not None:
            raise UsageError(f"{flag}: only with --config (a published architecture)")
    model = _model("--model", args.model or "hybrid-tiny")
    lengths, repeats, warmup, seed, threads = _common(args)
    other = None
    if args.compare is not None:
        other = _model("--compare", counterpart(model) if args.compare == "auto" else args.compare)
    out = _out_path("--out", args.out)
    compare_out = _out_path("--compare-out", args.compare_out)
    if compare_out is not None and other is None:
        raise UsageError("--compare-out: needs --compare")

    from emulator.torch_prefill.models import resolve_device
    from emulator.torch_prefill.profiling import Comparison, profile_model, write_profile

    try:
        device = str(resolve_device(args.device))
    except (ValueError, RuntimeError) as exc:
        raise UsageError(f"--device: {exc}") from None


    console = make_console()
    profiles = []
    for name in [model] + ([other] if other else []):
        # a plain line, not a spinner: a refresh thread perturbs CPU timings on small machines
        console.print(f"profiling {name} on {device} at {args.lengths} tokens ...",
                      style="dim", highlight=False)
        profiles.append(profile_model(name, lengths, device=device, repeats=repeats,
                                      warmup=warmup, seed=seed, threads=threads))
    ratios = Comparison(*profiles).ratios if other else None
    console.print(_table(profiles, ratios))
    for prof in profiles:
        if prof.upper_bound:
            console.print(f"{prof.model}: UPPER BOUND: {prof.upper_bound}", style="bold yellow",
                          highlight=False)
    for path, prof in ((out, profiles[0]), (compare_out, profiles[-1])):
        if path is not None:
            write_profile(prof, path)
            console.print(f"wrote {path} (profile {prof.name!r})")
    return 0


CONFIG_DTYPES = ("bf16", "fp16", "fp32")


def _depths(value: str) -> tuple[int, int]:
    parts = str(value).split(",")
    if len(parts) != 2:
        raise UsageError(f"--depths: expected two depths D1,D2, got {value!r}")
    d1, d2 = (_int("--depths", x.strip(), 1, 64) for x in parts)
    if d1 >= d2:
        raise UsageError(f"--depths: the second depth must exceed the first, got {value!r}")
    return d1, d2


def _gpu_card(args: argparse.Namespace, device: str, device_name: str):
    """The GPU card --compare-card reads: --gpu, else the shipped card the CUDA device's name
    names (an H200 is h200)."""
    from emulator.cards.gpu import load_gpu, shipped

    if args.gpu is not None:
        try:
            return load_gpu(args.gpu)
        except CardError as exc:
            raise UsageError(f"--gpu: {exc}") from None
    name = device_name.lower().replace(" ", "")
    match = [g for g in shipped() if device == "cuda" and g.lower() in name]
    if not match:
        raise UsageError(f"--compare-card: name the GPU card with --gpu ({', '.join(shipped())}); "
                         f"none matches the device {device_name!r}")
    return load_gpu(max(match, key=len))


def _card_seconds(card, gpu, lengths: list[int]) -> list[float]:
    """The roofline's kernel time of `card` on one `gpu` (TP1, bf16 GEMMs, the measured KV
    dtype where the card has one): what one device of that GPU would take without a serving
    stack's overhead."""
    from emulator.cards.kernel import kernel_seconds, resolve_setup

    setup = resolve_setup(card, gpu, 1, tp=1, ep=1, dtype="bf16", kv_dtype="bf16")
    return [float(kernel_seconds(card.with_kv_dtype("bf16"), gpu, setup, n)) for n in lengths]


def _config_table(prof, card_times: list[float] | None, gpu_name: str):  # -> rich Table
    from rich.table import Table

    t = Table(title=f"{prof.arch.name}: batch-1 prefill on {prof.where()}, "
                    f"two depths {prof.depths[0]},{prof.depths[1]} per layer kind, "
                    f"median of {prof.repeats} after {prof.warmup} warm-up(s)")
    cols = ["tokens", "T_prefill", "S_kv", "Phi_kv"]
    if card_times is not None:
        cols += [f"roofline {gpu_name}", "measured/roofline"]
    for col in cols:
        t.add_column(col, justify="right")
    for i, p in enumerate(prof.points):
        row = [f"{p.length:,}", _fmt_s(p.seconds), _fmt_b(p.kv_bytes),
               f"{p.kv_bytes * 8 / p.seconds / 1e9:.3f} Gbps"]
        if card_times is not None:
            row += [_fmt_s(card_times[i]), f"{p.seconds / card_times[i]:.2f}x"]
        t.add_row(*row)
    return t


def _run_config(args: argparse.Namespace) -> int:
    """--config: a published architecture measured by two depths per layer kind."""
    from emulator.cards.model_card import load_card

    if args.model is not None or args.compare is not None or args.compare_out is not None:
        flag = "--model" if args.model is not None else "--compare" if args.compare is not None \
            else "--compare-out"
        raise UsageError(f"{flag}: not with --config (it profiles the config's architecture)")
    if args.dtype is not None and args.dtype not in CONFIG_DTYPES:
        raise UsageError(f"--dtype: must be one of {', '.join(CONFIG_DTYPES)}, got {args.dtype!r}")
    if args.gpu is not None and not args.compare_card:
        raise UsageError("--gpu: names the card --compare-card reads; add --compare-card")
    lengths, repeats, warmup, seed, threads = _common(args)
    depths = _depths(args.depths) if args.depths is not None else (1, 2)
    out = _out_path("--out", args.out)
    try:
        card = load_card(args.config)
    except CardError as exc:
        raise UsageError(f"--config: {exc}") from None

    from emulator.torch_prefill.architecture import architecture
    from emulator.torch_prefill.depth import SCALING, device_name, profile_config, profile_document
    from emulator.torch_prefill.models import resolve_device

    try:
        architecture(card)
        dev = resolve_device(args.device)
    except CardError as exc:
        raise UsageError(f"--config: {exc}") from None
    except (ValueError, RuntimeError) as exc:
        raise UsageError(f"--device: {exc}") from None
    on = device_name(dev)
    gpu = _gpu_card(args, dev.type, on) if args.compare_card else None
    dtype = args.dtype or ("bf16" if dev.type == "cuda" else "fp32")
    console = make_console()
    why = "" if args.dtype else (" (the default on a GPU)" if dev.type == "cuda"
                                 else " (the default on a CPU, where bf16 matmuls are slow)")
    console.print(f"profiling {card.name} from {args.config} on {on} in {dtype}{why} "
                  f"at {args.lengths} tokens ...", style="dim", highlight=False)
    prof = profile_config(card, lengths, device=str(dev), dtype=dtype, depths=depths,
                          repeats=repeats, warmup=warmup, seed=seed, threads=threads,
                          progress=lambda m: console.print(f"  {m}", style="dim", highlight=False))
    card_times = _card_seconds(card, gpu, lengths) if gpu is not None else None
    console.print(_config_table(prof, card_times, gpu.name if gpu else ""))
    console.print(f"S_kv from the returned cache equals the card's per-layer model ({dtype} KV); "
                  f"{SCALING}.", highlight=False)
    if prof.upper_bound:
        console.print(f"UPPER BOUND: {prof.upper_bound}", style="bold yellow", highlight=False)
    if gpu is not None and dev.type != "cuda":
        console.print(f"note: measured on {on}, compared with the {gpu.name} card",
                      style="yellow", highlight=False)
    if out is not None:
        try:
            extra = {} if gpu is None else {
                "roofline_gpu": gpu.name,
                "roofline_kernel_seconds": [float(f"{t:.6g}") for t in card_times]}
            out.write_text(profile_document(prof, extra), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--out: cannot write {out}: {exc.strerror}") from None
        console.print(f"wrote {out} (profile {prof.name!r})", highlight=False)
    return 0


def main(args: argparse.Namespace | Sequence[str] | None = None) -> int:
    """Run `profile`; returns the exit status (2: bad input or torch missing, 1: failed run)."""
    if not isinstance(args, argparse.Namespace):
        from prfaas_tui.cli import OneLineParser

        parser = OneLineParser(prog=f"{PROG} profile")
        _add_arguments(parser)
        args = parser.parse_args(args)
    try:
        return _run(args)
    except (UsageError, torch_prefill.TorchUnavailable, TraceError, CardError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.filename is None:
            return _failed(exc)
        print(f"{PROG}: {os_error_text(exc)}", file=sys.stderr)  # a path the user named
        return 2
    except (RuntimeError, MemoryError) as exc:  # e.g. CUDA out of memory
        return _failed(exc)


def _failed(exc: BaseException) -> int:
    """A run that failed on this machine (not the input): its first line, exit 1."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    print(f"{PROG}: profile failed: {first}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
