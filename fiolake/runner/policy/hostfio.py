"""The job-file policy against the host's fio: an allowed option this fio does not have is
refused naming the fio release that has it, before `fio --parse-only` would answer with a
bare "Bad option".

fiolake supports fio SUPPORTED_FIO[0] to SUPPORTED_FIO[-1]; the tier in
tests/runner/test_fio_versions.py runs every shipped profile on each of them.
"""

from __future__ import annotations

from collections.abc import Callable

from fiolake.errors import PolicyError
from fiolake.runner.fio.binary import FioBinary
from fiolake.runner.fio.cmdhelp import knows_option
from fiolake.runner.policy.jobfile import JobFile

# The fio releases the tier builds or installs: Ubuntu 22.04, Debian 12, Ubuntu 24.04, upstream.
SUPPORTED_FIO = ("3.28", "3.33", "3.36", "3.42")

# Allowed options (runner.policy.options.ALLOWED) missing from the oldest supported fio:
# option -> the first of SUPPORTED_FIO whose `fio --cmdhelp` / `--enghelp=ENGINE` lists it.
# Made by listing the options of each build (runner.fio.cmdhelp.host_options) and taking,
# for every allowed option, the oldest that has it; tests/runner/test_fio_versions.py checks
# the table against the builds. A release between two of these may already have it.
FIRST_FIO: dict[str, str] = {
    "dedupe_global": "3.33",
    "steadystate_check_interval": "3.36",
    "end_syncfs": "3.42",
    "libaio_vectored": "3.42",
    "thinkcycles": "3.42",
    "verify_header_seed": "3.42",
    "verify_pattern_interval": "3.42",
    "verify_write_sequence": "3.42",
}


def host_fio_problems(job: JobFile, knows: Callable[[str], bool], version: str) -> list[str]:
    """Every option of `job` that a fio (reporting `version`, e.g. 'fio-3.28', knowing
    the options `knows` says yes to) lacks, one message per option and job."""
    problems = []
    for section in job.jobs:
        for name in section.options:
            if knows(name):
                continue
            first = FIRST_FIO.get(name)
            if first is not None:
                why = f"{name} needs fio ≥ {first}; this host has {version}"
                fix = f"install fio {first} or newer, or remove {name}"
            else:
                why = f"{name} is not an option of this host's fio ({version})"
                fix = f"remove it (fiolake supports fio {SUPPORTED_FIO[0]} to {SUPPORTED_FIO[-1]})"
            problems.append(f"[{section.name}] {why} — {fix}")
    return problems


def check_host_fio(job: JobFile, binary: FioBinary) -> None:
    """PolicyError listing every option of `job` the fio at `binary` does not have."""
    problems = host_fio_problems(job, lambda name: knows_option(binary, name), binary.version)
    if problems:
        raise PolicyError(problems)
