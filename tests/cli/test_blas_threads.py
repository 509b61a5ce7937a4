"""The command keeps numpy's and scipy's OpenBLAS to one thread (issue 44): each starts a
thread per core on import that spins while idle, CPU a 2-core machine's queries need."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = (
    "import os, fiolake.cli, numpy, scipy.special\n"
    "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))"
)


def probe(**env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**base, **env}, check=True, capture_output=True,
        text=True,
    )  # fmt: skip
    return done.stdout.split()


def test_the_command_starts_no_blas_threads() -> None:
    assert probe() == ["1", "1"]  # the setting, and the main thread alone


def test_a_users_own_blas_setting_stands() -> None:
    assert probe(OPENBLAS_NUM_THREADS="2")[0] == "2"
