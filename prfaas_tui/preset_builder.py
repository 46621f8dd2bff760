"""Building a preset for one's own model, GPUs and traffic (what `prfaas-tui new` and the
dashboard's `n` form both do): roofline profiles that name the model and GPU cards, a length
law or a trace, and the model's optimum as the initial knobs, written as commented TOML.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from emulator.cards import CardError
from emulator.cards.decode import bs_max as decode_bs_max
from emulator.cards.gpu import load_gpu
from emulator.cards.memory import check_memory
from emulator.cards.model_card import load_card
from emulator.cards.roofline import DEFAULT_OVERHEAD_S, DEFAULT_OVERHEAD_SOURCE
from emulator.cards.sources import card_profile
from emulator.files import file_stem
from emulator.optimizer import paradigms, search
from emulator.scenario import presets
from emulator.scenario.decode import SOURCES as DECODE_SOURCES
from emulator.scenario.decode import context_problem
from emulator.scenario.knobs import KNOBS, TPOT
from emulator.scenario.lengths import parse_lengths
from emulator.scenario.reader import Reader, positive
from emulator.topology.load import no_local_prefill_warning
from emulator.trace_formats import read_workload
from emulator.units import parse_duration, parse_tokens, to_gbps
from prfaas_tui.errors import UsageError, parse_flag


@dataclass
class NewSpec:
    """Everything `new` needs; the CLI and the dashboard form both fill one."""

    model: str
    prefill_gpu: str = "h200"
    local_gpu: str = "h20"
    parallelism: int = 8
    prfaas_gpus: int = 32
    local_gpus: int = 64
    homogeneous_gpus: int | None = None  # default: prfaas_gpus + local_gpus of the local GPU
    bandwidth: str = "100 Gbps"
    lengths: str | None = "lognormal:9.9,1.0"  # lognormal:MU,SIGMA[,LO,HI]
    trace: str | None = None
    columns: str | None = None
    incremental: bool = False
    t_decode: str | None = None  # default: the step at BS_max, from the cards
    bs_max: int | None = None  # default: the SLO- or memory-bound batch, from the cards
    tpot: str = "25 ms"  # the TPOT SLO that bounds the derived batch
    decode: str = "constants"  # "cards": the preset says from = "cards" (derived on load)
    l_out: float | None = None  # default 1024, or the trace's mean output
    name: str | None = None
    tp: int | None = None  # default: parallelism
    ep: int | None = None  # default: parallelism for an MoE model, else 1
    dtype: str | None = None  # default: the checkpoint's
    kv_dtype: str | None = None
    overhead_s: float = DEFAULT_OVERHEAD_S
    profile_source: str = "builtin"


def _lognormal(raw: str) -> dict:
    """'lognormal:MU,SIGMA[,LO,HI]' -> the preset's lengths table."""
    kind, _, rest = raw.partition(":")
    if kind.strip() != "lognormal" or not rest:
        raise UsageError(f"--lengths: expected lognormal:MU,SIGMA[,LO,HI], got {raw!r}")
    parts = [x.strip() for x in rest.split(",")]
    if len(parts) not in (2, 4):
        raise UsageError(f"--lengths: expected 2 or 4 numbers after 'lognormal:', got {raw!r}")
    mu = parse_flag("--lengths", float, parts[0])
    sigma = parse_flag("--lengths", float, parts[1], positive)
    lo = parse_flag("--lengths", parse_tokens, parts[2], positive) if len(parts) == 4 else 128
    hi = parse_flag("--lengths", parse_tokens, parts[3], positive) if len(parts) == 4 else 131072
    if not (abs(mu) < 50 and lo < hi):
        raise UsageError(f"--lengths: need |MU| < 50 and LO < HI, got {raw!r}")
    return {"kind": "lognormal", "mu": mu, "sigma": sigma, "lo": int(lo), "hi": int(hi)}


def _ref(value: str, out_dir: Path) -> str:
    """A card name stays a name; a path is written relative to the preset (absolute if that is
    impossible), since the preset resolves it from its own folder."""
    p = Path(value)
    if not (p.suffix in (".json", ".toml") or "/" in value or p.exists()):
        return value
    try:
        return os.path.relpath(p.resolve(), out_dir.resolve())
    except ValueError:
        return str(p.resolve())


def build_preset(spec: NewSpec, out: Path) -> tomlkit.TOMLDocument:
    """The commented preset document (not yet written); every input checked on the way."""
    model = load_card(spec.model)
    pf_gpu, lc_gpu = load_gpu(spec.prefill_gpu), load_gpu(spec.local_gpu)
    par = spec.parallelism
    for flag, n in (("--prfaas-gpus", spec.prfaas_gpus), ("--local-gpus", spec.local_gpus)):
        if n <= 0 or n % par:
            raise UsageError(f"{flag}: {n} GPUs is not a positive whole number of {par}-GPU instances")
    if not 0 < par <= 4096:
        raise UsageError(f"--parallelism: must be between 1 and 4096 (got {par})")
    homo = spec.homogeneous_gpus if spec.homogeneous_gpus is not None else spec.prfaas_gpus + spec.local_gpus
    if homo < 0 or homo % par:
        raise UsageError(f"--homogeneous-gpus: {homo} GPUs is not a whole number of {par}-GPU instances")
    bw_knob = KNOBS["bandwidth"]  # the knob's one rule, so the preset written loads
    bw = parse_flag("--bandwidth", bw_knob.parse, spec.bandwidth, bw_knob.problem)
    if spec.t_decode is not None:
        parse_flag("--t-decode", parse_duration, spec.t_decode, positive)
    if spec.bs_max is not None and spec.bs_max <= 0:
        raise UsageError(f"--bs-max: must be > 0 (got {spec.bs_max})")
    tpot = parse_flag(TPOT.flag, TPOT.parse, spec.tpot)  # the knob's one rule
    if spec.decode not in DECODE_SOURCES:
        raise UsageError(f"--decode: must be {' or '.join(DECODE_SOURCES)}, got {spec.decode!r}")
    if spec.decode == "cards" and (spec.t_decode is not None or spec.bs_max is not None):
        raise UsageError("--decode cards: derives t_decode and bs_max on load; drop "
                         + ("--t-decode" if spec.t_decode is not None else "--bs-max"))
    out_dir = out.parent
    name = spec.name or f"{model.name}-{pf_gpu.name}-{lc_gpu.name}"

    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Written by `prfaas-tui new` for {model.name}: {pf_gpu.name} PrfaaS -> "
                            f"{lc_gpu.name} local PD. Edit freely; every key is checked on load."))
    doc["name"] = name
    doc["description"] = (f"{model.name}: {spec.prfaas_gpus} {pf_gpu.name} PrfaaS + {spec.local_gpus} "
                          f"{lc_gpu.name} local, {to_gbps(bw):g} Gbps")
    doc["mode"] = "paper"
    doc.add(tomlkit.nl())

    if spec.trace:
        wl = read_workload(spec.trace, spec.columns, spec.incremental)
        # the preset names the trace (read the same way on load), never copies its samples:
        # a copy made `new` superlinear in rows and the preset as large as the trace
        lengths = {"kind": "empirical", "trace": _ref(spec.trace, out_dir)}
        if spec.columns:
            lengths["columns"] = spec.columns
        if spec.incremental:
            lengths["incremental"] = True
        rate = wl.rate
        l_out = spec.l_out if spec.l_out is not None else (wl.mean_output if wl.mean_output > 0 else 1024)
    else:
        lengths = _lognormal(spec.lengths or "lognormal:9.9,1.0")
        rate, l_out = None, spec.l_out if spec.l_out is not None else 1024

    longest = float(max(lengths["samples"])) if "samples" in lengths else \
        float(lengths.get("hi", 131072)) if "trace" not in lengths else float(wl.lengths.sorted_values[-1])
    profiles = tomlkit.table(is_super_table=True)
    setups = {}
    for key, gpu, src in (("prfaas", pf_gpu, spec.prefill_gpu), ("local", lc_gpu, spec.local_gpu)):
        _, setup, _ = card_profile(model, gpu, par, tp=spec.tp, ep=spec.ep, dtype=spec.dtype,
                                   kv_dtype=spec.kv_dtype, overhead_s=spec.overhead_s,
                                   profile_source=spec.profile_source)
        check_memory(model, gpu, setup, longest)
        setups[key] = setup
        t = tomlkit.table()
        t.add(tomlkit.comment(f"T_prefill = prefill_overhead + kernel on {par} x {gpu.name} "
                              f"({setup.describe()}; kernel: {spec.profile_source})"))
        t.add(tomlkit.comment(f"{gpu.name} efficiencies: {gpu.calibration.source}"
                              + ("" if gpu.calibrated else " [UNCALIBRATED GPU]")))
        rl = tomlkit.inline_table()
        rl.update({"model": _ref(spec.model, out_dir), "gpu": _ref(src, out_dir), "gpus": par,
                   "tp": setup.tp, "ep": setup.ep, "dtype": setup.dtype, "kv_dtype": setup.kv_dtype})
        if spec.profile_source != "builtin":
            rl["source"] = spec.profile_source
        t["roofline"] = rl
        t["prefill_overhead"] = f"{setup.overhead_s:g} s"
        if spec.overhead_s == DEFAULT_OVERHEAD_S:
            t["prefill_overhead"].comment(f"default, {DEFAULT_OVERHEAD_SOURCE}")
        profiles[key] = t
    doc["profiles"] = profiles

    # placeholder knobs, replaced below by the optimum
    dep = tomlkit.table()
    dep.update({"prfaas_profile": "prfaas", "local_profile": "local", "parallelism": par,
                "prfaas_gpus": spec.prfaas_gpus, "local_gpus": spec.local_gpus,
                "n_p": 1, "n_d": spec.local_gpus // par - 1, "threshold": 0,
                "bandwidth": f"{to_gbps(bw):g} Gbps", "rdma_bandwidth": "800 Gbps"})
    doc["deployment"] = dep
    mean_in = wl.lengths.mean if spec.trace else \
        parse_lengths(Reader(lengths, out, "workload.lengths"), out_dir).mean
    doc["decode"] = _decode_table(spec, model, lc_gpu, setups["local"], mean_in + l_out / 2,
                                  tpot, float(l_out))
    work = tomlkit.table()
    lt = tomlkit.inline_table()
    lt.update(lengths)
    work["lengths"] = lt
    work["arrival"] = "poisson"
    if rate is not None and rate > 0:
        work.add(tomlkit.comment(f"the trace's own arrival rate ({Path(spec.trace).name})"))
        work["rate"] = round(float(rate), 6)
    else:
        if spec.trace:
            work.add(tomlkit.comment(f"{Path(spec.trace).name} has no arrival rate (one request, "
                                     "or all at one instant): load 0.9 of the optimum instead"))
        work["load"] = 0.9
    doc["workload"] = work
    homo_t = tomlkit.table()
    homo_t.add(tomlkit.comment("the baseline: this many local-type GPUs and no PrfaaS (default: both clusters' count)"))
    homo_t.update({"gpus": homo, "profile": "local"})
    if homo:
        doc["homogeneous"] = homo_t
    prices = tomlkit.table()
    prices.add(tomlkit.comment("from the GPU cards' price_per_hour x parallelism: edit the cards"))
    prices.update({"prfaas_instance_hour": round(pf_gpu.price_per_hour * par, 4),
                   "local_instance_hour": round(lc_gpu.price_per_hour * par, 4)})
    doc["prices"] = prices
    return doc


def _decode_table(spec: NewSpec, model, gpu, setup, context: float, tpot: float,
                  l_out: float) -> tomlkit.items.Table:
    """[decode] from the cards: BS_max at the workload's mean decode context and the TPOT SLO,
    t_decode the step at that batch (emulator.cards.decode); --t-decode / --bs-max override."""
    dec = tomlkit.table()
    dec.add(tomlkit.comment("decode at the SLO: step time, batch size, mean output tokens"))
    if spec.t_decode is None or spec.bs_max is None:
        if (msg := context_problem(model, context)) is not None:  # no step to derive there
            flag = "--l-out" if spec.l_out is not None else "--trace" if spec.trace else "--lengths"
            raise UsageError(f"{flag}: {msg}")
        try:
            lim = decode_bs_max(model, gpu, setup, context, tpot)
        except CardError as exc:
            flag = {"hbm_gb": "--local-gpu", "--tpot": "--tpot"}.get(exc.key, "--local-gpu")
            raise UsageError(f"{flag}: {exc.message} (or give --t-decode and --bs-max)") from None
        mark = " [UNCALIBRATED GPU]" if not gpu.calibrated else ""
        dec.add(tomlkit.comment(
            f"derived from the cards{mark}: {model.name} on {setup.gpus} x {gpu.name} "
            f"({setup.describe().split(', overhead')[0]}) at the mean decode context "
            f"{context:,.0f} tokens (input mean + l_out/2)"))
        dec.add(tomlkit.comment(
            f"BS_max {lim.batch} ({lim.binds} binds: TPOT SLO {tpot * 1e3:g} ms, KV+state fit "
            f"{lim.memory_batch} requests); t_decode = T_step(BS_max) = max(weights + KV, "
            f"compute) + comm + overhead = {lim.step.step_s * 1e3:.2f} ms (weights "
            f"{lim.step.weights_s * 1e3:.2f}, KV {lim.step.kv_s * 1e3:.2f}, compute "
            f"{lim.step.compute_s * 1e3:.2f}, comm {lim.step.comm_s * 1e3:.2f}, overhead "
            f"{lim.step.overhead_s * 1e3:.2f} ms); docs/cards.md"))
    if spec.decode == "cards":  # derived again on load, so an edited card changes the answer
        dec.add(tomlkit.comment("from the local profile's cards on load; the emulator steps at "
                                "T_step(batch, context): docs/decode.md"))
        dec.update({"from": "cards", "tpot": spec.tpot, "l_out": l_out})
        return dec
    t_decode = spec.t_decode if spec.t_decode is not None else f"{lim.step.step_s * 1e3:.4g} ms"
    bs = spec.bs_max if spec.bs_max is not None else lim.batch
    dec.update({"t_decode": t_decode, "bs_max": bs, "l_out": l_out})
    if spec.t_decode is not None:
        dec["t_decode"].comment("--t-decode")
    if spec.bs_max is not None:
        dec["bs_max"].comment("--bs-max")
    return dec


def set_optimum(doc: tomlkit.TOMLDocument, out: Path) -> dict:
    """Solve the written preset and put its optimum in as the initial knobs; the answer."""
    sc = presets.from_dict(json.loads(json.dumps(doc.unwrap())), out)
    found = search(sc.system, sc.mode)
    best = found.best
    dep = doc["deployment"]
    dep["threshold"] = int(round(best.knobs.t))
    dep["n_p"], dep["n_d"] = best.knobs.n_p, best.knobs.n_d
    dep["threshold"].comment("the model's optimum (paper mode), from prfaas-tui new")
    return {"scenario": sc.name, "preset": str(out), "optimum": best.to_dict(),
            "paradigms": paradigms(sc.system, sc.mode, best)}


def uncalibrated_notes(answer: dict) -> list[str]:
    """One line per GPU of the answer whose card has no measured efficiencies, and one per
    calibration key its card was written without (new, `n` form)."""
    gpus = answer.get("gpus", {})
    return [f"{role} GPU {g['name']} is uncalibrated: {g['source']}"
            for role, g in gpus.items() if not g["calibrated"]] + \
        [note for g in gpus.values() for note in g.get("notes", ())]


def default_name(spec: NewSpec) -> str:
    """MODEL-PREFILLGPU-LOCALGPU from the cards (their names are checked printable text)."""
    if spec.name is not None:
        if not spec.name.strip() or not spec.name.isprintable() or len(spec.name) > 100:
            raise UsageError(f"--name: expected up to 100 printable characters, got {spec.name!r:.80}")
        return spec.name
    return f"{load_card(spec.model).name}-{load_gpu(spec.prefill_gpu).name}-" \
        f"{load_gpu(spec.local_gpu).name}"


def write_preset(spec: NewSpec, out: Path | None, force: bool = False) -> dict:
    """Build, solve, write; returns the answer (with the path written). Without `out` the file
    is ./STEM.toml, STEM the sanitised name (file_stem): a card's name or --name never chooses
    the folder. An existing file is kept unless `force`."""
    flag = "--out" if out is not None else "--name"
    if out is None:
        out = Path.cwd() / f"{file_stem(default_name(spec), 'preset')}.toml"
    elif spec.name is not None:
        default_name(spec)  # the --name check, whatever the file
    if out.exists() and not force:
        raise UsageError(f"{flag}: {out} exists (pass --force to overwrite)")
    doc = build_preset(spec, out)
    answer = set_optimum(doc, out)
    warning = no_local_prefill_warning(answer["optimum"]["n_p"], answer["preset"])
    answer["no_local_prefill"] = warning is not None
    answer["warnings"] = [f"warning: {warning}"] if warning else []
    answer["gpus"] = {role: {"name": g.name, "calibrated": g.calibrated, "source": g.calibration.source,
                             "notes": g.calibration.notes(g.name)}
                      for role, g in (("prfaas", load_gpu(spec.prefill_gpu)), ("local", load_gpu(spec.local_gpu)))}
    try:
        with out.open("w" if force else "x", encoding="utf-8") as fh:
            fh.write(tomlkit.dumps(doc))
    except FileExistsError:
        raise UsageError(f"{flag}: {out} exists (pass --force to overwrite)") from None
    except OSError as exc:
        raise UsageError(f"--out: cannot write {out}: {exc.strerror}") from None
    presets.load(out)  # what was written must load
    return answer


