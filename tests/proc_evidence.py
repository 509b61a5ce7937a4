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
        for task in (proc / "task").iterdir():
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return "\n".join(lines)


def wait_until(what: str, check: Callable[[], object], timeout_s: float = 30) -> None:
    """Poll `check` every 50 ms until it is true; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)
