"""`fiolake import`: fio output made elsewhere into the lake (runner.importing)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from fiolake.cli import format_option, lake_option
from fiolake.cli.common import IdParam, label_option, parse_labels
from fiolake.cli.output import emit
from fiolake.errors import FiolakeError, UsageProblem

if TYPE_CHECKING:  # the library loads only when the command runs: --help stays light
    from fiolake.runner.importing.writer import ImportReport

# What a folder's files are read as: fio's own suffixes, and CI logs.
SUFFIXES = (".json", ".txt", ".log", ".out")
# Why a file in a folder is not read as a document (the summary says so).
LOGS = "fio's per-second logs (read with the document that names them)"
OTHER = "not .json, .txt, .log or .out"
SHOWN = 5  # names listed per reason; the rest counted
COLUMNS = ("file", "document", "host", "run_id", "status", "results", "import")


class ImportFailed(FiolakeError):
    """Some files could not be imported (each was named on stderr as it was refused)."""


def _files(
    paths: tuple[str, ...], passed_over: dict[str, list[str]]
) -> Iterator[tuple[str, Path | None]]:
    """(name, path) of every file to read, folders walked in name order; '-' is stdin.
    What a folder holds that is not read goes into `passed_over` under the reason."""
    from fiolake.runner.report.logs import is_log_name

    for given in paths:
        if given == "-":
            yield "-", None
            continue
        path = Path(given)
        if path.is_dir():
            for found in sorted(p for p in path.rglob("*") if p.is_file()):
                if is_log_name(found.name):
                    passed_over.setdefault(LOGS, []).append(str(found))
                elif found.suffix.lower() not in SUFFIXES:
                    passed_over.setdefault(OTHER, []).append(str(found))
                else:
                    yield str(found), found
        elif path.exists():
            yield given, path
        else:
            raise UsageProblem(f"{given}: no such file or folder — give fio output files")


@click.command("import")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--backend",
    required=True,
    type=IdParam("backend"),
    help="The storage the output measured (what `compare --backend` names).",
)
@lake_option
@click.option("--campaign", type=IdParam("campaign id"), help="Record into this campaign.")
@label_option
@click.option("--host", help="The host fio ran on (fio does not record it; NULL if not given).")
@click.option(
    "--profile",
    type=IdParam("profile"),
    help="Profile name, which compare pools runs by (default: the file name up to its first '.').",
)
@click.option(
    "--at",
    "at_text",
    metavar="TIME",
    help="Start time (ISO 8601, UTC if no zone) for documents without fio's timestamp.",
)
@click.option(
    "--logs",
    "logs_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of fio's per-second logs (default: the folder each file is in).",
)
@click.option(
    "--job-file",
    "job_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The job file the output was made from: checked against every option fio echoed "
    "and recorded as the run's job, so its bare flags (time_based, stonewall…), which fio's "
    "JSON leaves out, count and the runs pool with `fiolake run` of the same file.",
)
@click.option("--dry-run", is_flag=True, help="Read and check everything; write nothing.")
@format_option()
def import_(
    paths: tuple[str, ...],
    backend: str,
    lake: str,
    campaign: str | None,
    label: tuple[str, ...],
    host: str | None,
    profile: str | None,
    at_text: str | None,
    logs_dir: Path | None,
    job_file: Path | None,
    dry_run: bool,
    fmt: str,
) -> None:
    """Import fio results made elsewhere: JSON or json+ output of fio 2.1 to today.

    Each PATH is a file, a folder (its .json, .txt, .log and .out files, recursively) or
    '-' for stdin. Text around the JSON (fio's warnings, normal output, a CI log) is
    skipped; a file may hold several documents, and client/server output becomes one run
    per host. Each fio invocation becomes a run with origin 'import', the file's name and
    SHA-256; what fio did not record (kernel, device, file system) stays NULL. The
    per-second logs fio wrote beside a document (the prefixes its write_bw_log,
    write_iops_log, write_lat_log and write_hist_log options name; fio 3.0 and later)
    become its per-second rows; --logs says where they are if not beside it.

    Importing is idempotent: a run's id comes from the document's content, so files
    imported before are skipped and only new ones are added. A file that is not fio
    output is named on stderr and nothing of it is written; the others are still
    imported, and the command exits 1. docs/import.md has the details.

    \b
    Examples:
      fiolake import results/ --backend nvme-old --campaign c-history
      fiolake import ci.log --backend ceph --host node7 --label ci=nightly
      kubectl logs kubestr-pod | fiolake import - --backend longhorn
      fiolake import old.json --backend hdd --at 2016-05-01T10:00:00Z
      fiolake import by-hand/ --backend nvme --job-file random-reads.fio
      fiolake compare --backend nvme-old --backend nvme

    compare pools runs of one workload (the job's options as fio reads them, wherever it
    ran). An imported run's job is rebuilt from the options fio echoed, which leave out
    bare flags such as time_based: give --job-file FILE and the runs pool with `fiolake
    run FILE`; otherwise the rows say which options differ.
    """
    from datetime import UTC, datetime

    from fiolake.config import Settings
    from fiolake.ids import new_campaign_id
    from fiolake.runner.importing import runs, writer
    from fiolake.timetext import parse_iso

    try:
        at = parse_iso(at_text) if at_text is not None else None
    except ValueError:
        raise click.BadParameter(
            f"{at_text!r} is not an ISO 8601 time (e.g. 2024-03-01T12:00:00Z)",
            param_hint="--at",
        ) from None
    passed_over: dict[str, list[str]] = {}
    files = list(_files(paths, passed_over))
    request = runs.ImportRequest(
        backend=backend,
        campaign_id=campaign or new_campaign_id(datetime.now(UTC)),
        labels=parse_labels(label),
        host=host,
        at=at,
        profile=profile,
        logs=logs_dir,
        job_file=_job_text(job_file),
    )
    settings = Settings.from_env(lake=lake)
    store = settings.store() if dry_run else settings.writable_store()
    importer = writer.Importer(store, request, dry_run=dry_run)
    for name, path in files:
        data = sys.stdin.buffer.read() if path is None else _read(path, importer.report, name)
        why = importer.add(name, data) if data is not None else None
        if why is not None:
            click.echo(f"Error: {name}: {why}", err=True)
    report = importer.finish()
    _show(report, fmt, dry_run)
    for why, names in passed_over.items():
        more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
        click.echo(
            f"passed over {len(names)} file(s), {why}: {', '.join(names[:SHOWN])}{more}",
            err=True,
        )
    if report.refused:
        raise ImportFailed(_summary(report, dry_run, len(files)))


def _job_text(path: Path | None) -> str | None:
    """The text of --job-file; UsageProblem when it cannot be read as text."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise UsageProblem(
            f"--job-file {path}: cannot read it ({why}) — give the fio job file the output "
            "was made from"
        ) from None


def _read(path: Path, report: ImportReport, name: str) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError as exc:
        report.refused.append((name, f"cannot read it ({exc.strerror})"))
        click.echo(f"Error: {name}: cannot read it ({exc.strerror})", err=True)
        return None


def _show(report: ImportReport, fmt: str, dry_run: bool) -> None:
    rows = [
        (r.source, r.document, r.host, r.run_id, r.status, r.results, verb)
        for runs_, verb in (
            (report.imported, "would import" if dry_run else "imported"),
            (report.skipped, "skipped"),
        )
        for r in runs_
    ]
    if rows:
        emit(COLUMNS, rows, fmt)
    if report.skipped:
        click.echo(
            f"skipped {len(report.skipped)} run(s) already in the lake (same content, "
            "same backend)",
            err=True,
        )


def _summary(report: ImportReport, dry_run: bool, files: int) -> str:
    names = ", ".join(name for name, _ in report.refused)
    done = "would import" if dry_run else "imported"
    return (
        f"{len(report.refused)} of {files} file(s) not imported ({names}); "
        f"{done} {len(report.imported)} run(s), skipped {len(report.skipped)}"
    )
