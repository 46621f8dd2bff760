"""`prfaas-tui serve`: its flags and the command it serves, then the page in a real headless
Chromium (Debian's chromium and chromium-driver, which .ci/run installs; skipped without them)."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from prfaas_tui import cli
from prfaas_tui.commands import serve

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


class FakeServer:
    """Stands in for textual_serve's Server: records what serve asked for, listens nowhere."""
    made: list[FakeServer] = []

    def __init__(self, command: str, host: str, port: int, title: str, public_url: str) -> None:
        self.command, self.host, self.port, self.url = command, host, port, public_url
        FakeServer.made.append(self)

    def serve(self) -> None:
        pass


@pytest.fixture
def fake_server(monkeypatch):
    pytest.importorskip("textual_serve", reason="the serve extra (textual-serve) is not installed")
    import textual_serve.server

    FakeServer.made.clear()
    monkeypatch.setattr(textual_serve.server, "Server", FakeServer)
    return FakeServer.made


def test_the_served_command_is_the_dashboard_on_the_preset(fake_server, capsys):
    assert cli.main(["serve", "--preset", "toy", "--port", "8123"]) == 0
    (made,) = fake_server
    assert (made.host, made.port, made.url) == ("127.0.0.1", 8123, "http://127.0.0.1:8123")
    argv = shlex.split(made.command)
    assert argv[:3] == [sys.executable, "-m", "prfaas_tui.cli"]
    args, extra = cli._parser(argv[3:]).parse_known_args(argv[3:])
    assert not extra and args.command is None  # no subcommand: the dashboard, as `prfaas-tui`
    assert Path(args.preset) == ROOT / "presets" / "toy.toml"
    assert capsys.readouterr().err == ""  # loopback: nothing to say


def test_a_non_loopback_host_is_said_in_one_line(fake_server, capsys):
    assert cli.main(["serve", "--host", "0.0.0.0"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "0.0.0.0 port 8000" in err
    assert fake_server[0].host == "0.0.0.0"
    # the page's websocket goes to this machine by name, not to the wildcard
    assert fake_server[0].url == f"http://{socket.getfqdn()}:8000" and fake_server[0].url in err


def test_an_ipv6_address_is_bracketed_in_the_page():
    assert serve.page_url("::1", 8000) == "http://[::1]:8000"


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.9", True),
                                            ("::1", True), ("localhost", True),
                                            ("0.0.0.0", False), ("10.0.0.1", False),
                                            ("example.org", False)])
def test_loopback(host, loopback):
    assert serve.is_loopback(host) is loopback


@pytest.mark.parametrize("argv, says", [(["--port", "0"], "--port"),
                                        (["--port", "70000"], "--port"),
                                        (["--preset", "no-such-preset"], "no-such-preset")])
def test_bad_flags_are_one_line_and_exit_2(argv, says, capsys):
    assert cli.main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_without_textual_serve_it_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)  # import fails
    assert cli.main(["serve"]) == 2
    assert "textual-serve" in capsys.readouterr().err


# -- the page in a browser -------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Before the page's own script runs: keep what the websocket brings (the app's terminal output),
# so the test can read the screen's text (xterm.js draws it on a canvas, not in the DOM).
RECORD_SOCKET = """
window.__screen = '';
const Native = window.WebSocket;
window.WebSocket = function (...args) {
  const ws = new Native(...args);
  ws.addEventListener('message', async (e) => {
    let text = e.data;
    if (text instanceof Blob) text = await text.text();
    else if (text instanceof ArrayBuffer) text = new TextDecoder().decode(text);
    window.__screen = (window.__screen + text).slice(-2000000);
  });
  return ws;
};
window.WebSocket.prototype = Native.prototype;
Object.assign(window.WebSocket, Native);
"""
# the screen's text without escape sequences (styles and cursor moves split words)
SCREEN_HAS = r"""
const plain = window.__screen.replace(/\x1b\[[0-9;?<>=]*[ -\/]*[@-~]/g, '')
                             .replace(/\x1b[\]P_][^\x07\x1b]*(\x07|\x1b\\)/g, '');
return arguments[0].every(s => plain.includes(s));
"""


@pytest.mark.slow  # a browser and a dashboard process start: seconds, more on a loaded machine
@pytest.mark.skipif(not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
                    reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
                           "chromium-driver; .ci/run installs them)")
def test_the_page_shows_the_dashboard_and_takes_keys(tmp_path):
    pytest.importorskip("textual_serve", reason="the serve extra (textual-serve) is not installed")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (test extra) missing")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "prfaas_tui.cli", "serve", "--port", str(port), "--preset", "toy"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
            str(ROOT), os.environ.get("PYTHONPATH")]))})
    driver = None
    try:
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--window-size=1600,1000",
                    # loopback only: every other name fails (the page asks for a web font)
                    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
            opts.add_argument(arg)
        driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_SOCKET})
        url = f"http://127.0.0.1:{port}/"

        def listening(_) -> bool:  # the server may still be starting
            if server.poll() is not None:
                raise AssertionError(f"serve exited: {(tmp_path / 'serve.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                return False
            return True

        WebDriverWait(driver, 30, poll_frequency=0.2).until(listening)
        driver.get(url)
        screen_has = lambda *words: lambda d: d.execute_script(SCREEN_HAS, list(words))  # noqa: E731
        WebDriverWait(driver, 60, poll_frequency=0.5).until(screen_has("PrfaaS", "Λmax"))
        assert "-first-byte" in driver.find_element(By.TAG_NAME, "body").get_attribute("class")

        # a key typed into the page reaches the app: ? opens the help
        driver.execute_script("window.__screen = '';")
        driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea").send_keys("?")
        WebDriverWait(driver, 30, poll_frequency=0.5).until(screen_has("esc to close"))
    finally:
        if driver is not None:
            driver.quit()
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # the server and the dashboard it started
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()

