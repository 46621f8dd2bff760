"""Where a card-made profile's kernel time comes from: the built-in kernel model, or (optional
extra) aiconfigurator's operator database. Both get the deployment's overhead added.

One entry point, `card_profile`, so `models`, `new` and presets build profiles the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from emulator.cards.gpu import GpuCard
from emulator.cards.kernel import Setup, kernel_seconds, resolve_setup
from emulator.cards.model_card import ModelCard
from emulator.cards.roofline import DEFAULT_OVERHEAD_S, roofline_profile
from emulator.profiles import Profile

PROFILE_SOURCES = ("builtin", "aiconfigurator")


def card_profile(card: ModelCard, gpu: GpuCard, gpus: int, *, tp: int | None = None,
                 ep: int | None = None, dtype: str | None = None, kv_dtype: str | None = None,
                 overhead_s: float = DEFAULT_OVERHEAD_S, profile_source: str = "builtin",
                 name: str | None = None) -> tuple[Profile, Setup, Callable[[float], float]]:
    """The profile, the resolved setup and the kernel-seconds function of the length."""
    setup = resolve_setup(card, gpu, gpus, tp=tp, ep=ep, dtype=dtype, kv_dtype=kv_dtype,
                          overhead_s=overhead_s)
    if profile_source == "aiconfigurator":
        from emulator.cards import aic

        curve = aic.kernel_curve(card, gpu, setup)
        prof = roofline_profile(card, gpu, setup, name, kernel=curve,
                                source=f"aiconfigurator {aic.VERSION} kernel")
        return prof, setup, lambda n: float(curve(n))
    served = card.with_kv_dtype(setup.kv_dtype)
    prof = roofline_profile(card, gpu, setup, name)
    return prof, setup, lambda n: float(kernel_seconds(served, gpu, setup, np.asarray(n, float)))
