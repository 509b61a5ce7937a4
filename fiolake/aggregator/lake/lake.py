"""An in-process DuckDB connection whose views show only committed runs of a lake.

`connect()` takes a snapshot of the lake (see `aggregator.lake.snapshot`) and creates one view
per lake table (`layout.TABLES`: runs, results, timeseries, percentiles, disk_util,
iodepth, latency_bins; or only those `tables` names) over exactly the Parquet files that
hold committed run ids, the gang views over them (`aggregator.lake.gang`), and the view
`commits` (the compacted commit index read in place, then the markers beyond it). Files
appearing later are seen by the next `connect()`.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import duckdb_extension_httpfs
import pyarrow as pa
import pyarrow.parquet as pq

from fiolake.aggregator.lake import footers, gang, loose, workloads
from fiolake.aggregator.lake.generations import Generation
from fiolake.aggregator.lake.snapcache import cached_scan
from fiolake.aggregator.lake.snapshot import Snapshot
from fiolake.aggregator.lake.sqltext import column_definitions

# Re-exported (redundant aliases): callers import them from here, as before they moved.
from fiolake.aggregator.lake.sqltext import literal as literal
from fiolake.aggregator.lake.sqltext import literals as literals
from fiolake.aggregator.lake.sqltext import parquet_source as parquet_source
from fiolake.aggregator.lake.sqltext import quote as quote
from fiolake.config import Settings, duckdb_threads
from fiolake.errors import LakeError, StoreError
from fiolake.layout import TABLES, parse_result_key
from fiolake.s3client import S3Settings
from fiolake.schema import SCHEMAS
from fiolake.store import ObjectStore, open_store

INTERNAL_SCHEMA = "_fiolake"
# What compare, trend and regressions read: the summaries, not the per-second rows.
SUMMARY_TABLES = ("runs", "results")


def _unreadable(exc: duckdb.Error) -> str:
    """DuckDB's reason without the view SQL it quotes (ours, not the user's), and the fix
    when a file is damaged (DuckDB names it)."""
    reason = str(exc).split("\n\nLINE ", 1)[0]
    if isinstance(exc, duckdb.InvalidInputException):
        reason += (
            " — the file is damaged: restore it, or move it out of the lake; "
            "`fiolake lake check` then names the run that lost its rows"
        )
    return reason


def empty_lake_error(url: str) -> LakeError:
    """The error for a lake with nothing committed in it."""
    return LakeError(f"no results in lake {url}: run `fiolake run` (or start runners) first")


def extension_file(package: ModuleType, name: str) -> Path:
    """A DuckDB extension file shipped in a `duckdb-extension-<name>` wheel (no network)."""
    base = Path(next(iter(package.__path__)))
    found = sorted(base.glob(f"extensions/v{duckdb.__version__}/{name}.duckdb_extension"))
    found = found or sorted(base.rglob(f"{name}.duckdb_extension"))
    if not found:
        raise LakeError(
            f"{name}.duckdb_extension not found under {base}: reinstall "
            f"duckdb-extension-{name}=={duckdb.__version__}"
        )
    return found[0]


def httpfs_extension() -> Path:
    """The httpfs extension file shipped in the duckdb-extension-httpfs wheel."""
    return extension_file(duckdb_extension_httpfs, "httpfs")


def configure_s3(con: duckdb.DuckDBPyConnection, s3: S3Settings) -> None:
    """Load httpfs from the wheel (never from the network) and register the S3 secret."""
    con.execute(f"LOAD {quote(str(httpfs_extension()))}")
    parts = ["TYPE s3", *(f"{name} {quote(value)}" for name, value in s3.duckdb_secret().items())]
    con.execute(f"CREATE OR REPLACE SECRET fiolake_s3 ({', '.join(parts)})")
    if s3.ca_bundle:
        # GLOBAL: Lake.cursor() opens new connections, which do not inherit session settings.
        con.execute(f"SET GLOBAL ca_cert_file={quote(s3.ca_bundle)}")
    # An object never changes under its key (per-run keys are written by one attempt,
    # compacted files get fresh names), so HTTP metadata and cached file contents are
    # reused without a revalidating HEAD per read.
    con.execute("SET GLOBAL enable_http_metadata_cache = true")
    con.execute("SET GLOBAL validate_external_file_cache = 'NO_VALIDATION'")


@dataclass
class Lake:
    """A DuckDB connection with the lake views, and the snapshot they were built from."""

    url: str
    store: ObjectStore
    con: duckdb.DuckDBPyConnection
    snapshot: Snapshot
    files: dict[str, list[str]] = field(default_factory=dict)  # table -> object keys read
    # (runs column, value) pairs some committed run has: the views never change, so a
    # filter value checked once (`rows.filters.validate`) is not looked for again.
    present: set[tuple[str, str]] = field(default_factory=set)
    # Summaries of runs already computed on these views (`stats.runsets.summarise`): the
    # gate's comparisons and night models each take their part of one summary.
    summaries: dict[Any, Any] = field(default_factory=dict)
    # DESCRIBE of a view, by name: the gate asked for `results`' and `runs`' columns ten
    # times a question, 1–20 ms each on two busy cores (issue 44).
    described: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)

    @property
    def compacted(self) -> Generation | None:
        """The compaction generation the views use (None when never compacted)."""
        return self.snapshot.compacted

    @property
    def warnings(self) -> list[str]:
        """Things skipped while reading the lake (malformed markers)."""
        return self.snapshot.warnings

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new connection to the same views, for one thread or one interruptible query."""
        return self.con.cursor()

    def describe(self, view: str) -> list[tuple[Any, ...]]:
        """DESCRIBE `view` (a view name: name, type, …): the views never change, so each
        is asked once a connection."""
        found = self.described.get(view)
        if found is None:
            cur = self.cursor()
            try:
                found = self.described[view] = cur.execute(f"DESCRIBE {view}").fetchall()
            finally:
                cur.close()
        return found

    def close(self) -> None:
        """Close the DuckDB connection."""
        self.con.close()

    def __enter__(self) -> Lake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _column_types(con: duckdb.DuckDBPyConnection, relation: str) -> dict[str, str]:
    return {row[0]: row[1] for row in con.execute(f"DESCRIBE {relation}").fetchall()}


def _materialise(
    con: duckdb.DuckDBPyConnection, name: str, data: pa.Table, scratch: Path | None
) -> None:
    """CREATE TABLE `name` holding `data`. Through a Parquet file in `scratch`, which
    DuckDB reads natively: handing Arrow data to DuckDB's Python client makes it import
    pyarrow.dataset and with it pandas, 0.2-0.3 s of every command that reads the lake
    and needs neither (BENCHMARKS.md, issue 24). Types come out the same either way
    (tests/aggregator/lake/test_lake_materialise.py); without a scratch directory, Arrow.
    No rows, no file: the columns are declared (`sqltext.column_definitions`), a tenth of
    the time of a file written and read for each table's contract (issue 44)."""
    columns = column_definitions(data.schema) if data.num_rows == 0 else None
    if columns is not None:
        con.execute(f"CREATE TABLE {name} ({columns})")
        return
    if scratch is not None:
        path = scratch / f"{name}.parquet"
        # No hive partitioning: a `key=value` folder in the temp path (TMPDIR=/x/run_id=7)
        # would otherwise become a column, or overwrite one.
        source = f"read_parquet({quote(str(path))}, hive_partitioning = false)"
        try:
            pq.write_table(data, path)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM {source}")
        except (OSError, duckdb.Error):
            pass  # a read-only or full temp directory: the Arrow way below
        else:
            return
        finally:
            path.unlink(missing_ok=True)
    con.register("_fiolake_arrow", data)
    try:
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM _fiolake_arrow")
    finally:
        con.unregister("_fiolake_arrow")


def _scratch() -> contextlib.AbstractContextManager[str | None]:
    """A private temporary directory for `_materialise`, or None where none can be made."""
    try:
        return tempfile.TemporaryDirectory(prefix="fiolake-connect-")
    except OSError:
        return contextlib.nullcontext()


def _load_loose(
    con: duckdb.DuckDBPyConnection, store: ObjectStore, table: str, keys: list[str], keep: Path
) -> bool:
    """CREATE TABLE _fiolake.loose_<table> with the rows of the per-run files `keys`:
    those `keep` holds from an earlier connection (`aggregator.lake.loose`), the rest from the
    lake; then keep the result for the next. A kept file that cannot be read (damaged,
    removed meanwhile) is passed over for the lake's files. False when those fail too (a
    damaged file in the lake): the view then reads the files in place, where the error
    names the lake's file."""
    name = f"{INTERNAL_SCHEMA}.loose_{table}"
    held = loose.kept(keep, table)
    for trusted in (held.keys, frozenset()):
        reused = [k for k in keys if k in trusted]
        fresh = [k for k in keys if k not in trusted]
        sources = []
        if reused:
            run_ids = [parsed[2] for parsed in map(parse_result_key, reused) if parsed]
            sources.append(
                f"SELECT * FROM read_parquet({quote(str(held.file))}, hive_partitioning = false)"
                f" WHERE run_id IN ({literals(run_ids)})"
            )
        if fresh:
            sources.append(f"SELECT * FROM {parquet_source([store.location(k) for k in fresh])}")
        try:
            con.execute(f"CREATE TABLE {name} AS {' UNION ALL BY NAME '.join(sources)}")
            break
        except duckdb.Error:
            con.execute(f"DROP TABLE IF EXISTS {name}")
            if not reused:
                return False
    if fresh or len(reused) != len(held.keys):
        with contextlib.suppress(OSError, duckdb.Error):  # kept or not, the table is whole
            file = loose.new_file(keep, table)
            con.execute(f"COPY {name} TO {quote(str(file))} (FORMAT parquet)")
            loose.commit(keep, table, file, keys)
    return True


def _create_commits(
    con: duckdb.DuckDBPyConnection,
    store: ObjectStore,
    snap: Snapshot,
    scratch: Path | None,
    digests: dict[str, str],
) -> list[str]:
    """The view `commits`: the commit index read in place from its files (which never
    change), then the markers beyond it, the only rows loaded: loading the index cost
    0.25-0.34 s of a connect at 100,000 runs (issue 44), for most queries in vain. Rows
    and types are the snapshot's (`snapshot.read_index` casts the files to COMMITS_SCHEMA).
    Returns the keys of the index files (a compaction adds one)."""
    beyond = f"{INTERNAL_SCHEMA}.new_commits"
    _materialise(con, beyond, snap.commits.slice(snap.indexed_rows), scratch)
    index = _index_files(snap)
    sources = []
    if index:
        cols = ", ".join(
            f'CAST("{name}" AS {dtype}) AS "{name}"'
            for name, dtype in _column_types(con, beyond).items()
        )
        one = footers.one_schema(digests, index)
        files = parquet_source([store.location(k) for k in index], hive=False, one_schema=one)
        sources.append(f"SELECT {cols} FROM {files}")
    sources.append(f"SELECT * FROM {beyond}")
    con.execute(f"CREATE VIEW commits AS {' UNION ALL '.join(sources)}")
    return index


def _contract_view(
    con: duckdb.DuckDBPyConnection,
    table: str,
    name: str,
    sources: list[str],
    contract: dict[str, str],
) -> None:
    """View `name` of `table`'s rows in `sources` (SELECTs), in the table's contract: the
    columns of the current schema (NULL where files written before a column lack it),
    then any others, then `date`; empty without sources."""
    if not sources:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM {INTERNAL_SCHEMA}.empty_{table}")
        return
    files = f"{INTERNAL_SCHEMA}.files_{name.rpartition('.')[2]}"
    con.execute(f"CREATE VIEW {files} AS {' UNION ALL BY NAME '.join(sources)}")
    present = _column_types(con, files)
    cols = [
        workloads.view_column(set(present))
        if table == "runs" and column == workloads.COLUMN
        else f'"{column}"'
        if column in present
        else f'CAST(NULL AS {dtype}) AS "{column}"'
        for column, dtype in contract.items()
        if column != "date"
    ]
    cols += [f'"{column}"' for column in present if column not in contract]
    cols.append('"date"')
    con.execute(f"CREATE VIEW {name} AS SELECT {', '.join(cols)} FROM {files}")


def _create_views(
    con: duckdb.DuckDBPyConnection,
    store: ObjectStore,
    snap: Snapshot,
    tables: Sequence[str],
    keep: Path | None,
    remote: bool,
    digests: dict[str, str],
) -> list[str]:
    """Create the views; returns the keys of the files they read in place."""
    con.execute(f"CREATE SCHEMA {INTERNAL_SCHEMA}")
    local: set[str] = set()  # tables whose loose files are read from local copies
    with _scratch() as scratch:
        where = Path(scratch) if scratch else None
        read = _create_commits(con, store, snap, where, digests)
        for table in tables:
            # from_batches, not empty_table(): that one imports pandas (0.15 s)
            empty = pa.Table.from_batches([], SCHEMAS[table].append(pa.field("date", pa.date32())))
            _materialise(con, f"{INTERNAL_SCHEMA}.empty_{table}", empty, where)
            keys = snap.loose_files(table)
            if remote and keep and keys and len(keys) <= loose.LOCAL_LIMIT:
                if _load_loose(con, store, table, keys, keep):
                    local.add(table)
    for table in tables:
        contract = _column_types(con, f"{INTERNAL_SCHEMA}.empty_{table}")
        # Merged files hold a physical `date`; per-run files get it from their path.
        # Only committed runs are visible. The Delta tables hold nothing else (compaction
        # appends committed runs' rows only), so only the runners' files (and merged files
        # of the earlier layout) are filtered: the filter builds a hash of every committed
        # run id, 0.2 s of each query at 1,000,000 runs (issue 44).
        committed = "WHERE run_id IN (SELECT run_id FROM commits)"
        trusted = snap.compacted is not None and not snap.compacted.legacy
        parts: list[list[str]] = [[], []]  # compacted, then not compacted
        for part, keys, hive, only in (
            (parts[0], snap.compacted_files(table), False, "" if trusted else committed),
            (parts[1], [] if table in local else snap.loose_files(table), True, committed),
        ):
            if keys:
                one = footers.one_schema(digests, keys)
                files = parquet_source([store.location(k) for k in keys], hive=hive, one_schema=one)
                part.append(f"SELECT * FROM {files} {only}")
                read += keys
        if table in local:
            parts[1].append(f"SELECT * FROM {INTERNAL_SCHEMA}.loose_{table} {committed}")
        _contract_view(con, table, table, parts[0] + parts[1], contract)
        if table == "runs":  # `gang.has_gangs` asks it alone when no compacted run is in a gang
            _contract_view(con, table, gang.UNCOMPACTED_RUNS, parts[1], contract)
    return read


def _compacted_groups(snap: Snapshot, tables: Sequence[str]) -> list[list[str]]:
    """The compacted files of each of `tables`, and the commit index's: the groups a view
    binds from one footer when their digests agree (`footers.complete`)."""
    return [*(snap.compacted_files(t) for t in tables), _index_files(snap)]


def _index_files(snap: Snapshot) -> list[str]:
    """The files of the generation's commit index that the `commits` view reads in place
    (none when the snapshot holds no index rows)."""
    return snap.compacted.commit_files() if snap.compacted and snap.indexed_rows else []


def _sandbox(con: duckdb.DuckDBPyConnection, store: ObjectStore, s3: S3Settings | None) -> None:
    # Queries may read the lake and nothing else on this machine; settings stay locked.
    allowed = [store.url.rstrip("/") + "/"]
    con.execute(f"SET allowed_directories = [{', '.join(quote(a) for a in allowed)}]")
    if s3 is not None and s3.ca_bundle:
        con.execute(f"SET allowed_paths = [{quote(s3.ca_bundle)}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def new_connection(s3: S3Settings | None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection set up for lake files (UTC, metadata caches, S3 when given;
    FIOLAKE_DUCKDB_THREADS threads when set)."""
    threads = duckdb_threads()
    con = duckdb.connect(":memory:", config={"threads": threads} if threads else {})
    con.execute("SET TimeZone = 'UTC'")
    # GLOBAL, as the S3 settings: every question runs on a cursor (`Lake.cursor`), a new
    # connection that does not inherit session settings. Set for the session only, each
    # query read every Parquet footer again: a page's four-run timeseries query on the
    # 1,000,000-run lake 0.44-0.54 s instead of 0.19 s (136 files).
    con.execute("SET GLOBAL parquet_metadata_cache = true")
    workloads.register(con)
    if s3 is not None:
        configure_s3(con, s3)
    return con


def connect(
    lake_url: str,
    s3: S3Settings | None = None,
    *,
    sandbox: bool = True,
    snapshot_cache: Path | None = None,
    tables: Collection[str] | None = None,
    kept_rows: bool = True,
) -> Lake:
    """Open `lake_url` (directory or s3://bucket[/prefix]) as DuckDB views of committed runs.

    With `sandbox`, queries can read only the lake and cannot change settings. The
    lake's snapshot is reused while its compaction generation is unchanged
    (`aggregator.lake.snapcache`: in memory, and in `snapshot_cache` for later processes).
    `tables` limits the views to those lake tables (default: every one): a view is bound
    when it is created, which reads the footer of each of its files, so a command that
    reads `runs` and `results` need not wait for the timeseries' (SUMMARY_TABLES). The
    gang views over tables left out are left out too; `gang_members` needs only `runs`.
    With `kept_rows` (and a snapshot cache), the rows of per-run files not yet compacted
    are read from what an earlier connection kept (`aggregator.lake.loose`); `lake check`
    reads them from the lake itself.
    """
    unknown = set(tables or ()) - set(TABLES)
    if unknown:
        raise ValueError(f"not lake tables: {', '.join(sorted(unknown))}")
    chosen = [t for t in TABLES if tables is None or t in tables]
    remote = lake_url.startswith("s3://")
    # DuckDB sets itself up (httpfs, the S3 secret: ~0.1 s, the GIL released) while the
    # store client is made and the snapshot read: both sit in every command's connect.
    with ThreadPoolExecutor(1, thread_name_prefix="fiolake-duckdb") as pool:
        setup = pool.submit(new_connection, s3 if remote else None)
        try:
            store = open_store(lake_url, s3)
            snap = cached_scan(store, snapshot_cache, chosen)
            if snap.commits.num_rows == 0:
                raise empty_lake_error(lake_url)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                setup.result().close()
            if isinstance(exc, StoreError):
                raise LakeError(f"cannot read lake {lake_url}: {exc}") from exc
            raise
        con = setup.result()
    try:
        keep = loose.folder(snapshot_cache, store) if snapshot_cache and kept_rows else None
        kept = footers.kept(snapshot_cache, store)
        completed = footers.complete(con, store, _compacted_groups(snap, chosen), kept)
        digests = {**kept, **completed}
        read = _create_views(con, store, snap, chosen, keep, remote, digests)
        gang.create_views(con, chosen)
        held = snap.compacted.commit_files() if snap.compacted else []
        held += [k for t in TABLES for k in snap.compacted_files(t)]
        held += [k for t in snap.tables for k in snap.loose_files(t)]
        footers.learn(con, store, snapshot_cache, kept, read, held, completed)
        if sandbox:
            _sandbox(con, store, s3 if remote else None)
    except duckdb.Error as exc:
        con.close()
        raise LakeError(f"cannot read lake {lake_url}: {_unreadable(exc)}") from exc
    files = {t: snap.files(t) for t in chosen}
    return Lake(lake_url, store, con, snap, files)


def open_lake(
    lake_url: str | None = None, tables: Collection[str] | None = None, kept_rows: bool = True
) -> Lake:
    """`connect` to the lake named by `lake_url`, else FIOLAKE_LAKE (S3 settings from env),
    with the views of `tables` (default: every table)."""
    settings = Settings.from_env(lake=lake_url)
    return connect(
        settings.lake,
        settings.lake_s3,
        snapshot_cache=settings.snapshot_cache,
        tables=tables,
        kept_rows=kept_rows,
    )
