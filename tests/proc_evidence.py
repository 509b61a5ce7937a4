"""What /proc shows of a process and its descendants, for a test's failure message when
a process outlived (or left before) what it should have: how the causes of such failures
were found (an inherited ignored SIGINT showed in SigIgn); and waiting for one to do so."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def process_evidence(pid: int) -> str:
    """Process `pid` and its descendants as /proc shows them: state, signal masks, the kernel
    function it waits in, its kernel stack (root reads it) and its command line."""
    lines = []
    todo = [pid]
    while todo:
        current = todo.pop()
        proc = Path(f"/proc/{current}")
        try:
            status = dict(line.split(":", 1) for line in (proc / "status").read_text().splitlines())
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            lines.append(f"pid {current}: gone (no /proc entry: exited and reaped)")
            continue
        keys = ("State", "PPid", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt", "Threads")
        lines.append(f"pid {current}: {cmdline}")
        lines.append("  " + ", ".join(f"{k} {status.get(k, '?').strip()}" for k in keys))
        for name in ("wchan", "stack"):
            try:
                lines.append(f"  {name}: {(proc / name).read_text().strip()[:600]}")
            except OSError:
                pass
        todo += children(current)
    return "\n".join(lines)


def wait_until(what: str, check: Callable[[], object], timeout_s: float = 30) -> None:
    """Poll `check` every 50 ms until it is true; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def children(pid: int) -> list[int]:
    """The child processes of `pid`, from each of its threads (empty once it is gone)."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def fio_job_writes(pid: int) -> bool:
    """Whether a fio job process below process `pid` (a fio whose parent is fio) has
    written yet: fio has forked its jobs and is past its start.

    A test that kills fiolake waits for this, not for fio to appear: fio's SIGTERM
    handler (fiolake's parent-death signal to it) calls malloc, so a SIGTERM landing
    while fio forks a job deadlocks fio for good (fio 3.33: sig_int -> log_info ->
    malloc under fork's arena locks; seen 2026-11-28)."""
    stack = [(pid, False)]
    while stack:
        current, parent_is_fio = stack.pop()
        try:
            is_fio = Path(f"/proc/{current}/comm").read_text().strip() == "fio"
            if is_fio and parent_is_fio:
                io = Path(f"/proc/{current}/io").read_text().split()
                if int(io[io.index("wchar:") + 1]) > 0:
                    return True
        except (OSError, ValueError):
            continue
        stack += [(child, is_fio) for child in children(current)]
    return False
