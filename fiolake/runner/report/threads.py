"""Which job section and which jobs[] entry each fio thread belongs to.

fio numbers threads 1, 2, … over the job file's sections in order, `numjobs` clones each
(the N of `<prefix>_<type>.<N>.log`). A section starts a new reporting group when it sets
`stonewall` or `new_group` (init.c: not for the first job). The JSON report has one
jobs[] entry per thread, except that consecutive threads with `group_reporting` in the
same group fold into one entry, named after its first thread (stat.c __show_run_stats).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fiolake.runner.report.document import FioReport, is_grouped, json_option, truthy

Section = tuple[str, Mapping[str, str]]  # (job name, merged options) in job-file order


@dataclass(frozen=True)
class FioThread:
    """One fio thread: its log number, its own section, and the jobs[] entry it reports in."""

    number: int  # 1-based, the N of its log files
    section: str | None  # the job section (its name) the thread runs
    options: Mapping[str, str]  # that section's options ({} when unknown)
    entry: int | None  # index into report.jobs


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(value)) if value not in (None, "") else default
    except ValueError:
        return default


def fio_threads(report: FioReport, sections: Sequence[Section] | None = None) -> list[FioThread]:
    """Every thread of the run. Without `sections` (the job file fio ran) the mapping is
    read from the report alone, which cannot see a group that folds several sections."""
    if sections:
        threads = _from_sections(sections, len(report.jobs))
        if threads is not None:
            return threads
    return _from_report(report)


def _from_sections(sections: Sequence[Section], entries: int) -> list[FioThread] | None:
    out: list[FioThread] = []
    groupid, entry, last_group = 0, -1, None
    for i, (name, options) in enumerate(sections):
        if options.get("stats") is not None and not truthy(options["stats"]):
            return None  # stats=0 threads have no entry; fall back to the report's view
        if i and (truthy(options.get("stonewall")) or truthy(options.get("new_group"))):
            groupid += 1
        grouped = truthy(options.get("group_reporting"))
        for _ in range(_int(options.get("numjobs"), 1)):
            if entry < 0 or not grouped or last_group != groupid:
                entry += 1
            last_group = groupid
            out.append(FioThread(len(out) + 1, name, options, entry))
    return out if entry + 1 == entries else None


def _from_report(report: FioReport) -> list[FioThread]:
    out: list[FioThread] = []
    for index, job in enumerate(report.jobs):
        count = _int(json_option(report, job, "numjobs"), 1) if is_grouped(report, job) else 1
        for _ in range(count):
            out.append(FioThread(len(out) + 1, job.get("jobname"), {}, index))
    return out


def thread_owners(report: FioReport, sections: Sequence[Section] | None = None) -> dict[int, int]:
    """Thread number → index into jobs[]."""
    return {t.number: t.entry for t in fio_threads(report, sections) if t.entry is not None}
