"""Fixtures of the app's tests."""

from __future__ import annotations

import pytest


class Started:
    """What `fiolake app` would have started: its command line and environment."""

    def __init__(self) -> None:
        self.cmd: list[str] = []
        self.env: dict[str, str] = {}


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Started:
    """`fiolake app` with Streamlit's process replaced by one that exits at once (the
    command's checks and what it hands Streamlit are the subject, not the server)."""
    from fiolake.cli import app as app_command

    seen = Started()

    class Done:
        def __init__(self, cmd: list[str], env: dict[str, str], **_: object) -> None:
            seen.cmd, seen.env = cmd, env

        def wait(self) -> int:
            return 0

        def send_signal(self, signum: int) -> None:
            pass

    monkeypatch.setattr(app_command.subprocess, "Popen", Done)
    monkeypatch.setattr(app_command.signal, "signal", lambda *_: None)  # keep pytest's
    monkeypatch.delenv("FIOLAKE_APP_AUTH", raising=False)
    return seen
