"""Where prefill service times come from: the `[prefill]` section.

[prefill]  backend ("profile" | "torch"), model (default "hybrid-tiny"), device ("cpu" / "cuda";
           default: cuda when present), length_scale (run round(l * scale) tokens and scale the
           results back, see TorchPrefillBackend), stages (default ["prfaas", "pd-p"]);
           token_budget ("8K": card-made profiles batch and chunk prefill in steps of that many
           tokens, emulator.cards.prefill_batch; a roofline profile's own `token_budget` key
           overrides it), overhead ("per-request", the default, or "per-step": how a batched
           profile pays its prefill_overhead)

emulator.sim.runtime.prefill_backend runs the torch backend; only its model table
(emulator.torch_prefill.config, torch-free) is read here.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.cards.prefill_batch import OVERHEAD_MODES, budget_problem
from emulator.model import Stage
from emulator.scenario.reader import Reader, one_of, positive, read_fields, setting
from emulator.torch_prefill.config import get_config
from emulator.units import parse_tokens

BACKENDS = ("profile", "torch")
PREFILL_STAGES = (Stage.PRFAAS, Stage.PD_P)


def known_model(name: str) -> str | None:
    try:
        get_config(name)
    except ValueError as exc:
        return str(exc)
    return None


def check_device(device: str) -> str | None:
    ok = device in ("cpu", "cuda") or device.startswith("cuda:")
    return None if ok else f"must be cpu, cuda or cuda:N, got {device!r}"


@dataclass(frozen=True)
class PrefillBackendConfig:
    backend: str = setting("profile", parse=str, check=one_of(*BACKENDS))
    model: str = setting("hybrid-tiny", parse=str, check=known_model)
    device: str | None = setting(None, parse=str, check=check_device)  # None: cuda if present
    length_scale: float = setting(1.0, check=positive)
    stages: tuple[Stage, ...] = PREFILL_STAGES


@dataclass(frozen=True)
class Batching:
    """How card-made profiles prefill: one request at a time (token_budget None), or in steps of
    up to token_budget tokens; and whether their serving overhead is paid per request or per
    step."""

    token_budget: float | None = None
    overhead: str = "per-request"


def budget_check(x: float) -> str | None:
    """A token budget's own bounds (the model's context is checked with its card)."""
    return budget_problem(x, None)


def parse_batching(root: Reader) -> Batching:
    """`[prefill] token_budget` and `overhead` (read before the profiles are built)."""
    p = root.section("prefill")
    if p is None:
        return Batching()
    return Batching(p.get("token_budget", parse_tokens, None, check=budget_check),
                    p.get("overhead", str, "per-request", check=one_of(*OVERHEAD_MODES)))


def parse_prefill(root: Reader) -> PrefillBackendConfig | None:
    """The `[prefill]` section; None for the profile backend (nothing to change)."""
    p = root.section("prefill")
    if p is None:
        return None
    kw = read_fields(PrefillBackendConfig, p)
    if p.raw("token_budget", None) is not None and kw.get("backend") == "torch":
        raise p.error("token_budget", "the torch backend prefills one request at a time: "
                      "batching needs the profile backend")
    p.raw("overhead", None)  # parse_batching's
    stages = p.raw("stages", list(PREFILL_STAGES))
    if (not isinstance(stages, list) or not stages
            or any(s not in PREFILL_STAGES for s in stages)):
        raise p.error("stages", f"must be a non-empty list of {', '.join(PREFILL_STAGES)}, "
                      f"got {stages!r}")
    p.finish()
    cfg = PrefillBackendConfig(**kw, stages=tuple(dict.fromkeys(map(Stage, stages))))
    return cfg if cfg.backend == "torch" else None
