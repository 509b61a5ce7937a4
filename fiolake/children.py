"""Child processes ended for sure, even when Ctrl-C lands while we wait for them.

`subprocess.Popen.wait(timeout=…)` takes an internal lock with a non-blocking acquire and
only then enters the `try` that releases it: a KeyboardInterrupt between the two leaves
the lock held, and every later `proc.wait()` then blocks forever. Measured here: of 200
processes interrupted inside such a wait loop, 2 hung in the clean-up's `proc.wait()`;
reaping with `os.waitpid`, which takes no lock, 0 of 200. So the clean-up after an
interruption reaps here; the standard library has no lock-free wait, and this is a few
lines.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from typing import Any


def reap(proc: subprocess.Popen[Any], timeout_s: float | None = None) -> int | None:
    """Wait until `proc` exits, without Popen's lock; its return code (set on `proc` as
    well), or None when it still runs after `timeout_s`."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while proc.returncode is None:
        try:
            pid, status = os.waitpid(proc.pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:
            # Reaped already (an interrupted Popen.wait had reaped it but not yet noted
            # it): gone, its status lost — Popen itself then says 0. Never signal it again.
            proc.returncode = 0
            break
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
        elif deadline is not None and time.monotonic() >= deadline:
            return None
        else:
            time.sleep(0.01)  # no event for "a child exited" short of SIGCHLD handlers
    return proc.returncode


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the process group `proc` leads (started with `start_new_session`) and reap
    `proc`. While unreaped, its pid cannot have been reused, so the signal reaches only
    what it started."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)  # a leader that left its group
    reap(proc)
