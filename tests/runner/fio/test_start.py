"""How fiolake.runner.fio.process starts fio: from a threaded runner, dying with its thread.

CI once hung a gang member for good: the runner forked fio with a preexec_fn while its
heartbeat thread ran, the child deadlocked before exec (in a lock libfaketime held at
the fork), and Popen waited on it for ever. fio now starts through setpriv, with no
Python between fork and exec.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fiolake.errors import FioError
from fiolake.runner.fio import process
from tests.hygiene import remove_faketime_segments
from tests.proc_evidence import wait_until

needs_setpriv = pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")

# 1,000 starts from a process whose threads keep calling into libfaketime: the old
# preexec_fn hung 4 runs in 4 here (a child stuck before exec); the loop takes ~2 s.
STARTS_UNDER_THREADS = """
import sys, threading, time
from pathlib import Path
from fiolake.runner.fio import process

def spin():
    while True:
        time.time()
        threading.Event().wait(0.0005)

for _ in range(3):
    threading.Thread(target=spin, daemon=True).start()
work = Path(sys.argv[1])
for _ in range(1000):
    with open(work / "stderr", "wb") as fh:
        proc = process._start(["true"], work, work, fh, piped=False, pass_fds=())
    assert proc.wait() == 0
print("started 1000")
"""


def _start(argv: list[str], tmp_path: Path) -> subprocess.Popen[bytes]:
    with open(tmp_path / "stderr", "wb") as fh:
        return process._start(argv, tmp_path, tmp_path, fh, piped=False, pass_fds=())


@needs_setpriv
@pytest.mark.skipif(shutil.which("faketime") is None, reason="needs faketime")
def test_fio_starts_from_a_threaded_process_under_libfaketime(tmp_path: Path) -> None:
    argv = ["env", "DONT_FAKE_MONOTONIC=1", "faketime", "-f", "+30s"]
    script = [sys.executable, "-c", STARTS_UNDER_THREADS, str(tmp_path)]
    proc = subprocess.Popen(
        [*argv, *script],
        cwd=Path(__file__).parents[3],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("a start hung: a child never reached exec within 60 s")
    finally:
        remove_faketime_segments(proc.pid)
    assert proc.returncode == 0 and out.strip().endswith("started 1000"), out


@needs_setpriv
def test_fio_ends_when_the_thread_that_started_it_ends(tmp_path: Path) -> None:
    started: list[subprocess.Popen[bytes]] = []

    def start_and_end() -> None:
        # ends once the program runs (setpriv has set the signal: it exec'd it), as the
        # runner's thread ends while fio runs when the runner dies
        proc = _start(["sleep", "30"], tmp_path)
        started.append(proc)
        wait_until("sleep to run", lambda: Path(f"/proc/{proc.pid}/comm").read_text() == "sleep\n")

    starter = threading.Thread(target=start_and_end)
    starter.start()
    starter.join()
    [proc] = started
    try:
        assert proc.wait(timeout=10) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The program is found on the clean PATH and started by absolute path.
    assert proc.args == [
        shutil.which("setpriv"),
        "--pdeathsig",
        "TERM",
        "--",
        "/usr/bin/sleep",
        "30",
    ]


def test_a_missing_fio_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(FioError) as exc:
        _start([str(tmp_path / "no-fio"), "--version"], tmp_path)
    assert str(exc.value) == (
        f"cannot start {tmp_path / 'no-fio'}: not found or not executable — "
        "install it with `apt-get install fio` (or `make setup`)"
    )
