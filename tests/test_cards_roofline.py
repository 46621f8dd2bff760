"""Card-made profiles, T = overhead + kernel: Table 5 for the case-study card and Table 3 for
the four non-exotic models with the default overhead, the H20 card reproducible from the
paper's Table 6 points, GPU card checks, and profiles usable wherever table profiles are."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.cards import CardError
from emulator.cards.gpu import from_dict as gpu_from_dict
from emulator.cards.gpu import load_gpu, shipped
from emulator.cards.kernel import resolve_setup
from emulator.cards.model_card import load_card
from emulator.cards.roofline import (
    DEFAULT_OVERHEAD_S,
    TABLE5_LENGTHS,
    TABLE5_SECONDS,
    prefill_seconds,
    roofline_profile,
    scale_fit,
)

LENGTHS = (1024, 8192, 32768, 131072)
# paper Table 3: Phi_kv (Gbps) on 8xH200 at 1K / 8K / 32K / 128K
TABLE3 = {"kimi-linear-48b-a3b": (1.19, 2.29, 3.87, 4.88), "mimo-v2-flash": (0.82, 2.85, 4.66, 4.71),
          "qwen3.5-397b-a17b": (4.13, 6.28, 8.25, 7.47), "ring-2.5-1t": (7.27, 4.47, 2.59, 1.46),
          "minimax-m2.5": (4.94, 32.87, 59.93, 47.82), "qwen3-235b-a22b": (4.12, 22.42, 33.35, 21.50)}
NON_EXOTIC = ("kimi-linear-48b-a3b", "qwen3.5-397b-a17b", "minimax-m2.5", "qwen3-235b-a22b")
# the two cells that miss 25% (docs/profiles.md): the hybrids' full attention at 128K runs
# slower in the paper's stack than the measured trtllm kernels
KNOWN_MISSES = {("kimi-linear-48b-a3b", 131072), ("qwen3.5-397b-a17b", 131072)}


def _setup(card, gpu, **kw):
    return resolve_setup(card, gpu, 8, overhead_s=DEFAULT_OVERHEAD_S, **kw)


def _phi(name: str, **kw) -> np.ndarray:
    card, gpu = load_card(name), load_gpu("h200")
    prof = roofline_profile(card, gpu, _setup(card, gpu, **kw))
    return np.array([prof.phi_kv(n_tok) * 8 / 1e9 for n_tok in LENGTHS])


def test_case_study_t_prefill_within_15pct_of_table5():
    card, gpu = load_card("prfaas-case-study-1t"), load_gpu("h200")
    setup = _setup(card, gpu)
    assert setup.dtype == "int4"  # 1T fits 8xH20 only at ~4 bits (the card's quantization_config)
    for n_tok, ref in zip(TABLE5_LENGTHS, TABLE5_SECONDS, strict=True):
        assert prefill_seconds(card, gpu, setup, n_tok) == pytest.approx(ref, rel=0.15), n_tok


def test_table3_non_exotic_cells_within_25pct_but_the_two_known_misses():
    for name in NON_EXOTIC:
        ratio = _phi(name) / np.array(TABLE3[name])
        for n_tok, r in zip(LENGTHS, ratio, strict=True):
            if (name, n_tok) in KNOWN_MISSES:
                assert 1.25 < r < 1.6, (name, n_tok, r)  # pinned: a change shows up here
            else:
                assert abs(r - 1) <= 0.25, (name, n_tok, r)


def test_table3_every_cell_within_a_factor_of_two():
    for name, ref in TABLE3.items():
        ratio = _phi(name, **({"dtype": "fp8"} if name == "ring-2.5-1t" else {})) / np.array(ref)
        assert np.all((ratio > 0.5) & (ratio < 2.0)), (name, ratio)


def test_overhead_is_added_once_and_only_to_t():
    card, gpu = load_card("qwen3-235b-a22b"), load_gpu("h200")
    a = roofline_profile(card, gpu, resolve_setup(card, gpu, 8, overhead_s=0.0))
    b = roofline_profile(card, gpu, resolve_setup(card, gpu, 8, overhead_s=0.39))
    for n_tok in LENGTHS:
        assert b.t_prefill(n_tok) - a.t_prefill(n_tok) == pytest.approx(0.39, abs=1e-9)
        assert b.s_kv(n_tok) == a.s_kv(n_tok)


def test_h20_card_is_the_table6_scale_fit():
    """The H20 has no measured operators: its card is the H100's efficiencies times one factor
    fitted on the two H20 times that back out of Table 6; rerunning the fit gives the card."""
    card, h20, h100 = load_card("prfaas-case-study-1t"), load_gpu("h20"), load_gpu("h100")
    borrowed = type(h20)(**{**h20.__dict__, "calibration": h100.calibration})
    k = scale_fit(card, borrowed, _setup(card, h20), (10200, 27500), (1.83, 4.27))
    assert k == pytest.approx(2.215, abs=2e-3)
    assert h20.calibration.moe == pytest.approx(min(h100.calibration.moe * k, 0.95), abs=1e-3)
    assert h20.calibration.gemm == 0.95  # capped
    assert not h20.calibrated and h200_is_calibrated()
    setup = _setup(card, h20)
    assert prefill_seconds(card, h20, setup, 10200) == pytest.approx(1.83, rel=0.03)
    assert prefill_seconds(card, h20, setup, 27500) == pytest.approx(4.27, rel=0.03)


def h200_is_calibrated() -> bool:
    return load_gpu("h200").calibrated and load_gpu("h100").calibrated


def test_uncalibrated_gpus_say_so():
    for name in shipped():
        g = load_gpu(name)
        assert g.calibration.source
        assert (g.mark == "") == (name in ("h200", "h100")), name
        if not g.calibrated:
            assert "NOT MEASURED" in g.calibration.source


def test_table3_ordering_at_32k_matches_the_paper():
    ours = {n: _phi(n)[2] for n in TABLE3}
    paper = {n: v[2] for n, v in TABLE3.items()}
    assert sorted(ours, key=ours.get) == sorted(paper, key=paper.get)
    dense = min(ours["minimax-m2.5"], ours["qwen3-235b-a22b"])
    hybrid = max(v for n, v in ours.items() if n not in ("minimax-m2.5", "qwen3-235b-a22b"))
    assert dense > 3 * hybrid


def test_minimax_over_kimi_linear_at_32k_within_30pct_of_15_5x():
    ratio = _phi("minimax-m2.5")[2] / _phi("kimi-linear-48b-a3b")[2]
    assert ratio == pytest.approx(59.93 / 3.87, rel=0.30)


@settings(max_examples=40, deadline=None)
@given(n_tok=st.floats(1, 262_144), name=st.sampled_from(sorted(TABLE3)),
       dtype=st.sampled_from(["bf16", "fp8"]), kv=st.sampled_from(["bf16", "fp8"]),
       gpu=st.sampled_from(["h200", "h20"]))
def test_profile_curves_are_the_kernel_model_exactly(n_tok, name, dtype, kv, gpu):
    """The Profile is piecewise quadratic (breaks at the windows and at the GEMMs'
    weight/compute crossovers) and equals the formula."""
    card, g = load_card(name), load_gpu(gpu)
    setup = _setup(card, g, dtype=dtype, kv_dtype=kv)
    prof = roofline_profile(card, g, setup)
    assert prof.t_prefill(n_tok) == pytest.approx(prefill_seconds(card, g, setup, n_tok), rel=1e-9)
    assert prof.s_kv(n_tok) == pytest.approx(card.with_kv_dtype(kv).kv_bytes(n_tok), rel=1e-9)


def test_attention_flops_per_token_grow_with_context_for_full_layers_only():
    dense, win = load_card("qwen3-235b-a22b"), load_card("mimo-v2-flash")
    assert dense.attn_flops_per_token(2000) == pytest.approx(2 * dense.attn_flops_per_token(1000))
    full_part = 9 * 2 * 64 * 320
    assert win.attn_flops_per_token(20_000) - win.attn_flops_per_token(10_000) == full_part * 10_000


def test_shipped_gpu_cards_cover_the_issue():
    assert {"h200", "h20", "h100", "b200", "a100", "l20"} <= set(shipped())


CAL = {"gemm": 0.8, "gemm_fp8": 0.5, "moe": 0.3, "moe_fp8": 0.2, "moe_int4": 0.2, "attention": 0.5,
       "attention_mla": 0.4, "linear": 0.03, "memory": 0.8, "collective": 1.0}
GOOD = {"bf16_tflops": 989, "hbm_tbps": 4.8, "hbm_gb": 141, "nic_gbps": 400, "price_per_hour": 3.0,
        "calibration": CAL}


@pytest.mark.parametrize("key,value", [("bf16_tflops", 0), ("bf16_tflops", -1.0), ("hbm_tbps", float("inf")),
                                       ("price_per_hour", "cheap"), ("nic_gbps", 1e12)])
def test_bad_gpu_numbers_name_their_key(key, value):
    with pytest.raises(CardError, match=f"^gpu.toml: {key}: must be"):
        gpu_from_dict({**GOOD, key: value}, "gpu.toml")


def test_bad_calibration_names_its_key():
    with pytest.raises(CardError, match="^gpu.toml: calibration.gemm: must be"):
        gpu_from_dict({**GOOD, "calibration": {**CAL, "gemm": 1.5}}, "gpu.toml")
    with pytest.raises(CardError, match="^gpu.toml: calibration.moe: missing"):
        gpu_from_dict({**GOOD, "calibration": {k: v for k, v in CAL.items() if k != "moe"}}, "gpu.toml")
    with pytest.raises(CardError, match="^gpu.toml: calibration.measured: must be true or false"):
        gpu_from_dict({**GOOD, "calibration": {**CAL, "measured": "yes"}}, "gpu.toml")


def test_an_old_card_with_one_mfu_gets_told_what_replaced_it():
    with pytest.raises(CardError, match="calibration.attn_mfu: replaced by per-operation efficiencies"):
        gpu_from_dict({**GOOD, "calibration": {"mfu": 0.3, "attn_mfu": 0.4, "overhead_s": 0.4}}, "gpu.toml")


def test_a_card_without_nvlink_uses_pcie():
    g = gpu_from_dict(GOOD, "gpu.toml")
    assert g.nvlink_gbps == 512 and not g.calibrated and g.mark == "uncalibrated"
