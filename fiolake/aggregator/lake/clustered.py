"""A derived Delta table kept clustered: files sorted by a key, so a question about one
case over a year reads a row group per file instead of every row.

delta-rs offers two rewrites and neither fits a table a compaction appends to every
night. `optimize.compact` bin-packs small files in the order it finds them: a merged file
mixes every case in every row group, so nothing can be skipped. `optimize.z_order` sorts,
but rewrites every file of the table each time, a year of rows for a night's append.
So fiolake writes the files itself — sorted Parquet, put in the table's folder, then one
Delta commit that adds them (and removes the files they replace): the table stays a Delta
table any reader can read, with the history of what replaced what. Files this module
wrote carry MERGED_PREFIX in their name and are never rewritten again; a compaction's
appends are merged once more than `delta.MAX_FILES` of them have gathered.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.transaction import AddAction, RemoveAction

from fiolake import layout
from fiolake.aggregator.lake import delta
from fiolake.store import ObjectStore

MERGED_PREFIX = "part-fiolake-sorted-"
# Rows per file a merge writes: big enough that a year is tens of files (a question
# reads one row group of each), small enough that writing one holds little memory.
MERGED_ROWS = 2_000_000


def sort_rows(rows: pa.Table, keys: Sequence[str]) -> pa.Table:
    """`rows` in the order of `keys` (ascending, NULLs last)."""
    return rows.sort_by([(k, "ascending") for k in keys])


def add_sorted(
    store: ObjectStore,
    table: str,
    rows: pa.Table,
    keys: Sequence[str],
    row_group_rows: int,
    *,
    replacing: Sequence[str] = (),
) -> DeltaTable:
    """Write `rows`, sorted by `keys`, as merged files of `table` (MERGED_ROWS each) and
    commit them in one Delta version, removing the files `replacing` (paths relative to
    the table) in the same commit. The table is created first when it does not exist.
    Returns the table after the commit."""
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
    for start in range(0, ordered.num_rows, MERGED_ROWS):
        chunk = ordered.slice(start, MERGED_ROWS)
        buf = io.BytesIO()
        pq.write_table(chunk, buf, compression="zstd", row_group_size=row_group_rows)
        data = buf.getvalue()
        name = f"{MERGED_PREFIX}{uuid.uuid4().hex}.zstd.parquet"
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


def merge_appends(
    store: ObjectStore,
    dt: DeltaTable,
    table: str,
    keys: Sequence[str],
    row_group_rows: int,
) -> DeltaTable:
    """When `table` holds more than `delta.MAX_FILES` files a compaction appended (not
    merged ones), rewrite them as merged files sorted by `keys`; the table after."""
    with delta.mapped_errors(store):
        paths = pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist()
    appended = [p for p in paths if not p.rsplit("/", 1)[-1].startswith(MERGED_PREFIX)]
    if len(appended) <= delta.MAX_FILES:
        return dt
    prefix = layout.delta_table_prefix(table)
    parts = [pq.read_table(io.BytesIO(store.get(prefix + p)[0])) for p in appended]
    rows = pa.concat_tables(parts, promote_options="permissive")
    return add_sorted(store, table, rows, keys, row_group_rows, replacing=appended)
