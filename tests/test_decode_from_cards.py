"""A decode from the cards (`[decode] from = "cards"`): the emulator's stroke against stepping one
step at a time through T_step, Eq. 5 from the derived BS_max and step, a run that agrees with
the model, and bad input as one line naming the key."""

import json
import math
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from emulator.cards.decode import bs_max, step_time
from emulator.cards.gpu import load_gpu
from emulator.cards.kernel import resolve_setup
from emulator.cards.model_card import load_card, read_config
from emulator.model import DecodeSpec
from emulator.scenario.decode import CardStep, parse_pair_decode
from emulator.scenario.presets import from_dict, load, presets_dir
from emulator.scenario.reader import PresetError, Reader
from emulator.sim.core.loop import VirtualTimeLoop
from emulator.sim.core.request import Request
from emulator.sim.engine import Emulation
from emulator.sim.stages.decode import DecodeStage
from emulator.sim.stages.pool import Pool
from emulator.topology.bound import routing_bound
from prfaas_tui.cli import main

CONFIGS = Path(__file__).parent / "configs"
H200 = load_gpu("h200")


def _stroke(card, batch: int, length: int, out: int) -> tuple[float, float]:
    """(the stage's finish time, 1 s + the sum of T_step one step at a time) for `batch`
    requests of `length` tokens joining an idle instance at t = 1 s and decoding `out` tokens."""
    setup = resolve_setup(card, H200, 8)
    loop = VirtualTimeLoop()
    done: list[float] = []
    st = DecodeStage(loop, 0.025, batch, None, lambda r, now: done.append(now),
                     mean_out=out, step=CardStep(card, H200, setup))
    pool = Pool(loop, "local", {"pd-d": st})
    pool.resize(1)
    pool.set_counts({"pd-d": 1}, immediate=True)

    def go():
        for i in range(batch):
            r = Request(i, 0.0, length, out)
            r.kv = 1.0
            st.submit(r)

    loop.call_at(1.0, go)
    loop.run_until(1e6)
    ref = 1.0 + sum(step_time(card, H200, setup, batch, length + j).step_s for j in range(out))
    assert len(done) == batch and max(done) == min(done)
    return done[0], ref


@pytest.mark.parametrize("name, batch, length, out", [
    ("kimi-linear-48b-a3b", 64, 20_000, 1024),  # hybrid: state and MLA layers
    ("qwen3-32b.json", 32, 4_000, 2_000),  # dense GQA
    ("gemma-2-2b-it.json", 16, 3_000, 2_000),  # a 4K window fills mid-stroke (a grid kink)
    ("gpt-oss-20b.json", 8, 60, 300),  # a 128-token window fills inside a grid cell
    ("deepseek-v3.json", 128, 30_000, 512),  # MLA + MoE
])
def test_the_stroke_matches_stepping_one_step_at_a_time(name, batch, length, out):
    card = read_config(CONFIGS / name) if name.endswith(".json") else load_card(name)
    got, ref = _stroke(card, batch, length, out)
    assert got - 1.0 == pytest.approx(ref - 1.0, rel=1e-4)


def test_the_chord_refits_only_where_the_step_bends():
    card = read_config(CONFIGS / "gemma-2-2b-it.json")  # sliding window of 4096 tokens
    cs = CardStep(card, H200, resolve_setup(card, H200, 8))
    _, _, valid = cs.coefficients(16, 16 * 3_000, 2_000)  # a window fills within 2000 steps
    assert valid < 2_000
    kimi = load_card("kimi-linear-48b-a3b")
    ks = CardStep(kimi, H200, resolve_setup(kimi, H200, 8))
    a, c, valid = ks.coefficients(64, 64 * 20_000, 2_000)
    assert valid == math.inf  # affine in context: one chord for every segment of 64
    setup = resolve_setup(kimi, H200, 8)
    assert a + c * 64 * 30_000 == pytest.approx(step_time(kimi, H200, setup, 64, 30_000).step_s,
                                                rel=1e-9)


def _preset(tmp_path, capsys, model: str = "qwen3-30b-a3b.json", *extra: str) -> Path:
    out = tmp_path / "p.toml"
    assert main(["new", "--model", str(CONFIGS / model), "--decode", "cards", "--out", str(out),
                 "--force", "--json", *extra]) == 0
    capsys.readouterr()
    return out


def test_eq5_uses_the_derived_batch_and_step(tmp_path, capsys):
    path = _preset(tmp_path, capsys)
    data = tomllib.loads(path.read_text())
    assert data["decode"]["from"] == "cards" and "t_decode" not in data["decode"]
    sc = from_dict(data, path)
    step = sc.sim.step
    assert isinstance(step, CardStep)
    lim = bs_max(step.card, step.gpu, step.setup, step.context, 0.025)
    assert step.context == pytest.approx(sc.system.lengths.mean + 512)
    assert sc.system.decode == DecodeSpec(t_decode=lim.step.step_s, bs_max=lim.batch, l_out=1024)
    slower = from_dict({**data, "decode": {**data["decode"], "tpot": "50 ms"}}, path)
    assert slower.system.decode.bs_max > lim.batch  # the SLO bounds the batch


def test_a_run_at_0_9_lambda_max_agrees_with_the_model(tmp_path, capsys):
    sc = from_dict(tomllib.loads((p := _preset(tmp_path, capsys)).read_text()), p)
    with Emulation(sc, load=0.9, duration=1200, seed=1) as emu:
        out = emu.run().json
    assert out["served_rate"] == pytest.approx(out["offered_rate"], rel=0.03)
    steps = out["stages"]["pd-d"]["steps"]
    st = sc.sim.step
    b = steps["mean_batch"]
    lo, hi = (step_time(st.card, st.gpu, st.setup, n, steps["mean_context"]).step_s
              for n in (int(b), int(b) + 1))
    assert steps["mean_step"] == pytest.approx(lo + (hi - lo) * (b - int(b)), rel=0.02)
    assert steps["mean_context"] == pytest.approx(st.context, rel=0.05)
    assert out["tpot"]["p50"] < st.tpot and out["tpot"]["p90"] <= st.tpot * 1.001


def test_the_constant_presets_report_no_steps():
    with Emulation(load("toy"), load=0.5, duration=60, seed=1) as emu:
        assert "steps" not in emu.run().json["stages"]["pd-d"]


@pytest.mark.parametrize("change, key", [
    ({"tpot": "0 ms"}, "decode.tpot"),
    ({"tpot": "0.1 ms"}, "decode.tpot"),  # below one step at batch 1
    ({"t_decode": "20 ms"}, "decode.t_decode"),
    ({"bs_max": 10}, "decode.bs_max"),
    ({"from": "card"}, "decode.from"),
    ({"l_out": 200_000}, "decode.l_out"),  # a mean decode context beyond the model's 40,960
    ({"l_out": 0}, "decode.l_out"),  # the rule the constants' l_out keeps
    ({"l_out": "lots"}, "decode.l_out"),
    ({"step": {"a": "20 ms"}}, "decode.step"),
])
def test_bad_decode_keys_are_one_line(tmp_path, capsys, change, key):
    path = _preset(tmp_path, capsys, "qwen3-32b.json")
    data = tomllib.loads(path.read_text())
    data["decode"].update(change)
    bad = tmp_path / "bad.toml"
    bad.write_text(_dump(data))
    assert main(["solve", "--preset", str(bad), "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{key}:" in err[0], err


def test_tpot_without_from_and_from_without_cards_are_refused():
    dec = {"t_decode": "25 ms", "bs_max": 20, "l_out": 1024, "tpot": "25 ms"}
    with pytest.raises(PresetError, match="decode.tpot: .*from"):
        parse_pair_decode(Reader(dec, "p.toml", "decode"), None, 1000.0)
    with pytest.raises(PresetError, match="decode.from: .*roofline"):
        parse_pair_decode(Reader({"from": "cards", "l_out": 1024}, "p.toml", "decode"), None, 1e3)


def test_a_topologys_decode_from_the_cards_keeps_the_l_out_rule():
    from emulator.scenario.decode import parse_base_decode
    with pytest.raises(PresetError, match="decode.l_out: must be > 0"):
        parse_base_decode(Reader({"from": "cards", "l_out": 0}, "t.toml", "decode"))
    with pytest.raises(PresetError, match="decode.l_out: missing"):
        parse_base_decode(Reader({"from": "cards"}, "t.toml", "decode"))


def test_a_model_that_fits_no_request_names_from():
    card = load_card("kimi-linear-48b-a3b")
    tiny = replace(H200, hbm_gb=8.0)
    dec = Reader({"from": "cards", "l_out": 1024}, "p.toml", "decode")
    with pytest.raises(PresetError, match="decode.from: .*holds no decode request"):
        parse_pair_decode(dec, (card, tiny, resolve_setup(card, H200, 8)), 20_000.0)


def _two_regions(pair: dict, west: dict | None = None) -> dict:
    """The pair preset's cards as a topology: one site, regions east and west (west with its
    own `[region.decode]` when given)."""
    return {"name": "t", "profiles": pair["profiles"], "decode": pair["decode"],
            "workload": {k: v for k, v in pair["workload"].items() if k != "load"},
            "site": [{"name": "hub", "profile": "prfaas", "instances": 4, "parallelism": 8}],
            "region": [{"name": n, "profile": "local", "pool": 4, "n_p": 2, "n_d": 2,
                        "parallelism": 8, "threshold": 43731, "share": 0.5,
                        **({"decode": west} if n == "west" and west else {})}
                       for n in ("east", "west")],
            "link": [{"site": "hub", "region": r, "bandwidth": "100 Gbps"}
                     for r in ("east", "west")]}


def test_a_topology_derives_each_regions_decode_and_steps_it(tmp_path, capsys):
    """Each region derives its decode from its local profile's cards (west under its own
    TPOT), the bound reads it, and each region's decode stage steps at that region's T_step."""
    pair = tomllib.loads(_preset(tmp_path, capsys).read_text())
    sc = from_dict(_two_regions(pair, {"tpot": "50 ms"}), tmp_path / "t.toml", topology=True)
    east, west = sc.topology.regions
    for r, tpot in ((east, 0.025), (west, 0.05)):
        st = r.step
        lim = bs_max(st.card, st.gpu, st.setup, st.context, tpot)
        assert st.tpot == tpot and st.context == pytest.approx(r.lengths.mean + 512)
        assert r.decode == DecodeSpec(t_decode=lim.step.step_s, bs_max=lim.batch, l_out=1024)
    assert west.decode.bs_max > east.decode.bs_max  # a looser SLO, a larger batch
    bound = routing_bound(sc.topology)
    with Emulation(sc, load=0.5, duration=600, seed=1, bound=bound) as emu:
        out = emu.run().json  # runs the accounting check
        stages = {n: reg.pdd for n, reg in emu.regions.items()}
    assert out["lost"] == 0 and out["served_rate"] > 0
    for r in (east, west):
        pdd = stages[r.name]
        assert pdd.step is r.step and pdd.bs_max == r.decode.bs_max
        steps = pdd.step_stats()
        b, st = steps["mean_batch"], r.step
        lo, hi = (step_time(st.card, st.gpu, st.setup, n, steps["mean_context"]).step_s
                  for n in (int(b), int(b) + 1))
        assert steps["mean_step"] == pytest.approx(lo + (hi - lo) * (b - int(b)), rel=0.02)


def test_a_topology_without_cards_or_with_two_step_rules_is_one_line(tmp_path, capsys):
    pair = tomllib.loads(_preset(tmp_path, capsys).read_text())
    data = tomllib.loads((presets_dir() / "two-regions.toml").read_text())
    data["decode"] = {"from": "cards", "l_out": 1024}  # its profiles are tables, not cards
    with pytest.raises(PresetError, match="decode.from: region '.*': .*roofline"):
        from_dict(data, "t.toml", topology=True)
    both = _two_regions(pair, {"tpot": "50 ms", "bs_max": 20})
    with pytest.raises(PresetError, match=r"region\[1\].decode.bs_max: .*drop one"):
        from_dict(both, "t.toml", topology=True)
    stepped = _two_regions(pair)
    stepped["decode"] = {**stepped["decode"], "step": {"a": "20 ms"}}
    with pytest.raises(PresetError, match="decode.step: .*keep one"):
        from_dict(stepped, "t.toml", topology=True)
    constants = _two_regions(pair, {"from": "constants", "t_decode": "25 ms", "bs_max": 20})
    with pytest.raises(PresetError, match="region\\[1\\].decode.l_out: missing"):
        from_dict(constants, "t.toml", topology=True)
    constants["region"][1]["decode"]["l_out"] = 1024
    east, west = from_dict(constants, "t.toml", topology=True).topology.regions
    assert east.step is not None and west.step is None and west.decode.bs_max == 20


def test_new_decode_cards_refuses_the_constants(tmp_path, capsys):
    assert main(["new", "--model", "kimi-linear-48b-a3b", "--decode", "cards", "--t-decode",
                 "20 ms", "--out", str(tmp_path / "x.toml")]) == 2
    assert "--decode cards" in capsys.readouterr().err


def _dump(data: dict) -> str:
    """A preset dict as TOML (tomlkit writes what tomllib read)."""
    import tomlkit
    return tomlkit.dumps(json.loads(json.dumps(data)))


def test_plan_knows_a_tpot_no_batch_can_meet(tmp_path, capsys):
    from emulator.planner.goodput import SLO, tpot_unmeetable
    sc = from_dict(tomllib.loads((p := _preset(tmp_path, capsys)).read_text()), p)
    lo = sc.system.lengths.support[0]
    fastest = sc.sim.step.fastest(lo)
    assert tpot_unmeetable(sc, SLO(ttft_p90=60.0, tpot_p90=fastest * 1.01)) is None
    assert "--slo-tpot" in tpot_unmeetable(sc, SLO(ttft_p90=60.0, tpot_p90=fastest * 0.99))


def test_the_model_panel_names_the_derived_decode(tmp_path, capsys):
    from prfaas_tui.widgets.model_panel import decode_line
    sc = from_dict(tomllib.loads((p := _preset(tmp_path, capsys)).read_text()), p)
    lim = sc.sim.step.limit
    line = decode_line(sc)
    assert f"BS_max {lim.batch}" in line and f"{lim.step.step_s * 1e3:.2f} ms" in line
    assert ("TPOT 25 ms binds" if lim.binds == "tpot" else "memory binds") in line
    assert decode_line(load("paper-case-study")) is None


@pytest.mark.asyncio
async def test_the_dashboard_opens_a_decode_from_the_cards(tmp_path):
    from test_ui_support import dash, screen_text

    from prfaas_tui.app import PrfaasApp
    from prfaas_tui.preset_builder import NewSpec, write_preset
    out = tmp_path / "w.toml"
    write_preset(NewSpec(model="kimi-linear-48b-a3b", decode="cards"), out)
    app = PrfaasApp(str(out), live=False, at=5.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert isinstance(dash(app).settings.scenario.sim.step, CardStep)
        assert "at BS_max 239" in screen_text(app)


@pytest.mark.parametrize("decode", ["cards", "constants"])
def test_new_refuses_a_decode_context_beyond_the_model(tmp_path, capsys, decode):
    out = tmp_path / "q.toml"
    assert main(["new", "--model", str(CONFIGS / "qwen3-32b.json"), "--l-out", "200000",
                 "--decode", decode, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("prfaas-tui: --l-out:") and "40,960" in err[0]
    assert not out.exists()


def test_a_decode_instance_lost_mid_stroke_keeps_the_books(tmp_path, capsys):
    """A failed instance hands its batch back (re-based joins included); the run's accounting
    check holds and the survivors keep stepping."""
    sc = from_dict(tomllib.loads((p := _preset(tmp_path, capsys)).read_text()), p)
    with Emulation(sc, load=0.9, duration=600, seed=2) as emu:
        lost = emu.live_instances("pd-d")[0]
        emu.loop.call_at_quiet(200.0, lambda: emu.fail_instance("pd-d", lost))
        emu.loop.call_at_quiet(300.0, lambda: emu.restore_instance("pd-d", lost))
        out = emu.run().json  # runs the accounting check
    assert out["rerouted"] > 0 and out["stages"]["pd-d"]["steps"]["steps"] > 0
    assert out["accounting"]["completed"] > 0


def test_a_decode_bound_run_serves_eq5_from_the_cards(tmp_path, capsys):
    """One decode instance offered more than it can take: its batch fills to BS_max and it
    serves Eq. 5's N_d x BS_max / (T_step(BS_max) x l_out)."""
    sc = from_dict(tomllib.loads((p := _preset(tmp_path, capsys)).read_text()), p)
    with Emulation(sc, rate=4.5, n_p=7, n_d=1, duration=1800, seed=1) as emu:
        out = emu.run().json
    d = out["stages"]["pd-d"]
    assert out["bottleneck"] == "pd-d"
    assert d["steps"]["mean_batch"] == pytest.approx(sc.system.decode.bs_max, rel=0.03)
    assert d["served_rate"] == pytest.approx(sc.system.decode.per_instance_rate, rel=0.03)
