"""Optional real-torch prefill backend: measure T_prefill and S_kv of hybrid vs dense models.

torch is an optional extra, so importing this package never imports torch: the names below are
loaded on first use, and `_require_torch()` turns a missing torch into one `TorchUnavailable`
error carrying the install hint the CLI prints.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

TORCH_HINT = (
    "the torch backend needs the optional extra: pip install 'prfaas-tui[torch]' "
    "(CPU wheel: pip install torch==2.13.0)"
)


class TorchUnavailable(ImportError):
    """torch is not installed (or does not import); str() is the install hint."""

    def __init__(self, message: str = TORCH_HINT):
        super().__init__(message)


def _require_torch() -> ModuleType:
    """Import torch or raise `TorchUnavailable` (the one place that decides availability)."""
    try:
        import torch
    except (ImportError, OSError) as exc:
        raise TorchUnavailable() from exc
    return torch


def torch_available() -> bool:
    try:
        _require_torch()
    except TorchUnavailable:
        return False
    return True


# name -> submodule; config is torch-free, the others import torch when first touched.
_LAZY = {
    "ModelConfig": "config", "MODEL_NAMES": "config", "get_config": "config",
    "kv_bytes_from_config": "config",
    "PrefillLM": "models", "build_model": "models", "resolve_device": "models",
    "PrefillResult": "prefill", "prefill": "prefill",
    "chunked_linear_attention": "prefill", "recurrent_linear_attention": "prefill",
    "ProfilePoint": "profiling", "ModelProfile": "profiling", "Comparison": "profiling",
    "time_prefill": "profiling", "profile_model": "profiling", "compare": "profiling",
    "write_profile": "profiling",
    "TorchPrefillBackend": "backend",
}

__all__ = ["TORCH_HINT", "TorchUnavailable", "torch_available", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
