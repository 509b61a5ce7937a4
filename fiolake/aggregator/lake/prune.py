"""Retention: delete per-second rows older than a window from the compacted `timeseries`.

Per-second rows are the bulk of a lake (runs × jobs × directions × seconds); the
summaries (`runs`, `results`, `percentiles`, …) stay forever. `prune_timeseries` deletes
the `timeseries` rows of runs that started before the window with a Delta `DELETE` (one
atomic commit of the table's log, files rewritten without those rows), so every Delta
reader — Spark, DuckDB `delta_scan`, polars, Trino — sees the table before or after,
never half of it, and no file disappears behind the log's back (the removed files go
with the next compaction's vacuum, after its grace period). It then writes the next
generation (create-only) naming the table's new files, the switch fiolake's own
views follow. Interrupted between the two, the table is ahead of the generations: fiolake's
views keep the previous generation's files (still there: vacuum waits for the grace
period) and the next `lake compact` records the table's current version; prune refuses
to run on a table that moved since the last generation until then.

Never touched: `commits/`, `results/` (the per-run files runners wrote) and every other
table. The runs keep counting as compacted, so compaction never re-appends their
per-second rows from `results/`. Runs committed since the last compaction are pruned
once a compaction has folded them in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date, timedelta

from fiolake.aggregator.lake import delta
from fiolake.aggregator.lake.compact_lock import CompactionLock, compaction_lock
from fiolake.aggregator.lake.generations import DeltaState, latest_generation, write_generation
from fiolake.errors import AccessDenied, LakeError, PreconditionFailed, UsageProblem
from fiolake.store import ObjectStore
from fiolake.timetext import now_iso

TABLE = "timeseries"


@dataclass(frozen=True)
class PruneReport:
    """What one `prune_timeseries` call did."""

    cutoff: date  # rows of runs that started before this UTC day were deleted
    deleted_rows: int
    rows: int  # rows the table keeps
    generation: int | None  # the generation written; None when nothing changed


def _cutoff(store: ObjectStore, keep: timedelta) -> date:
    if keep < timedelta(days=1):
        raise UsageProblem(
            f"--keep-timeseries {keep} is under a day: rows are kept by their run's start "
            "day, give 1d or more (e.g. 90d)"
        )
    return (store.server_time() - keep).date()


def _not_compacted(store: ObjectStore) -> LakeError:
    return LakeError(
        f"no compacted {TABLE} table in {store.url}: run `fiolake lake compact` first "
        "(prune deletes from the compacted layer only)"
    )


def prune_timeseries(store: ObjectStore, keep: timedelta) -> PruneReport:
    """Delete compacted `timeseries` rows of runs that started more than `keep` ago (by the
    store's clock, whole UTC days); write the generation that uses the result.

    AccessDenied for credentials that may not write under compacted/ (runner, publisher,
    analyst), before anything is written."""
    cutoff = _cutoff(store, keep)
    try:
        if latest_generation(store) is None:  # checked before the lock, which would write
            raise _not_compacted(store)
        # Prune writes the table and the generations as compaction does: one at a time.
        with compaction_lock(store) as lock:
            return _prune(store, cutoff, lock)
    except AccessDenied as exc:
        raise AccessDenied(
            f"{exc} — lake prune needs the compactor's credentials "
            '(eval "$(fiolake stack env --role compactor)")'
        ) from exc


def _prune(store: ObjectStore, cutoff: date, lock: CompactionLock) -> PruneReport:
    prev = latest_generation(store)
    before = prev.delta.get(TABLE) if prev is not None and not prev.legacy else None
    dt = delta.open_table(store, TABLE)
    if prev is None or before is None or dt is None:
        raise _not_compacted(store)
    current, _ = delta.data_files(store, dt, TABLE)
    if set(current) != set(before.files):
        # Rows appended (or pruned) after the last generation: only compaction knows which runs
        # they hold; recording the table's state here could let it append them twice.
        # (Compaction's vacuum adds log versions too, but never changes the data files.)
        raise LakeError(
            f"the compacted {TABLE} table changed since the last compaction (its version "
            f"{dt.version()} holds files the last generation.s version {before.version} does not): "
            "run `fiolake lake compact`, then prune again"
        )
    lock.fence()
    with delta.mapped_errors(store):
        # A DATE literal for the partition column (not time text): 'YYYY-MM-DD'.
        metrics = dt.delete(f"date < '{cutoff.isoformat()}'")
        dt.update_incremental()
    deleted = int(metrics.get("num_deleted_rows") or 0)
    files, rows = delta.data_files(store, dt, TABLE)
    if set(files) == set(before.files):
        return PruneReport(cutoff, deleted, rows, None)
    state = DeltaState(
        TABLE, dt.version(), tuple(files), before.key_array, rows, before.covers_index
    )
    gen = prev.generation + 1
    next_gen = dataclasses.replace(
        prev,
        generation=gen,
        created_at=now_iso(),
        delta={**prev.delta, TABLE: state},
        keys_file=None,
    )
    lock.fence()
    try:
        write_generation(store, next_gen)
    except PreconditionFailed:
        raise LakeError(
            f"a compaction wrote generation {gen} first: run `fiolake lake prune` again"
        ) from None
    return PruneReport(cutoff, deleted, rows, gen)
