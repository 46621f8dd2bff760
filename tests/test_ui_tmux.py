"""The real `prfaas-tui` in a real terminal (tmux): start it, press keys, read the screen back
with capture-pane. Skipped only where tmux is absent (CI installs it)."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

pytestmark = [pytest.mark.tmux,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]
SERVERS = itertools.count()  # a fresh tmux server (socket) per app, never reused
SIM = re.compile(r"([▶⏸]) sim (\d+):(\d\d):(\d\d\.\d)")


def command(*args: str) -> str:
    exe = Path(sys.executable).with_name("prfaas-tui")
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "prfaas_tui.cli"]
    return " ".join([*base, *args])


class Tmux:
    """One app in its own tmux server (-L), so parallel tests cannot resize each other."""

    def __init__(self, name: str, cols: int, rows: int, cmd: str) -> None:
        self.name = name
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES")}
        env["TERM"] = "xterm-256color"
        self.tmux("new-session", "-d", "-s", name, "-x", str(cols), "-y", str(rows), cmd, env=env)

    def tmux(self, *args: str, env: dict | None = None) -> str:
        return subprocess.run(["tmux", "-L", self.name, *args], capture_output=True, text=True,
                              env=env).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def wait(self, *patterns: str, timeout: float = 60.0) -> str:
        """The first screen capture that shows every pattern (a capture may catch a frame
        half drawn, so all must hold in the same one)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            screen = self.screen()
            if all(re.search(p, screen) for p in patterns):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{patterns!r} never showed; screen:\n{self.screen()}")

    def sim_time(self) -> tuple[str, float]:
        m = SIM.search(self.screen())
        assert m, self.screen()
        return m.group(1), int(m.group(2)) * 3600 + int(m.group(3)) * 60 + float(m.group(4))

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def tmux():
    sessions: list[Tmux] = []

    def start(cols: int, rows: int, *args: str) -> Tmux:
        t = Tmux(f"prfaas-ui-{os.getpid()}-{next(SERVERS)}", cols, rows,
                 command(*args) + "; sleep 5")  # keep the pane a moment after exit
        sessions.append(t)
        return t

    yield start
    for t in sessions:
        t.close()


def test_default_preset_opens_running_and_answers_keys(tmux):
    t = tmux(160, 48)
    t.wait(r"▶ sim", r"20x \(rtf", "paper-case-study", r"Λmax \d", "lost 0")  # running, paced
    t.keys("Space")
    t.wait(r"⏸ sim")
    _, t0 = t.sim_time()
    t.keys(".")
    t.wait(rf"⏸ sim 0:00:{t0 + 1:04.1f}")
    t.keys("t")
    t.wait(r"t = \?")
    t.keys("C-a", "C-k")  # clear the field (a binding: let it run before typing)
    t.wait(r"▊ +▎")  # the input row shows empty: typing now cannot race the clearing
    t.keys("25000", "Enter")
    t.wait(r"t\s+25,000")
    t.wait(r"L > 25,000 → PrfaaS")  # the emulator's router took it
    t.keys("Space")
    t.wait(r"▶ sim")
    t.keys("q")
    t.wait(r"^\s*$", timeout=5)  # the app left the alternate screen
    assert "prfaas-tui —" not in t.screen()


def test_small_terminal_and_preset_flag(tmux):
    t = tmux(80, 24, "--preset", "toy")
    t.wait(r"▶ sim", "toy", r"pool 1\+2 = 3 of 3")
    t.keys("v")  # narrow: switch to the model view
    t.wait(r"Λmax \d")
    t.keys("?")
    t.wait(r"prfaas-tui help")
    t.keys("Escape")  # alone: ESC and a key in one burst read as alt+key
    t.wait(r"\? Help .* v Model q Quit")  # the narrow footer: whole words, v hinted
    t.keys("q")


def test_the_effective_ceiling_reads_true_during_a_brownout(tmux):
    """In a real terminal, mid link-brownout: the model panel's PrfaaS ceiling is the model at
    the link's 6 Gbps (not the 30 Gbps lease), with the nominal one beside it."""
    from emulator.model import Knobs, evaluate
    from emulator.scenario.drills import load_drill

    t = tmux(160, 48, "--drill", "link-brownout")
    t.wait(r"sim 0:00")
    t.keys(">", ">")  # 100x: the brownout starts at 10 min
    t.wait(r"link 6\.0 of 30 Gbps", timeout=120)
    t.keys("space")
    screen = t.wait(r"⏸ sim", r"link 6\.0 of 30 Gbps")
    tokens = float(re.search(r"▸? t\s+([\d,]+)", screen).group(1).replace(",", ""))
    row = re.search(r"PrfaaS\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+◀?", screen)
    assert row, screen
    effective, nominal = float(row.group(1)), float(row.group(3))
    scenario = load_drill("link-brownout").scenario
    system, mode = scenario.system, scenario.mode  # the panel shows the preset's mode
    knobs = Knobs(t=tokens, n_p=4, n_d=4, n_prfaas=system.n_prfaas, bandwidth=6e9 / 8)
    live = evaluate(replace(system, bandwidth=6e9 / 8), knobs, mode)
    healthy = evaluate(system, replace(knobs, bandwidth=system.bandwidth), mode)
    assert effective == pytest.approx(live.ceilings["prfaas"], abs=0.02)
    assert nominal == pytest.approx(healthy.ceilings["prfaas"], abs=0.02)
    assert effective < 0.8 * nominal
