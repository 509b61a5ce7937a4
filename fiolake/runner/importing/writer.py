"""Import files into a lake: each file read and built whole first (a bad one is refused
with nothing written), then each run written like a runner writes one (raw output and
Parquet, then the create-only commit marker; runner.lake_writer). A run whose commit
marker exists is skipped: its content was imported before."""

from __future__ import annotations

import hashlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

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
    folder = None if name == "-" else Path(name).parent
    source = runs.Source(name, hashlib.sha256(data).hexdigest(), folder)
    built = []
    for one in reading.found_runs(reading.read_text(data)):
        try:
            built.append((one, runs.outcome(one, source, request)))
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as exc:
            # reading._check covers the fields every import reads; a field only some
            # documents reach (options, percentiles, bins) may still hold what fio never
            # writes: the file is refused with what broke, never with a traceback.
            raise FioError(
                f"document {one.document}: malformed fio JSON ({type(exc).__name__}: {exc}) "
                "— import fio's own output, unedited"
            ) from None
    return built


class Importer:
    """Imports file after file into `store`: each file is read and built here, its runs
    are written by `workers` threads (the writes are independent objects; on a local lake
    each one waits for its fsync, on S3 for a round trip). `finish` waits for them."""

    def __init__(
        self,
        store: ObjectStore,
        request: runs.ImportRequest,
        *,
        dry_run: bool = False,
        workers: int = 8,
    ) -> None:
        self.store = store
        self.request = request
        self.dry_run = dry_run
        self.report = ImportReport()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="import")
        self._pending: deque[tuple[ImportedRun, Future[bool]]] = deque()
        self._limit = 8 * workers  # runs built but not yet written: bounds the memory
        self._seen: set[str] = set()  # job ids of this import's runs

    def add(self, name: str, data: bytes) -> str | None:
        """Import one file; what is wrong with it (nothing of it written), or None."""
        try:
            outcomes = prepare(name, data, self.request)
        except FioError as exc:
            self.report.refused.append((name, str(exc)))
            return str(exc)
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
            if row["job_id"] in self._seen:  # the same content twice in this import
                self.report.skipped.append(done)
                continue
            self._seen.add(row["job_id"])
            task = self._pool.submit(self._write, outcome, row["job_id"], row["campaign_id"])
            self._pending.append((done, task))
            while len(self._pending) > self._limit:
                self._settle()
        return None

    def finish(self) -> ImportReport:
        """Wait for every write; the report. A failed write (the store) raises."""
        try:
            while self._pending:
                self._settle()
        finally:
            self._pool.shutdown(cancel_futures=True)
        return self.report

    def _settle(self) -> None:
        done, task = self._pending.popleft()
        (self.report.imported if task.result() else self.report.skipped).append(done)

    def _write(self, outcome: RunOutcome, job_id: str, campaign_id: str) -> bool:
        if self.store.head(layout.commit_key(job_id)) is not None:
            return False  # this content was imported before
        return self.dry_run or write(self.store, outcome, job_id, campaign_id)


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
