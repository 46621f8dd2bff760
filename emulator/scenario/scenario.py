"""A loaded scenario: the model's system, the preset's knobs and the emulator's settings.

Kept apart from the preset loader (emulator.scenario.presets) so that the simulator, which
receives Scenario objects, never imports the loader.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from emulator.model import MODES, Knobs, System
from emulator.profiles import Profile
from emulator.scenario.decode import retimed
from emulator.scenario.knobs import KNOBS, Controls, KnobError, retuned
from emulator.scenario.reader import PresetError, one_of, positive, setting
from emulator.scenario.sim import SimConfig
from emulator.topology.spec import PAIR_LINK, PAIR_REGION, PAIR_SITE, Topology
from emulator.topology.transport import Transport
from emulator.units import GBPS, parse_bandwidth


@dataclass(frozen=True)
class Scenario:
    """A loaded preset: the model's system, the initial knobs and the emulator's settings."""

    name: str
    path: str | None
    system: System
    t: float
    n_p: int
    n_d: int
    profiles: dict[str, Profile]
    sim: SimConfig
    description: str = setting("", parse=str)
    mode: str = setting("paper", parse=str, check=one_of(*MODES))  # the model's evaluation mode
    # intra-cluster KV transfer (PD-P -> PD-D)
    rdma_bandwidth: float = setting(800 * GBPS, parse=parse_bandwidth, check=positive,
                                    section="deployment")
    source: dict = field(default_factory=dict, repr=False)  # the TOML as read, for save-as
    # what a [[site]]/[[region]]/[[link]] preset declares; None: the single pair (see topology)
    declared_topology: Topology | None = field(default=None, repr=False)
    # the pair's TCP ([deployment] loss, connections, mss, window): `system.bandwidth` is then
    # its goodput over `line_bandwidth`, the lease's line rate; None: the bandwidth is the line
    transport: Transport | None = field(default=None, repr=False)
    line_bandwidth: float | None = field(default=None, repr=False)

    @property
    def topology(self) -> Topology:
        """The declared topology, or the single pair at the current knobs as the 1x1 one."""
        if self.declared_topology is not None:
            return self.declared_topology
        return Topology.pair(self.system, self.t, self.n_p, self.n_d, self.sim.link_latency,
                             self.transport, self.line_bandwidth)

    @property
    def knobs(self) -> Knobs:
        return self.controls.model_knobs()

    @property
    def controls(self) -> Controls:
        """The preset's knobs as live controls (its own rate, the PrfaaS-PD paradigm)."""
        return Controls(t=self.t, n_p=self.n_p, n_d=self.n_d, n_prfaas=self.system.n_prfaas,
                        bandwidth=self.system.bandwidth)

    def with_knobs(self, **knobs: float | int | None) -> Scenario:
        """A copy with other knobs (t, n_p, n_d, n_prfaas, bandwidth; None keeps the preset's),
        checked by Controls.validate: a KnobError names the knob."""
        c = self.controls.changed(self.system, **{k: v for k, v in knobs.items() if v is not None})
        return self.with_controls(c)

    def with_controls(self, c: Controls) -> Scenario:
        """A copy deployed at `c` (its rate and paradigm are the caller's to use). The bandwidth
        knob is the link's effective rate: moving it leaves the preset's transport behind."""
        system = replace(self.system, n_prfaas=c.n_prfaas, bandwidth=c.bandwidth)
        wire = ({} if c.bandwidth == self.system.bandwidth
                else {"transport": None, "line_bandwidth": None})
        return replace(self, system=system, t=c.t, n_p=c.n_p, n_d=c.n_d, **wire)


def with_transport(sc: Scenario, loss: float | None = None,
                   connections: int | None = None, line: float | None = None) -> Scenario:
    """The pair `sc` with its link's TCP turned (`emulator.scenario.knobs.retuned`): its
    bandwidth becomes the goodput over its line rate (`line`, else the one it has) under the
    new loss and connections. KnobError naming the knob when a value or the goodput is out of
    range."""
    if loss is None and connections is None:
        return sc
    if loss and sc.sim.link_latency <= 0:
        raise KnobError("loss", "a loss rate needs a round trip above 0: set the preset's "
                        "[emulator] link_latency")
    k = retuned(sc.topology.links[0], line, loss=loss, connections=connections)
    return replace(sc, system=replace(sc.system, bandwidth=k.bandwidth),
                   transport=k.transport, line_bandwidth=k.line)


def check_knobs(sc: Scenario) -> None:
    """Raise PresetError, naming the preset key, when the knobs are impossible."""
    try:
        sc.controls.validate(sc.system)
    except KnobError as exc:
        raise PresetError(sc.path, KNOBS[exc.knob].key or "", exc.reason) from None


def with_tpot(sc: Scenario, tpot: float) -> Scenario:
    """The pair `sc` with its decode derived again under `tpot` (Eq. 5's BS_max and t_decode,
    and the step its emulated decode runs); KnobError when it cannot be."""
    step = retimed(sc.sim.step, tpot)
    return replace(sc, system=replace(sc.system, decode=step.decode(sc.system.decode)),
                   sim=replace(sc.sim, step=step))


def as_pair(sc: Scenario) -> Scenario:
    """A declared 1x1 topology (one site, one region, one link) as the single pair it is: the
    site is the pair's PrfaaS cluster, the region its PD cluster (its [homogeneous] baseline
    too, when the file has one), the link's round trip and TCP the pair's link; incidents keep
    their targets under the pair's names (prfaas, pd, prfaas->pd). It then runs as the pair
    does, with its paradigms and its top-level replay. PresetError naming the key the pair has
    no place for (a larger topology is refused by the caller)."""
    topo = sc.declared_topology
    if topo is None:
        return sc
    assert topo.is_pair, "a topology of more than one site, region or link is no pair"
    site, region, link = topo.sites[0], topo.regions[0], topo.links[0]
    for key, lost, why in (
            ("routing", topo.routing != "threshold",
             f"{topo.routing}: the pair routes by its threshold"),
            ("site[0].egress", site.egress is not None,
             "the pair's link is its site's egress: drop egress or lower the link's bandwidth"),
            ("site[0].parallelism", site.parallelism != region.parallelism,
             f"{site.parallelism} GPUs per instance, the region {region.parallelism}: the pair "
             "has one parallelism"),
            ("link[0].fluctuation", link.fluctuation != 0, "the pair's link has none"),
            ("link[0].price_per_tb", link.price_per_tb is not None,
             "the pair prices instances only"),
            ("region[0].workload.replay", region.replay is not None,
             "the pair replays the top-level [workload] replay: move it there")):
        if lost:
            raise PresetError(sc.path, key, f"{why} (a 1x1 topology runs as the pair here)")
    names = {site.name: PAIR_SITE, region.name: PAIR_REGION, link.name: PAIR_LINK}
    sim = replace(sc.sim, link_latency=link.rtt,
                  step=region.step if region.step is not None else sc.sim.step,
                  incidents=tuple(_renamed(inc, names) for inc in sc.sim.incidents))
    system = replace(topo.pair_system(region.name), homogeneous_pool=sc.system.homogeneous_pool,
                     homogeneous_profile=sc.system.homogeneous_profile)
    out = replace(sc, system=system, t=region.threshold,
                  n_p=region.n_p, n_d=region.n_d, sim=sim, rdma_bandwidth=region.rdma_bandwidth,
                  declared_topology=None, transport=link.transport, line_bandwidth=link.line)
    check_knobs(out)
    return out


def _renamed(inc: object, names: dict[str, str]) -> object:
    """An incident with the 1x1 topology's element names turned into the pair's."""
    kw = {key: names[v] for key in ("link", "site", "region", "cluster")
          if isinstance(v := getattr(inc, key, None), str) and v in names}
    if offsets := getattr(inc, "offsets", None):
        kw["offsets"] = type(offsets)((names.get(n, n), x) for n, x in offsets)
    return replace(inc, **kw) if kw else inc
