"""Writing a scenario back as a preset TOML: the preset's own source with the current knobs.

The file is produced by tomlkit (a maintained TOML writer) and checked by loading it back, so a
saved preset always opens again with the same deployment.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import tomlkit

from emulator.paradigm import Paradigm
from emulator.scenario.presets import load
from emulator.scenario.reader import PresetError
from emulator.scenario.scenario import Scenario, as_pair
from emulator.scenario.topology import TRANSPORT_KEYS, declares_topology
from emulator.units import parse_bandwidth, to_gbps


def _rebase(value: str, src_dir: Path, dst_dir: Path) -> str:
    """A relative file reference of the original preset, made to work from the new place."""
    p = Path(value)
    if p.is_absolute():
        return value
    target = (src_dir / p).resolve()
    try:
        return os.path.relpath(target, dst_dir.resolve())
    except ValueError:  # another drive
        return str(target)


def _bandwidth(bytes_per_second: float) -> str:
    """In Gbps when that reads back exactly, else in B/s (always exact)."""
    gbps = f"{to_gbps(bytes_per_second):.6g} Gbps"
    return gbps if parse_bandwidth(gbps) == bytes_per_second else f"{bytes_per_second!r} B/s"


def preset_source(sc: Scenario, dest: Path, *, rate: float | None = None) -> dict:
    """The scenario's TOML source (as loaded) with its current knobs and, if given, the offered
    rate; relative file references rebased to `dest`'s folder."""
    data = copy.deepcopy(sc.source)
    src_dir = Path(sc.path).parent if sc.path else Path.cwd()
    data["name"] = dest.stem
    if sc.declared_topology is None and declares_topology(data):  # a 1x1 run as the pair
        (site,), (region,), (link,) = data["site"], data["region"], data["link"]
        _pair_knobs(sc, site, region, link, "gpus", "instances")
    elif sc.declared_topology is None:  # a topology's knobs live in its elements' entries
        dep = data.setdefault("deployment", {})
        _pair_knobs(sc, dep, dep, dep, "prfaas_gpus", "n_prfaas")
    if rate is not None:
        data.setdefault("workload", {})["rate"] = float(rate)  # a rate overrides `load`
    for prof in data.get("profiles", {}).values():
        if isinstance(prof, dict) and isinstance(prof.get("file"), str):
            prof["file"] = _rebase(prof["file"], src_dir, dest.parent)
    lengths = data.get("workload", {}).get("lengths", {})
    if isinstance(lengths, dict) and isinstance(lengths.get("trace"), str):
        lengths["trace"] = _rebase(lengths["trace"], src_dir, dest.parent)
    return data


def _pair_knobs(sc: Scenario, site: dict, region: dict, link: dict, gpus: str,
                instances: str) -> None:
    """The pair's knobs written into the tables that declare them ([deployment] for all three,
    or a 1x1 topology's site, region and link): the threshold and split, the PrfaaS instances
    (in GPUs when the file gave GPUs), the link's bandwidth."""
    region["threshold"] = int(sc.t) if float(sc.t).is_integer() else float(sc.t)
    region["n_p"], region["n_d"] = sc.n_p, sc.n_d
    if gpus in site:
        site[gpus] = sc.system.n_prfaas * sc.system.parallelism
    else:
        site[instances] = sc.system.n_prfaas
    # with a transport the knob is its goodput: write the line rate it came from; a knob that
    # moved left the transport behind, so its keys go too
    link["bandwidth"] = _bandwidth(sc.system.bandwidth if sc.line_bandwidth is None
                                   else sc.line_bandwidth)
    if sc.transport is None:
        for key in TRANSPORT_KEYS:
            link.pop(key, None)


def write_preset(sc: Scenario, dest: Path, *, rate: float | None = None,
                 paradigm: Paradigm | None = None) -> Scenario:
    """Write `sc` (and the offered `rate`) as a preset at `dest` and return it loaded back;
    PresetError when the file does not load back to the same knobs. The paradigm is no preset
    key: it is noted in the header comment."""
    doc = tomlkit.document()
    note = f" (paradigm {paradigm}, not a preset key)" if paradigm is not None else ""
    doc.add(tomlkit.comment(f"saved by prfaas-tui from preset {sc.name!r}{note}"))
    doc.update(preset_source(sc, dest, rate=rate))
    dest.write_text(tomlkit.dumps(doc), encoding="utf-8")
    topology = sc.declared_topology is not None
    back = load(dest, topology=topology or declares_topology(sc.source))
    if not topology and back.declared_topology is not None:  # a 1x1 file run as the pair
        back = as_pair(back)
    if topology and _element_knobs(back) != _element_knobs(sc):
        raise PresetError(dest, "", "the saved topology's knobs differ from the running ones")
    if not topology and back.knobs != sc.knobs:
        raise PresetError(dest, "", f"saved knobs {back.knobs} differ from {sc.knobs}")
    return back


def _element_knobs(sc: Scenario) -> tuple:
    """A topology's knobs by element: site instances, region t and split, link bandwidth."""
    topo = sc.declared_topology
    assert topo is not None
    return (tuple((s.name, s.instances) for s in topo.sites),
            tuple((r.name, r.n_p, r.n_d, r.threshold) for r in topo.regions),
            tuple((ln.site, ln.region, ln.bandwidth) for ln in topo.links))
