"""Reading a topology from a preset: `[[site]]`, `[[region]]` and `[[link]]` tables (and the
top-level `routing` key) into `emulator.topology.spec` objects, strictly, through `Reader`.

Every bad value is one line naming the key with its table index (`region[2].share`). The counts
are checked before any table is read, so a file of 10,000 links is refused at once. The
cross-table rules (names, link ends, shares, splits, unreachable regions) are the spec's own
`Topology.problems()`; the first one found is the error.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from emulator.distributions import LengthDistribution
from emulator.model import DecodeSpec
from emulator.profiles import Profile
from emulator.scenario.decode import Cards, FromCards, parse_base_decode, parse_region_decode
from emulator.scenario.knobs import (
    CONNECTIONS,
    KNOBS,
    LOSS,
    MAX_BANDWIDTH,
    MAX_INSTANCES,
    Limits,
    goodput_problem,
    knob_at,
)
from emulator.scenario.lengths import parse_lengths
from emulator.scenario.reader import (
    PresetError,
    Reader,
    a_price,
    a_price_or_free,
    at_most,
    between,
    non_negative,
    one_of,
    positive,
)
from emulator.scenario.sim import SimConfig, check_replay
from emulator.topology.spec import (
    DEFAULT_RDMA,
    MAX_LINKS,
    MAX_REGIONS,
    MAX_SITES,
    ROUTINGS,
    Link,
    Region,
    Site,
    Topology,
)
from emulator.topology.transport import DEFAULT_MSS, MAX_RTT, Transport, goodput, transport_problem
from emulator.trace_formats import read_workload
from emulator.traces import TraceError
from emulator.units import parse_bandwidth, parse_bytes, parse_duration

TABLES = ("site", "region", "link")
TRANSPORT_KEYS = ("loss", "connections", "mss", "window")


def declares_topology(data: dict) -> bool:
    """Whether a preset's TOML describes sites, regions and links (not one [deployment])."""
    return isinstance(data, dict) and any(k in data for k in TABLES)


def read_instances(r: Reader, key: str, gpus_key: str, par: int) -> int:
    """An instance count given as `key` or as `gpus_key` GPUs (a whole number of `par`-GPU
    instances), both under the one instance cap."""
    if r.has(key) and r.has(gpus_key):
        raise r.error(gpus_key, f"give either {key} or {gpus_key}, not both")
    cap = at_most(MAX_INSTANCES, f"{MAX_INSTANCES} instances")
    if r.has(gpus_key):  # the same instance cap, in GPUs (a huge count must not slip by)
        gpus = r.get(gpus_key, int, check=lambda x: non_negative(x) or cap(x / par))
        if gpus % par:
            raise r.error(gpus_key, f"{gpus} GPUs is not a whole number of {par}-GPU instances")
        return gpus // par
    if not r.has(key):
        raise r.error(key, f"missing (required; or give {gpus_key})")
    return r.get(key, int, check=lambda x: non_negative(x) or cap(x))


def profile_ref(r: Reader, key: str, profiles: dict[str, Profile],
                default: str | None = None) -> Profile:
    ref = r.get(key, str, default)
    if ref not in profiles:
        raise r.error(key, f"no profile named {ref!r} (defined: {', '.join(profiles)})")
    return profiles[ref]


def _bandwidth(r: Reader, key: str, *default: float | None) -> float | None:
    """A bandwidth key; required unless a default is given."""
    return r.get(key, parse_bandwidth, *default,
                 check=lambda x: positive(x) or at_most(MAX_BANDWIDTH, "8 Pbps")(x))


def parse_topology(root: Reader, profiles: dict[str, Profile], decode: Reader,
                   lengths: LengthDistribution | None, base_dir: Path,
                   cards: dict[str, Cards] | None = None) -> Topology:
    """The topology of a preset whose top level holds [[site]]/[[region]]/[[link]] tables;
    `decode` and `lengths` are the top-level defaults a region may override; `cards` the
    (model, gpu, setup) of each roofline profile, for a decode from the cards."""
    for table, cap in (("site", MAX_SITES), ("region", MAX_REGIONS), ("link", MAX_LINKS)):
        items = root.data.get(table, [])
        if isinstance(items, list) and len(items) > cap:
            raise root.error(table, f"{len(items)} [[{table}]] tables is more than {cap}")
    routing = root.get("routing", str, "threshold", check=one_of(*ROUTINGS))
    base_decode = parse_base_decode(decode)
    sites = tuple(_site(r, profiles) for r in root.sections("site"))
    region_readers = root.sections("region")
    if not region_readers:
        raise root.error("region", "define at least one [[region]] (a PD cluster with users)")
    given = [r.has("share") for r in region_readers]
    regions = tuple(_region(r, profiles, decode, base_decode, cards or {}, lengths, base_dir,
                            None if any(given) else 1.0 / len(region_readers))
                    for r in region_readers)
    link_readers = root.sections("link")
    raw_links = [_link(r) for r in link_readers]
    links = tuple(_with_long_shares(raw_links, link_readers))
    topo = Topology(sites, regions, links, routing)
    if problems := topo.problems():
        key, message = problems[0]
        raise root.error(key, message)
    _check_profiles(root, topo)
    return topo


def replay_problem(topo: Topology, sim: SimConfig) -> str | None:
    """Why a region's replayed trace cannot run with this [workload] (None: it can)."""
    r = next((r for r in topo.regions if r.replay is not None), None)
    if r is not None and sim.sessions is not None:
        return f"sessions bring their own arrivals and region {r.name!r} replays a trace: drop one"
    return None


def _site(r: Reader, profiles: dict[str, Profile]) -> Site:
    name = r.get("name", str)
    profile = profile_ref(r, "profile", profiles)
    par = r.get("parallelism", int, 1, check=lambda x: positive(x) or at_most(4096, "4096 GPUs")(x))
    instances = read_instances(r, "instances", "gpus", par)
    egress = _bandwidth(r, "egress", None)
    price = r.get("price", float, None, check=a_price)
    r.finish()
    return Site(name, profile, instances, egress, par, price)


def _region(r: Reader, profiles: dict[str, Profile], top_decode: Reader,
            base_decode: DecodeSpec | FromCards, cards: dict[str, Cards],
            lengths: LengthDistribution | None, base_dir: Path,
            default_share: float | None) -> Region:
    name = r.get("name", str)
    profile = profile_ref(r, "profile", profiles)
    par = r.get("parallelism", int, 1, check=lambda x: positive(x) or at_most(4096, "4096 GPUs")(x))
    pool = read_instances(r, "pool", "gpus", par)
    n_p = r.get("n_p", int, check=KNOBS["n_p"].problem)
    n_d = r.get("n_d", int, check=KNOBS["n_d"].problem)
    if default_share is None and not r.has("share"):
        raise r.error("share", "missing: give every region a share, or none (equal shares)")
    share = r.get("share", float, default_share, check=between(0.0, 1.0))
    rdma = _bandwidth(r, "rdma_bandwidth", DEFAULT_RDMA)
    price = r.get("price", float, None, check=a_price)
    own, replay = lengths, None
    if (w := r.section("workload")) is not None:
        if w.has("replay"):  # the region's own trace: its arrivals and its lengths
            if w.has("lengths"):
                raise w.error("lengths", "a replayed trace brings its own lengths: drop lengths "
                              "or replay")
            p = Path(w.get("replay", str))
            p = check_replay(w, p if p.is_absolute() else base_dir / p)
            try:
                own = read_workload(p).lengths
            except TraceError as exc:
                raise w.error("replay", str(exc)) from None
            replay = str(p)
        else:
            own = parse_lengths(w.section("lengths", required=True), base_dir)
        w.finish()
    if own is None:
        raise r.error("workload.lengths", "missing: no top-level [workload.lengths] to inherit")
    dec = r.section("decode")
    decode, step = parse_region_decode(dec, top_decode, base_decode, cards.get(r.raw("profile")),
                                       own.mean, name)
    if dec is not None:
        dec.finish()
    hi = own.support[1]
    t = r.get("threshold", KNOBS["t"].parse,
              check=lambda x: KNOBS["t"].problem(x, Limits(t_max=hi)))
    r.finish()
    return Region(name, profile, pool, n_p, n_d, t, share, own, decode, par, rdma, price, replay,
                  step)


def _link(r: Reader) -> Link:
    site = r.get("site", str)
    region = r.get("region", str)
    bw = knob_at("link", "bandwidth")
    bandwidth = r.get("bandwidth", bw.parse, check=bw.problem)
    rtt = r.get("rtt", parse_duration, 0.0, check=lambda x: non_negative(x) or
                at_most(MAX_RTT, "a minute of round trip")(x))
    long_share = r.get("long_share", float, None, check=between(0.0, 1.0))
    price = r.get("price_per_tb", float, None, check=a_price_or_free)
    fluctuation = r.get("fluctuation", float, 0.0, check=between(0.0, 0.99))
    transport = read_transport(r, bandwidth, rtt, "rtt")
    r.finish()
    return Link.over(site, region, bandwidth, rtt, transport,
                     long_share=-1.0 if long_share is None else long_share,
                     price_per_tb=price, fluctuation=fluctuation)


def read_transport(r: Reader, line: float, rtt: float, rtt_key: str) -> Transport | None:
    """A link's TCP keys (`loss`, `connections`, `mss`, `window`) beside its line rate and
    round trip (`rtt_key` names it in the loss-without-rtt error); None when none is given.
    Its goodput must stay within the bandwidth knob's range, as a declared bandwidth does."""
    if not any(r.has(k) for k in TRANSPORT_KEYS):
        return None
    t = Transport(loss=r.get("loss", LOSS.parse, 0.0, check=LOSS.problem),
                  connections=r.get("connections", CONNECTIONS.parse, None,
                                    check=CONNECTIONS.problem),
                  mss=r.get("mss", parse_bytes, float(DEFAULT_MSS)),
                  window=r.get("window", parse_bytes, None))
    if (problem := transport_problem(t, rtt)) is not None:
        key, why = problem
        if key == "loss" and t.loss > 0 and 0 <= t.loss < 1:
            why = f"{why}: give {rtt_key} too"
        raise r.error(key, why)
    if (problem := goodput_problem(goodput(line, rtt, t))) is not None:
        raise r.error(*problem)
    return t


def _with_long_shares(links: list[Link], readers: list[Reader]) -> list[Link]:
    """A region's links split its long requests equally unless every one of them says its
    `long_share` (some but not all is an error naming the first that lacks one)."""
    by_region: dict[str, list[int]] = {}
    for i, k in enumerate(links):
        by_region.setdefault(k.region, []).append(i)
    out = list(links)
    for idx in by_region.values():
        given = [links[i].long_share >= 0 for i in idx]
        if all(given):
            continue
        if any(given):
            first = next(i for i, g in zip(idx, given, strict=True) if not g)
            raise readers[first].error("long_share", "missing: give every link of region "
                                       f"{links[first].region!r} a long_share, or none (equal)")
        for i in idx:
            out[i] = replace(links[i], long_share=1.0 / len(idx))
    return out


def _check_profiles(root: Reader, topo: Topology) -> None:
    """Every profile a region's requests meet (its own and its sites') positive over its
    lengths, as the single-pair reader checks its two."""
    for i, r in enumerate(topo.regions):
        lo, hi = r.lengths.support
        grid = np.linspace(max(lo, 1.0), hi, 64)
        if msg := r.profile.check_range(grid):
            raise root.error(f"region[{i}].profile", msg)
        for k in topo.links_of_region(r.name):
            if msg := topo.site(k.site).profile.check_range(grid):
                raise PresetError(root.path, f"site[{topo.sites.index(topo.site(k.site))}].profile",
                                  f"{msg} (over region {r.name!r}'s lengths)")
