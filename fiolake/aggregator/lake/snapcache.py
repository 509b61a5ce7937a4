"""Snapshots reused while the lake's compaction generation is unchanged.

At 100,000 runs a `snapshot.scan` spends most of its time on what the newest
generation fixes: reading its record with the ids its tables cover, and its commit
index. A generation record is create-only, so under one key and ETag it never changes;
the ids object and the commit index it names are immutable too. `cached_scan` keeps
both per lake (in memory for the process, and optionally in a directory for short-lived
processes such as the CLI) and re-reads on every call only what can change: the list
of generations (a newer one is a different key), the record's ETag, and the commit log
since that compaction (runs committed after it).

The whole snapshot is reused only when that listing of new commits is the one it was
built from *and* it reads no per-run file: compacted files never change under their
names, whereas a per-run file could (in a damaged lake) vanish, and a fresh scan would
notice. Otherwise the listings are redone on top of the cached generation and index.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from fiolake import layout
from fiolake.aggregator.lake.coveredids import (
    CoveredIdsMissing,
    IdsByTable,
    covered_ids_later,
    no_ids,
    split_ids,
)
from fiolake.aggregator.lake.generations import (
    Generation,
    latest_generation_number,
    read_generation,
)
from fiolake.aggregator.lake.snapshot import Indexed, Snapshot, read_index, scan, unindexed_job_ids
from fiolake.store import ObjectStore

MEMORY_ENTRIES = 4  # lakes kept per process (the app shows one; tests open many)
DISK_ENTRIES = 16  # files kept per cache directory, the least recently written dropped
_FORMAT = 3  # 3: the covered ids stay Arrow arrays (generations format 3)


@dataclass
class _Entry:
    ident: str  # lake, generation key and the record's ETag
    indexed: Indexed
    snapshot: Snapshot | None = None  # the last complete scan on top of `indexed`
    # Rows of the markers beyond the index that the last scan read: markers are create-only,
    # so the next scan GETs only markers new since (a night's 200 took 0.3-0.4 s to read).
    markers: pa.Table | None = None


_memory: OrderedDict[str, _Entry] = OrderedDict()
_memory_lock = threading.Lock()  # the app opens lakes from several sessions' threads


def clear_memory() -> None:
    """Forget the snapshots cached in this process."""
    with _memory_lock:
        _memory.clear()


def lake_id(store: ObjectStore) -> str:
    """What names one lake in a cache: its endpoint and URL."""
    endpoint = store.settings.endpoint if store.settings else ""
    return f"{endpoint}|{store.url.rstrip('/')}"


def _reusable(snap: Snapshot, new: list[str], tables: Sequence[str]) -> bool:
    return (
        snap.listed_new == tuple(new)
        and not snap.loose
        and len(snap.unindexed) == len(new)
        and set(tables) <= set(snap.tables)
    )


def _copy(snap: Snapshot) -> Snapshot:
    # Callers own their snapshot's mutable parts; the cached one stays as scanned.
    loose = {k: dict(v) for k, v in snap.loose.items()}
    return replace(snap, loose=loose, warnings=list(snap.warnings))


def cached_scan(
    store: ObjectStore, directory: Path | None = None, tables: Sequence[str] = layout.TABLES
) -> Snapshot:
    """`snapshot.scan(store, tables=tables)`, reusing what the newest generation fixes
    (see module doc).

    `directory` also keeps the generation, index and snapshot on disk for the next process.
    """
    number = latest_generation_number(store)
    if number == 0:
        return scan(store, tables=tables)  # never compacted: nothing immutable to keep
    key = layout.generation_key(number)
    info = store.head(key)
    if info is None:  # removed between the listing and now: let scan report it
        return scan(store, tables=tables)
    ident = f"{lake_id(store)}|{key}|{info.etag}"
    with _memory_lock:
        entry = _memory.get(ident)
    loaded = saved = None
    if entry is None and directory is not None:
        saved = _read_saved(directory, lake_id(store))
        entry = loaded = _load(saved, ident, store, key) if saved is not None else None
    if entry is None:
        try:
            record, got = read_generation(store, key, reader=True)
        except CoveredIdsMissing:
            if latest_generation_number(store) <= number:
                raise
            return cached_scan(store, directory, tables)  # cleaned up behind a newer one
        earlier = _earlier_index(store, saved)
        entry = _Entry(f"{lake_id(store)}|{key}|{got.etag}", read_index(store, record, earlier))
    compacted = entry.indexed.compacted
    new = unindexed_job_ids(store, compacted, entry.indexed, full_listing=False)
    if entry.snapshot is not None and _reusable(entry.snapshot, new, tables):
        snap = _copy(entry.snapshot)
    else:
        before = entry.snapshot, entry.markers
        snap = scan(store, indexed=entry.indexed, new=new, known=entry.markers, tables=tables)
        entry.snapshot = _copy(snap) if _reusable(snap, new, tables) else None
        entry.markers = snap.commits.slice(entry.indexed.commits.num_rows)
        # What the file holds already (read from it just now, no snapshot, the same
        # markers) is not written again: 14 MB at 100,000 runs, on every connect while
        # per-run files wait for the next compaction.
        unchanged = (
            entry is loaded
            and before[0] is None
            and entry.snapshot is None
            and before[1] is not None
            and before[1].equals(entry.markers)
        )
        if directory is not None and compacted is not None and not compacted.legacy:
            if not unchanged:
                _save(directory, entry)
    with _memory_lock:
        _memory[entry.ident] = entry
        _memory.move_to_end(entry.ident)
        while len(_memory) > MEMORY_ENTRIES:
            _memory.popitem(last=False)
    return snap


def _lake_of(ident: str) -> str:
    """The lake an entry's ident (lake|generation key|ETag) names."""
    return ident.rsplit("|", 2)[0]


def _path(directory: Path, lake: str) -> Path:
    return directory / f"{hashlib.sha256(lake.encode()).hexdigest()[:32]}.arrow"


def _save(directory: Path, entry: _Entry) -> None:
    """One Arrow IPC file per lake: the commit index followed by the markers read since,
    and the generation's covered keys in a second batch (empty when they were never read:
    the next process too reads them from the store only if it needs them); everything
    else as JSON in the schema metadata (no pickle: a cache file is data, never code).
    Written atomically; a failure only costs the next process a full scan."""
    compacted = entry.indexed.compacted
    assert compacted is not None
    ids_saved = all(d.ids_read for d in compacted.delta.values())
    snap = entry.snapshot
    meta = {
        "format": _FORMAT,
        "ident": entry.ident,
        "generation": compacted.body(compacted.keys_file, compacted.format),
        "snapshot": None
        if snap is None
        else {
            "warnings": snap.warnings,
            "unindexed": sorted(snap.unindexed),
            "listed_new": list(snap.listed_new),
            "tables": list(snap.tables),
            "orphan_files": snap.orphan_files,
        },
        "index_rows": entry.indexed.commits.num_rows,
        "index_files": [list(f) for f in entry.indexed.files],
        "ids_saved": ids_saved,
    }
    keys = pa.table({"key": compacted.ids_in_order() if ids_saved else no_ids()})
    commits = entry.indexed.commits
    if entry.markers is not None and entry.markers.num_rows:
        commits = pa.concat_tables([commits, entry.markers])
    commits = commits.replace_schema_metadata({"fiolake": json.dumps(meta)})
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".snapshot.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            with ipc.new_stream(fh, commits.schema) as w:
                w.write_table(commits)
            with ipc.new_stream(fh, keys.schema) as w:
                w.write_table(keys)
        os.replace(tmp, _path(directory, _lake_of(entry.ident)))
        _trim(directory)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def _trim(directory: Path) -> None:
    files = sorted(directory.glob("*.arrow"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[DISK_ENTRIES:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _index_files(meta: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """The (key, rows) of the saved index's files; none from a file saved before they were."""
    try:
        return tuple((str(k), int(n)) for k, n in meta.get("index_files", ()))
    except (TypeError, ValueError):
        return ()


def _earlier_index(store: ObjectStore, saved: _Saved | None) -> Indexed | None:
    """The commit index an earlier generation of this lake left (in this process, else in
    its cache file, `saved`), for `read_index` to take the files both share from; None
    without one."""
    lake = lake_id(store)
    with _memory_lock:
        found = [e for e in _memory.values() if _lake_of(e.ident) == lake]
    if found:
        return found[-1].indexed
    if saved is None:
        return None
    index = saved.commits.slice(0, saved.meta["index_rows"])
    return Indexed(None, index, _index_files(saved.meta))


@dataclass(frozen=True)
class _Saved:
    """A lake's cache file as `_save` wrote it: the commits (the index, then the markers
    read since), the JSON metadata, the covered keys."""

    commits: pa.Table
    meta: dict[str, Any]
    keys: pa.Table


def _read_saved(directory: Path, lake: str) -> _Saved | None:
    """The cache file of `lake` in `directory`, of this format and this lake (any of its
    generations); None when absent, of another format or lake, or damaged."""
    try:
        # Mapped, not read: the batches point into the file instead of copying its 14 MB
        # at 100,000 runs (10-15 ms of every connect, more under load). The file is only
        # ever replaced (`_save`), never written in place, so the mapping stays as read.
        with pa.memory_map(str(_path(directory, lake))) as fh:
            commits = ipc.open_stream(fh).read_all()
            meta = json.loads(commits.schema.metadata[b"fiolake"])
            if meta.get("format") != _FORMAT or _lake_of(str(meta.get("ident"))) != lake:
                return None
            keys = ipc.open_stream(fh).read_all()
            int(meta["index_rows"])
    except (OSError, KeyError, ValueError, TypeError, pa.ArrowException):
        return None
    return _Saved(commits.replace_schema_metadata(None), meta, keys)


def _load(saved: _Saved, ident: str, store: ObjectStore, key: str) -> _Entry | None:
    """The entry `saved` holds for `ident` (generation record `key`), or None (another
    generation, unreadable); covered ids it does not hold are read from `store` when asked."""
    commits, meta, keys = saved.commits, saved.meta, saved.keys
    if meta.get("ident") != ident:
        return None
    g = meta["generation"]
    try:
        if meta.get("ids_saved", True):
            ids: IdsByTable = split_ids(keys.column("key"), g["delta"])
        else:
            ids = covered_ids_later(store, key, g)
        compacted = Generation.from_body(g, ids)
    except (KeyError, TypeError, ValueError):
        return None
    # The saved commits are the index plus the markers read since: the index is its head.
    indexed = Indexed(compacted, commits.slice(0, meta["index_rows"]), _index_files(meta))
    markers = commits.slice(meta["index_rows"])
    s = meta["snapshot"]
    if s is None:
        return _Entry(ident, indexed, markers=markers)
    snap = Snapshot(
        compacted,
        commits,
        orphan_files=s["orphan_files"],
        unindexed=frozenset(s["unindexed"]),
        warnings=list(s["warnings"]),
        listed_new=tuple(s["listed_new"]),
        tables=tuple(s["tables"]),
        indexed_rows=meta["index_rows"],
    )
    return _Entry(ident, indexed, snap, markers)
