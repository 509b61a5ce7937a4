"""One attempt's identity and record: what to run under which names (`RunRequest`), what
it produced (`RunOutcome`), and the records of attempts that never reached fio (refused,
failed before fio, stopped while waiting for the host lock). `runner.execute` runs fio and
fills the same record; the callers upload it (`runner.lake_writer`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from fiolake import schema
from fiolake.ids import new_run_id
from fiolake.manifest import job_file_sha256
from fiolake.runner.host import sysinfo
from fiolake.runner.policy import check as policy

if TYPE_CHECKING:
    from fiolake.runner.fio.process import FioRun


@dataclass(frozen=True)
class RunRequest:
    """What to run, where, and the identity it is recorded under."""

    job_file_text: str
    profile: str
    backend: str
    target_dir: Path
    job_id: str
    campaign_id: str
    repetition: int = 0
    runtime_s: int | None = None
    size_bytes: int | None = None
    runner: str = "local"
    labels: Mapping[str, str] = field(default_factory=dict)
    signer_keyid: str | None = None
    caps: policy.Caps = field(default_factory=policy.Caps)
    expect_mount: str | None = None  # the target must be this mount point
    expect_fs: str | None = None  # the target must be on this file-system type
    gang_size: int | None = None  # hosts running this job together (part of its hash)
    sequence: int | None = None  # position in the campaign's interleaved plan
    role: str = "measure"  # or 'precondition' (runner.precondition): never compared
    device: str | None = None  # a raw block device (the CLI holds its claim) instead of a dir
    # How that device was left before this run (runner.device_prep): 'purged', 'prefilled'
    # or 'used', and the purge / prefill runs that left it so.
    device_start: str | None = None
    purged_by: str | None = None
    prefilled_by: str | None = None
    # The options mkfs got when fiolake made the target's file system (runner.host.mkfs).
    mkfs_options: str | None = None


@dataclass
class RunOutcome:
    """Everything one attempt produced: its rows of the lake tables and fio's raw output."""

    run_id: str
    status: str  # ok | failed | rejected | interrupted
    error: str | None
    started_at: datetime
    tables: dict[str, pa.Table]
    raw: dict[str, bytes]
    fio_run: FioRun | None = None


def base_run_row(request: RunRequest, run_id: str) -> dict[str, object]:
    """The `runs` columns an attempt has from its request alone."""
    return {
        "run_id": run_id,
        "job_id": request.job_id,
        "campaign_id": request.campaign_id,
        "repetition": request.repetition,
        "sequence": request.sequence,
        "role": request.role,
        "backend": request.backend,
        "runner": request.runner,
        "profile": request.profile,
        "job_file_sha256": job_file_sha256(request.job_file_text),
        "labels": dict(request.labels),
        "runtime_s": request.runtime_s,
        "size_bytes": request.size_bytes,
        "signer_keyid": request.signer_keyid,
        "origin": "run",
        "device_start": request.device_start,
        "purged_by": request.purged_by,
        "prefilled_by": request.prefilled_by,
        "mkfs_options": request.mkfs_options,
    }


def empty_tables(runs_row: dict[str, object]) -> dict[str, pa.Table]:
    """Every lake table of an attempt: its one `runs` row, the others empty."""
    tables = {name: schema.to_table(name, []) for name in schema.SCHEMAS}
    tables["runs"] = schema.to_table("runs", [runs_row])
    return tables


def rejected_outcome(request: RunRequest, reason: str) -> RunOutcome:
    """A run that never reached fio because its manifest or job file was refused."""
    return outcome_without_fio(request, new_run_id(), "rejected", reason)


def stopped_outcome(request: RunRequest, reason: str) -> RunOutcome:
    """A run stopped before fio started (while it waited for the host lock)."""
    return outcome_without_fio(request, new_run_id(), "interrupted", reason)


def failed_outcome(request: RunRequest, reason: str) -> RunOutcome:
    """A run that failed before fio started (e.g. a gang whose runners never all came)."""
    return outcome_without_fio(request, new_run_id(), "failed", reason)


def set_run_columns(outcome: RunOutcome, columns: Mapping[str, object]) -> None:
    """Set columns of the attempt's `runs` row once it ran (gang members, preconditioning)."""
    runs = outcome.tables["runs"]
    for name, value in columns.items():
        column = schema.RUNS.field(name)
        index = runs.schema.get_field_index(name)
        runs = runs.set_column(index, column, pa.array([value] * runs.num_rows, column.type))
    outcome.tables["runs"] = runs


def outcome_without_fio(request: RunRequest, run_id: str, status: str, reason: str) -> RunOutcome:
    """The record of an attempt that ended before fio ran."""
    now = datetime.now(UTC)
    row = base_run_row(request, run_id)
    row.update(
        status=status,
        error=reason,
        started_at=now,
        finished_at=now,
        host=sysinfo.host_info().host,
    )
    return RunOutcome(run_id, status, reason, now, empty_tables(row), {})
