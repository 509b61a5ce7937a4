"""Other processes' CPU time across a run (fiolake/runner/host/othercpu.py), on real
processes: a burner alive across the run, one that exits and is reaped by a living
parent, one that had burnt its second before the run and exits during it, and kernel
threads, which are never counted.

The snapshots are narrowed to the processes each test starts: the machine's other work
(a parallel test suite) would add its own seconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fiolake.runner.host import othercpu
from fiolake.runner.host.othercpu import ProcTimes

# Burns one second of its own CPU, says so, then waits for a line (or the end) on stdin.
BURN = (
    "import sys, time\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < 1.0: pass\n"
    "print('burnt', flush=True)\n"
    "sys.stdin.readline()\n"
)


def _only(snap: dict[int, ProcTimes] | None, pids: set[int]) -> dict[int, ProcTimes]:
    assert snap is not None
    return {pid: times for pid, times in snap.items() if pid in pids}


def _tree(root: int) -> set[int]:
    """`root` and its descendants now."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True)
    children: dict[int, list[int]] = {}
    for line in out.stdout.splitlines():
        pid, ppid = map(int, line.split())
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo += children.get(pid, [])
    return found


def test_a_process_burning_during_the_run_is_counted() -> None:
    burner = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        before = _only(othercpu.snapshot(), {burner.pid})
        assert burner.stdout is not None and burner.stdout.readline() == "burnt\n"
        after = _only(othercpu.snapshot(), {burner.pid})
    finally:
        burner.communicate("")
    assert 0.9 <= othercpu.other_cpu_s(before, after) <= 1.3


def test_a_child_that_exits_during_the_run_counts_through_its_parent(tmp_path: Path) -> None:
    """bash starts the burner after the first snapshot; the burner exits, bash reaps it
    (its time moves to bash's cutime) and stays alive for the second."""
    go, script = tmp_path / "go", tmp_path / "burn.py"
    script.write_text(BURN)
    parent = subprocess.Popen(
        ["bash", "-c", f'while [ ! -e {go} ]; do sleep 0.05; done; {sys.executable} {script} '
         '</dev/null; echo reaped; read -r _'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        before = _only(othercpu.snapshot(), {parent.pid})
        go.touch()
        assert parent.stdout is not None
        assert parent.stdout.readline() == "burnt\n" and parent.stdout.readline() == "reaped\n"
        after = _only(othercpu.snapshot(), {parent.pid})
    finally:
        parent.communicate("\n")
    assert 0.9 <= othercpu.other_cpu_s(before, after) <= 1.3


def test_what_a_reaped_child_used_before_the_run_is_not_counted(tmp_path: Path) -> None:
    """The burner burns its second before the first snapshot and exits during the run;
    bash's cutime jumps by that second, which was not the run's."""
    script = tmp_path / "burn.py"
    script.write_text(BURN)
    parent = subprocess.Popen(
        ["bash", "-c", f"{sys.executable} {script}; echo reaped; read -r _"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "burnt\n"
        before = _only(othercpu.snapshot(), _tree(parent.pid))
        assert len(before) == 2  # bash and the burner, which waits on bash's stdin
        parent.stdin.write("\n")  # type: ignore[union-attr]
        parent.stdin.flush()  # type: ignore[union-attr]
        assert parent.stdout.readline() == "reaped\n"
        after = _only(othercpu.snapshot(), {parent.pid})
    finally:
        parent.communicate("\n")
    assert othercpu.other_cpu_s(before, after) < 0.2


def test_kernel_threads_and_this_process_are_not_in_a_snapshot() -> None:
    snap = othercpu.snapshot()
    assert snap is not None
    kthreadd = Path("/proc/2/stat")
    if kthreadd.exists() and "(kthreadd)" in kthreadd.read_text():
        assert 2 not in snap
    assert os.getpid() not in snap and os.getppid() in snap


def test_a_vanished_process_counts_only_through_its_reaper() -> None:
    """Two snapshots by hand: pid 7 (500 ticks at the start) exited, its reaper 3's
    reaped time grew by its 560 in all; pid 7 reused by a new process with 30."""
    before = {3: ProcTimes(own=100, reaped=0), 7: ProcTimes(own=500, reaped=0)}
    after = {3: ProcTimes(own=110, reaped=560), 7: ProcTimes(own=30, reaped=0)}
    ticks = os.sysconf("SC_CLK_TCK")
    assert othercpu.other_cpu_s(before, after) == (10 + 60 + 30) / ticks
