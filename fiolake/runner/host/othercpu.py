"""CPU time that other processes used while fio ran: what competed with it.

Read from /proc/<pid>/stat of every user-space process at the start and at the end of a
run. Left out, because they did not compete with fio but worked for it:
- this process and everything it started and reaped (fio and its job processes: they
  exited and were waited for before the end, so their time is in this process's
  `cutime`), and
- kernel threads (PF_KTHREAD): the writeback, journal and block-layer workers that carry
  out fio's own I/O (an fsync-heavy job on ext4 keeps jbd2 and kworkers busy), and the
  time the machine spends in interrupts (not any process's).
The machine-wide busy time of /proc/stat minus fio's counted all of these as "other
work", so on two cores a job's own fsyncs could flag it `cpu-busy`.

A process that exited during the run is counted through the process that reaped it (its
time moves into the reaper's `cutime`/`cstime`), less what it had already used at the
start. psutil would read the same files, one object per process; two sums over
/proc/<pid>/stat need no library.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from fiolake.children import stat_fields

PF_KTHREAD = 0x00200000  # include/linux/sched.h


@dataclass(frozen=True)
class ProcTimes:
    """One process's CPU times from /proc/<pid>/stat, in clock ticks."""

    own: int  # utime + stime
    reaped: int  # cutime + cstime: its children that exited and were waited for


def _read(pid_dir: Path) -> ProcTimes | None:
    fields = stat_fields(pid_dir)
    # fields[0] is field 3 (state): flags are field 9, utime, stime, cutime, cstime 14-17.
    if fields is None or int(fields[6]) & PF_KTHREAD:
        return None
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    return ProcTimes(utime + stime, cutime + cstime)


def snapshot(proc: Path = Path("/proc")) -> dict[int, ProcTimes] | None:
    """Every user-space process but this one, by pid (None where /proc cannot be read)."""
    me = os.getpid()
    found = {}
    try:
        entries = list(proc.iterdir())
    except OSError:
        return None
    for entry in entries:
        if entry.name.isdigit() and int(entry.name) != me:
            times = _read(entry)
            if times is not None:
                found[int(entry.name)] = times
    return found


def other_cpu_s(before: dict[int, ProcTimes], after: dict[int, ProcTimes]) -> float:
    """CPU seconds the processes used between the two snapshots.

    The sum of every process's own and reaped time, after minus before: a process that
    exited in between left the first sum, and its whole time entered its reaper's reaped
    time in the second, so only its time in between is left over. Pids need no matching
    (a reused pid is just another term). Never below 0: a child this process reaped
    leaves the sums altogether."""
    ticks = sum(t.own + t.reaped for t in after.values())
    ticks -= sum(t.own + t.reaped for t in before.values())
    return max(0, ticks) / os.sysconf("SC_CLK_TCK")
