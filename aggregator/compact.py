"""Compaction: merge many small per-run files into one file per table × month.

Steps, each safe to interrupt: (1) write merged files (and a commit index) under new,
never-reused names in `compacted/`; (2) create the next manifest generation, create-only
— the single atomic switch readers see; (3) clean up compacted files and manifests that
no longer matter. `results/` and `commits/` are never modified. A crash before (2)
leaves unreferenced files that readers ignore and step (3) of a later run removes; a
crash after (2) leaves a complete new state. Re-running merges whatever is still loose.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from fiolake import layout
from fiolake.aggregator.manifest import Manifest, Partition, latest_manifest, now_iso
from fiolake.aggregator.snapshot import Snapshot, read_parquet_object, scan
from fiolake.commits import logged_job_ids
from fiolake.errors import LakeError, NotFound, PreconditionFailed, StoreError
from fiolake.schema import parquet_bytes
from fiolake.store import LocalStore, ObjectStore, S3Store

ROW_GROUP_ROWS = 65_536  # small enough that a query for one run skips most of a file
_THREADS = 16

Hook = Callable[[str], None]  # called with "files-written", "manifest-written" (tests)


@dataclass(frozen=True)
class Merged:
    """One table × month rewritten by a compaction."""

    table: str
    month: str  # YYYY-MM
    new_runs: int  # per-run files folded in by this compaction
    runs: int  # run ids the merged file covers in total
    rows: int
    file: str


@dataclass
class CompactionReport:
    """What one `compact` call did."""

    generation: int | None  # the manifest written; None when there was nothing to do
    merged: list[Merged] = field(default_factory=list)
    commits: int = 0  # markers in the commit index
    # Markers new since the previous generation without a commit-log entry (older
    # runners): while any exist, readers list every marker instead of the log.
    unlogged: int = 0
    removed: list[str] = field(default_factory=list)  # superseded compacted objects deleted
    cleanup_errors: list[str] = field(default_factory=list)


def _compacted_bytes(table: pa.Table) -> bytes:
    """zstd Parquet with row groups sized for run-level pruning."""
    return parquet_bytes(table, row_group_size=ROW_GROUP_ROWS)


def _read_all(store: ObjectStore, keys: list[str]) -> list[pa.Table]:
    with ThreadPoolExecutor(max_workers=_THREADS) as pool:
        return list(pool.map(lambda k: read_parquet_object(store, k), keys))


def _merge(
    store: ObjectStore, previous: str | None, loose: dict[str, str], keep: set[str]
) -> pa.Table:
    """Rows of `keep` run ids from the previous merged file and the per-run files.

    `loose` maps key -> YYYY-MM-DD; per-run files get that `date` as a column, the way
    the merged file stores it.
    """
    keys = ([previous] if previous else []) + sorted(loose)
    tables = []
    for key, data in zip(keys, _read_all(store, keys), strict=True):
        if key in loose:
            day = date.fromisoformat(loose[key])
            data = data.append_column("date", pa.array([day] * data.num_rows, pa.date32()))
        tables.append(data)
    merged = pa.concat_tables(tables, promote_options="permissive")
    merged = merged.filter(pc.is_in(merged.column("run_id"), pa.array(sorted(keep))))
    return merged.sort_by([("run_id", "ascending")])


def delete_object(store: ObjectStore, key: str) -> None:
    """Delete one object (compaction's own files only); StoreError when not possible."""
    if isinstance(store, LocalStore):
        try:
            (store.root / key).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StoreError(f"cannot delete {key}: {exc}") from exc
    elif isinstance(store, S3Store):
        try:
            store.client.delete_object(Bucket=store.bucket, Key=store.prefix + key)
        except Exception as exc:  # noqa: BLE001 - mapped like every store error
            raise store._error(exc, key) from exc
    else:
        raise StoreError(f"{type(store).__name__} cannot delete objects")


def _plan(snap: Snapshot, tables: Iterable[str]) -> dict[tuple[str, str], dict[str, str]]:
    """(table, month) -> {run_id: key} of the per-run files to fold in."""
    wanted = set(tables)
    plan: dict[tuple[str, str], dict[str, str]] = {}
    for (table, day), runs in snap.loose.items():
        if table in wanted:
            plan.setdefault((table, day[:7]), {}).update(runs)
    return plan


def _unlogged(store: ObjectStore, snap: Snapshot) -> int:
    """How many markers the index lacks that the commit log does not name either."""
    if not snap.unindexed:
        return 0
    prev = snap.manifest
    since = (
        datetime.fromisoformat(prev.commits_listed_at) if prev and prev.commits_listed_at else None
    )
    return len(snap.unindexed - logged_job_ids(store, since))


def _write_state(
    store: ObjectStore,
    snap: Snapshot,
    plan: dict[tuple[str, str], dict[str, str]],
    gen: int,
    listed_at: str | None,
) -> tuple[Manifest, list[Merged]]:
    prev = snap.manifest
    partitions = dict(prev.partitions) if prev else {}
    merged = []
    for (table, month), runs in sorted(plan.items()):
        old = partitions.get((table, month))
        covered = set(runs) | (set(old.run_ids) if old else set())
        days = {key: parsed[1] for key in runs.values() if (parsed := layout.parse_result_key(key))}
        data = _merge(store, old.file if old else None, days, covered)
        key = layout.compacted_key(table, month, gen, secrets.token_hex(6))
        store.put(key, _compacted_bytes(data))
        partitions[(table, month)] = Partition(table, month, key, frozenset(covered), data.num_rows)
        merged.append(Merged(table, month, len(runs), len(covered), data.num_rows, key))
    commits_key = layout.commits_index_key(gen, secrets.token_hex(6))
    store.put(commits_key, _compacted_bytes(snap.commits.sort_by("job_id")))
    manifest = Manifest(gen, now_iso(), commits_key, snap.commits.num_rows, partitions, listed_at)
    return manifest, merged


def _cleanup(store: ObjectStore, grace: timedelta, report: CompactionReport) -> None:
    """Remove compacted objects the newest manifest does not use, once older than `grace`.

    The grace period protects readers that opened the lake on an older generation.
    """
    current = latest_manifest(store)
    if current is None:
        return
    live = {p.file for p in current.partitions.values()} | {current.commits_file}
    live.add(layout.compaction_manifest_key(current.generation))
    cutoff = datetime.now(UTC) - grace
    for key in list(store.list(layout.COMPACTED_PREFIX)):
        if key in live:
            continue
        gen = layout.compaction_generation(key)
        if gen is not None and gen > current.generation:
            continue  # a concurrent compaction's manifest: not ours to judge
        try:
            info = store.head(key)
            if info is None or info.last_modified > cutoff:
                continue
            delete_object(store, key)
            report.removed.append(key)
        except StoreError as exc:
            report.cleanup_errors.append(str(exc))


def compact(
    store: ObjectStore,
    *,
    tables: Iterable[str] = layout.TABLES,
    grace: timedelta = timedelta(hours=1),
    hook: Hook | None = None,
) -> CompactionReport:
    """Merge committed per-run files not yet compacted; write the next manifest; clean up."""
    tables = list(tables)
    for table in tables:
        if table not in layout.TABLES:
            raise LakeError(f"unknown table {table!r}; tables are {', '.join(layout.TABLES)}")
    # Taken before the listing: a marker it misses was written later, so its log entry
    # sorts after this instant (see fiolake.commits).
    listed_at = store.server_time().isoformat(timespec="milliseconds")
    snap = scan(store, full_listing=True)
    plan = _plan(snap, tables)
    indexed = snap.manifest.commits if snap.manifest else 0
    report = CompactionReport(None, commits=snap.commits.num_rows)
    if plan or snap.commits.num_rows != indexed:
        gen = (snap.manifest.generation if snap.manifest else 0) + 1
        report.unlogged = _unlogged(store, snap)
        vouched = listed_at if report.unlogged == 0 else None
        manifest, report.merged = _write_state(store, snap, plan, gen, vouched)
        if hook:
            hook("files-written")
        try:
            store.put(layout.compaction_manifest_key(gen), manifest.to_bytes(), if_none_match=True)
        except PreconditionFailed:
            raise LakeError(
                f"another compaction wrote generation {gen} first: run `fiolake lake compact` again"
            ) from None
        report.generation = gen
        if hook:
            hook("manifest-written")
    try:
        _cleanup(store, grace, report)
    except NotFound:
        pass  # a concurrent cleanup got there first
    return report
