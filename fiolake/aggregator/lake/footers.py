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


def learn(
    con: duckdb.DuckDBPyConnection,
    store: ObjectStore,
    cache: Path | None,
    digests: Mapping[str, str],
    read: Iterable[str],
    current: Iterable[str],
) -> None:
    """Keep in `cache` the schema digest of each file the views `read` in place (its
    columns as DuckDB reads them), describing those not in `digests` from their footers,
    which binding the views has just put in DuckDB's metadata cache (no second read),
    with the kept digests of other `current` files (those the snapshot knows are still
    in the lake). Kept or not, the views are whole: a failure here only costs the next
    connect the footers."""
    if cache is None:
        return
    current = set(current)
    missing = [k for k in dict.fromkeys(read) if k not in digests]
    if not missing and set(digests) <= current:
        return  # nothing to learn, nothing to forget
    found = {k: d for k, d in digests.items() if k in current}
    for key in missing:
        path = quote(store.location(key))
        try:
            columns = con.execute(
                f"DESCRIBE SELECT * FROM read_parquet({path}, hive_partitioning = false)"
            ).fetchall()
        except duckdb.Error:
            continue  # unreadable now: no digest, so bound by name next time too
        # As DuckDB reads the file: names and types in order. Not the physical schema,
        # whose names of nested parts differ between writers ('element' or 'item' in a
        # list) where the columns read the same.
        described = [(c[0], c[1]) for c in columns]
        found[key] = hashlib.sha256(repr(described).encode()).hexdigest()
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
