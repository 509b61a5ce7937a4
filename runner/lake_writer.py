"""Write one run attempt into the lake: raw output, four Parquet files, then the commit.

The commit marker goes last and create-only, so a reader never sees a committed
run with missing tables, and a second attempt at the same job cannot overwrite it.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from fiolake import layout
from fiolake.commits import Commit, new_commit
from fiolake.errors import NotFound, PreconditionFailed
from fiolake.store import ObjectStore
from runner.execute import RunOutcome


def parquet_bytes(table: pa.Table) -> bytes:
    """Encode a lake table as one zstd Parquet file."""
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def upload_outcome(store: ObjectStore, outcome: RunOutcome) -> None:
    """Put the raw output and every table of an attempt (idempotent: keys are per run id)."""
    for name, data in outcome.raw.items():
        store.put(layout.raw_key(outcome.run_id, name), data)
    for table, data in outcome.tables.items():
        store.put(layout.result_key(table, outcome.started_at, outcome.run_id), parquet_bytes(data))


def commit_outcome(
    store: ObjectStore, outcome: RunOutcome, *, job_id: str, campaign_id: str, runner: str
) -> Commit | None:
    """Create the job's commit marker; None when another attempt already won the job."""
    commit = new_commit(job_id, outcome.run_id, campaign_id, runner, outcome.status)
    key = layout.commit_key(job_id)
    try:
        store.put(key, commit.to_bytes(), if_none_match=True)
        return commit
    except PreconditionFailed:
        # A retried request may have created the marker itself: read it back.
        try:
            data, _ = store.get(key)
        except NotFound:
            raise
        existing = Commit.from_bytes(data)
        return existing if existing.run_id == outcome.run_id else None
