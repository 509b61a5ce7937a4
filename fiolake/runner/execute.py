"""One job file, one run attempt: policy → canonical job file → fio → lake tables.

Used identically by `fiolake run` (local) and the distributed runner; where the
tables go is the caller's business (see runner.lake_writer).
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fiolake.errors import FiolakeError
from fiolake.ids import new_run_id
from fiolake.runner import rundirs
from fiolake.runner.collect import LOG_PREFIX, collect, section_runtime_s
from fiolake.runner.fio.binary import FioBinary, find_fio
from fiolake.runner.fio.process import Progress, deadline_for, run_fio
from fiolake.runner.host import blockinfo, contention, sysinfo, target
from fiolake.runner.host.lock import SHARED_FLAG, HostLock
from fiolake.runner.outcome import (
    RunOutcome,
    RunRequest,
    failed_outcome,
    outcome_without_fio,
    rejected_outcome,
    set_run_columns,
    stopped_outcome,
)
from fiolake.runner.policy import check as policy

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
    capped = frozenset(
        s.name for s in job.jobs if runtime_s is None and not section_runtime_s(s.options)
    )
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
    rundirs.remove_abandoned(workdir)  # what killed attempts left (runner.rundirs)
    # fio's data files go in a per-run subdirectory we remove afterwards (none on a device).
    data_dir = shared_dir or rundirs.data_dir_for(request.target_dir, run_id)
    with rundirs.run_output_dir(run_id, workdir) as rundir:
        outdir = rundir.path
        try:
            try:
                if block is None:
                    if shared_dir is None:
                        rundirs.note_data_dir(outdir, data_dir)
                    data_dir.mkdir(parents=True, exist_ok=shared_dir is not None)
            except OSError as exc:
                reason = f"cannot create fio's directory in {request.target_dir}: {exc}"
                return outcome_without_fio(request, run_id, "failed", reason)
            canonical = policy.canonical_job_file(
                prepared.job, target_dir=data_dir, log_prefix=LOG_PREFIX, block=block
            )
            job_path = outdir / "job.fio"
            job_path.write_text(canonical)
            locks = (rundir.lock_fd, *(host_lock.fds() if host_lock is not None else ()))
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
                    pass_fds=locks,  # held until fio and its job processes are gone
                )
            finally:
                alone = monitor.stop()
            flags = _alone_flags(alone, env_cols, shared=host_lock is None)
            return collect(prepared, run_id, env_cols, canonical, fio_run, outdir, flags)
        finally:
            if shared_dir is None and block is None:
                shutil.rmtree(data_dir, ignore_errors=True)


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
