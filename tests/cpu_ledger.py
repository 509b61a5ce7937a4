"""Where the suite's CPU goes (issue 40): with PYTEST_CPU_LEDGER=FILE, every test's
setup, call and teardown append one line to FILE — node id, phase, wall seconds, CPU
seconds of the test process and of the child processes it waited for (fio, `fiolake`
subprocesses, builds). `python -m tests.cpu_ledger FILE` sums them by test file.

On two cores the wall time of `make test` is bounded below by its CPU over two, so this,
not `--durations`, says what to make cheaper. Servers a session fixture starts (MinIO,
OpenBao) are reaped at the end, so their CPU is not in any test's line: the ledger's
total falls short of `time make test` by about that much. A child's CPU is charged when
it is reaped: pytest tears a file's module fixtures down in the next file's first setup,
so what they started lands there.

Lines are appended with one write each (O_APPEND, under PIPE_BUF): xdist's workers
share the file safely.
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

LEDGER = os.environ.get("PYTEST_CPU_LEDGER")


def _cpu() -> tuple[float, float]:
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


class _Phase:
    """One phase of one test: the clocks at its start, a ledger line at its end."""

    def __init__(self, item: pytest.Item, phase: str, path: str):
        self.item, self.phase, self.path = item, phase, path  # the ledger when it began
        self.wall, (self.own, self.children) = time.monotonic(), _cpu()

    def write(self) -> None:
        own, children = _cpu()
        fields = (self.item.nodeid, self.phase, time.monotonic() - self.wall,
                  own - self.own, children - self.children)  # fmt: skip
        line = "\t".join(f"{f:.3f}" if isinstance(f, float) else f for f in fields)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


def _ledgered(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    if LEDGER is None:
        return (yield)
    timing = _Phase(item, phase, LEDGER)
    try:
        return (yield)
    finally:
        timing.write()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    """Time the setup (fixtures: a stack, a built lake, a fio sweep)."""
    return (yield from _ledgered(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Time the test's body."""
    return (yield from _ledgered(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    """Time the teardown (where session fixtures stop their servers, too)."""
    return (yield from _ledgered(item, "teardown"))


def phases(path: Path) -> Iterator[tuple[str, float, float]]:
    """Each line of the ledger as (node id, wall seconds, CPU seconds: its own and its
    children's)."""
    for line in path.read_text().splitlines():
        nodeid, _phase, wall, own, children = line.split("\t")
        yield nodeid, float(wall), float(own) + float(children)


def summary(path: Path, top: int = 25) -> str:
    """The ledger summed by test file, most CPU first, with the total."""
    cpu: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    for nodeid, spent_wall, spent_cpu in phases(path):
        name = nodeid.split("::", 1)[0]
        cpu[name] += spent_cpu
        wall[name] += spent_wall
    total = sum(cpu.values())
    out = [f"{'CPU s':>8} {'share':>6} {'wall s':>8}  test file"]
    for name in sorted(cpu, key=cpu.__getitem__, reverse=True)[:top]:
        out.append(f"{cpu[name]:8.1f} {cpu[name] / total:6.1%} {wall[name]:8.1f}  {name}")
    out.append(f"{total:8.1f} {1:6.1%} {sum(wall.values()):8.1f}  all {len(cpu)} files")
    return "\n".join(out)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 25))
