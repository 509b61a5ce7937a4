"""A job run as several workloads: which cases they are, and what differs.

`compare` pools runs only when they ran the same workload (`fiolake.workload`); a
profile × job × direction run as several workloads lands in separate rows, each carrying
a note that names the options that differ from the other versions.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.stats.groupstats import Case, GroupStats
from fiolake.aggregator.stats.runsets import job_texts
from fiolake.workload import workload_differences


def version_notes(lake: Lake, cases: set[Case]) -> dict[Case, list[str]]:
    """Per case whose profile × job × direction ran as several workloads, the note saying
    what differs (the job texts are read from the lake)."""
    several = _jobs_run_as_several_versions(cases)
    if not several:
        return {}
    return _mixed_notes(several, job_texts(lake, {c[3] for c in several if c[3]}))


def _jobs_run_as_several_versions(cases: set[Case]) -> set[Case]:
    """The cases whose profile × job × direction appears with more than one workload."""
    seen = Counter((p, j, d) for p, j, d, _ in cases)
    return {c for c in cases if seen[c[:3]] > 1}


def _mixed_notes(cases: set[Case], texts: dict[str, str]) -> dict[Case, list[str]]:
    """For a profile × job × direction run as several workloads: what differs, set
    against the job most runs ran."""
    by_job: dict[tuple[str, str, str], list[str | None]] = defaultdict(list)
    for profile, job, direction, sha in cases:
        by_job[(profile, job, direction)].append(sha)
    notes: dict[Case, list[str]] = {}
    for key, hashes in by_job.items():
        if len(hashes) < 2:
            continue
        for sha in hashes:
            others = [h for h in hashes if h != sha]
            diffs: list[str] = []
            for other in others:
                if sha in texts and other in texts:
                    diffs += workload_differences(texts[sha], texts[other])
            what = "; ".join(dict.fromkeys(diffs)) or "the job files differ"
            notes[(*key, sha)] = [f"not pooled with {len(others)} other job version(s): {what}"]
    return notes


def setup_notes(got: GroupStats, other: GroupStats | None = None) -> list[str]:
    """What else differs among the runs a row pools (one workload): `origin import vs run`
    and `fio 3.28 vs 3.42` across the row and its baseline; `target dir vs device` and
    `file system ext4 vs xfs` within either side (between backends they are what the
    backend names)."""
    sides = [got] if other is None else [got, other]
    notes = []
    across = (
        ("origin", {v for side in sides for v in side.origins}),
        ("fio", {v.removeprefix("fio-") for side in sides for v in side.fio_versions}),
    )
    notes += [
        f"{label} {' vs '.join(sorted(values))}" for label, values in across if len(values) > 1
    ]
    for label, attr in (("target", "targets"), ("file system", "file_systems")):
        mixed = {v for side in sides if len(getattr(side, attr)) > 1 for v in getattr(side, attr)}
        if mixed:
            notes.append(f"{label} {' vs '.join(sorted(mixed))}")
    return notes
