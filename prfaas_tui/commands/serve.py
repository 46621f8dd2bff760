"""`prfaas-tui serve`: the dashboard on a local web page, for a team looking at one deployment.

textual-serve is a small web server that starts a command per browser session (a fresh process
for every page that connects) and relays its terminal over a websocket. The command here is this
Python running `prfaas-tui --preset P`, so each tab gets its own dashboard, the same one the
terminal opens. Anyone who can reach the port runs that command, hence loopback by default and
one line on stderr when a --host opens it wider.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import socket
import sys
from pathlib import Path

from emulator.scenario import presets
from prfaas_tui.errors import UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
INSTALL_HINT = "pip install 'prfaas-tui[serve]' (or pip install textual-serve)"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("serve", help="the dashboard on a local web page (one per browser tab)")
    p.add_argument("--host", default=DEFAULT_HOST, metavar="ADDRESS",
                   help="address to listen on; anything but loopback lets other machines open "
                        "the dashboard")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, metavar="PORT", help="TCP port, 1-65535")
    p.add_argument("--preset", default=None, metavar="NAME|PATH",
                   help="preset name or TOML path the page opens (default paper-case-study)")
    return p


def is_loopback(host: str) -> bool:
    """Only this machine can connect: `localhost` or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def page_url(host: str, port: int) -> str:
    """The address the page gives the browser for its websocket: a wildcard (0.0.0.0, ::)
    listens everywhere but is nowhere to connect to, so it becomes this machine's name; an
    IPv6 address is bracketed."""
    if host in ("0.0.0.0", "::"):
        host = socket.getfqdn()
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def app_command(preset: str) -> str:
    """The shell command textual-serve runs per session: this interpreter, the same entry point
    as `prfaas-tui`, with the preset as an absolute path (the server's cwd need not be the
    user's)."""
    path = presets.resolve(preset)
    return shlex.join([sys.executable, "-m", "prfaas_tui.cli", "--preset", str(Path(path).resolve())])


def main(args: argparse.Namespace) -> int:
    from prfaas_tui.cli import DEFAULT_PRESET

    if not 1 <= args.port <= 65535:
        raise UsageError(f"--port: {args.port} is not a TCP port (1-65535)")
    preset = args.preset or DEFAULT_PRESET
    presets.load(preset, topology=True)  # a broken preset fails here in one line, not per tab
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UsageError(f"serve needs textual-serve: {INSTALL_HINT}") from None
    url = page_url(args.host, args.port)
    if not is_loopback(args.host):
        print(f"prfaas-tui serve: listening on {args.host} port {args.port} ({url}): anyone who "
              "can reach it opens the dashboard", file=sys.stderr)
    server = Server(app_command(preset), host=args.host, port=args.port, title="prfaas-tui",
                    public_url=url)
    try:
        server.serve()
    except socket.gaierror as exc:
        raise UsageError(f"--host {args.host}: {exc.strerror}") from None
    except OSError as exc:  # the port is taken, or the address is not this machine's
        raise UsageError(f"--host/--port: cannot listen on {args.host}:{args.port}: "
                         f"{exc.strerror or exc}") from None
    return 0
