"""A topology element's knobs in a dialog: a region's t, N_p/N_d and routing, a site's
instances, a link's bandwidth, loss and connections. Shared by the topology view and its forks; checked on the
running spec as it is typed (a refusal stays in the dialog), then a logged change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen

from emulator.scenario.knobs import KnobError, knob_at, read_at
from emulator.units import format_tokens, to_gbps
from prfaas_tui.screens.prompt import ValuePrompt
from prfaas_tui.session import Session
from prfaas_tui.topology_text import Element


def knob_prompt(session: Session, element: Element) -> tuple[str, str, str]:
    """(title, current value, hint) of an element's knobs on the running topology; the
    ranges are the knob registry's."""
    kind, name = element
    spec = session.running_spec()
    if kind == "region":
        r = spec.region(name)
        return (f"region {name}: t  N_p/N_d  routing = ?",
                f"{r.threshold:.10g} {r.n_p}/{r.n_d} {session.region_policy(name)}",
                "e.g. 32K 4/4 best-bandwidth (threshold, lp, best-bandwidth, "
                "best-cache); any part may be left out")
    if kind == "site":
        return (f"site {name}: instances = ?", str(spec.site(name).instances),
                f"prefill instances at the site, {knob_at('site', 'instances').span()}")
    k = spec.link(*name.split("->", 1))
    tcp = "" if k.transport is None else \
        f" loss={k.transport.loss:g} connections={k.transport.n}"
    return (f"link {name}: bandwidth [loss=P] [connections=N] = ?",
            f"{to_gbps(k.bandwidth):g}{tcp}",
            f"{knob_at('link', 'bandwidth').span()}, in Gbps or with a unit ('1000 MB/s'); "
            f"loss= {knob_at('link', 'loss').span()}, connections= "
            f"{knob_at('link', 'connections').span()} (the goodput follows); "
            "a brownout still takes its share")


def parse_knobs(kind: str, name: str, text: str) -> dict[str, Any]:
    """An element's knobs as the dialog takes them: a site's instances, a link's bandwidth, a
    region's `t N_p/N_d routing tpot=D` (any part left out), each through the knob registry's parse
    and range (KnobError: one line naming the element and the knob)."""
    if kind == "site":
        return {"instances": read_at(kind, name, "instances", text)}
    if kind == "link":  # "40 loss=1e-4 connections=16": any part may be left out
        out = {}
        named = [p.split("=", 1) for p in text.split() if "=" in p]
        if rest := " ".join(p for p in text.split() if "=" not in p):
            out["bandwidth"] = read_at(kind, name, "bandwidth", rest)
        for key, value in named:
            out[key.strip()] = read_at(kind, name, key.strip(), value)
        if not out:
            raise KnobError("bandwidth", "give a bandwidth, loss= or connections=",
                            f"{kind} {name}")
        return out
    out: dict[str, Any] = {}
    for part in text.split():
        if "=" in part:  # a region's named knob: tpot=50ms (a decode from the cards)
            key, value = (x.strip() for x in part.split("=", 1))
            out[key] = read_at(kind, name, key, value)
        elif "/" in part:
            a, b = part.split("/", 1)
            out["n_p"], out["n_d"] = (read_at(kind, name, k, x) for k, x in (("n_p", a), ("n_d", b)))
        elif part[0].isdigit() or part[0] in "+-.":
            out["t"] = float(read_at(kind, name, "t", part))
        else:
            out["routing"] = part
    if not out:
        raise KnobError("t", "give t, N_p/N_d or a routing policy", f"{kind} {name}")
    return out


def change_element(screen: Screen, session: Session, kind: str, name: str,
                   knobs: dict[str, Any], whose: str = "") -> bool:
    """Turn one element's knobs (a logged change); a refusal is a notice, nothing changed."""
    try:
        session.set_element(kind, name, **knobs)
    except KnobError as exc:
        screen.notify(str(exc), title="refused", severity="warning")
        return False
    said = ", ".join(f"{k} {_shown(k, v)}" for k, v in knobs.items())
    screen.notify(f"{whose}{name}: {said}")
    return True


def edit_element(screen: Screen, session: Session, element: Element,
                 after: Callable[[], None], whose: str = "") -> None:
    """The element's knob dialog (checked as it is typed: a refusal stays in the dialog),
    then the change."""
    kind, name = element
    title, value, hint = knob_prompt(session, element)

    def validate(text: str) -> str | None:
        try:
            session.check_element(kind, name, **parse_knobs(kind, name, text))
        except (KnobError, ValueError) as exc:
            return str(exc)
        return None

    def done(text: str | None) -> None:
        if text is not None and change_element(screen, session, kind, name,
                                               parse_knobs(kind, name, text), whose):
            after()

    screen.app.push_screen(ValuePrompt(f"{whose}{title}", value, hint, validate), done)


def _shown(key: str, value: Any) -> str:
    if key == "bandwidth":
        return f"{to_gbps(value):g} Gbps"
    if key == "t":
        return format_tokens(value)
    return str(value)
