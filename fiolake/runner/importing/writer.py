"""Import files into a lake: each file read and built whole first (a bad one is refused
with nothing written), then each run written like a runner writes one (raw output and
Parquet, then the create-only commit marker; runner.lake_writer). A run whose commit
marker exists is skipped: its content was imported before."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from fiolake import layout
from fiolake.commits import new_commit
from fiolake.errors import FioError
from fiolake.runner.importing import reading, runs
from fiolake.runner.lake_writer import commit_marker, outcome_objects
from fiolake.runner.outcome import RunOutcome
from fiolake.store import ObjectStore


@dataclass(frozen=True)
class ImportedRun:
    """One run of an imported file: written, or skipped as already in the lake."""

    source: str
    document: int
    host: str | None
    run_id: str
    status: str
    results: int  # rows of `results`: job entries × directions


@dataclass
class ImportReport:
    """What an import did, file by file."""

    imported: list[ImportedRun] = field(default_factory=list)
    skipped: list[ImportedRun] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (file, what is wrong)


def prepare(
    name: str, data: bytes, request: runs.ImportRequest
) -> list[tuple[reading.FoundRun, RunOutcome]]:
    """Every run of one file, built in memory; FioError says what is wrong with the file."""
    source = runs.Source(name, hashlib.sha256(data).hexdigest())
    found = reading.found_runs(reading.read_text(data))
    return [(one, runs.outcome(one, source, request)) for one in found]


def import_file(
    store: ObjectStore,
    name: str,
    data: bytes,
    request: runs.ImportRequest,
    report: ImportReport,
    *,
    dry_run: bool = False,
) -> None:
    """Import one file's runs into `store` (nothing with `dry_run`), noting each in `report`;
    a bad file is noted as refused, with nothing of it written."""
    try:
        outcomes = prepare(name, data, request)
    except FioError as exc:
        report.refused.append((name, str(exc)))
        return
    for found, outcome in outcomes:
        row = outcome.tables["runs"].to_pylist()[0]
        done = ImportedRun(
            name,
            found.document,
            row["host"],
            outcome.run_id,
            outcome.status,
            outcome.tables["results"].num_rows,
        )
        if store.head(layout.commit_key(row["job_id"])) is not None:
            report.skipped.append(done)
        elif dry_run or write(store, outcome, row["job_id"], row["campaign_id"]):
            report.imported.append(done)
        else:
            report.skipped.append(done)


def write(store: ObjectStore, outcome: RunOutcome, job_id: str, campaign_id: str) -> bool:
    """Write one run, commit marker last (create-only); False if another import of the
    same content committed first."""
    for key, data in outcome_objects(outcome).items():
        store.put(key, data)
    commit = new_commit(
        job_id, outcome.run_id, campaign_id, runs.RUNNER, outcome.status, outcome.error or ""
    )
    won = commit_marker(store, commit)
    return won is not None and won.run_id == outcome.run_id
