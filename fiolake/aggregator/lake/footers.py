"""Lake files known to share one Parquet schema, so that a view over them binds from one footer.

A view over several files with `union_by_name` (`lake.parquet_source`) reads the footer of
every file when it is created, to line their columns up by name: at 100,000 runs the
footers of the eleven compacted timeseries files took 80 ms of every connect (BENCHMARKS.md,
issue 44), and the compacted layer gains a file per ~100 MB of history. Without
`union_by_name` DuckDB binds from the first file's footer and reads the others' when a
query scans them. Where every file has the same schema (names, types, order), both read
the same rows as the same columns, so the view may do without. "Same" is as DuckDB reads a
file: column names and types in order.

Whether they do is learnt once: an object of the lake never changes under its key (Delta
data files are written once under fresh names, a run's files by the one attempt of that
run id), so its schema is a fact a cache may keep. After a connect has read the footers
anyway, the schema of each file it read is kept, as a digest, in the snapshot cache
directory (one JSON file per lake, forgetting files its snapshot no longer holds); the next
connect binds a table's view from one footer when all its files have the same kept digest.
A file without a digest, or one differing, keeps `union_by_name`.

After a compaction a table has a file or two the cache has no digest for, and one such
file made its view read every footer again (the 134 timeseries files of the million-run
lake: 0.3 s locally on the first connect after each night's compaction, ~1 s over S3).
When a table's other files all share one kept digest, `complete` reads those few new
files' footers first (they stay in DuckDB's metadata cache), so the view still binds from
one footer whenever the new files have that schema too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import duckdb

from fiolake.aggregator.lake.snapcache import lake_id
from fiolake.aggregator.lake.sqltext import quote
from fiolake.store import ObjectStore

_FORMAT = 1
# New files `complete` describes in a table whose other files share one digest: a night's
# compaction adds a file or two to a table (and merges a level now and then).
FEW_NEW = 8


def _path(cache: Path, store: ObjectStore) -> Path:
    return cache / f"schemas-{hashlib.sha256(lake_id(store).encode()).hexdigest()[:32]}.json"


def kept(cache: Path | None, store: ObjectStore) -> dict[str, str]:
    """Object key -> digest of its Parquet schema, as an earlier connect kept them (empty
    without a cache directory, or when the file is missing or unreadable)."""
    if cache is None:
        return {}
    try:
        body = json.loads(_path(cache, store).read_text())
        if body.get("format") != _FORMAT or body.get("lake") != lake_id(store):
            return {}
        return {str(k): str(v) for k, v in body["files"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def one_schema(digests: Mapping[str, str], keys: Sequence[str]) -> bool:
    """Whether the files `keys` (two or more) are all known to have one and the same schema."""
    found = {digests.get(k) for k in keys}
    return len(keys) > 1 and None not in found and len(found) == 1


def digest(con: duckdb.DuckDBPyConnection, store: ObjectStore, key: str) -> str | None:
    """The digest of `key`'s schema as DuckDB reads the file: column names and types in
    order; None when it cannot be read now (its view then binds by name)."""
    path = quote(store.location(key))
    try:
        columns = con.execute(
            f"DESCRIBE SELECT * FROM read_parquet({path}, hive_partitioning = false)"
        ).fetchall()
    except duckdb.Error:
        return None
    # Not the physical schema, whose names of nested parts differ between writers
    # ('element' or 'item' in a list) where the columns read the same.
    described = [(c[0], c[1]) for c in columns]
    return hashlib.sha256(repr(described).encode()).hexdigest()


def complete(
    con: duckdb.DuckDBPyConnection,
    store: ObjectStore,
    groups: Iterable[Sequence[str]],
    digests: Mapping[str, str],
) -> dict[str, str]:
    """Digests of the few new files (FEW_NEW at most) of each group of files (a table's)
    whose other files (two or more) share one kept digest: without them the group's view
    would read every footer. A file that cannot be read now has none."""
    found: dict[str, str] = {}
    for keys in groups:
        new = [k for k in keys if k not in digests]
        if not new or len(new) > FEW_NEW or len(keys) - len(new) < 2:
            continue
        if len({digests[k] for k in keys if k in digests}) != 1:
            continue  # the kept files differ already: bound by name whatever the new say
        for key in new:
            if (described := digest(con, store, key)) is not None:
                found[key] = described
    return found


def learn(
    con: duckdb.DuckDBPyConnection,
    store: ObjectStore,
    cache: Path | None,
    digests: Mapping[str, str],
    read: Iterable[str],
    current: Iterable[str],
    completed: Mapping[str, str] | None = None,
) -> None:
    """Keep in `cache` the schema digest of each file the views `read` in place (its
    columns as DuckDB reads them): those `complete` found before the views were made
    (`completed`), then those in neither `digests` nor `completed` from their footers,
    which binding the views has just put in DuckDB's metadata cache (no second read),
    with the kept digests of other `current` files (those the snapshot knows are still
    in the lake). Kept or not, the views are whole: a failure here only costs the next
    connect the footers."""
    if cache is None:
        return
    current = set(current)
    fresh = {k: d for k, d in (completed or {}).items() if k not in digests}
    missing = [k for k in dict.fromkeys(read) if k not in digests and k not in fresh]
    if not missing and not fresh and set(digests) <= current:
        return  # nothing to learn, nothing to forget
    found = {k: d for k, d in {**digests, **fresh}.items() if k in current}
    for key in missing:
        if (described := digest(con, store, key)) is not None:
            found[key] = described  # else: unreadable now, bound by name next time too
    body = {"format": _FORMAT, "lake": lake_id(store), "files": found}
    _write(_path(cache, store), json.dumps(body, sort_keys=True).encode())


def _write(path: Path, data: bytes) -> None:
    """Atomically, so a concurrent reader sees the old file or the new one."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".schemas.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
