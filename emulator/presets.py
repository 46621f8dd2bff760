"""Scenarios: loading preset TOML files (by name or path) into a model `System` plus the
emulator's settings, validating every key on the way.

Shipped presets live in the top-level `presets/` folder (installed as `emulator/_presets`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from emulator.config import PresetError, Reader, at_most, non_negative, one_of, positive
from emulator.lengths_config import MAX_TOKENS, parse_lengths
from emulator.model import MODES, DecodeSpec, Knobs, System
from emulator.profiles import BEYOND_RULES, Curve, Profile
from emulator.sim.config import SimConfig, parse_sim_config
from emulator.units import (
    parse_bandwidth,
    parse_bytes,
    parse_duration,
    parse_tokens,
    to_gbps,
)

MAX_INSTANCES = 100_000
MAX_BANDWIDTH = 1e15  # 8 Pbps


def presets_dir() -> Path:
    """The source tree's presets/ in a checkout, else the copy shipped inside the package."""
    here = Path(__file__).resolve().parent
    for cand in (here.parent / "presets", here / "_presets"):
        if cand.is_dir():
            return cand
    return here.parent / "presets"


@dataclass(frozen=True)
class Scenario:
    """A loaded preset: the model's system, the initial knobs and the emulator's settings."""

    name: str
    description: str
    path: str | None
    system: System
    t: float
    n_p: int
    n_d: int
    mode: str
    profiles: dict[str, Profile]
    rdma_bandwidth: float
    sim: SimConfig
    source: dict = field(default_factory=dict, repr=False)  # the TOML as read, for save-as

    @property
    def knobs(self) -> Knobs:
        return Knobs(t=self.t, n_p=self.n_p, n_d=self.n_d, n_prfaas=self.system.n_prfaas,
                     bandwidth=self.system.bandwidth)

    def with_knobs(self, *, t: float | None = None, n_p: int | None = None,
                   n_d: int | None = None, n_prfaas: int | None = None,
                   bandwidth: float | None = None) -> Scenario:
        """A copy with other knobs, validated like a preset (pool limits, positive values)."""
        system = self.system
        if n_prfaas is not None or bandwidth is not None:
            system = replace(system,
                             n_prfaas=system.n_prfaas if n_prfaas is None else n_prfaas,
                             bandwidth=system.bandwidth if bandwidth is None else bandwidth)
        sc = replace(self, system=system, t=self.t if t is None else t,
                     n_p=self.n_p if n_p is None else n_p, n_d=self.n_d if n_d is None else n_d)
        check_knobs(sc)
        return sc


def check_knobs(sc: Scenario) -> None:
    """Raise PresetError when the knobs are impossible for the deployment."""
    s = sc.system
    if sc.n_p < 0 or sc.n_d < 0:
        raise PresetError(sc.path, "deployment.n_p" if sc.n_p < 0 else "deployment.n_d",
                          f"must be >= 0 (got {min(sc.n_p, sc.n_d)})")
    if sc.n_p + sc.n_d > s.local_pool:
        raise PresetError(sc.path, "deployment.n_p",
                          f"n_p + n_d = {sc.n_p + sc.n_d} exceeds the local pool of {s.local_pool}")
    if s.n_prfaas < 0:
        raise PresetError(sc.path, "deployment.n_prfaas", f"must be >= 0 (got {s.n_prfaas})")
    if not s.bandwidth > 0:
        raise PresetError(sc.path, "deployment.bandwidth", f"must be > 0 (got {to_gbps(s.bandwidth):g} Gbps)")
    if sc.n_d == 0:
        raise PresetError(sc.path, "deployment.n_d", "must be >= 1: every request needs decode")
    lo, hi = s.lengths.support
    if not (0 <= sc.t <= hi):
        raise PresetError(sc.path, "deployment.threshold",
                          f"{sc.t:.0f} tokens lies outside the length distribution's support "
                          f"[{lo:.0f}, {hi:.0f}] (any t from 0 to {hi:.0f} routes)")


def resolve(name_or_path: str) -> Path:
    """A preset by name (presets/NAME.toml) or by path. Drills (presets/drills/) overlay a
    preset with incidents and expectations; they load through emulator.sim.drills."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists() or "/" in name_or_path:
        if not p.is_file():
            raise PresetError(p, "", "no such preset file")
        return p
    base = presets_dir()
    cand = base / f"{name_or_path}.toml"
    if cand.is_file():
        return cand
    known = ", ".join(sorted(q.stem for q in base.glob("*.toml")))
    hint = ("; it is a drill: prfaas-tui drill " + name_or_path
            if (base / "drills" / f"{name_or_path}.toml").is_file() else "")
    raise PresetError(name_or_path, "", f"no preset of that name (shipped: {known}){hint}")


def list_presets() -> list[tuple[str, str, Path]]:
    """(name, description, path) of the shipped presets (drills excluded)."""
    out = []
    for p in sorted(presets_dir().glob("*.toml")):
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
            desc = str(data.get("description", ""))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            desc = f"(unreadable: {exc})"
        out.append((p.stem, desc, p))
    return out


def load(name_or_path: str | Path) -> Scenario:
    path = resolve(str(name_or_path))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PresetError(path, "", f"cannot read: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(path, "", f"malformed TOML: {exc}") from None
    return from_dict(data, path)


def from_dict(data: dict, path: str | Path | None = None) -> Scenario:
    root = Reader(data, path)
    name = root.get("name", str, Path(path).stem if path else "scenario")
    description = root.get("description", str, "")
    mode = root.get("mode", str, "paper", check=one_of(*MODES))
    base_dir = Path(path).parent if path else Path.cwd()

    profiles = _profiles(root.section("profiles", required=True), base_dir)
    dep = root.section("deployment", required=True)
    par = dep.get("parallelism", int, 1, check=positive)

    def instances(r: Reader, key: str, gpus_key: str) -> int:
        if r.has(key) and r.has(gpus_key):
            raise r.error(gpus_key, f"give either {key} or {gpus_key}, not both")
        if r.has(gpus_key):
            gpus = r.get(gpus_key, int, check=non_negative)
            if gpus % par:
                raise r.error(gpus_key, f"{gpus} GPUs is not a whole number of {par}-GPU instances")
            return gpus // par
        if not r.has(key):
            raise r.error(key, f"missing (required; or give {gpus_key})")
        return r.get(key, int, check=lambda x: non_negative(x) or
                     at_most(MAX_INSTANCES, f"{MAX_INSTANCES} instances")(x))

    def profile_ref(r: Reader, key: str, default: str | None = None) -> Profile:
        ref = r.get(key, str, default)
        if ref not in profiles:
            raise r.error(key, f"no profile named {ref!r} (defined: {', '.join(profiles)})")
        return profiles[ref]

    first = next(iter(profiles))
    prfaas_prof = profile_ref(dep, "prfaas_profile", first)
    local_prof = profile_ref(dep, "local_profile", first)
    n_prfaas = instances(dep, "n_prfaas", "prfaas_gpus")
    pool = instances(dep, "local_pool", "local_gpus")
    bandwidth = dep.get("bandwidth", parse_bandwidth, check=lambda x: positive(x) or
                        at_most(MAX_BANDWIDTH, "8 Pbps")(x))
    rdma = dep.get("rdma_bandwidth", parse_bandwidth, "800 Gbps", check=positive)
    n_p = dep.get("n_p", int, check=non_negative)
    n_d = dep.get("n_d", int, check=non_negative)
    t = dep.get("threshold", parse_tokens, check=non_negative)
    dep.finish()

    dec = root.section("decode", required=True)
    decode = DecodeSpec(
        t_decode=dec.get("t_decode", parse_duration, check=lambda x: positive(x) or
                         at_most(60, "a minute per decode step")(x)),
        bs_max=dec.get("bs_max", int, check=lambda x: positive(x) or at_most(1_000_000, "10^6")(x)),
        l_out=dec.get("l_out", parse_tokens, check=lambda x: positive(x) or at_most(MAX_TOKENS, "16M tokens")(x)),
    )
    work = root.section("workload", required=True)
    lengths = parse_lengths(work.section("lengths", required=True), base_dir)
    sim = parse_sim_config(root, work, dec, base_dir, lengths)
    work.finish()
    dec.finish()

    lo, hi = lengths.support
    grid = np.linspace(max(lo, 1.0), hi, 64)
    for pname, prof in profiles.items():
        if prof in (prfaas_prof, local_prof) and (msg := prof.check_positive(grid)):
            raise PresetError(path, f"profiles.{pname}", msg)

    homo_pool, homo_prof = 0, None
    if (h := root.section("homogeneous")) is not None:
        homo_pool = instances(h, "pool", "gpus")
        homo_prof = profile_ref(h, "profile", next(k for k, v in profiles.items() if v is local_prof))
        if msg := homo_prof.check_positive(grid):
            raise h.error("profile", msg)
        h.finish()
    price_pf = price_local = None
    if (pr := root.section("prices")) is not None:
        price_pf = pr.get("prfaas_instance_hour", float, None, check=positive)
        price_local = pr.get("local_instance_hour", float, None, check=positive)
        pr.finish()

    system = System(prfaas=prfaas_prof, local=local_prof, lengths=lengths, decode=decode,
                    n_prfaas=n_prfaas, local_pool=pool, bandwidth=bandwidth, parallelism=par,
                    homogeneous_pool=homo_pool, homogeneous_profile=homo_prof,
                    price_prfaas=price_pf, price_local=price_local)
    root.finish()
    sc = Scenario(name=name, description=description, path=str(path) if path else None,
                  system=system, t=t, n_p=n_p, n_d=n_d, mode=mode, profiles=profiles,
                  rdma_bandwidth=rdma, sim=sim, source=data)
    check_knobs(sc)
    return sc


def _profiles(sec: Reader, base_dir: Path) -> dict[str, Profile]:
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
                scale = r.get("time_scale", float, 1.0, check=positive)
                offset = r.get("time_offset", parse_duration, 0.0)
                prof = out[parent].derived(pname, time_scale=scale, time_offset=offset,
                                           description=r.get("description", str, ""))
            elif r.has("file"):
                prof = _profile_file(r, base_dir)
            elif r.has("roofline"):
                prof = _roofline_profile(r, pname, base_dir)
            else:
                prof = _inline_profile(r, pname)
            r.finish()
            out[pname] = prof
            pending.remove(pname)
    if pending:
        raise sec.error(pending[0] + ".derive", "derivation cycle between profiles")
    if not out:
        raise sec.error("", "define at least one profile")
    return out


def _roofline_profile(r: Reader, pname: str, base_dir: Path) -> Profile:
    """`roofline = { model = NAME|config.json, gpu = NAME|card.toml, gpus = 8 }`: a profile from
    a model card and a GPU card (emulator.cards.roofline); paths are relative to the preset."""
    from emulator.cards import CardError
    from emulator.cards.gpu import load_gpu
    from emulator.cards.model_card import load_card
    from emulator.cards.roofline import roofline_profile

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
    c.finish()
    return replace(roofline_profile(model, gpu, gpus, pname),
                   description=r.get("description", str, "") or
                   f"roofline: {model.name} on {gpus}x{gpu.name}")


def _inline_profile(r: Reader, pname: str) -> Profile:
    return Profile(pname, _curve(r, "prefill_time", "seconds", parse_duration),
                   _curve(r, "kv_size", "bytes", parse_bytes), r.get("description", str, ""))


def _profile_file(r: Reader, base_dir: Path) -> Profile:
    p = Path(r.get("file", str))
    p = p if p.is_absolute() else base_dir / p
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError:
        raise r.error("file", f"cannot read profile file {p}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PresetError(p, "", f"malformed TOML: {exc}") from None
    root = Reader(data, p)
    sec = root.section("profile", required=True)
    prof = _inline_profile(sec, sec.get("name", str, p.stem))
    sec.get("source", str, "")
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
        if any(y <= 0 for y in ly):
            raise c.error(values_key, "every value must be > 0")
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
