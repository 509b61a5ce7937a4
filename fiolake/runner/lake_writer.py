"""Write one run attempt into the lake: raw output, a Parquet file per table, then the commit
(the order and the durability rule are runner.attempt's).

The commit marker goes last and create-only, so a reader never sees a committed
run with missing tables, and a second attempt at the same job cannot overwrite it.
"""

from __future__ import annotations

import logging

from fiolake import layout
from fiolake.commits import Commit, log_commit
from fiolake.errors import PreconditionFailed, StoreError
from fiolake.runner.execute import RunOutcome
from fiolake.runner.spool import put_with_retry
from fiolake.schema import parquet_bytes
from fiolake.store import ObjectStore

log = logging.getLogger(__name__)


def outcome_objects(outcome: RunOutcome) -> dict[str, bytes]:
    """Every object of an attempt by key: raw output first, then one Parquet per table."""
    objects = {layout.raw_key(outcome.run_id, name): data for name, data in outcome.raw.items()}
    for table, data in outcome.tables.items():
        key = layout.result_key(table, outcome.started_at, outcome.run_id)
        objects[key] = parquet_bytes(data)
    return objects


def commit_marker(store: ObjectStore, commit: Commit, **put_options: float) -> Commit | None:
    """Create-only PUT of a marker; a 412 is settled by reading the winner back.

    The winner's marker is then copied into the commit log (see `fiolake.commits`).
    """
    key = layout.commit_key(commit.job_id)
    try:
        if put_options:
            put_with_retry(store, key, commit.to_bytes(), create_only=True, **put_options)
        else:
            store.put(key, commit.to_bytes(), if_none_match=True)
        won: Commit | None = commit
    except PreconditionFailed:
        # A retried request may have created the marker itself: read it back.
        existing = Commit.from_bytes(store.get(key)[0])
        won = existing if existing.run_id == commit.run_id else None
    if won is not None:
        try:
            log_commit(store, won)
        except StoreError as exc:
            # Committed all the same; only readers between compactions miss it for now.
            log.warning(
                "%s is committed but its commit-log entry is not (%s): queries see it after "
                "the next `fiolake lake compact`",
                commit.job_id,
                exc,
            )
    return won
