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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from fiolake import schema
from fiolake.errors import FioError, FiolakeError
from fiolake.ids import new_run_id
from fiolake.jobhash import effective_job_sha256
from fiolake.runner.fio.binary import FioBinary, find_fio
from fiolake.runner.fio.process import FioRun, Progress, deadline_for, run_fio
from fiolake.runner.host import blockinfo, contention, sysinfo, target
from fiolake.runner.host.lock import SHARED_FLAG, HostLock
from fiolake.runner.outcome import (
    RunOutcome,
    RunRequest,
    base_run_row,
    empty_tables,
    failed_outcome,
    outcome_without_fio,
    rejected_outcome,
    set_run_columns,
    stopped_outcome,
)
from fiolake.runner.policy import check as policy
from fiolake.runner.report import logs as fio_logs
from fiolake.runner.report import results as fio_output
from fiolake.runner.report.tables import report_tables
from fiolake.units import seconds_or_none
from fiolake.workload import workload_sha256

LOG_PREFIX = "fio"
# The record of an attempt lives in runner.outcome; callers keep using these names here.
__all__ = [
    "CHECK_DIR",
    "LOG_PREFIX",
    "CheckedJob",
    "PreparedJob",
    "Preflight",
    "RunOutcome",
    "RunRequest",
    "check_job",
    "execute",
    "failed_outcome",
    "preflight",
    "rejected_outcome",
    "set_run_columns",
    "stopped_outcome",
    "with_request",
]


@dataclass(frozen=True)
class CheckedJob:
    """A job file that passed both gates (the policy, then `fio --parse-only`)."""

    job: policy.JobFile
    expected_s: float
    # Jobs whose runtime is the policy's cap (they set none): stopped there = cut short.
    capped_jobs: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PreparedJob(CheckedJob):
    """A checked job file with the request it runs under, ready to run."""

    request: RunRequest = field(kw_only=True)


@dataclass(frozen=True)
class Preflight:
    """What is known about the target before fio starts."""

    target: target.Target
    layout_bytes: int
    page_cache_bytes: int | None  # buffered files that fit in free memory (measures RAM)
    warnings: list[str]


# fio --parse-only judges the text, not the place: the check writes this directory into
# the canonical file (the run writes its own), so one check serves every target.
CHECK_DIR = Path("/fiolake-target")


def check_job(
    text: str,
    *,
    caps: policy.Caps,
    runtime_s: int | None = None,
    size_bytes: int | None = None,
    fio: str = "fio",
    reshape: Callable[[policy.JobFile], policy.JobFile] | None = None,
    block: policy.BlockTarget | None = None,
) -> CheckedJob:
    """Check a job file (policy, overrides, then `fio --parse-only`); raises PolicyError.

    `reshape` rewrites the checked job before the overrides and the canonical file, which
    check every option again (runner.precondition puts a job on another job's files).
    Callers go through runner.attempt (check, prepare), which names the file in every
    refusal. `block`: the target is a raw device (runner.policy.blocktarget).
    """
    job = policy.check_job_file(text, caps, block)
    if reshape is not None:
        job = reshape(job)
    capped = frozenset(s.name for s in job.jobs if runtime_s is None and not _runtime_s(s.options))
    job = policy.apply_overrides(
        job, runtime_s=runtime_s, size_bytes=size_bytes, caps=caps, block=block
    )
    canonical = policy.canonical_job_file(
        job, target_dir=CHECK_DIR, log_prefix=LOG_PREFIX, block=block
    )
    binary = find_fio(fio)
    policy.check_host_fio(job, binary)
    _parse_only(canonical, binary.path)
    return CheckedJob(job, policy.expected_seconds(job), capped)


def with_request(checked: CheckedJob, request: RunRequest) -> PreparedJob:
    """`checked` to run under `request` (the same job file's identity and target)."""
    return PreparedJob(checked.job, checked.expected_s, checked.capped_jobs, request=request)


def _runtime_s(options: Mapping[str, str]) -> float | None:
    return seconds_or_none(options.get("runtime", ""))


def preflight(prepared: PreparedJob) -> Preflight:
    """Check where the job would run: expectations and free space (UsageProblem /
    FiolakeError), and the warnings to show before it starts (root fs, page cache)."""
    request = prepared.request
    where = target.inspect(request.target_dir)
    warnings = target.check_expectations(
        where, expect_mount=request.expect_mount, expect_fs=request.expect_fs
    )
    need = target.check_space(where, prepared.job, request.profile)
    cache_warning = target.page_cache_warning(prepared.job, sysinfo.mem_available_bytes())
    if cache_warning:
        warnings.append(f"{request.profile}: {cache_warning}")
    cached = target.buffered_bytes(prepared.job) if cache_warning else None
    return Preflight(where, need, cached, warnings)


@functools.lru_cache(maxsize=256)
def _parse_only(canonical_text: str, fio: str) -> None:
    # fio takes ~0.2 s to start; a runner sees the same job file many times, and a
    # refusal raises (exceptions are not cached), so only passes are remembered.
    policy.fio_parse_only(canonical_text, fio=fio)


def execute(
    prepared: PreparedJob,
    *,
    workdir: Path | None = None,
    fio: str = "fio",
    on_progress: Callable[[Progress], None] | None = None,
    should_stop: Callable[[], bool | str | None] | None = None,
    grace_s: float = 10.0,
    before_start: Callable[[], None] | None = None,
    host_lock: HostLock | None = None,
    on_lock_wait: Callable[[str], None] | None = None,
    data_dir: Path | None = None,
) -> RunOutcome:
    """Run fio once and turn its output into lake tables; failures become status='failed'.

    A target that fails the preflight (wrong mount or file system, no room) is recorded as
    failed without running fio. `should_stop` returning 'interrupted' stops fio and records
    status='interrupted'.

    The whole attempt holds `host_lock` (runner.host.lock): the fio calls around the
    run (--version) and turning fio's output into tables, too, would otherwise land in
    another runner's measurement. The wait is recorded in runs.host_lock_wait_ms;
    `should_stop` ends it (status 'interrupted', no fio). Without a lock the run is
    flagged shared-host. fio's files go in a fresh subdirectory of the target, removed
    afterwards, or in `data_dir` (kept: a precondition run leaves them to the measured run).
    """
    args = (prepared, workdir, fio, on_progress, should_stop, grace_s, before_start, data_dir)
    if host_lock is None:
        return _execute(*args)
    waited = host_lock.acquire(should_stop, on_wait=on_lock_wait)
    if waited is None:
        why = f"stopped while waiting for the host lock {host_lock.path}"
        return stopped_outcome(prepared.request, why)
    try:
        return _execute(*args, host_lock, waited)
    finally:
        host_lock.release()


def _execute(
    prepared: PreparedJob,
    workdir: Path | None,
    fio: str,
    on_progress: Callable[[Progress], None] | None,
    should_stop: Callable[[], bool | str | None] | None,
    grace_s: float,
    before_start: Callable[[], None] | None,
    shared_dir: Path | None,
    host_lock: HostLock | None = None,
    waited_ms: float | None = None,
) -> RunOutcome:
    request = prepared.request
    run_id = new_run_id()
    binary = find_fio(fio)
    block = policy.BlockTarget(request.device) if request.device else None
    env_cols = _environment(prepared, binary, block, waited_ms)
    if isinstance(env_cols, str):
        return outcome_without_fio(request, run_id, "failed", env_cols)
    outdir = Path(tempfile.mkdtemp(prefix=f"fiolake-{run_id}-", dir=workdir))
    # fio's data files go in a per-run subdirectory we remove afterwards (none on a device).
    data_dir = shared_dir or Path(request.target_dir) / f".fiolake-{run_id}"
    try:
        try:
            if block is None:
                data_dir.mkdir(parents=True, exist_ok=shared_dir is not None)
        except OSError as exc:
            reason = f"cannot create fio's directory in {request.target_dir}: {exc}"
            return outcome_without_fio(request, run_id, "failed", reason)
        canonical = policy.canonical_job_file(
            prepared.job, target_dir=data_dir, log_prefix=LOG_PREFIX, block=block
        )
        job_path = outdir / "job.fio"
        job_path.write_text(canonical)
        monitor = contention.Monitor().start()
        try:
            fio_run = run_fio(
                job_path,
                outdir,
                deadline_s=deadline_for(prepared.expected_s),
                expected_s=prepared.expected_s,
                grace_s=grace_s,
                fio=binary.path,
                on_progress=on_progress,
                should_stop=should_stop,
                before_start=before_start,
                pass_fds=host_lock.fds() if host_lock is not None else (),
            )
        finally:
            alone = monitor.stop()
        flags = _alone_flags(alone, env_cols, shared=host_lock is None)
        return _collect(prepared, run_id, env_cols, canonical, fio_run, outdir, flags)
    finally:
        if shared_dir is None and block is None:
            shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(outdir, ignore_errors=True)


def _environment(
    prepared: PreparedJob,
    binary: FioBinary,
    block: policy.BlockTarget | None,
    waited_ms: float | None,
) -> dict[str, object] | str:
    """The run's environment columns — of the target directory (after its preflight) or of
    the raw device — or, when the directory fails its preflight, why."""
    page_cache_bytes = None
    if block is None:
        try:
            page_cache_bytes = preflight(prepared).page_cache_bytes
        except FiolakeError as exc:
            return str(exc)
        env_cols = sysinfo.environment_columns(prepared.request.target_dir, binary)
    else:
        env_cols = device_environment(block.path, binary)
    env_cols["page_cache_bytes"] = page_cache_bytes
    env_cols["host_lock_wait_ms"] = waited_ms
    return env_cols


def _alone_flags(
    alone: contention.Contention, env_cols: dict[str, object], *, shared: bool
) -> list[str]:
    """What the contention monitor saw while fio ran, into `env_cols`; the run's flags
    (shared host, other fio, busy CPU, steal, page cache)."""
    env_cols.update(
        other_fio_procs=alone.other_fio_procs,
        outside_cpu_pct=alone.outside_cpu_pct,
        steal_pct=alone.steal_pct,
    )
    flags = [SHARED_FLAG] if shared else []
    return flags + alone.flags() + (["page-cache"] if env_cols["page_cache_bytes"] else [])


def device_environment(device: str, fio: FioBinary) -> dict[str, object]:
    """The `runs` environment columns of a run on a raw block device: the host, fio, and
    what the device is (runner.host.blockinfo) instead of a file system's mount."""
    cols: dict[str, object] = dict(vars(sysinfo.host_info()))
    cols.update(fio_version=fio.version, fio_path=fio.path, target_dir=device, target_kind="device")
    cols.update(blockinfo.identity(Path(device)).runs_columns())
    return cols


def _collect(
    prepared: PreparedJob,
    run_id: str,
    env_cols: dict[str, object],
    canonical: str,
    fio_run: FioRun,
    outdir: Path,
    flags: list[str],
) -> RunOutcome:
    request = prepared.request
    text = fio_run.output_text
    raw = {
        "fio.json": text.encode(),
        "job.fio": canonical.encode(),
        "stderr.txt": fio_run.stderr.encode(),
        "logs.tar.gz": _archive(fio_logs.log_files(outdir, LOG_PREFIX)),
    }
    row = base_run_row(request, run_id)
    row.update(env_cols)
    row.update(
        canonical_job_file=canonical,
        effective_job_sha256=effective_job_sha256(canonical, request.gang_size),
        workload_sha256=workload_sha256(canonical, request.gang_size),
        fio_argv=fio_run.argv,
        started_at=fio_run.started_at,
        finished_at=fio_run.finished_at,
        exit_code=fio_run.exit_code,
        watchdog=fio_run.watchdog,
    )
    tables = empty_tables(row)
    errors = _read_report(prepared, run_id, fio_run, outdir, tables)
    if _cut_short(prepared, tables["results"]):
        flags = [*flags, "cut-short"]
    if fio_run.watchdog == "interrupted":
        row.update(status="interrupted", flags=flags, error="stopped by a signal to fiolake")
        tables["runs"] = schema.to_table("runs", [row])
        why = "stopped by a signal to fiolake"
        return RunOutcome(run_id, "interrupted", why, fio_run.started_at, tables, raw, fio_run)
    errors = _run_errors(fio_run, errors)
    status = "failed" if errors else "ok"
    error = "; ".join(errors) or None
    row.update(status=status, error=error, flags=flags)
    tables["runs"] = schema.to_table("runs", [row])
    return RunOutcome(run_id, status, error, fio_run.started_at, tables, raw, fio_run)


def _read_report(
    prepared: PreparedJob, run_id: str, fio_run: FioRun, outdir: Path, tables: dict[str, pa.Table]
) -> list[str]:
    """fio's JSON report (and the logs beside it) into `tables`; the errors it names, or
    that there was no report."""
    try:
        report = fio_output.parse_fio_json(fio_run.output_text)
    except FioError as exc:
        detail = (fio_run.stderr.strip() or str(exc))[:2000]
        return [f"fio exited {fio_run.exit_code} without a JSON report: {detail}"]
    sections = [(section.name, section.options) for section in prepared.job.jobs]
    tables.update(
        report_tables(
            report,
            run_id=run_id,
            backend=prepared.request.backend,
            job_options=prepared.job.options_for,
            sections=sections,
            log_dir=outdir,
            log_prefixes=(LOG_PREFIX,),
        )
    )
    return fio_output.job_errors(report)


def _run_errors(fio_run: FioRun, errors: list[str]) -> list[str]:
    """`errors` plus what the watchdog and fio's exit code say, and fio's stderr when
    anything went wrong."""
    errors = list(errors)
    if fio_run.watchdog:
        errors.append(f"watchdog stopped fio ({fio_run.watchdog})")
    elif fio_run.exit_code not in (0, None) and not errors:
        errors.append(f"fio exited {fio_run.exit_code}: {fio_run.stderr.strip()[:2000]}")
    if errors and fio_run.stderr.strip():
        # fio 3.33 writes io_u errors (e.g. ENOSPC) to stderr, not into --output.
        errors.append(f"fio stderr: {fio_run.stderr.strip()[-1500:]}")
    return errors


def _cut_short(prepared: PreparedJob, results: pa.Table) -> bool:
    """Did fio stop a job at the runtime the policy injected, before its work was done?

    A job that is not time_based ends when its work is done; if it ran for the whole
    injected cap instead, the cap ended it.
    """
    for row in results.select(["job_name", "job_runtime_ms"]).to_pylist():
        name = row["job_name"]
        if name not in prepared.capped_jobs or row["job_runtime_ms"] is None:
            continue
        options = prepared.job.options_for(name)
        cap_s = _runtime_s(options) or 0
        if options.get("time_based", "0") == "0" and row["job_runtime_ms"] >= cap_s * 1000 * 0.99:
            return True
    return False


def _archive(paths: list[Path]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in paths:
            tar.add(path, arcname=path.name)
    return buf.getvalue()
