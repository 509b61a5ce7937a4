"""One job file, one run attempt: policy → canonical job file → fio → lake tables.

Used identically by `fiolake run` (local) and the distributed runner; where the
tables go is the caller's business (see runner.lake_writer).
"""

from __future__ import annotations

import functools
import io
import shutil
import tarfile
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from fiolake import schema
from fiolake.errors import FioError
from fiolake.manifest import job_file_sha256
from fiolake.runner import fio_extras, fio_logs, fio_output, policy, sysinfo
from fiolake.runner.fio_binary import find_fio
from fiolake.runner.fio_exec import FioRun, Progress, deadline_for, run_fio

LOG_PREFIX = "fio"


def new_run_id(now: datetime | None = None) -> str:
    """A sortable, key-safe id for one run attempt."""
    now = now or datetime.now(UTC)
    return f"r-{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:10]}"


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


@dataclass(frozen=True)
class PreparedJob:
    """A job file that passed both gates, ready to run."""

    request: RunRequest
    job: policy.JobFile
    expected_s: float


@dataclass
class RunOutcome:
    """Everything one attempt produced: the four tables and fio's raw output."""

    run_id: str
    status: str  # ok | failed | rejected
    error: str | None
    started_at: datetime
    tables: dict[str, pa.Table]
    raw: dict[str, bytes]
    fio_run: FioRun | None = None


def prepare(request: RunRequest, fio: str = "fio") -> PreparedJob:
    """Check the job file (policy, then `fio --parse-only`); raises PolicyError."""
    job = policy.check_job_file(request.job_file_text, request.caps)
    job = policy.apply_overrides(
        job, runtime_s=request.runtime_s, size_bytes=request.size_bytes, caps=request.caps
    )
    text = policy.canonical_job_file(job, target_dir=request.target_dir, log_prefix=LOG_PREFIX)
    _parse_only(text, find_fio(fio).path)
    return PreparedJob(request, job, policy.expected_seconds(job))


@functools.lru_cache(maxsize=256)
def _parse_only(canonical_text: str, fio: str) -> None:
    # fio takes ~0.2 s to start; a runner sees the same job file many times, and a
    # refusal raises (exceptions are not cached), so only passes are remembered.
    with tempfile.TemporaryDirectory(prefix="fiolake-parse-") as tmp:
        policy.fio_parse_only(canonical_text, Path(tmp), fio=fio)


def _base_run_row(request: RunRequest, run_id: str) -> dict[str, object]:
    return {
        "run_id": run_id,
        "job_id": request.job_id,
        "campaign_id": request.campaign_id,
        "repetition": request.repetition,
        "backend": request.backend,
        "runner": request.runner,
        "profile": request.profile,
        "job_file_sha256": job_file_sha256(request.job_file_text),
        "labels": dict(request.labels),
        "runtime_s": request.runtime_s,
        "size_bytes": request.size_bytes,
        "signer_keyid": request.signer_keyid,
    }


def _empty_tables(runs_row: dict[str, object]) -> dict[str, pa.Table]:
    tables = {name: schema.to_table(name, []) for name in schema.SCHEMAS}
    tables["runs"] = schema.to_table("runs", [runs_row])
    return tables


def rejected_outcome(request: RunRequest, reason: str) -> RunOutcome:
    """A run that never reached fio because its manifest or job file was refused."""
    return _outcome_without_fio(request, new_run_id(), "rejected", reason)


def _outcome_without_fio(request: RunRequest, run_id: str, status: str, reason: str) -> RunOutcome:
    now = datetime.now(UTC)
    row = _base_run_row(request, run_id)
    row.update(
        status=status,
        error=reason,
        started_at=now,
        finished_at=now,
        host=sysinfo.host_info().host,
    )
    return RunOutcome(run_id, status, reason, now, _empty_tables(row), {})


def execute(
    prepared: PreparedJob,
    *,
    workdir: Path | None = None,
    fio: str = "fio",
    on_progress: Callable[[Progress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    grace_s: float = 10.0,
) -> RunOutcome:
    """Run fio once and turn its output into lake tables; failures become status='failed'."""
    request = prepared.request
    run_id = new_run_id()
    binary = find_fio(fio)
    env_cols = sysinfo.environment_columns(request.target_dir, binary)
    outdir = Path(tempfile.mkdtemp(prefix=f"fiolake-{run_id}-", dir=workdir))
    # fio's data files go in a per-run subdirectory we remove afterwards.
    data_dir = Path(request.target_dir) / f".fiolake-{run_id}"
    try:
        try:
            data_dir.mkdir(parents=True)
        except OSError as exc:
            reason = f"cannot create fio's directory in {request.target_dir}: {exc}"
            return _outcome_without_fio(request, run_id, "failed", reason)
        canonical = policy.canonical_job_file(
            prepared.job, target_dir=data_dir, log_prefix=LOG_PREFIX
        )
        job_path = outdir / "job.fio"
        job_path.write_text(canonical)
        fio_run = run_fio(
            job_path,
            outdir,
            deadline_s=deadline_for(prepared.expected_s),
            expected_s=prepared.expected_s,
            grace_s=grace_s,
            fio=binary.path,
            on_progress=on_progress,
            should_stop=should_stop,
        )
        return _collect(prepared, run_id, env_cols, canonical, fio_run, outdir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(outdir, ignore_errors=True)


def _collect(
    prepared: PreparedJob,
    run_id: str,
    env_cols: dict[str, object],
    canonical: str,
    fio_run: FioRun,
    outdir: Path,
) -> RunOutcome:
    request = prepared.request
    text = fio_run.output_text
    raw = {
        "fio.json": text.encode(),
        "job.fio": canonical.encode(),
        "stderr.txt": fio_run.stderr.encode(),
        "logs.tar.gz": _archive(fio_logs.log_files(outdir, LOG_PREFIX)),
    }
    row = _base_run_row(request, run_id)
    row.update(env_cols)
    row.update(
        canonical_job_file=canonical,
        fio_argv=fio_run.argv,
        started_at=fio_run.started_at,
        finished_at=fio_run.finished_at,
        exit_code=fio_run.exit_code,
        watchdog=fio_run.watchdog,
    )
    tables = _empty_tables(row)
    errors: list[str] = []
    try:
        report = fio_output.parse_fio_json(text)
    except FioError as exc:
        detail = (fio_run.stderr.strip() or str(exc))[:2000]
        errors.append(f"fio exited {fio_run.exit_code} without a JSON report: {detail}")
    else:
        sections = [(section.name, section.options) for section in prepared.job.jobs]
        errors += fio_output.job_errors(report)
        tables["results"] = schema.to_table(
            "results",
            fio_output.result_rows(
                report,
                run_id=run_id,
                backend=request.backend,
                job_options=prepared.job.options_for,
                sections=sections,
            ),
        )
        tables["percentiles"] = schema.to_table(
            "percentiles", fio_output.percentile_rows(report, run_id=run_id)
        )
        for name, make in (
            ("disk_util", fio_extras.disk_util_rows),
            ("iodepth", fio_extras.iodepth_rows),
            ("latency_bins", fio_extras.latency_bin_rows),
        ):
            tables[name] = schema.to_table(name, make(report, run_id=run_id))
        tables["timeseries"] = schema.to_table(
            "timeseries",
            fio_logs.timeseries_rows(
                outdir, run_id=run_id, report=report, prefix=LOG_PREFIX, sections=sections
            ),
        )
    if fio_run.watchdog:
        errors.append(f"watchdog stopped fio ({fio_run.watchdog})")
    elif fio_run.exit_code not in (0, None) and not errors:
        errors.append(f"fio exited {fio_run.exit_code}: {fio_run.stderr.strip()[:2000]}")
    if errors and fio_run.stderr.strip():
        # fio 3.33 writes io_u errors (e.g. ENOSPC) to stderr, not into --output.
        errors.append(f"fio stderr: {fio_run.stderr.strip()[-1500:]}")
    status = "failed" if errors else "ok"
    error = "; ".join(errors) or None
    row.update(status=status, error=error)
    tables["runs"] = schema.to_table("runs", [row])
    return RunOutcome(run_id, status, error, fio_run.started_at, tables, raw, fio_run)


def _archive(paths: list[Path]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in paths:
            tar.add(path, arcname=path.name)
    return buf.getvalue()
