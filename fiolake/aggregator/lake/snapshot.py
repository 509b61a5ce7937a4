"""What the lake holds right now: commit markers, and the Parquet files to read per table.

One GET of the newest compaction generation (plus its commit index), one LIST of the
commit log since that compaction (or of all of `commits/` when the generation cannot
vouch for the log: see `fiolake.commits`), a GET per commit marker the index does
not cover yet, and LISTs of the result partitions where those runs landed. Views
and compaction both start from a `Snapshot`.
"""

from __future__ import annotations

import io
import json
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from fiolake import layout
from fiolake.aggregator.lake.generations import Generation, latest_generation
from fiolake.aggregator.lake.idarrays import ids_array
from fiolake.commits import Commit, logged_job_ids
from fiolake.errors import NotFound
from fiolake.store import ObjectStore
from fiolake.timetext import EPOCH, parse_iso

COMMITS_SCHEMA = pa.schema(
    [
        ("job_id", pa.string()),
        ("run_id", pa.string()),
        ("campaign_id", pa.string()),
        ("runner", pa.string()),
        ("status", pa.string()),
        ("committed_at", pa.timestamp("ms", tz="UTC")),
    ]
)

_FETCH_THREADS = 16
# Beyond this many partitions to probe, one listing of the whole table is cheaper.
_MAX_TARGETED_DAYS = 45


@dataclass
class Snapshot:
    """The committed state of a lake at one moment."""

    compacted: Generation | None  # the newest compaction generation
    commits: pa.Table  # COMMITS_SCHEMA, one row per committed run (a gang's: one per member)
    # (table, YYYY-MM-DD) -> {run_id: key}: committed per-run files no merged file covers
    loose: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    orphan_files: int = 0  # result files of uncommitted attempts among those listed (ignored)
    unindexed: frozenset[str] = frozenset()  # job ids of markers the commit index lacks
    warnings: list[str] = field(default_factory=list)
    # Job ids the commit log (or the listing of every marker) named beyond the index: a
    # cached snapshot is reused only while this listing is unchanged (aggregator.lake.snapcache).
    listed_new: tuple[str, ...] = ()
    # The tables whose result files were listed (`scan(tables=...)`): only theirs are known.
    tables: tuple[str, ...] = layout.TABLES
    # The first rows of `commits` that are the generation's commit index (its commit files,
    # `Generation.commit_files`): views read those from the files, not from this table.
    indexed_rows: int = 0

    def committed_among(self, run_ids: Collection[str]) -> set[str]:
        """Those of `run_ids` that are committed. The listed ids are looked up among the
        committed in Arrow: the committed ids as a Python set cost 0.22 s at 1,000,000
        runs, where a connect lists a night's files at most."""
        return _found_among(self.commits.column("run_id"), run_ids)

    def compacted_files(self, table: str) -> list[str]:
        """Merged files of `table` (they carry a `date` column of their own)."""
        return self.compacted.files(table) if self.compacted else []

    def loose_files(self, table: str) -> list[str]:
        """Per-run files of `table` no merged file covers (`date` comes from their path)."""
        if table not in self.tables:
            raise ValueError(f"the snapshot did not list the files of {table}")
        return [
            runs[r]
            for (t, _), runs in sorted(self.loose.items())
            if t == table
            for r in sorted(runs)
        ]

    def files(self, table: str) -> list[str]:
        """Every object key the `table` view reads."""
        return self.compacted_files(table) + self.loose_files(table)


# The rows as pyarrow's JSON reader takes them: the time as epoch milliseconds.
_ROWS_SCHEMA = COMMITS_SCHEMA.set(
    COMMITS_SCHEMA.get_field_index("committed_at"), pa.field("committed_at", pa.int64())
)


def _commit_rows(commit: Commit) -> list[dict[str, object]]:
    row: dict[str, object] = {name: getattr(commit, name) for name in COMMITS_SCHEMA.names}
    # Whole milliseconds, rounded down as Arrow stores a finer time in a ms column.
    row["committed_at"] = (parse_iso(commit.committed_at) - EPOCH) // timedelta(milliseconds=1)
    # A gang job commits every member run: one row each, so the views keep them all.
    return [{**row, "run_id": run_id} for run_id in commit.run_ids]


def commits_table(commits: Iterable[Commit]) -> pa.Table:
    """Commit markers as an Arrow table of COMMITS_SCHEMA (one row per committed run).

    Through pyarrow's JSON reader: building Arrow from Python objects (`from_pylist`,
    `pa.array`) imports pandas, 0.12 s of the first command after a night's commits."""
    lines = [json.dumps(row) for c in commits for row in _commit_rows(c)]
    if not lines:
        return pa.Table.from_batches([], COMMITS_SCHEMA)
    options = pa_json.ParseOptions(explicit_schema=_ROWS_SCHEMA)
    rows = pa_json.read_json(io.BytesIO("\n".join(lines).encode()), parse_options=options)
    return rows.select(COMMITS_SCHEMA.names).cast(COMMITS_SCHEMA)


def read_parquet_object(store: ObjectStore, key: str) -> pa.Table:
    """One Parquet object from the store."""
    data, _ = store.get(key)
    # ParquetFile, not read_table: that one goes through pyarrow.dataset, which imports
    # pandas (0.15 s of every command that opens a lake without the snapshot cache)
    return pq.ParquetFile(io.BytesIO(data)).read()


def read_all(store: ObjectStore, keys: list[str]) -> list[pa.Table]:
    """Parquet objects read in parallel, in the order of `keys`."""
    with ThreadPoolExecutor(max_workers=_FETCH_THREADS) as pool:
        return list(pool.map(lambda k: read_parquet_object(store, k), keys))


def _read_markers(store: ObjectStore, keys: list[str], warnings: list[str]) -> list[Commit]:
    def fetch(key: str) -> Commit | None:
        try:
            data, _ = store.get(key)
            return Commit.from_bytes(data)
        except NotFound:
            return None  # listed, then gone: not ours to explain
        except ValueError as exc:
            warnings.append(f"ignored {key}: {exc}")
            return None

    with ThreadPoolExecutor(max_workers=_FETCH_THREADS) as pool:
        return [c for c in pool.map(fetch, keys) if c is not None]


def unindexed_job_ids(
    store: ObjectStore, compacted: Generation | None, known: Indexed, full_listing: bool
) -> list[str]:
    """Job ids of commit markers the generation's index lacks: from the commit log since
    the compaction when the generation allows, else from a listing of every marker."""
    if not full_listing and compacted is not None and compacted.commits_listed_at:
        since = parse_iso(compacted.commits_listed_at)
        return known.missing(logged_job_ids(store, since))
    listed = map(layout.job_id_from_commit_key, store.list(layout.COMMITS_PREFIX))
    return known.missing({j for j in listed if j is not None})


@dataclass(frozen=True)
class Indexed:
    """What one compaction generation fixes: its record and its commit index. Both are
    immutable under the generation's key, so a cache may keep them (aggregator.lake.snapcache)."""

    compacted: Generation | None
    commits: pa.Table  # COMMITS_SCHEMA: the markers the index holds
    # (key, rows) of each index file, in the order `commits` holds their rows: the next
    # generation's index takes the rows of the files it shares from here (`read_index`).
    files: tuple[tuple[str, int], ...] = ()

    def by_file(self) -> dict[str, pa.Table]:
        """The rows of each index file (`files`), by key: slices of `commits`, no copy;
        empty when the files do not account for every row."""
        if sum(rows for _, rows in self.files) != self.commits.num_rows:
            return {}
        out: dict[str, pa.Table] = {}
        at = 0
        for key, rows in self.files:
            out[key] = self.commits.slice(at, rows)
            at += rows
        return out

    def missing(self, job_ids: set[str]) -> list[str]:
        """Those of `job_ids` the index lacks, sorted (looked up as `committed_among`:
        the index as a Python set cost 0.35 s at 1,000,000 markers)."""
        return sorted(job_ids - _found_among(self.commits.column("job_id"), job_ids))


def _found_among(column: pa.ChunkedArray, ids: Collection[str]) -> set[str]:
    """Those of `ids` that `column` holds: the column scanned once against a hash set of
    `ids` (few), never the other way round (a hash set of a year's ids)."""
    if not ids:
        return set()
    import pyarrow.compute as pc  # see _table_keys

    held = column.filter(pc.is_in(column, value_set=ids_array(sorted(ids))))
    return set(held.to_pylist())


def read_index(
    store: ObjectStore, compacted: Generation | None, earlier: Indexed | None = None
) -> Indexed:
    """The generation's commit index (empty when never compacted). The rows of the index
    files it shares with `earlier` (an older generation's index of the same lake, as a
    cache kept it) are taken from there, not read: a file never changes under its key,
    and a night's compaction adds a file or merges a few. The first reader after each
    compaction read the whole index again: 0.2-0.4 s at 1,000,000 runs (issue 44)."""
    keys = compacted.commit_files() if compacted is not None else []
    if not keys:
        return Indexed(compacted, commits_table([]))
    kept = earlier.by_file() if earlier is not None else {}
    missing = [k for k in keys if k not in kept]
    read = dict(zip(missing, read_all(store, missing), strict=True))
    parts = [
        kept[k] if k in kept else read[k].select(COMMITS_SCHEMA.names).cast(COMMITS_SCHEMA)
        for k in keys
    ]
    sizes = tuple((k, part.num_rows) for k, part in zip(keys, parts, strict=True))
    return Indexed(compacted, pa.concat_tables(parts), sizes)


def load_commits(
    store: ObjectStore,
    indexed: Indexed,
    new: list[str],
    warnings: list[str],
    known: pa.Table | None = None,
) -> tuple[pa.Table, frozenset[str]]:
    """Every commit marker: the compacted index plus the markers `new` names. Those in
    `known` (rows of markers an earlier scan read: a marker is create-only and never
    changes) are not read again, unless `new` no longer names one of them. Also returns
    the job ids of the markers beyond the index."""
    reused = known if known is not None and known.num_rows else None
    have: set[str] = set()
    if reused is not None:
        have = set(reused.column("job_id").to_pylist())
        if not have <= set(new):  # a marker left the listing: trust nothing kept
            reused, have = None, set()
    keys = [layout.commit_key(j) for j in new if j not in have]
    fresh = commits_table(_read_markers(store, keys, warnings))
    loose = pa.concat_tables([t for t in (reused, fresh) if t is not None])
    # One order whatever was reused: the views' row order, and snapshots compare equal.
    loose = loose.sort_by([("job_id", "ascending"), ("run_id", "ascending")])
    commits = pa.concat_tables([indexed.commits, loose])
    return commits, frozenset(loose.column("job_id").to_pylist())


def _candidate_days(at: pa.ChunkedArray) -> set[str]:
    """The result partitions (days) where runs committed at `at` may have their files."""
    import pyarrow.compute as pc  # see _table_keys

    # Distinct commit dates first: a big lake has thousands of runs but few days. In
    # Arrow: converting 100,000 timestamps to Python took ~1 s per table on every connect.
    dates = pc.unique(pc.cast(at, pa.date32())).to_pylist()
    return {f"{d + timedelta(days=k):%Y-%m-%d}" for d in dates for k in (-1, 0, 1)}


def _list_partitions(store: ObjectStore, table: str, days: set[str]) -> list[str]:
    prefixes = [f"{layout.RESULTS_PREFIX}{table}/date={day}/" for day in sorted(days)]
    with ThreadPoolExecutor(max_workers=_FETCH_THREADS) as pool:
        return [key for keys in pool.map(lambda p: list(store.list(p)), prefixes) for key in keys]


def _table_keys(
    store: ObjectStore, snap: Snapshot, table: str
) -> tuple[list[str], set[str] | None]:
    """Result keys of `table` worth classifying: all of them, or only where new runs landed;
    and the committed run ids the compacted files do not cover (None: no compaction).

    After a compaction only runs committed since need their own files. A run's files
    are uploaded before its marker, dated by its start: almost always the marker's UTC
    day or the one before. Those partitions are listed first; if a run is not found
    there (a run spooled for days), the whole table is listed after all. The ids not
    covered are few after a compaction, so `scan` asks them, not the covered ones (as a
    Python set, 20-40 ms per table at 100,000 runs).
    """
    # Imported here: 35-60 ms that a connect whose snapshot comes whole from the cache
    # (no listing of result files) does without (BENCHMARKS.md, issue 44).
    import pyarrow.compute as pc

    full = f"{layout.RESULTS_PREFIX}{table}/"
    compacted = snap.compacted
    if compacted is None:
        return list(store.list(full)), None
    state = compacted.delta.get(table)  # none in a record of the earlier layout
    if state is not None and state.covers_index:
        # Every run of the index is covered: only the commits since can have files to
        # read (comparing a year's committed ids with a year's covered ids per table was
        # most of a cold connect at 1,000,000 runs: issue 44).
        pending = snap.commits.slice(snap.indexed_rows)
    else:
        # In Arrow: as Python sets, the covered ids of 7 tables cost ~0.1 s a connect, and
        # making an Arrow array of the difference imports pandas (0.12 s).
        committed = snap.commits.column("run_id")
        covered = compacted.covered_array(table)
        pending = snap.commits.filter(pc.invert(pc.is_in(committed, value_set=covered)))
    if pending.num_rows == 0:
        return [], set()
    days = _candidate_days(pending.column("committed_at"))
    if len(days) > _MAX_TARGETED_DAYS:
        keys = list(store.list(full))  # then the ids only if there is a file to classify
        return keys, set(pending.column("run_id").to_pylist()) if keys else set()
    keys = _list_partitions(store, table, days)
    need = set(pending.column("run_id").to_pylist())
    found = {parsed[2] for parsed in map(layout.parse_result_key, keys) if parsed}
    return (keys if need <= found else list(store.list(full))), need


def scan(
    store: ObjectStore,
    *,
    full_listing: bool = False,
    indexed: Indexed | None = None,
    new: list[str] | None = None,
    known: pa.Table | None = None,
    tables: Sequence[str] = layout.TABLES,
) -> Snapshot:
    """Read the lake's commit markers, compaction generation and result-file listing.

    `full_listing` lists every commit marker even where the commit log would do
    (compaction does, to catch markers whose log entry is missing). `indexed` (the
    generation and its commit index) and `new` (`unindexed_job_ids`) when the caller
    already has them, and `known` markers an earlier scan read (aggregator.lake.snapcache).
    Only the result files of `tables` are listed (a comparison reads two of seven).
    """
    warnings: list[str] = []
    if indexed is None:
        indexed = read_index(store, latest_generation(store))
    compacted = indexed.compacted
    if new is None:
        new = unindexed_job_ids(store, compacted, indexed, full_listing)
    commits, unindexed = load_commits(store, indexed, new, warnings, known)
    chosen = tuple(t for t in layout.TABLES if t in tables)
    snap = Snapshot(
        compacted,
        commits,
        warnings=warnings,
        unindexed=unindexed,
        listed_new=tuple(new),
        tables=chosen,
        indexed_rows=indexed.commits.num_rows,
    )
    # One listing per table (or per day partition): issued together, since each is a round
    # trip to the store and a compacted lake's listings are almost all empty.
    with ThreadPoolExecutor(max_workers=max(1, len(chosen))) as pool:
        listed = list(pool.map(lambda t: (t, _table_keys(store, snap, t)), chosen))
    found = [
        (parsed, key, uncovered)
        for table, (keys, uncovered) in listed
        for key in keys
        if (parsed := layout.parse_result_key(key)) is not None and parsed[0] == table
    ]
    committed = snap.committed_among({parsed[2] for parsed, _, _ in found})
    for (table, day, run_id), key, uncovered in found:
        if run_id not in committed:
            snap.orphan_files += 1
            continue
        if uncovered is not None and run_id not in uncovered:
            continue  # committed, and covered by the compacted files
        snap.loose.setdefault((table, day), {})[run_id] = key
    return snap
