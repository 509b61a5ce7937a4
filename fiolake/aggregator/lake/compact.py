"""Compaction: fold committed per-run files into the lake's Delta Lake tables.

Steps, each safe to interrupt: (1) append the rows of committed runs not yet compacted
to one Delta table per lake table (and new commit markers to `commits`), rewriting a
table of many small files into few; (2) create the next generation record,
create-only — the single atomic switch fiolake's views see; (3) clean up: Delta files
superseded longer than the grace period (vacuum), and objects of earlier layouts and
generations. `results/` and `commits/` are never modified.

Delta readers see each table's latest version: only ever rows of committed runs. A crash
after (1) leaves rows in a table that the generation does not list yet; the next run finds
them (files added since the generation's version) and does not append them twice. A lake
compacted before Delta (generation format 1, merged files of our own) is migrated: its
merged files are folded into the Delta tables like per-run files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

from fiolake import layout
from fiolake.aggregator.lake import cases, delta, derived, gang, series, summaries, workloads
from fiolake.aggregator.lake.compact_lock import CompactionLock, compaction_lock
from fiolake.aggregator.lake.coveredids import no_ids
from fiolake.aggregator.lake.generations import (
    INLINE_KEYS_FORMAT,
    DeltaState,
    Generation,
    latest_generation,
    latest_generation_number,
    write_generation,
)
from fiolake.aggregator.lake.snapshot import COMMITS_SCHEMA, Snapshot, read_all, read_index, scan
from fiolake.commits import logged_job_ids
from fiolake.errors import LakeError, NotFound, PreconditionFailed, StoreError
from fiolake.schema import SCHEMAS
from fiolake.store import ObjectStore
from fiolake.timetext import iso_utc, now_iso, parse_iso

Hook = Callable[[str], None]  # called with "files-written", "generation-written" (tests)

# How often a compaction lists every commit marker where the commit log would do. The full
# listing finds markers without a log entry (a runner older than the log, or one that died
# between its marker and its log entry): until one runs, readers do not see those runs.
# In between, a compaction reads the log since the previous one, as readers do, so its
# cost follows the night, not the lake: at 1,000,000 runs the full listing was 6 s of a
# night's compaction on local disk (a 10,000-run lake's whole night took 26 s), and on
# S3 it is ~1,000 LISTs (issue 44). A full listing that finds unlogged markers keeps
# every following compaction listing in full until all new markers are logged.
FULL_LISTING_EVERY = timedelta(days=7)


@dataclass(frozen=True)
class Merged:
    """One Delta table appended to by a compaction."""

    table: str
    new_runs: int  # runs (files) folded in by this compaction
    runs: int  # run ids the table covers in total
    rows: int  # rows in the table
    version: int  # the Delta version the generation records


@dataclass
class CompactionReport:
    """What one `compact` call did."""

    generation: int | None  # the generation written; None when there was nothing to do
    merged: list[Merged] = field(default_factory=list)
    commits: int = 0  # markers in the commit index
    # Markers new since the previous generation without a commit-log entry (older
    # runners): while any exist, readers list every marker instead of the log.
    unlogged: int = 0
    full_listing: bool = False  # every commit marker was listed (not only the commit log)
    migrated: bool = False  # a lake of the merged-file layout was folded into Delta
    removed: list[str] = field(default_factory=list)  # superseded compacted objects deleted
    cleanup_errors: list[str] = field(default_factory=list)
    cases_folded: int = 0  # runs folded into the case summaries (`cases`)


def _contract(table: str) -> pa.Schema:
    if table == delta.COMMITS:
        return COMMITS_SCHEMA
    return SCHEMAS[table].append(pa.field("date", pa.date32()))


def _conform(table: str, data: pa.Table) -> pa.Table:
    """Columns of the current schema first (NULL where older files lack one), then extras.

    Outside readers get one stable schema whatever the age of the per-run files.
    """
    columns, fields = [], []
    for f in _contract(table):
        if f.name in data.column_names:
            columns.append(data.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(data.num_rows, f.type))
        fields.append(f)
    for name in data.column_names:
        if name not in _contract(table).names:
            columns.append(data.column(name))
            fields.append(data.schema.field(name))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _uncovered(snap: Snapshot, key: str, before: DeltaState | None, covered: pa.Array) -> pa.Array:
    """The committed ids (`key`: the run_id or job_id column) that `covered` lacks, distinct
    and sorted: runs with rows to append here and runs without (a rejected run has no
    results), all to be covered. When the covered ids held the whole commit index, only
    the commits since are looked up, a few among a year's (issue 44)."""
    ids = snap.commits.column(key)
    if before is not None and before.covers_index:
        recent = ids.slice(snap.indexed_rows).combine_chunks()
        # The year's covered ids scanned once against a hash set of the recent ones.
        held = covered.filter(pc.is_in(covered, value_set=recent))
        return _sorted_ids(recent.filter(pc.invert(pc.is_in(recent, value_set=held))))
    return _sorted_ids(ids.filter(pc.invert(pc.is_in(ids, value_set=covered))))


def _new_rows(
    store: ObjectStore, snap: Snapshot, table: str, new: pa.Array
) -> tuple[pa.Table | None, int]:
    """Rows to append to `table`: those of the committed runs `new` names (job ids for
    `commits`), from their loose files (or the merged files of the earlier layout). Also
    how many runs' files were folded in (rows or none)."""
    if table == delta.COMMITS:
        fresh = snap.commits.filter(pc.is_in(snap.commits.column("job_id"), value_set=new))
        return (fresh if fresh.num_rows else None), fresh.num_rows
    # The generation's covered runs are not among the loose files (`scan` leaves them
    # out); those an interrupted compaction appended may be. The night's loose runs are
    # looked up among `new`, not `new` turned into a Python set: for a table no runner
    # has written yet every committed run is new (1,000,000 ids, 0.3 GB, each night).
    found = [
        (key, day, run_id)
        for (t, day), runs in snap.loose.items()
        if t == table
        for run_id, key in runs.items()
    ]
    ids = pa.array([run_id for _, _, run_id in found], pa.string())
    keeps = pc.is_in(ids, value_set=new).to_pylist()
    picked = [f for f, keep in zip(found, keeps, strict=True) if keep]
    loose = {key: day for key, day, _ in picked}
    legacy = snap.compacted.files(table) if snap.compacted and snap.compacted.legacy else []
    folded = {run_id for _, _, run_id in picked}
    if legacy:  # runs the merged files covered, rows or none
        folded |= set(snap.compacted.covered(table)) & set(new.to_pylist())  # type: ignore[union-attr]
    # Loose files in run id order: each holds one run's rows, so their concatenation is
    # already the rows sorted by run (as a stable sort of them would order them).
    run_of = {key: run_id for key, _, run_id in picked}
    keys = legacy + sorted(loose, key=lambda key: (run_of[key], key))
    if not keys:
        return None, 0
    tables = []
    for key, data in zip(keys, read_all(store, keys), strict=True):
        if key in loose:  # per-run files get their `date` from their path
            day = date.fromisoformat(loose[key])
            data = data.append_column("date", pa.array([day] * data.num_rows, pa.date32()))
        tables.append(data)
    merged = pa.concat_tables(tables, promote_options="permissive")
    if legacy:
        # Only the rows of those runs, sorted by run: a loose file is one committed run's
        # (`scan`) and in order already; a merged file of the earlier layout holds others.
        # Each of the two copies was a night's rows again: the per-second table's took
        # a night's compaction at 1,000,000 runs from 1.0 to 2.5 GB (issue 44).
        merged = merged.filter(pc.is_in(merged.column("run_id"), value_set=new))
        merged = merged.sort_by([("run_id", "ascending")])
    if merged.num_rows == 0:  # runs without rows here (a rejected run has no results)
        return None, len(folded)
    rows = _conform(table, merged)
    return (workloads.filled(rows) if table == "runs" else rows), len(folded)


def _sorted_ids(ids: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The distinct ids among `ids`, sorted, as one string array."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    unique = pc.unique(ids)
    return unique.take(pc.sort_indices(unique)).cast(pa.string())


def _state(
    store: ObjectStore, table: str, dt: DeltaTable, covered: pa.Array, new: pa.Array
) -> DeltaState:
    """The table's state for the generation: the ids it covered, then the new ones (an
    append keeps the earlier order, so an unchanged table's state compares equal)."""
    files, rows = delta.data_files(store, dt, table)
    ids = pa.concat_arrays([covered, new])
    # Every committed run is covered now: those `new` names were the ones it lacked.
    return DeltaState(table, dt.version(), tuple(files), ids, rows, covers_index=True)


def _compact_table(
    store: ObjectStore, snap: Snapshot, table: str, gen: int
) -> tuple[DeltaState | None, Merged | None, pa.Table | None]:
    """Bring one Delta table up to date; its state for the generation, what was added,
    and the rows appended (None: none)."""
    prev = snap.compacted
    before = prev.delta.get(table) if prev and not prev.legacy else None
    dt = delta.open_table(store, table)
    recorded = (before.version, before.files) if before else None
    covered = delta.with_recovered(
        store, dt, table, recorded, before.key_array if before else no_ids()
    )
    new = _uncovered(snap, "job_id" if table == delta.COMMITS else "run_id", before, covered)
    data, folded = _new_rows(store, snap, table, new) if len(new) else (None, 0)
    if data is not None:
        dt = delta.append(store, table, data, gen)
    if dt is None:
        return None, None, None
    delta.optimize(store, dt)
    state = _state(store, table, dt, covered, new)
    merged = Merged(table, folded, len(state.key_array), state.rows, state.version)
    return state, (merged if data is not None else None), data


def _ids_in(store: ObjectStore, table: str, files: list[str]) -> set[str]:
    """The run ids a table's files hold, to mend a generation whose covered ids are gone;
    LakeError for a table rows were deleted from (`lake prune`): its files no longer name
    the runs it covers, and counting them uncovered would append their rows again."""
    dt = delta.open_table(store, table)
    if dt is not None and delta.has_deletes(store, dt):
        raise LakeError(
            f"the covered ids of the compacted {table} table cannot be rebuilt from its "
            "files: `lake prune` deleted rows from it — restore the generation's covered-ids "
            "object (e.g. from a bucket version), then run `fiolake lake compact` again"
        )
    return delta.keys_in(store, table, files)


def _unlogged(store: ObjectStore, snap: Snapshot) -> int:
    """How many markers the index lacks that the commit log does not name either."""
    if not snap.unindexed:
        return 0
    prev = snap.compacted
    since = parse_iso(prev.commits_listed_at) if prev and prev.commits_listed_at else None
    return len(snap.unindexed - logged_job_ids(store, since))


def _lists_every_marker(prev: Generation | None, now: datetime, forced: bool) -> bool:
    """Whether this compaction lists every commit marker (see FULL_LISTING_EVERY)."""
    if forced or prev is None or not prev.commits_listed_at or not prev.markers_listed_at:
        return True
    return now - parse_iso(prev.markers_listed_at) >= FULL_LISTING_EVERY


def _cleanup(store: ObjectStore, grace: timedelta, report: CompactionReport) -> None:
    """Remove what the newest generation does not use, once superseded longer than `grace`.

    Delta tables are vacuumed (files their log removed); elsewhere under `compacted/`,
    earlier generation records and merged files of the layout before Delta are deleted once older
    than `grace`. The grace period protects readers that opened an older generation.
    """
    current = latest_generation(store)
    if current is None:
        return
    if not current.legacy:
        # A table a newer fiolake keeps (the lake was downgraded) is left as it is: its
        # files are that version's to vacuum, and its record is carried forward.
        for table in filter(layout.is_delta_table, current.delta):
            dt = delta.open_table(store, table)
            if dt is not None:
                report.removed += [
                    layout.delta_table_prefix(table) + p for p in delta.vacuum(store, dt, grace)
                ]
    live = {layout.generation_key(current.generation), *current.commit_files()}
    live |= {k for k in (current.keys_file, current.cases_file) if k}
    live.add(layout.COMPACTION_LOCK_KEY)
    live |= {k for table in layout.TABLES for k in current.files(table)}
    cutoff = datetime.now(UTC) - grace
    for key in list(store.list(layout.COMPACTED_PREFIX)):
        if key in live or key.startswith(layout.DELTA_PREFIX):
            continue
        gen = layout.generation_object(key)
        if gen is not None and gen > current.generation:
            continue  # a concurrent compaction's generation: not ours to judge
        try:
            info = store.head(key)
            if info is None or info.last_modified > cutoff:
                continue
            store.delete(key)
            report.removed.append(key)
        except StoreError as exc:
            report.cleanup_errors.append(str(exc))


def compact(
    store: ObjectStore,
    *,
    tables: Iterable[str] = layout.TABLES,
    grace: timedelta = timedelta(hours=1),
    hook: Hook | None = None,
    wait: bool = False,
    on_wait: Callable[[str], None] | None = None,
    full_listing: bool = False,
) -> CompactionReport:
    """Append committed runs not yet compacted to the Delta tables; write the next
    generation record; clean up. One compaction at a time: CompactionBusy when another holds
    the lake's compaction lock, unless `wait` (then `on_wait` hears why, once).
    `full_listing` lists every commit marker whether or not one is due (FULL_LISTING_EVERY)."""
    tables = list(tables)
    for table in tables:
        if table not in layout.TABLES:
            raise LakeError(f"unknown table {table!r}; tables are {', '.join(layout.TABLES)}")
    # The generation first: a local lake lists a folder whole, 1,000,000 markers at a year.
    if (
        not latest_generation_number(store)
        and next(store.list(layout.COMMITS_PREFIX), None) is None
    ):
        # Nothing committed, nothing compacted: no lock to take either (taking it would
        # create the lake where a mistyped --lake pointed). `commits/` was listed: empty.
        return CompactionReport(None, full_listing=True)
    with compaction_lock(store, wait=wait, on_wait=on_wait) as lock:
        return _compact(store, tables, grace, hook, lock, full_listing)


def _compact(
    store: ObjectStore,
    tables: list[str],
    grace: timedelta,
    hook: Hook | None,
    lock: CompactionLock,
    full_listing: bool,
) -> CompactionReport:
    # Taken before the listing: a marker it misses was written later, so its log entry
    # sorts after this instant (see fiolake.commits).
    started = store.server_time()
    listed_at = iso_utc(started)
    # A record whose covered ids were deleted is mended from the tables' files.
    ids = latest_generation(store, lambda table, files: _ids_in(store, table, files))
    full = _lists_every_marker(ids, started, full_listing)
    snap = scan(store, full_listing=full, indexed=read_index(store, ids))
    prev = snap.compacted
    report = CompactionReport(None, commits=snap.commits.num_rows, full_listing=full)
    if prev is not None and prev.legacy:  # every table the old layout holds moves to Delta
        report.migrated = True
        tables = [t for t in layout.TABLES if t in tables or prev.files(t)]
    gen = (prev.generation if prev else 0) + 1
    states = dict(prev.delta) if prev and not prev.legacy else {}
    appended: dict[str, pa.Table | None] = {}
    for table in [*tables, delta.COMMITS]:
        lock.fence()  # appended by a compactor that lost its lock, rows could double
        state, merged, rows = _compact_table(store, snap, table, gen)
        if table in summaries.SOURCES:  # kept for the summaries; the rest let go
            # One chunk: a night's rows come one chunk per runner's file (3,000), and each
            # fold of them (night and case summaries) cost 0.6 s more so.
            appended[table] = rows.combine_chunks() if rows is not None else None
        if state is not None:
            states[table] = state
        if merged is not None:
            report.merged.append(merged)
    if snap.commits.num_rows > snap.indexed_rows:  # the index grows: tables left out lag it
        for table, state in states.items():
            if table not in tables and table != delta.COMMITS and state.covers_index:
                states[table] = replace(state, covers_index=False)
    if "runs" in tables and "results" in tables:  # the derived tables follow both
        lock.fence()
        for spec in (derived.NIGHT_SUMMARIES, series.SPEC):
            state, folded = derived.compact_derived(spec, store, prev, states, appended, gen)
            if state is not None:
                states[state.table] = state
                if folded:
                    report.merged.append(
                        Merged(state.table, folded, state.key_count, state.rows, state.version)
                    )
            lock.fence()
        cases_file, cases_runs, report.cases_folded = cases.compact_cases(
            store, prev, states, appended, gen
        )
    elif prev is not None and not prev.legacy:  # the case summaries still fold what they did
        cases_file, cases_runs = prev.cases_file, prev.cases_runs
    else:
        cases_file, cases_runs = None, 0
    gang_runs = gang.compacted_members(store, prev, states, appended.get("runs"))
    changed = report.migrated or states != (prev.delta if prev else {})
    # A mended record, or one of format 2 (ids inline), is rewritten even with nothing new.
    changed = changed or (prev is not None and (prev.mended or prev.format == INLINE_KEYS_FORMAT))
    changed = changed or cases_file != (prev.cases_file if prev else None)
    changed = changed or gang_runs != (prev.gang_runs if prev else None)
    if changed:
        # Without a full listing every marker found came from the log: none is unlogged.
        report.unlogged = _unlogged(store, snap) if full else 0
        vouched = listed_at if report.unlogged == 0 else None
        record = Generation(
            gen,
            now_iso(),
            None,
            snap.commits.num_rows,
            commits_listed_at=vouched,
            delta=states,
            markers_listed_at=listed_at if full else prev.markers_listed_at,  # type: ignore[union-attr]
            cases_file=cases_file,
            cases_runs=cases_runs,
            gang_runs=gang_runs,
        )
        if hook:
            hook("files-written")
        lock.fence()
        try:
            write_generation(store, record)
        except PreconditionFailed:
            raise LakeError(
                f"another compaction wrote generation {gen} first: run `fiolake lake compact` again"
            ) from None
        report.generation = gen
        if hook:
            hook("generation-written")
    report.merged = [m for m in report.merged if m.table != delta.COMMITS]
    try:
        _cleanup(store, grace, report)
    except NotFound:
        pass  # a concurrent cleanup got there first
    return report
