"""fiolake.runner.fio.process's watchdog, with a stand-in fio that ignores SIGINT (a real
fio stuck in the kernel does; it cannot be made to on cue): past the deadline SIGINT,
after the grace SIGKILL to fio's whole process group; and an interrupt of fiolake
itself ends fio the same way before it is raised again."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from fiolake.runner.fio.process import run_fio
from fiolake.stack.process import pid_alive


def _stubborn_fio(tmp_path: Path) -> tuple[Path, Path]:
    """A `fio` that ignores SIGINT and starts a child that does too; the child's pid file."""
    child = tmp_path / "child.pid"
    fio = tmp_path / "fio"
    fio.write_text(f"#!/bin/sh\ntrap '' INT\nsleep 300 & echo $! > {child}\nwait\n")
    fio.chmod(0o755)
    (tmp_path / "job.fio").write_text("[a]\nrw=read\n")
    return fio, child


def test_past_the_deadline_sigint_then_sigkill_to_the_group(tmp_path: Path) -> None:
    fio, child = _stubborn_fio(tmp_path)
    started = time.monotonic()
    run = run_fio(tmp_path / "job.fio", tmp_path / "out", deadline_s=0.5, expected_s=0.1,
                  grace_s=0.5, fio=str(fio), tick_s=0.05)  # fmt: skip
    took = time.monotonic() - started
    assert run.watchdog == "sigkill" and run.exit_code == -signal.SIGKILL
    assert 1.0 <= took < 10, took  # the deadline, then the grace: not before, not long after
    assert not pid_alive(int(child.read_text()))  # what fio started went with it


def test_an_interrupt_of_fiolake_ends_fio_before_it_is_raised_again(tmp_path: Path) -> None:
    fio, child = _stubborn_fio(tmp_path)

    def interrupt_once_fio_runs() -> bool:
        if child.exists() and child.read_text().strip():
            raise KeyboardInterrupt
        return False

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_fio(tmp_path / "job.fio", tmp_path / "out", deadline_s=60, expected_s=1,
                grace_s=0.5, fio=str(fio), should_stop=interrupt_once_fio_runs,
                tick_s=0.05)  # fmt: skip
    assert time.monotonic() - started < 10
    assert not pid_alive(int(child.read_text()))
