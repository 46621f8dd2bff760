"""The optional aiconfigurator kernel source: without the extra, one line saying how to install
it (exit 2); with it (CI installs `.[aic]`), its estimate for a known model agrees with the
figures tests/kernel_reference.py holds and with the built-in kernel model."""

import builtins
import json
from pathlib import Path

import pytest

from emulator.cards import aic
from emulator.cards.gpu import load_gpu
from emulator.cards.kernel import kernel_seconds, resolve_setup
from emulator.cards.model_card import read_config
from prfaas_tui.cli import main
from tests.kernel_reference import AIC_PREFILL_MS

CONFIG = str(Path(__file__).parent / "configs" / "qwen3-32b.json")


@pytest.fixture
def no_aiconfigurator(monkeypatch):
    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == "aiconfigurator" or name.startswith("aiconfigurator."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    aic._estimate.cache_clear()  # an earlier test's estimate must not answer for the package


@pytest.mark.parametrize("argv", [
    ["models", "--config", CONFIG, "--gpu", "h200", "--profile-source", "aiconfigurator"],
    ["new", "--model", CONFIG, "--profile-source", "aiconfigurator", "--out", "never-written.toml"],
])
def test_without_the_extra_the_flag_says_how_to_install_it(no_aiconfigurator, capsys, argv, tmp_path,
                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "--profile-source aiconfigurator: aiconfigurator is not installed: pip install -e '.[aic]'" in err[0]
    assert "aiconfigurator==0.12.0" in err[0]
    assert not (tmp_path / "never-written.toml").exists()


def test_a_gpu_without_a_database_is_one_line(capsys):
    assert main(["models", "--config", CONFIG, "--gpu", "l20", "--profile-source", "aiconfigurator"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and ("no aiconfigurator database for GPU 'l20'" in err or "not installed" in err)


@pytest.mark.aic
@pytest.mark.slow
def test_aiconfigurator_kernel_matches_its_figures_and_the_builtin_model(monkeypatch, capsys):
    pytest.importorskip("aiconfigurator")
    monkeypatch.setattr(aic, "SAMPLE_LENGTHS", (8192, 32768))  # two estimates keep it short
    aic._estimate.cache_clear()
    card, gpu = read_config(CONFIG, "qwen3-32b"), load_gpu("h200")
    setup = resolve_setup(card, gpu, 8, dtype="bf16", kv_dtype="bf16")
    curve = aic.kernel_curve(card, gpu, setup)
    for n_tok in (8192, 32768):
        ref = AIC_PREFILL_MS[("qwen3-32b", "h200", "bf16", n_tok)] / 1e3
        assert curve(n_tok) == pytest.approx(ref, rel=0.01)
        assert kernel_seconds(card, gpu, setup, n_tok) == pytest.approx(curve(n_tok), rel=0.25)
    assert main(["models", "--config", CONFIG, "--gpu", "h200", "--lengths", "8K", "--dtype", "bf16",
                 "--profile-source", "aiconfigurator", "--overhead", "0.1s", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    (p,) = d["profile"]
    assert d["profile_source"] == "aiconfigurator"
    assert p["kernel_s"] == pytest.approx(curve(8192)) and p["t_prefill_s"] == pytest.approx(curve(8192) + 0.1)
