"""A found fio invocation → the lake record of one run (`RunOutcome`), ids from its content.

The run id and job id derive from the document (in today's layout), its host and the
backend it is imported as: importing it again names the same commit marker, which
already exists. Only what fio wrote is recorded: the environment columns fiolake
measures for its own runs (kernel, device, file system …) stay NULL.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fiolake import layout, schema
from fiolake.errors import FioError
from fiolake.jobhash import effective_job_sha256
from fiolake.runner.importing import given_job, logfiles
from fiolake.runner.importing.reading import FoundRun
from fiolake.runner.outcome import RunOutcome, empty_tables
from fiolake.runner.report.document import FioReport, job_errors, report_of
from fiolake.runner.report.tables import report_tables
from fiolake.workload import workload_sha256

ORIGIN = "import"
RUNNER = "import"
JOB_ID_PREFIX = "import-"
_INTERRUPTED = "terminating on signal"  # fio's line when a signal ended the run


@dataclass(frozen=True)
class ImportRequest:
    """What the user says about the runs being imported (fiolake import's options)."""

    backend: str
    campaign_id: str
    labels: Mapping[str, str] = field(default_factory=dict)
    host: str | None = None  # --host; else the client/server host; else NULL
    at: datetime | None = None  # start time for a document without fio's timestamp
    profile: str | None = None  # --profile; else the source file's stem
    logs: Path | None = None  # --logs: where fio's per-second logs are (else beside the file)
    job_file: str | None = None  # --job-file: the text of the job file fio ran (given_job)


@dataclass(frozen=True)
class Source:
    """A file being imported: its name as given and its bytes' sha256."""

    name: str
    sha256: str
    folder: Path | None = None  # where the file is (None: stdin)

    @property
    def stem(self) -> str:
        """The profile an imported run gets by default: the file name without suffixes."""
        return "stdin" if self.name == "-" else Path(self.name).name.split(".")[0] or "import"


def content_hash(found: FoundRun, backend: str) -> str:
    """sha256 of the document's content, its host and the backend: the run's identity."""
    key = f"{found.digest}\0{found.host or ''}\0{backend}"
    return hashlib.sha256(key.encode()).hexdigest()


def job_id_of(found: FoundRun, backend: str) -> str:
    """The job id an import of `found` commits under (the same on every import)."""
    return layout.check_id("job id", JOB_ID_PREFIX + content_hash(found, backend)[:32])


def run_id_of(found: FoundRun, backend: str, started_at: datetime) -> str:
    """`r-<start>-<content hash>`: sorts by time like a measured run's id."""
    return f"r-{started_at:%Y%m%dT%H%M%S}-{content_hash(found, backend)[:10]}"


def times(report: FioReport, at: datetime | None, number: int) -> tuple[datetime, datetime]:
    """(started_at, finished_at): fio writes `timestamp` as it reports, at the end; the
    start is that minus the longest job's `elapsed` seconds. `at` is the start when fio
    wrote no timestamp (fio before 2.2, or an edited document)."""
    if report.timestamp_ms is None:
        if at is None:
            raise FioError(
                f"document {number} has no timestamp (fio before 2.2, or edited) — give "
                "its start time with --at, e.g. --at 2024-03-01T12:00:00Z"
            )
        return at, at
    finished = datetime.fromtimestamp(report.timestamp_ms / 1000, UTC)
    elapsed = [int(j["elapsed"]) for j in report.jobs if isinstance(j.get("elapsed"), int)]
    return finished - timedelta(seconds=max(elapsed, default=0)), finished


def rebuilt_job_file(report: FioReport) -> str | None:
    """The options fio echoed (`global options`, each job's `job options`) as a job file;
    None when fio echoed none (fio 2.1)."""
    lines: list[str] = []
    global_options = report.raw.get("global options") or {}
    if global_options:
        lines += ["[global]", *_option_lines(global_options)]
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for job in report.jobs:
        options = job.get("job options") or {}
        key = (str(job.get("jobname")), tuple(sorted((k, str(v)) for k, v in options.items())))
        if key in seen or not options:
            continue
        seen.add(key)
        lines += [f"[{job.get('jobname')}]", *_option_lines(options)]
    return "\n".join(lines) + "\n" if lines else None


def _option_lines(options: Mapping[str, object]) -> list[str]:
    return [f"{k}={v}" if str(v) != "" else str(k) for k, v in options.items()]


def outcome(found: FoundRun, source: Source, request: ImportRequest) -> RunOutcome:
    """The run `found` stands for, with its tables and its document kept as raw output."""
    report = report_of(found.doc, prefix_text=found.prefix_text)
    started, finished = times(report, request.at, found.document)
    run_id = run_id_of(found, request.backend, started)
    status, error = _status(report)
    canonical = rebuilt_job_file(report)
    if request.job_file is not None:
        canonical = given_job.recorded_job_file(canonical, request.job_file, found.document)
    row = {
        "run_id": run_id,
        "job_id": job_id_of(found, request.backend),
        "campaign_id": request.campaign_id,
        "repetition": 0,
        "role": "measure",
        "backend": request.backend,
        "runner": RUNNER,
        "host": request.host or found.host,
        "profile": request.profile or source.stem,
        "canonical_job_file": canonical,
        "effective_job_sha256": effective_job_sha256(canonical),
        "workload_sha256": workload_sha256(canonical),
        "fio_version": report.fio_version,
        "labels": dict(request.labels),
        "started_at": started,
        "finished_at": finished,
        "status": status,
        "error": error,
        "origin": ORIGIN,
        "source_file": source.name,
        "source_sha256": source.sha256,
    }
    log_dir = request.logs or source.folder
    usec_era = (report.fio_version or "fio-3").startswith(("fio-1", "fio-2"))
    present = logfiles.checked_logs(log_dir, report) if log_dir and not usec_era else []
    tables = empty_tables(row)
    tables.update(
        report_tables(
            report,
            run_id=run_id,
            backend=request.backend,
            log_dir=log_dir if present else None,
            log_prefixes=present,
        )
    )
    tables["runs"] = schema.to_table("runs", [row])
    text = f"{found.prefix_text}\n{found.text}\n" if found.prefix_text else f"{found.text}\n"
    return RunOutcome(run_id, status, error, started, tables, {"fio.json": text.encode()})


def _status(report: FioReport) -> tuple[str, str | None]:
    errors = job_errors(report)
    signal = [line.strip() for line in report.prefix_text.splitlines() if _INTERRUPTED in line]
    if signal:
        return "interrupted", "; ".join(errors + signal[:1])
    return ("failed", "; ".join(errors)) if errors else ("ok", None)
