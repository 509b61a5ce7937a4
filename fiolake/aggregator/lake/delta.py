"""The compacted layer as Delta Lake tables, written by delta-rs (`deltalake`).

One table per lake table plus `commits`, at `compacted/delta/<table>/`. The compactor is
their only writer and only ever appends rows of committed runs, so any Delta reader
(DuckDB `delta_scan`, polars `scan_delta`, Spark, Trino) sees exactly the runs compacted
so far, never an orphan attempt. fiolake's own views do not need delta-rs: the compaction
generation (`fiolake.aggregator.lake.generations`) records each table's Delta version and its
data files.

delta-rs talks to S3 through Rust's object_store, which has no storage option for a CA
of the endpoint itself. It has one for the CA of an HTTP proxy, `proxy_ca_certificate`
(PEM text), which it adds to the trusted roots of the whole HTTP client — but only when
`proxy_url` is set. So `storage_options` sets a proxy that every host bypasses
(`proxy_excludes`) and passes the lake's CA that way: the CA travels with each call,
and nothing process-wide (no `SSL_CERT_FILE`) is touched, so other threads' TLS is
unaffected (object_store `ClientOptions::client`, src/client/mod.rs).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fiolake import layout
from fiolake.errors import AccessDenied, LakeError
from fiolake.store import ObjectStore

if TYPE_CHECKING:
    from deltalake import DeltaTable

# deltalake is imported where it is used: every reader of the lake imports this module
# (through the derived tables' names), and only compaction writes (30 ms of each question).

ROW_GROUP_ROWS = 65_536  # small enough that a query for one run skips most of a file
# Appends add one file per table per compaction; past this many small files (under half
# the target size) a table's small files are rewritten into few (Delta `optimize`), the
# superseded files kept for the grace period. Only small files count: a year's per-second
# table is over a hundred full files, and optimizing it every night because of them cost
# 2.4 s of a night that added one file (issue 44). Few: a reader opens the footer of
# every file a query scans, ~7 ms each over HTTP — with 32, the results of a million
# runs were 36 files and their footers 0.24 s of every `compare --campaign` on MinIO.
MAX_FILES = 8
TARGET_FILE_BYTES = 100 * 1024 * 1024  # delta-rs's default, given so "small" means the same
COMMITS = "commits"
# Never contacted: every host bypasses it (see the module docstring).
_UNUSED_PROXY = "http://127.0.0.1:9"


def key_column(table: str) -> str:
    """The column naming what a Delta table's rows belong to (a run, or a job's marker)."""
    if table == layout.SUMMARY_TABLE:
        return "run_ids"  # a list: the runs each summary row folds (aggregator.lake.summaries)
    return "job_id" if table == COMMITS else "run_id"


def table_uri(store: ObjectStore, table: str) -> str:
    """Where delta-rs finds `table` of `store`'s lake."""
    return store.location(layout.delta_table_prefix(table).rstrip("/"))


def storage_options(store: ObjectStore) -> dict[str, str]:
    """delta-rs storage options for `store`: `S3Settings.object_store_options` (endpoint,
    keys, addressing, TLS only, conditional PUT) plus the CA.

    A private CA (FIOLAKE_CA_BUNDLE) travels in the proxy keys: see the module docstring.
    """
    s3 = store.settings
    if s3 is None:  # a local directory: delta-rs needs no options
        return {}
    options = s3.object_store_options()
    if s3.ca_bundle:
        host = urlsplit(s3.endpoint).hostname or ""
        options["proxy_url"] = _UNUSED_PROXY
        options["proxy_excludes"] = ",".join(filter(None, ["*", host]))
        options["proxy_ca_certificate"] = _pem(s3.ca_bundle)
    return options


@cache
def _pem(path: str) -> str:
    """The CA bundle's text (read once per path: it does not change while we run)."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise LakeError(
            f"cannot read the CA bundle {path}: {exc.strerror} — set FIOLAKE_CA_BUNDLE "
            "to the lake's CA certificate (PEM)"
        ) from None


@contextmanager
def mapped_errors(store: ObjectStore) -> Iterator[None]:
    """delta-rs's errors as fiolake's: AccessDenied for a 403, LakeError otherwise."""
    from deltalake.exceptions import DeltaError

    try:
        yield
    except (DeltaError, OSError) as exc:
        where = f"{store.url}/{layout.DELTA_PREFIX}"
        text = str(exc)
        # delta-rs raises one DeltaError/OSError for every object-store failure, with no
        # status or S3 code attribute: its message is the only place the 403 shows.
        if "403" in text or "AccessDenied" in text:
            raise AccessDenied(
                f"access denied writing the Delta tables under {where} — run it with the "
                'compactor\'s credentials (eval "$(fiolake stack env --role compactor)")'
            ) from exc
        raise LakeError(
            f"Delta table under {where}: {text.splitlines()[0][:300]} — check the "
            "endpoint, the credentials and FIOLAKE_CA_BUNDLE"
        ) from exc


def open_table(store: ObjectStore, table: str) -> DeltaTable | None:
    """The latest version of `table`, or None when no compaction has created it yet."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    with mapped_errors(store):
        try:
            return DeltaTable(table_uri(store, table), storage_options=storage_options(store))
        except TableNotFoundError:
            return None


def has_deletes(store: ObjectStore, dt: DeltaTable) -> bool:
    """Whether rows were ever deleted from `dt` (`lake prune`), by its log's history."""
    with mapped_errors(store):
        return any(h.get("operation") == "DELETE" for h in dt.history())


def data_files(store: ObjectStore, dt: DeltaTable, table: str) -> tuple[list[str], int]:
    """Object keys (relative to the lake) of the files in `dt`'s version, and their rows."""
    with mapped_errors(store):
        actions = pa.table(dt.get_add_actions(flatten=True))
    paths = actions.column("path").to_pylist()
    rows = sum(n or 0 for n in actions.column("num_records").to_pylist())
    return sorted(f"{layout.delta_table_prefix(table)}{p}" for p in paths), rows


def append(
    store: ObjectStore,
    table: str,
    data: pa.Table,
    generation: int,
    row_group_rows: int = ROW_GROUP_ROWS,
) -> DeltaTable:
    """Append `data` to `table` (created on first use), in row groups of `row_group_rows`;
    returns the table after the commit.

    New columns join the table's schema (files written before them read as NULL).
    """
    from deltalake import CommitProperties, DeltaTable, WriterProperties, write_deltalake

    with mapped_errors(store):
        write_deltalake(
            table_uri(store, table),
            data,
            mode="append",
            schema_mode="merge",
            storage_options=storage_options(store),
            writer_properties=WriterProperties(
                compression="ZSTD", max_row_group_size=row_group_rows
            ),
            commit_properties=CommitProperties(
                custom_metadata={"fiolake.generation": str(generation)}
            ),
        )
        return DeltaTable(table_uri(store, table), storage_options=storage_options(store))


def optimize(store: ObjectStore, dt: DeltaTable) -> None:
    """Rewrite the small files of a table with more than MAX_FILES of them into few (a
    new version of `dt`)."""
    from deltalake import WriterProperties

    with mapped_errors(store):
        sizes = pa.table(dt.get_add_actions(flatten=True)).column("size_bytes")
        if (pc.sum(pc.less(sizes, TARGET_FILE_BYTES // 2)).as_py() or 0) > MAX_FILES:
            dt.optimize.compact(
                target_size=TARGET_FILE_BYTES,
                writer_properties=WriterProperties(
                    compression="ZSTD", max_row_group_size=ROW_GROUP_ROWS
                ),
            )
            dt.update_incremental()


def vacuum(store: ObjectStore, dt: DeltaTable, grace: timedelta) -> list[str]:
    """Delete files the table's log removed longer than `grace` ago; their paths."""
    with mapped_errors(store):
        hours = math.ceil(grace.total_seconds() / 3600)  # delta-rs counts whole hours
        return list(
            dt.vacuum(retention_hours=hours, enforce_retention_duration=False, dry_run=False)
        )


def keys_in(store: ObjectStore, table: str, files: list[str]) -> set[str]:
    """The run ids (job ids for `commits`) the rows of `files` belong to."""
    column = key_column(table)
    found: set[str] = set()
    for key in files:
        data, _ = store.get(key)
        ids = pq.read_table(io.BytesIO(data), columns=[column])[0]
        if pa.types.is_list(ids.type):
            ids = pc.list_flatten(ids)
        found.update(pc.unique(ids).to_pylist())
    return found


def with_recovered(
    store: ObjectStore,
    dt: DeltaTable | None,
    table: str,
    recorded: tuple[int, Sequence[str]] | None,
    covered: pa.Array,
) -> pa.Array:
    """`covered`, then the ids whose rows an interrupted compaction appended to `dt` after
    the version and files the generation `recorded` (None: no record of the table), so
    their rows are not appended again."""
    if dt is None or (recorded is not None and dt.version() == recorded[0]):
        return covered
    current, _ = data_files(store, dt, table)
    added = sorted(set(current) - set(recorded[1] if recorded else ()))
    if not added:  # a newer version without new files (vacuum writes commits of its own)
        return covered
    # Against the covered ids in Arrow: as a Python set, a year's (1,000,000) took 0.1 s
    # a table, every night (issue 44).
    found = pa.array(sorted(keys_in(store, table, added)), pa.string())
    recovered = found.filter(pc.invert(pc.is_in(found, value_set=covered)))
    return pa.concat_arrays([covered, recovered])
