"""Scenarios: loading preset TOML files (by name or path) into a model `System` plus the
emulator's settings, validating every key on the way.

Shipped presets live in the top-level `presets/` folder (installed as `emulator/_presets`).
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np

from emulator.files import FileRefused, checked
from emulator.model import System
from emulator.profiles import BEYOND_RULES, LIMITS, Curve, Profile
from emulator.scenario.decode import parse_pair_decode
from emulator.scenario.incidents import count_problem, site_count_problem, target_problem
from emulator.scenario.knobs import KNOBS
from emulator.scenario.lengths import MAX_TOKENS, parse_lengths
from emulator.scenario.prefill import Batching, budget_check, parse_batching
from emulator.scenario.reader import (
    PresetError,
    Reader,
    a_price,
    at_most,
    default_of,
    one_of,
    positive,
    read_fields,
    read_toml,
)
from emulator.scenario.scenario import Scenario, as_pair, check_knobs
from emulator.scenario.sim import parse_sim_config
from emulator.scenario.topology import (
    declares_topology,
    parse_topology,
    read_instances,
    read_transport,
    replay_problem,
)
from emulator.scenario.topology import profile_ref as named_profile
from emulator.topology.transport import goodput
from emulator.units import (
    finite,
    parse_bytes,
    parse_duration,
    parse_tokens,
)

MAX_TIME_SCALE = 1e6  # a derived profile at most a million times slower than its parent
MAX_TIME_OFFSET = 86_400.0  # ... and offset by at most a day of prefill time


def presets_dir() -> Path:
    """The source tree's presets/ in a checkout, else the copy shipped inside the package."""
    package = Path(__file__).resolve().parent.parent  # emulator/
    for cand in (package.parent / "presets", package / "_presets"):
        if cand.is_dir():
            return cand
    return package.parent / "presets"


def resolve(name_or_path: str) -> Path:
    """A preset by name (presets/NAME.toml) or by path. Drills (presets/drills/) overlay a
    preset with incidents and expectations; they load through emulator.sim.runs.drills."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists() or "/" in name_or_path:
        try:
            return checked(p, "preset")
        except FileRefused as exc:
            raise PresetError(p, "", "no such preset file" if not p.exists() and not p.is_symlink()
                              else exc.message) from None
    base = presets_dir()
    cand = base / f"{name_or_path}.toml"
    if cand.is_file():
        return cand
    known = ", ".join(sorted(q.stem for q in base.glob("*.toml")))
    hint = ("; it is a drill: prfaas-tui drill " + name_or_path
            if (base / "drills" / f"{name_or_path}.toml").is_file() else "")
    raise PresetError(name_or_path, "", f"no preset of that name (shipped: {known}){hint}")


def list_presets(*, topology: bool = True) -> list[tuple[str, str, Path]]:
    """(name, description, path) of the shipped presets (drills excluded); without
    `topology`, only single-pair ones (what the dashboard and `run` can load)."""
    out = []
    for p in sorted(presets_dir().glob("*.toml")):
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
            desc = str(data.get("description", ""))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            data, desc = {}, f"(unreadable: {exc})"
        if topology or not declares_topology(data):
            out.append((p.stem, desc, p))
    return out


TOPOLOGY_REFUSED = ("declares a topology ([[site]], [[region]], [[link]]): this command runs "
                    "single-pair presets ([deployment]) only; prfaas-tui solve reads topologies")


def load(name_or_path: str | Path, *, topology: bool = False) -> Scenario:
    """A preset by name or path. A topology preset loads only for a caller that reads
    `Scenario.topology` (`topology=True`); for the rest it is a one-line PresetError."""
    path = resolve(str(name_or_path))
    return from_dict(read_toml(path), path, topology=topology)


def from_dict(data: dict, path: str | Path | None = None, *, topology: bool = False) -> Scenario:
    if declares_topology(data):
        if not topology:
            raise PresetError(path, "", TOPOLOGY_REFUSED)
        return _topology_scenario(data, path)
    root = Reader(data, path)
    name = root.get("name", str, Path(path).stem if path else "scenario")
    top = read_fields(Scenario, root)  # description, mode
    base_dir = Path(path).parent if path else Path.cwd()

    fits: dict[str, object] = {}  # card-made profiles: their memory check, run once lengths are known
    cards: dict[str, tuple] = {}  # ... and their (model, gpu, setup), for a decode from the cards
    profiles = _profiles(root.section("profiles", required=True), base_dir, fits, cards,
                         parse_batching(root))
    dep = root.section("deployment", required=True)
    par = dep.get("parallelism", int, default_of(System, "parallelism"), check=positive)

    def instances(r: Reader, key: str, gpus_key: str) -> int:
        return read_instances(r, key, gpus_key, par)

    def profile_ref(r: Reader, key: str, default: str | None = None) -> Profile:
        return named_profile(r, key, profiles, default)

    first = next(iter(profiles))
    prfaas_prof = profile_ref(dep, "prfaas_profile", first)
    local_prof = profile_ref(dep, "local_profile", first)
    n_prfaas = instances(dep, "n_prfaas", "prfaas_gpus")
    pool = instances(dep, "local_pool", "local_gpus")
    bandwidth = _knob(dep, "bandwidth")
    top |= read_fields(Scenario, dep, "deployment")  # rdma_bandwidth
    n_p, n_d, t = _knob(dep, "n_p"), _knob(dep, "n_d"), _knob(dep, "t")

    dec = root.section("decode", required=True)
    work = root.section("workload", required=True)
    lengths = parse_lengths(work.section("lengths", required=True), base_dir)
    local_name = next(k for k, v in profiles.items() if v is local_prof)
    decode, card_step = parse_pair_decode(dec, cards.get(local_name), lengths.mean)
    sim = parse_sim_config(root, work, dec, base_dir, lengths)
    if card_step is not None:
        if sim.step is not None:
            raise dec.error("step", 'a step profile and from = "cards" both say how long a step '
                            "lasts: keep one")
        sim = replace(sim, step=card_step)
    # the pair's link: its round trip is [emulator] link_latency; its bandwidth, the goodput
    transport = read_transport(dep, bandwidth, sim.link_latency, "[emulator] link_latency")
    line = bandwidth if transport is not None else None
    if transport is not None:
        bandwidth = goodput(bandwidth, sim.link_latency, transport).bytes_per_s
    dep.finish()
    _check_targets(root, sim.incidents, ("prfaas",), ("pd",), ("prfaas->pd",), pair=True)
    for i, inc in enumerate(sim.incidents):  # a drill must not claim more than there are
        if msg := count_problem(inc, n_prfaas, pool):
            raise root.error(f"incidents[{i}].count", msg)
    work.finish()
    dec.finish()

    lo, hi = lengths.support
    grid = np.linspace(max(lo, 1.0), hi, 64)
    for pname, prof in profiles.items():
        if prof in (prfaas_prof, local_prof) and (msg := prof.check_range(grid)):
            raise PresetError(path, f"profiles.{pname}", msg)
    for pname, fit in fits.items():  # the longest request the workload can send must fit
        if (msg := fit(hi)) is not None:
            raise PresetError(path, f"profiles.{pname}.roofline.model", msg)

    homo_pool, homo_prof = _homogeneous(root, profiles, local_prof, par, grid)
    price_pf, price_local = default_of(System, "price_prfaas"), default_of(System, "price_local")
    if (pr := root.section("prices")) is not None:
        price_pf = pr.get("prfaas_instance_hour", float, price_pf, check=a_price)
        price_local = pr.get("local_instance_hour", float, price_local, check=a_price)
        pr.finish()

    system = System(prfaas=prfaas_prof, local=local_prof, lengths=lengths, decode=decode,
                    n_prfaas=n_prfaas, local_pool=pool, bandwidth=bandwidth, parallelism=par,
                    homogeneous_pool=homo_pool, homogeneous_profile=homo_prof,
                    price_prfaas=price_pf, price_local=price_local)
    root.finish()
    sc = Scenario(name=name, path=str(path) if path else None, system=system, t=t, n_p=n_p,
                  n_d=n_d, profiles=profiles, sim=sim, source=data,
                  transport=transport, line_bandwidth=line, **top)
    check_knobs(sc)
    return sc


def _homogeneous(root: Reader, profiles: dict[str, Profile], local: Profile, par: int,
                 grid: np.ndarray) -> tuple[int, Profile | None]:
    """The [homogeneous] baseline's pool and profile (default: the local one), or none."""
    if (h := root.section("homogeneous")) is None:
        return default_of(System, "homogeneous_pool"), None
    pool = read_instances(h, "pool", "gpus", par)
    prof = named_profile(h, "profile", profiles, next(k for k, v in profiles.items() if v is local))
    if msg := prof.check_range(grid):
        raise h.error("profile", msg)
    h.finish()
    return pool, prof


def _knob(dep: Reader, name: str):
    """A [deployment] knob through the registry: its parse and its static range (the
    deployment's bounds are `check_knobs`')."""
    k = KNOBS[name]
    return dep.get(k.key.split(".")[-1], int if k.whole else k.parse, check=k.problem)


def _topology_scenario(data: dict, path: str | Path | None) -> Scenario:
    """A preset of sites, regions and links: its `Scenario.topology` is what it declares; its
    `system` and knobs are the first region's single-pair view (with its first linked site)."""
    root = Reader(data, path)
    name = root.get("name", str, Path(path).stem if path else "scenario")
    top = read_fields(Scenario, root)  # description, mode
    base_dir = Path(path).parent if path else Path.cwd()
    cards: dict[str, tuple] = {}  # roofline profiles' (model, gpu, setup): a region's decode
    profiles = _profiles(root.section("profiles", required=True), base_dir, cards=cards,
                         batching=parse_batching(root))
    if root.has("deployment"):
        raise root.error("deployment", "a topology preset has no [deployment]: its sites, "
                         "regions and links are [[site]], [[region]] and [[link]] tables")
    dec = root.section("decode", required=True)
    work = root.section("workload", required=True)
    lengths = parse_lengths(ls, base_dir) if (ls := work.section("lengths")) is not None else None
    topo = parse_topology(root, profiles, dec, lengths, base_dir, cards)
    sim = parse_sim_config(root, work, dec, base_dir, lengths)
    if sim.step is not None and any(r.step is not None for r in topo.regions):
        raise dec.error("step", 'a step profile and from = "cards" both say how long a step '
                        "lasts: keep one")
    if (why := replay_problem(topo, sim)) is not None:
        raise work.error("sessions", why)
    one = topo.is_pair  # a 1x1 topology is the pair: its replay and baseline are the pair's
    if sim.replay is not None and not one:
        raise work.error("replay", f"a topology of {len(topo.regions)} regions replays per "
                         "region: move it to that region's [region.workload] replay (a 1x1 "
                         "topology replays it as the pair)")
    if root.has("homogeneous") and not one:
        raise root.error("homogeneous", "a baseline of the single pair: a topology of "
                         f"{len(topo.regions)} regions has none (a 1x1 topology may)")
    _check_targets(root, sim.incidents, tuple(s.name for s in topo.sites),
                   tuple(r.name for r in topo.regions), tuple(k.name for k in topo.links),
                   pair=False)
    for i, inc in enumerate(sim.incidents):  # a drill must not claim more than there are
        if msg := site_count_problem(inc, topo):
            raise root.error(f"incidents[{i}].count", msg)
    work.finish()
    dec.finish()
    first = topo.regions[0]
    lo, hi = first.lengths.support
    homo_pool, homo_prof = _homogeneous(root, profiles, first.profile, first.parallelism,
                                        np.linspace(max(lo, 1.0), hi, 64))
    root.finish()
    system = replace(topo.pair_system(first.name), homogeneous_pool=homo_pool,
                     homogeneous_profile=homo_prof)
    sc = Scenario(name=name, path=str(path) if path else None, system=system,
                  t=first.threshold, n_p=first.n_p, n_d=first.n_d, profiles=profiles, sim=sim,
                  source=data, rdma_bandwidth=first.rdma_bandwidth, declared_topology=topo, **top)
    # a top-level replay is the pair's arrivals: the 1x1 that has one loads as the pair
    return as_pair(sc) if sim.replay is not None else sc


def _check_targets(root: Reader, incidents, sites: tuple[str, ...], regions: tuple[str, ...],
                   links: tuple[str, ...], *, pair: bool) -> None:
    """Every incident's site, region or link exists (the pair's: prfaas, pd, prfaas->pd)."""
    for i, inc in enumerate(incidents):
        if (problem := target_problem(inc, sites, regions, links, pair)) is not None:
            raise root.error(f"incidents[{i}].{problem[0]}", problem[1])


def _profiles(sec: Reader, base_dir: Path, fits: dict | None = None,
              cards: dict | None = None, batching: Batching = Batching()
              ) -> dict[str, Profile]:
    out: dict[str, Profile] = {}
    pending = list(sec.data)
    for _ in range(len(pending) + 1):  # derived profiles may name ones defined later
        for pname in list(pending):
            r = sec.section(pname, required=True)
            if r.has("derive"):
                parent = r.get("derive", str)
                if parent == pname:
                    raise r.error("derive", "a profile cannot derive from itself")
                if parent not in sec.data:
                    raise r.error("derive", f"no profile named {parent!r}")
                if parent not in out:
                    continue
                # bounded so that T' = offset + scale * T stays finite: an absurd scale (1e308)
                # overflowed the curve's coefficients to inf, and every time through it
                scale = r.get("time_scale", float, 1.0, check=lambda x: positive(x) or at_most(
                    MAX_TIME_SCALE, f"{MAX_TIME_SCALE:g} x the parent profile")(x))
                offset = r.get("time_offset", parse_duration, 0.0, check=lambda x: (
                    "must be finite" if not finite(x) else None if abs(x) <= MAX_TIME_OFFSET
                    else f"is absurd: more than {MAX_TIME_OFFSET:g} s either way"))
                prof = out[parent].derived(pname, time_scale=scale, time_offset=offset,
                                           description=r.get("description", str, ""))
            elif r.has("roofline"):
                prof = _roofline_profile(r, pname, base_dir, fits if fits is not None else {},
                                         cards if cards is not None else {}, batching)
            else:
                _unbatchable(r, pname, batching)
                prof = _profile_file(r, base_dir) if r.has("file") else _inline_profile(r, pname)
            r.finish()
            out[pname] = prof
            pending.remove(pname)
    if pending:
        raise sec.error(pending[0] + ".derive", "derivation cycle between profiles")
    if not out:
        raise sec.error("", "define at least one profile")
    return out


TABLE_UNBATCHABLE = ("its prefill_time does not split kernel and serving overhead; make it from "
                     "the cards (roofline = {...}) to batch it")


def _unbatchable(r: Reader, pname: str, batching: Batching) -> None:
    """A table profile cannot be batched: one line naming the key that asked."""
    if r.has("token_budget"):
        raise r.error("token_budget", f"a table profile cannot be batched: {TABLE_UNBATCHABLE}")
    if batching.token_budget is not None:
        raise PresetError(r.path, "prefill.token_budget", f"profile {pname!r} is a table and "
                          f"cannot be batched: {TABLE_UNBATCHABLE}")


def _roofline_profile(r: Reader, pname: str, base_dir: Path, fits: dict,
                      cards: dict, batching: Batching = Batching()) -> Profile:
    """`roofline = { model = NAME|config.json, gpu = NAME|card.toml, gpus = 8, tp = 8, ep = 8,
    dtype = "fp8", kv_dtype = "bf16", source = "builtin"|"aiconfigurator" }` with
    `prefill_overhead = "0.39 s"` beside it: a profile from a model card and a GPU card
    (emulator.cards), T = overhead + kernel; paths are relative to the preset. With a token
    budget (`token_budget` beside it, else [prefill]'s) the instance batches and chunks prefill
    (emulator.cards.prefill_batch)."""
    from emulator.cards import CardError
    from emulator.cards.gpu import load_gpu
    from emulator.cards.kernel import DTYPES
    from emulator.cards.memory import check_memory
    from emulator.cards.model_card import load_card
    from emulator.cards.prefill_batch import batched_profile, budget_problem, context_of
    from emulator.cards.roofline import DEFAULT_OVERHEAD_S
    from emulator.cards.sources import PROFILE_SOURCES, card_profile

    c = r.section("roofline", required=True)

    def ref(key: str) -> str:
        v = c.get(key, str)
        return str(base_dir / v) if ("/" in v or v.endswith((".json", ".toml"))) and \
            not Path(v).is_absolute() else v

    loaded = {}
    for key, loader in (("model", load_card), ("gpu", load_gpu)):
        try:
            loaded[key] = loader(ref(key))
        except CardError as exc:
            raise c.error(key, str(exc)) from None
    model, gpu = loaded["model"], loaded["gpu"]
    gpus = c.get("gpus", int, 8, check=lambda x: positive(x) or at_most(4096, "4096 GPUs")(x))
    degree = {k: c.get(k, int, None, check=lambda x: positive(x) or at_most(4096, "4096 GPUs")(x))
              for k in ("tp", "ep")}
    dtypes = {"dtype": c.get("dtype", str, None, check=lambda x: None if x in DTYPES
                             else f"must be one of {', '.join(DTYPES)}"),
              "kv_dtype": c.get("kv_dtype", str, None, check=lambda x: None if x in ("bf16", "fp8")
                                else "must be bf16 or fp8")}
    source = c.get("source", str, "builtin", check=lambda x: None if x in PROFILE_SOURCES else
                   "must be " + " or ".join(PROFILE_SOURCES))
    overhead = r.get("prefill_overhead", parse_duration, DEFAULT_OVERHEAD_S,
                     check=lambda x: None if 0 <= x <= 60 else "must be between 0 and 60 s")
    budget = r.get("token_budget", parse_tokens, batching.token_budget, check=budget_check)
    if budget is not None:  # before the kernel source is asked: its own errors would come first
        def refuse(msg: str) -> PresetError:
            return r.error("token_budget", msg) if r.has("token_budget") else \
                PresetError(r.path, "prefill.token_budget", f"profile {pname!r}: {msg}")
        if source != "builtin":
            raise refuse("batching needs the built-in kernel model (roofline source = "
                         "\"builtin\"): aiconfigurator's adapter asks for one request at a time")
        if msg := budget_problem(budget, context_of(model)):
            raise refuse(msg)
    try:
        prof, setup, _ = card_profile(model, gpu, gpus, **degree, **dtypes, overhead_s=overhead,
                                      profile_source=source, name=pname)
    except CardError as exc:
        key = {"--tp": "tp", "--ep": "ep", "--dtype": "dtype", "--kv-dtype": "kv_dtype"}.get(exc.key)
        raise c.error(key or "model", exc.message if key else str(exc)) from None
    c.finish()
    if budget is not None:
        prof = batched_profile(model, gpu, setup, budget, batching.overhead, pname)

    def fit(longest: float) -> str | None:
        try:
            check_memory(model, gpu, setup, longest)
        except CardError as exc:
            return exc.message
        return None

    fits[pname] = fit
    cards[pname] = (model, gpu, setup)
    return replace(prof, description=r.get("description", str, "") or prof.description)


def _inline_profile(r: Reader, pname: str) -> Profile:
    return Profile(pname, _curve(r, "prefill_time", "seconds", parse_duration),
                   _curve(r, "kv_size", "bytes", parse_bytes), r.get("description", str, ""))


def _profile_file(r: Reader, base_dir: Path) -> Profile:
    p = Path(r.get("file", str))
    p = p if p.is_absolute() else base_dir / p
    if not p.is_file():
        raise r.error("file", f"cannot read profile file {p}")
    root = Reader(read_toml(p), p)
    sec = root.section("profile", required=True)
    prof = _inline_profile(sec, sec.get("name", str, p.stem))
    sec.get("source", str, "")
    sec.get("upper_bound", bool, False)  # a measured profile whose kernels were slower
    sec.get("upper_bound_reason", str, "")
    measured = sec.section("measured")  # what was measured, on what and how: for people
    if measured is not None:
        measured.used.update(measured.data)
    sec.finish()
    root.finish()
    return prof


def _curve(r: Reader, key: str, values_key: str, conv) -> Curve:
    c = r.section(key, required=True)
    if c.has("lengths"):
        xs = c.raw("lengths")
        ys = c.raw(values_key)
        beyond = c.get("beyond", str, "linear", check=one_of(*BEYOND_RULES))
        if not isinstance(xs, list) or not isinstance(ys, list) or len(xs) != len(ys) or not xs:
            raise c.error(values_key, "lengths and values must be lists of the same, non-zero length")
        try:
            lx = [parse_tokens(x) for x in xs]
            ly = [conv(y) for y in ys]
        except ValueError as exc:
            raise c.error(values_key, str(exc)) from None
        limit, unit = LIMITS[key]
        if any(not 0 < y <= limit for y in ly):
            raise c.error(values_key, f"every value must be > 0 and at most {limit:g} {unit}")
        if any(x <= 0 or x > MAX_TOKENS for x in lx):
            raise c.error("lengths", "every length must be in (0, 16M] tokens")
        try:
            curve = Curve.table(lx, ly, beyond)
        except ValueError as exc:
            raise c.error("lengths", str(exc)) from None
    else:
        a = c.get("a", conv, 0.0)
        b = c.get("b", float, 0.0)
        cc = c.get("c", float, 0.0)
        if a == b == cc == 0:
            raise c.error("", f"give a table (lengths, {values_key}) or a form (a, b, c)")
        curve = Curve.poly(a, b, cc)
    c.finish()
    return curve
