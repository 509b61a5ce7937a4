"""Preconditioning: a job run on the measured job's own files just before it is measured.

Fresh files (never written, or just laid out) measure differently from files in use: SSDs
and thin-provisioned or copy-on-write storage are fast until their space has been
written. `--precondition JOBFILE_OR_PROFILE` (shipped: `precondition-fill`) runs a job
on the same files first. fio names a job's files after its section (`<name>.<clone>.<file>`),
so `on_files_of` gives every phase of the precondition job the measured section's name
and file layout (size, nrfiles, numjobs, filename, offsets): it writes exactly the files
the measured job then uses, one phase after another (stonewall).

runner.attempt checks the precondition job with the measured one and plans both runs.
The two runs share one hold of the host lock and one data directory. The precondition
run is recorded with role='precondition'; the measured run names it in
`preconditioned_by`. Comparisons and the gate read measured runs only
(aggregator.rows.filters).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fiolake.runner import execute as ex
from fiolake.runner.host.lock import HostLock
from fiolake.runner.policy.jobfile import JobFile, JobSection

ROLE = "precondition"
# Options that decide which files a job uses: the measured job's win.
LAYOUT_OPTIONS = (
    "size",
    "filesize",
    "nrfiles",
    "numjobs",
    "filename",
    "offset",
    "offset_increment",
)


def on_files_of(measured: JobFile, fill: JobFile) -> JobFile:
    """`fill`'s phases, each once per measured job, on that job's files, in order."""
    sections: list[JobSection] = []
    for job in measured.jobs:
        files = {k: v for k, v in job.options.items() if k in LAYOUT_OPTIONS}
        for phase in fill.jobs:
            options = {k: v for k, v in phase.options.items() if k not in LAYOUT_OPTIONS}
            options |= files
            if sections:
                options["stonewall"] = "1"  # phases run one after the other
            sections.append(JobSection(job.name, options))
    return JobFile(sections)


def execute(
    prepared: ex.PreparedJob,
    fill: ex.PreparedJob,
    *,
    host_lock: HostLock | None,
    should_stop: Callable[[], bool | str | None] | None = None,
    on_lock_wait: Callable[[str], None] | None = None,
    **options: Any,
) -> tuple[ex.RunOutcome, ex.RunOutcome | None]:
    """Run `fill` then `prepared` on the same files under one hold of the host lock; the
    measured outcome (preconditioned_by set) and the precondition's (None if it never
    ran: the wait for the lock was stopped). A failed precondition fails the measured
    run without running it: its numbers would be of unprepared files."""
    waited = None
    if host_lock is not None:
        waited = host_lock.acquire(should_stop, on_wait=on_lock_wait)
        if waited is None:
            why = f"stopped while waiting for the host lock {host_lock.path}"
            return ex.stopped_outcome(prepared.request, why), None
    request = prepared.request
    data_dir = Path(request.target_dir) / f".fiolake-pre-{uuid.uuid4().hex[:12]}"
    run = dict(options, host_lock=host_lock, should_stop=should_stop, data_dir=data_dir)
    try:
        before = ex.execute(fill, **run)
        ex.set_run_columns(before, {"host_lock_wait_ms": waited})
        if before.status == "ok":
            outcome = ex.execute(prepared, **run)
        else:
            why = f"precondition run {before.run_id} {before.status}: {before.error}"
            outcome = ex.failed_outcome(request, why)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        if host_lock is not None:
            host_lock.release()
    ex.set_run_columns(outcome, {"preconditioned_by": before.run_id})
    return outcome, before
