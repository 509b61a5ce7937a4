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
