"""A job run as several effective versions: which cases they are, and what differs.

`compare` pools runs only when they ran the same effective job (`fiolake.jobhash`); a
profile × job × direction run as several versions lands in separate rows, each carrying
a note that names what differs from the other versions.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.stats.runsets import Case, job_texts
from fiolake.jobhash import job_differences


def version_notes(lake: Lake, cases: set[Case], texts: dict[str, str]) -> dict[Case, list[str]]:
    """Per case whose profile × job × direction ran as several effective jobs, the note
    saying what differs (`texts`: job texts known already; the rest are read from the lake)."""
    several = _jobs_run_as_several_versions(cases)
    if not several:
        return {}
    return _mixed_notes(several, job_texts(lake, {c[3] for c in several if c[3]}, texts))


def _jobs_run_as_several_versions(cases: set[Case]) -> set[Case]:
    """The cases whose profile × job × direction appears with more than one effective job."""
    seen = Counter((p, j, d) for p, j, d, _ in cases)
    return {c for c in cases if seen[c[:3]] > 1}


def _mixed_notes(cases: set[Case], texts: dict[str, str]) -> dict[Case, list[str]]:
    """For a profile × job × direction run as several effective jobs: what differs, set
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
                    diffs += job_differences(texts[sha], texts[other])
            what = "; ".join(dict.fromkeys(diffs)) or "the job files differ"
            notes[(*key, sha)] = [f"not pooled with {len(others)} other job version(s): {what}"]
    return notes
