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
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
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


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C that lands inside the block until the block ends, then raise it.

    For starting a child the caller must clean up after: a KeyboardInterrupt inside
    `Popen(...)` (after the fork, while it waits to hear that exec worked) or before the
    result is assigned leaves the child running with nobody holding its pid. Seen: two
    fresh-clone suites whose Ctrl-C came just as the stand-in `go` started, each leaving
    it and its child running. Python runs signal handlers only in the main thread, so
    elsewhere nothing is deferred (no KeyboardInterrupt can land there); a SIGINT that is
    ignored or has its default action is left as it is."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield
        return
    held: list[FrameType | None] = []
    signal.signal(signal.SIGINT, lambda _signum, frame: held.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            previous(signal.SIGINT, held[0])


def kill_group(proc: subprocess.Popen[Any], timeout_s: float = 10.0) -> list[int]:
    """SIGKILL the process group `proc` leads (started with `start_new_session`), reap
    `proc`, and wait until no member of the group is left alive; the pids still alive
    after `timeout_s` (none, short of a process stuck in the kernel). While unreaped, the
    leader's pid cannot have been reused, so the signal reaches only what it started."""
    if proc.returncode is not None:
        return []  # reaped: its pid, and so its group id, may belong to another process now
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)  # a leader that left its group
    reap(proc)
    # A SIGKILL is only queued: a member dies once the kernel next schedules it, which on
    # a busy host comes after the leader has been reaped. The caller's next step (the
    # device or the lock again) must not meet a member still running.
    deadline = time.monotonic() + timeout_s
    while (left := group_members(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)  # no event says "exited" for a process that is not our child
    return left


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group `pgid`."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = stat_fields(Path(entry.path))
        # fields[0] is field 3 (state), fields[2] field 5 (pgrp); None: exited meanwhile.
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def stat_fields(pid_dir: Path) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, from field 3 (state) on;
    None when the process is gone. The name (field 2) may hold spaces and ')': the fields
    are what follows the last ')'."""
    try:
        text = (pid_dir / "stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()
