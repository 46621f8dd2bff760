"""Without torch the project still imports, and the torch backend fails with one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import sys
sys.modules["torch"] = None  # as if torch were not installed
import emulator
import emulator.torch_prefill as tp
from emulator.torch_prefill.config import MODEL_NAMES, get_config, kv_bytes_from_config
assert "hybrid-tiny" in MODEL_NAMES and kv_bytes_from_config(get_config("dense-tiny"), 8) > 0
assert not tp.torch_available()
try:
    tp._require_torch()
except tp.TorchUnavailable as exc:
    print("hint:", exc)
else:
    raise SystemExit("torch imported?")
try:
    import emulator.torch_prefill.models
except ImportError as exc:
    assert isinstance(exc, tp.TorchUnavailable), type(exc)
else:
    raise SystemExit("models imported without torch?")
from prfaas_tui.commands import profile
rc = profile.main(["--backend", "torch", "--model", "hybrid-small", "--lengths", "1K"])
print("rc:", rc)
assert "torch" not in {k for k, v in sys.modules.items() if v is not None}
"""


def test_imports_and_hint_without_torch():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "hint: the torch backend needs the optional extra" in proc.stdout
    assert "rc: 2" in proc.stdout
    assert proc.stderr == ("prfaas-tui: the torch backend needs the optional extra: "
                           "pip install 'prfaas-tui[torch]' (CPU wheel: pip install torch==2.13.0)\n")
