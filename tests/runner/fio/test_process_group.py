"""fiolake.runner.fio.process when fio is killed from outside: nothing of it runs on."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from fiolake.runner.fio.process import _job_processes, run_fio

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")

# Two job processes that would run for a minute, gently (rate-limited, psync).
JOB = """[global]
directory={data}
size=1M
bs=4k
ioengine=psync
rw=randread
rate_iops=50
time_based=1
runtime=60
[a]
[b]
"""


def _workers(parent: int) -> int:
    """How many child processes `parent` has (fio's job processes, once they started)."""
    count = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        count += int(fields[1]) == parent
    return count


def _fio_with_its_jobs_running() -> int | None:
    """The pid of the fio we started, once both its job processes run."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc / "stat").read_text().rpartition(")")[2].split()
            name = (proc / "comm").read_text().strip()
        except OSError:
            continue
        pid = int(proc.name)
        if name == "fio" and int(fields[1]) == os.getpid() and _workers(pid) >= 2:
            return pid
    return None


def _job(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    job = tmp_path / "job.fio"
    job.write_text(JOB.format(data=tmp_path / "data"))
    return job


def test_a_fio_killed_from_outside_leaves_no_job_process_running(tmp_path: Path) -> None:
    """SIGKILL to fio's parent process alone (the OOM killer, an operator) leaves its job
    processes running (each in a session of its own); run_fio ends them before it returns."""
    job = _job(tmp_path)
    killed: list[int] = []

    def kill_parent_once_jobs_run() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not killed:
            if (pid := _fio_with_its_jobs_running()) is not None:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_parent_once_jobs_run, daemon=True)
    killer.start()
    try:
        run = run_fio(job, tmp_path, deadline_s=120, expected_s=60)
        killer.join(5)
        assert killed and run.exit_code == -signal.SIGKILL
        assert _job_processes(os.path.realpath(tmp_path)) == []
    finally:
        _kill_what_is_left(tmp_path)


def test_an_interrupt_that_has_to_kill_fio_leaves_no_job_process_running(tmp_path: Path) -> None:
    """Ctrl-C of fiolake while fio cannot take its SIGINT (stopped here; stuck in the
    kernel in life): fio is killed after the grace, and its job processes, in sessions of
    their own, are ended too before the interrupt is raised again."""
    job = _job(tmp_path)
    stopped: list[int] = []

    def interrupt_with_fio_stopped() -> bool:
        if (pid := _fio_with_its_jobs_running()) is None:
            return False
        os.kill(pid, signal.SIGSTOP)
        stopped.append(pid)
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            run_fio(job, tmp_path, deadline_s=120, expected_s=60, grace_s=0.5,
                    should_stop=interrupt_with_fio_stopped, tick_s=0.05)  # fmt: skip
        assert stopped
        assert _job_processes(os.path.realpath(tmp_path)) == []
    finally:
        _kill_what_is_left(tmp_path)  # a failure must not leave a stopped fio (seen: 40 min)


def _kill_what_is_left(outdir: Path) -> None:
    """SIGKILL every fio still working in `outdir` (a stopped one too)."""
    for pid in _job_processes(os.path.realpath(outdir)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
