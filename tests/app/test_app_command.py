"""`fiolake app` serves the Streamlit app on 127.0.0.1 and stops with SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.aggregator import lakegen
from tests.app.conftest import Started

FIOLAKE = Path(sys.executable).parent / "fiolake"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # starts a Streamlit server (3 s): not in the fast tier
def test_app_serves_and_stops(tmp_path: Path) -> None:
    lakegen.write_run(lakegen.local_store(tmp_path / "lake"), run_id="r1", job_id="j1")
    port = free_port()
    proc = subprocess.Popen(
        [str(FIOLAKE), "app", "--lake", str(tmp_path / "lake"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline, body = time.monotonic() + 60, b""
        while time.monotonic() < deadline and body != b"ok":
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health") as resp:
                    body = resp.read()
            except OSError:
                time.sleep(0.3)
        assert body == b"ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    with socket.socket() as sock:  # Streamlit went away with us: nothing listens any more
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is fine
        sock.bind(("127.0.0.1", port))


def _app(*args: str) -> object:
    from click.testing import CliRunner

    from fiolake.cli import cli

    return CliRunner().invoke(cli, ["app", *args])


REFUSED = (
    "Error: fiolake app on {address} would show the lake to anyone who can reach it without "
    "a login — give --auth FILE (an OIDC login; `fiolake stack app-login` writes one, "
    'docs/deploy.md "Sharing the app"), use --address 127.0.0.1, or pass '
    "--insecure-no-login if your own proxy signs people in\n"
)


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "192.0.2.7", "fiolake.example.org"])
def test_beyond_localhost_without_a_login_is_refused(
    started: Started, tmp_path: Path, address: str
) -> None:
    result = _app("--lake", str(tmp_path), "--address", address)
    assert result.exit_code == 2
    assert result.output.endswith(REFUSED.format(address=address))
    assert started.cmd == []  # no server was started


def test_loopback_needs_no_login(started: Started, tmp_path: Path) -> None:
    result = _app("--lake", str(tmp_path), "--address", "127.0.0.1")
    assert result.exit_code == 0, result.output
    assert "--secrets.files" not in started.cmd
    assert "FIOLAKE_APP_AUTH" not in started.env
    assert started.cmd[4].endswith("/fiolake/app/main.py")  # the gate runs before any page
    # Readers do not edit the pages: watching every imported module's file cost a first
    # visit ~0.2 s (BENCHMARKS.md).
    assert started.cmd[started.cmd.index("--server.fileWatcherType") + 1] == "none"


def test_insecure_no_login_serves_openly_when_asked(started: Started, tmp_path: Path) -> None:
    result = _app("--lake", str(tmp_path), "--address", "0.0.0.0", "--insecure-no-login")
    assert result.exit_code == 0, result.output
    assert started.cmd[started.cmd.index("--server.address") + 1] == "0.0.0.0"
    assert "FIOLAKE_APP_AUTH" not in started.env


def test_a_login_file_reaches_streamlit_and_the_pages(started: Started, tmp_path: Path) -> None:
    from tests.app.test_access import AUTH, ROLES

    ca = tmp_path / "idp-ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    auth = tmp_path / "auth.toml"
    auth.write_text(AUTH + f"[fiolake]\nca_file = '{ca}'\n" + ROLES)
    result = _app("--lake", str(tmp_path), "--address", "0.0.0.0", "--auth", str(auth))
    assert result.exit_code == 0, result.output
    assert started.cmd[started.cmd.index("--secrets.files") + 1] == str(auth)
    assert started.env["FIOLAKE_APP_AUTH"] == str(auth)
    assert started.env["SSL_CERT_FILE"] == str(ca)  # Authlib's httpx trusts the IdP's CA
    assert "(lake " in result.output and "OIDC login)" in result.output


def test_a_bad_login_file_stops_before_the_server(started: Started, tmp_path: Path) -> None:
    auth = tmp_path / "auth.toml"
    auth.write_text("[auth]\n")
    result = _app("--lake", str(tmp_path), "--address", "0.0.0.0", "--auth", str(auth))
    assert result.exit_code == 2
    assert result.output.endswith(
        f"Error: login configuration {auth}: [auth] lacks redirect_uri, cookie_secret, "
        'client_id, client_secret, server_metadata_url — see docs/deploy.md "Sharing the app"\n'
    )
    assert started.cmd == []
