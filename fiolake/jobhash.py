"""The effective job: what fio ran, minus what differs from run to run by construction.

`runs.canonical_job_file` is the exact text fio ran (see `runner.policy.canonical_job_file`).
Two runs measured the same thing when those texts agree once the per-run parts are gone:
comments and the `directory=` line (a per-run subdirectory of the target), so that
backends running the same job share one hash. `compare` pools only runs with the same
effective job; `envdiff` names the options that differ. Both hash through here.

Written by hand: it is a line filter over a file format fiolake itself writes.
"""

from __future__ import annotations

import hashlib

# Options whose value is per run by construction (the run's own directory on the target).
PER_RUN_OPTIONS = frozenset({"directory"})


def _lines(canonical: str) -> list[str]:
    return [line.strip() for line in canonical.splitlines() if line.strip()]


def effective_job_text(canonical: str) -> str:
    """The canonical job file without comments and per-run options."""
    kept = []
    for line in _lines(canonical):
        if line.startswith((";", "#")):
            continue
        key = line.split("=", 1)[0].strip()
        if "=" in line and key in PER_RUN_OPTIONS:
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def effective_job_sha256(canonical: str | None) -> str | None:
    """sha256 of `effective_job_text` (None when the run has no canonical job file)."""
    if canonical is None:
        return None
    return hashlib.sha256(effective_job_text(canonical).encode()).hexdigest()


def job_options(canonical: str) -> dict[str, str]:
    """`[section] key` -> value over the effective job (section order kept)."""
    out: dict[str, str] = {}
    section = ""
    for line in effective_job_text(canonical).splitlines():
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif "=" in line:
            key, value = line.split("=", 1)
            out[f"[{section}] {key.strip()}"] = value.strip()
        else:
            out[f"[{section}] {line}"] = "(set)"
    return out


def job_differences(a: str, b: str, limit: int = 4) -> list[str]:
    """What differs between two effective jobs, e.g. `runtime=30 vs 5` (section named
    only when the job has several); at most `limit` items plus a count of the rest."""
    left, right = job_options(a), job_options(b)
    sections = {k.split("] ", 1)[0] for k in (*left, *right) if not k.startswith("[global]")}
    items = []
    for key in [*left, *(k for k in right if k not in left)]:
        x, y = left.get(key, "(unset)"), right.get(key, "(unset)")
        if x == y:
            continue
        name = key.split("] ", 1)[1] if len(sections) <= 1 else key
        items.append(f"{name}={x} vs {y}")
    if len(items) > limit:
        items = [*items[:limit], f"and {len(items) - limit} more"]
    return items
