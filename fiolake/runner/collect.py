"""What one fio run produced, as the attempt's record: fio's JSON report and logs into
lake tables, the raw files kept beside them, and the run's status and error
(`runner.execute` runs fio; this turns its output directory into a `RunOutcome`).
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import pyarrow as pa

from fiolake import schema
from fiolake.errors import FioError
from fiolake.jobhash import effective_job_sha256
from fiolake.runner.fio.process import FioRun
from fiolake.runner.outcome import RunOutcome, RunRequest, base_run_row, empty_tables
from fiolake.runner.policy.jobfile import JobFile
from fiolake.runner.report import logs as fio_logs
from fiolake.runner.report import results as fio_output
from fiolake.runner.report.tables import report_tables
from fiolake.units import seconds_or_none
from fiolake.workload import workload_sha256


class PreparedJob(Protocol):
    """What of `runner.execute.PreparedJob` the record needs (execute imports this)."""

    @property
    def job(self) -> JobFile: ...
    @property
    def capped_jobs(self) -> frozenset[str]: ...
    @property
    def request(self) -> RunRequest: ...


LOG_PREFIX = "fio"  # fio's log files: fio_bw.1.log, fio_clat_hist.1.log, …


def section_runtime_s(options: Mapping[str, str]) -> float | None:
    """A job section's `runtime` in seconds (None when it has none)."""
    return seconds_or_none(options.get("runtime", ""))


def collect(
    prepared: PreparedJob,
    run_id: str,
    env_cols: dict[str, object],
    canonical: str,
    fio_run: FioRun,
    outdir: Path,
    flags: list[str],
) -> RunOutcome:
    """fio's output in `outdir` (and `fio_run`) as the attempt's record: tables, raw files,
    status ('ok', 'failed', 'interrupted') and error, with `flags` on the run."""
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
        cap_s = section_runtime_s(options) or 0
        if options.get("time_based", "0") == "0" and row["job_runtime_ms"] >= cap_s * 1000 * 0.99:
            return True
    return False


def _archive(paths: list[Path]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in paths:
            tar.add(path, arcname=path.name)
    return buf.getvalue()
