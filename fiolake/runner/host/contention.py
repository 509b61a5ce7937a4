"""Was a run alone? Other fio processes, CPU used by others, CPU steal — raw figures.

A benchmark that shared the CPUs or the disk with other work measures that work too.
While fio runs, a sampler thread looks for other fio processes once a second; around the
run, the CPU time of every other user-space process (othercpu: neither fio's tree nor
the kernel threads doing fio's I/O) is what competed with it, and /proc/stat gives the
steal.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from fiolake.children import stat_fields
from fiolake.runner.host import othercpu

# Thresholds above which a run is flagged as not alone.
OUTSIDE_CPU_FLAG_PCT = 25.0  # % of one core, averaged over the run
STEAL_FLAG_PCT = 5.0  # % of all CPU time


@dataclass(frozen=True)
class CpuTimes:
    """Machine-wide CPU time from /proc/stat, in seconds."""

    busy_s: float  # user + nice + system + irq + softirq
    steal_s: float
    total_s: float  # every state, idle and iowait included


def read_cpu_times(stat: Path = Path("/proc/stat")) -> CpuTimes | None:
    """The `cpu` line of /proc/stat, or None where it cannot be read."""
    try:
        first = stat.read_text().splitlines()[0].split()
        values = [int(v) for v in first[1:9]]
    except (OSError, IndexError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = values + [0] * (8 - len(values))
    hz = os.sysconf("SC_CLK_TCK")
    return CpuTimes(
        (user + nice + system + irq + softirq) / hz,
        steal / hz,
        (user + nice + system + idle + iowait + irq + softirq + steal) / hz,
    )


def _parent(pid: int) -> int | None:
    fields = stat_fields(Path(f"/proc/{pid}"))
    return None if fields is None else int(fields[1])  # field 4, ppid


def descends_from(pid: int, ancestor: int) -> bool:
    """True if `ancestor` is `pid` or one of its parents (up to 64 levels, by /proc)."""
    seen = 0
    while pid > 1 and seen < 64:
        if pid == ancestor:
            return True
        parent = _parent(pid)
        if parent is None:
            return False
        pid, seen = parent, seen + 1
    return False


# fio invocations that do no I/O (another fiolake checking a job file, fio's version or
# the options it knows: runner.fio.cmdhelp): they cost CPU (which `cpu-busy` sees), not
# disk, so they are not another benchmark. Each also as `--flag=VALUE`.
_NO_IO_FLAGS = (b"--parse-only", b"--version", b"--cmdhelp", b"--enghelp", b"--help", b"--showcmd")


def does_io(argv: list[bytes]) -> bool:
    """Whether a fio command line (`/proc/PID/cmdline` split at NULs) runs a workload."""
    # A zombie (exited, not yet reaped) has an empty command line and does no I/O.
    return bool(argv and argv[0]) and not any(
        arg.split(b"=", 1)[0] in _NO_IO_FLAGS for arg in argv[1:]
    )


def _does_io(pid: int) -> bool:
    try:
        return does_io(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))
    except OSError:
        return False  # gone already


def other_fio_pids(ours: int | None = None) -> set[int]:
    """Pids of fio processes on this host that are not descendants of `ours` (default: us)
    and run a workload (not `--parse-only` or `--version`)."""
    ours = os.getpid() if ours is None else ours
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "fio":
                continue
        except OSError:
            continue
        pid = int(entry.name)
        if not descends_from(pid, ours) and _does_io(pid):
            found.add(pid)
    return found


@dataclass(frozen=True)
class Contention:
    """What else ran during a run, as raw figures, and the flags they raise."""

    other_fio_procs: int  # distinct other fio processes seen while fio ran
    outside_cpu_pct: float | None  # CPU used outside fio and fiolake, % of one core
    steal_pct: float | None  # CPU steal, % of all CPU time
    wall_s: float

    def flags(self) -> list[str]:
        """'other-fio', 'cpu-busy', 'steal': the reasons the run was not alone."""
        out = []
        if self.other_fio_procs:
            out.append("other-fio")
        if self.outside_cpu_pct is not None and self.outside_cpu_pct > OUTSIDE_CPU_FLAG_PCT:
            out.append("cpu-busy")
        if self.steal_pct is not None and self.steal_pct > STEAL_FLAG_PCT:
            out.append("steal")
        return out

    def describe(self) -> str:
        """One line with the figures, for stderr and runs.error-style notes."""
        parts = [f"{self.other_fio_procs} other fio process(es)"]
        if self.outside_cpu_pct is not None:
            parts.append(f"{self.outside_cpu_pct:.1f}% of a core used by other work")
        if self.steal_pct is not None:
            parts.append(f"{self.steal_pct:.1f}% CPU steal")
        return ", ".join(parts)


class Monitor:
    """Watch one fio run: `start()` before fio starts, `stop()` after it was waited for."""

    def __init__(self, interval_s: float = 1.0):
        self.interval_s = interval_s
        self._seen: set[int] = set()
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="contention")

    def start(self) -> Monitor:
        self._procs0 = othercpu.snapshot()
        self._cpu0 = read_cpu_times()
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def _sample(self) -> None:
        while True:
            try:
                self._seen |= other_fio_pids()
            except OSError:
                pass  # /proc unreadable: the count stays what it was
            if self._halt.wait(self.interval_s):
                return

    def stop(self) -> Contention:
        """Stop sampling and compute the figures of the interval since `start()`."""
        self._halt.set()
        self._thread.join()
        wall = time.monotonic() - self._t0
        cpu1 = read_cpu_times()
        procs1 = othercpu.snapshot()
        outside = steal = None
        if self._procs0 is not None and procs1 is not None and wall > 0:
            outside = othercpu.other_cpu_s(self._procs0, procs1) / wall * 100
        if self._cpu0 is not None and cpu1 is not None and wall > 0:
            total = cpu1.total_s - self._cpu0.total_s
            steal = (cpu1.steal_s - self._cpu0.steal_s) / total * 100 if total > 0 else 0.0
        return Contention(len(self._seen), outside, steal, wall)
