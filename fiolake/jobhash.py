"""The effective job: what fio ran, minus what differs from run to run by construction.

`runs.canonical_job_file` is the exact text fio ran (see `runner.policy.check.canonical_job_file`).
Two runs measured the same thing when those texts agree once the per-run parts are gone:
comments and the `directory=` line (a per-run subdirectory of the target), or on a raw
device target the runner's `filename=` line in `[global]` (the device), so that backends
running the same job share one hash. The gang size (how many hosts ran the job
at the same instant against one backend) is part of it: N hosts sharing a backend measure
something else than one. The runs record it; the saturation sweeps read the job text
through it. `compare`, the gate and `env-diff` pool and diff by the workload instead
(`fiolake.workload`: the options as fio reads them, wherever the job ran).

Written by hand: it is a line filter over a file format fiolake itself writes.
"""

from __future__ import annotations

import hashlib

# Options whose value is per run by construction (the run's own directory on the target).
PER_RUN_OPTIONS = frozenset({"directory"})
# ... and in the runner's own [global] only: the device of a --device run (a job section's
# filename= is a plain name inside the target dir, part of the workload).
PER_RUN_GLOBAL_OPTIONS = frozenset({"filename"})
# The gang size joins the effective job as an option of this pseudo-section (only when > 1,
# so solo runs keep the hash they always had).
GANG_SECTION = "[fiolake]"


def _lines(canonical: str) -> list[str]:
    return [line.strip() for line in canonical.splitlines() if line.strip()]


def effective_job_text(canonical: str, gang_size: int | None = None) -> str:
    """The canonical job file without comments and per-run options (plus the gang size
    when several hosts ran it together)."""
    kept = []
    in_global = False
    for line in _lines(canonical):
        if line.startswith((";", "#")):
            continue
        if line.startswith("["):
            in_global = line == "[global]"
        key = line.split("=", 1)[0].strip()
        per_run = PER_RUN_OPTIONS | (PER_RUN_GLOBAL_OPTIONS if in_global else frozenset())
        if "=" in line and key in per_run:
            continue
        kept.append(line)
    if gang_size is not None and gang_size > 1:
        kept += [GANG_SECTION, f"gang_size={gang_size}"]
    return "\n".join(kept) + "\n"


def effective_job_sha256(canonical: str | None, gang_size: int | None = None) -> str | None:
    """sha256 of `effective_job_text` (None when the run has no canonical job file)."""
    if canonical is None:
        return None
    return hashlib.sha256(effective_job_text(canonical, gang_size).encode()).hexdigest()


def job_options(canonical: str, gang_size: int | None = None) -> dict[str, str]:
    """`[section] key` -> value over the effective job (section order kept)."""
    out: dict[str, str] = {}
    section = ""
    for line in effective_job_text(canonical, gang_size).splitlines():
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif "=" in line:
            key, value = line.split("=", 1)
            out[f"[{section}] {key.strip()}"] = value.strip()
        else:
            out[f"[{section}] {line}"] = "(set)"
    return out
