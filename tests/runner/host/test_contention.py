"""Which fio processes count as another benchmark (`other-fio`): only those that run a
workload, never fio answering what it is or what it knows (runner.fio.cmdhelp)."""

from __future__ import annotations

import pytest

from fiolake.runner.host.contention import does_io

ARGV_OF = {  # as /proc/PID/cmdline splits them
    "a benchmark": [b"/usr/bin/fio", b"--output-format=json+", b"--output=o", b"job.fio"],
    "a job file checked": [b"/usr/bin/fio", b"--parse-only", b"job.fio"],
    "the version asked": [b"/usr/bin/fio", b"--version"],
    "every option asked": [b"/usr/bin/fio", b"--cmdhelp"],
    "one option asked": [b"/usr/bin/fio", b"--cmdhelp=allrandrepeat"],
    "an engine's options asked": [b"/usr/bin/fio", b"--enghelp=io_uring"],
    "a zombie": [b""],
}


@pytest.mark.parametrize("what", ARGV_OF)
def test_only_a_workload_counts_as_another_benchmark(what: str) -> None:
    assert does_io(ARGV_OF[what]) == (what == "a benchmark")
