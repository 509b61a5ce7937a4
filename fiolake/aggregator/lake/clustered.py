"""A derived Delta table kept clustered: files sorted by a key, and few of them, so a
question about one case over a year reads a row group of each of a dozen files.

delta-rs offers two rewrites and neither fits a table a compaction appends to every
night. `optimize.compact` bin-packs small files in the order it finds them: a merged file
mixes every case in every row group, so nothing can be skipped. `optimize.z_order` sorts,
but rewrites every file of the table each time, a year of rows for a night's append.
So fiolake writes the files itself — sorted Parquet, put in the table's folder, then one
Delta commit that adds them (and removes the files they replace): the table stays a Delta
table any reader can read, with the history of what replaced what.

Files are merged in levels, as a log-structured merge tree does: a compaction's appends
are level 0; more than `delta.MAX_FILES` of one level are merged into one file of the
next, up to TOP_LEVEL, whose files stay (a lake's history caught up at once is written
there directly, in files of about MERGED_ROWS). A reader opens every file's footer
(~7 ms each over HTTP), so the count matters more than the size: a year of nights is
at most 8 files of each lower level and a few of the top one, where one level was 40.

A file's name says its level and the order of its rows (`key_tag`). When a table's order
changes (the night summaries' did, issue 44), its files of more than a row group are
re-sorted once, each by itself (`resort`); a file without the tag is in the table's
order from before tags (`Derived.legacy_sort_keys`).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from fiolake import layout
from fiolake.aggregator.lake import delta
from fiolake.store import ObjectStore

if TYPE_CHECKING:
    from deltalake import DeltaTable

MERGED_PREFIX = "part-fiolake-sorted-"
_LEVEL = re.compile(rf"^{MERGED_PREFIX}(\d+)-(?:k([0-9a-f]{{8}})-)?")
TOP_LEVEL = 2  # level 1 holds ~9 nights, level 2 ~81: a year is 4–5 files of it
# Rows per file a merge writes at most (a lake's history is written in files this big:
# memory follows one), unless the table asks for fewer (`add_sorted`'s `file_rows`).
MERGED_ROWS = 2_000_000


def sort_rows(rows: pa.Table, keys: Sequence[str]) -> pa.Table:
    """`rows` in the order of `keys` (ascending, NULLs last)."""
    return rows.sort_by([(k, "ascending") for k in keys])


def level(path: str) -> int:
    """A data file's merge level: 0 for a compaction's append (or a file delta-rs wrote)."""
    found = _LEVEL.match(path.rsplit("/", 1)[-1])
    return int(found.group(1)) if found else 0


def key_tag(keys: Sequence[str]) -> str:
    """The short name of an order (`keys`) that a sorted file's name carries."""
    return hashlib.sha256(",".join(keys).encode()).hexdigest()[:8]


def file_tag(path: str) -> str | None:
    """The order tag (`key_tag`) in a data file's name; None for a file written without
    one (before tags, or by delta-rs)."""
    found = _LEVEL.match(path.rsplit("/", 1)[-1])
    return found.group(2) if found else None


def add_sorted(
    store: ObjectStore,
    table: str,
    rows: pa.Table,
    keys: Sequence[str],
    row_group_rows: int,
    *,
    at_level: int = TOP_LEVEL,
    replacing: Sequence[str] = (),
    file_rows: int | None = None,
) -> DeltaTable:
    """Write `rows`, sorted by `keys`, as files of level `at_level` of `table`
    (`file_rows` each, at most MERGED_ROWS) and commit them in one Delta version,
    removing the files `replacing` (paths relative to the table) in the same commit. The
    table is created first when it does not exist. Returns the table after the commit."""
    from deltalake import DeltaTable  # only compaction writes (`delta`'s note)
    from deltalake.transaction import AddAction, RemoveAction

    rows = _delta_types(rows)
    dt = delta.open_table(store, table)
    with delta.mapped_errors(store):
        if dt is None:
            dt = DeltaTable.create(
                delta.table_uri(store, table),
                rows.schema,
                storage_options=delta.storage_options(store),
            )
    ordered = sort_rows(rows, keys)
    now = int(time.time() * 1000)
    actions: list[AddAction | RemoveAction] = [RemoveAction(path, False, now) for path in replacing]
    prefix = layout.delta_table_prefix(table)
    step = min(file_rows or MERGED_ROWS, MERGED_ROWS)
    for start in range(0, ordered.num_rows, step):
        chunk = ordered.slice(start, step)
        buf = io.BytesIO()
        pq.write_table(chunk, buf, compression="zstd", row_group_size=row_group_rows)
        data = buf.getvalue()
        name = f"{MERGED_PREFIX}{at_level}-k{key_tag(keys)}-{uuid.uuid4().hex}.zstd.parquet"
        store.put(prefix + name, data)
        stats = json.dumps({"numRecords": chunk.num_rows})
        # A merge moves rows (dataChange false, as Delta's own OPTIMIZE); new rows do not.
        actions.append(AddAction(name, len(data), {}, now, not replacing, stats))
    with delta.mapped_errors(store):
        dt.create_write_transaction(actions, mode="append", schema=dt.schema())
        dt.update_incremental()
    return dt


def _delta_types(rows: pa.Table) -> pa.Table:
    """`rows` with instants as Delta writes them (UTC microseconds): DuckDB names its zone
    `Etc/UTC`, which `DeltaTable.create` refuses and `write_deltalake` converts."""
    fields = [
        pa.field(f.name, pa.timestamp("us", tz="UTC")) if pa.types.is_timestamp(f.type) else f
        for f in rows.schema
    ]
    return rows.cast(pa.schema(fields))


def merge_levels(
    store: ObjectStore,
    dt: DeltaTable,
    table: str,
    keys: Sequence[str],
    row_group_rows: int,
) -> DeltaTable:
    """Merge each level below TOP_LEVEL holding more than `delta.MAX_FILES` files into
    one file of the next level, sorted by `keys`; the table after. Level-0 files of half
    `delta.TARGET_FILE_BYTES` or more are left as they are: a table delta-rs's `optimize`
    compacted before (its files mix every key, but reading a year of them into memory to
    sort them costs more than they do)."""
    for merging in range(TOP_LEVEL):
        with delta.mapped_errors(store):
            actions = pa.table(dt.get_add_actions(flatten=True))
        paths = actions.column("path").to_pylist()
        sizes = actions.column("size_bytes").to_pylist()
        chosen = [
            path
            for path, size in zip(paths, sizes, strict=True)
            if level(path) == merging and (merging or size < delta.TARGET_FILE_BYTES // 2)
        ]
        if len(chosen) <= delta.MAX_FILES:
            continue
        prefix = layout.delta_table_prefix(table)
        parts = [pq.read_table(io.BytesIO(store.get(prefix + p)[0])) for p in chosen]
        rows = pa.concat_tables(parts, promote_options="permissive")
        dt = add_sorted(
            store, table, rows, keys, row_group_rows, at_level=merging + 1, replacing=chosen
        )
    return dt


def resort(
    store: ObjectStore,
    dt: DeltaTable,
    table: str,
    keys: Sequence[str],
    row_group_rows: int,
    legacy_keys: Sequence[str],
) -> DeltaTable:
    """Re-sort by `keys` each file of more than one row group whose rows are in another
    order (its tag, or `legacy_keys` for a file without one), at its level, one Delta
    commit per file (memory follows one file; an interrupted run leaves every file whole);
    the table after. A file of one row group is read whole whatever its order."""
    wanted = key_tag(keys)
    with delta.mapped_errors(store):
        actions = pa.table(dt.get_add_actions(flatten=True))
    paths = actions.column("path").to_pylist()
    counts = actions.column("num_records").to_pylist()
    prefix = layout.delta_table_prefix(table)
    for path, count in zip(paths, counts, strict=True):
        if (count or 0) <= row_group_rows or (file_tag(path) or key_tag(legacy_keys)) == wanted:
            continue
        rows = pq.read_table(io.BytesIO(store.get(prefix + path)[0]))
        dt = add_sorted(
            store, table, rows, keys, row_group_rows, at_level=level(path), replacing=[path]
        )
    return dt
