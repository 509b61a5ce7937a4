"""Outside readers of the compacted layer: DuckDB `delta_scan`, polars `scan_delta` and
delta-rs → pyarrow see exactly the rows `fiolake sql` has for the runs compacted so far,
after one and two compactions, with orphan attempts in the lake — locally and on the
real MinIO (TLS, private CA)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

import duckdb
import duckdb_extension_delta
import polars as pl
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from fiolake import layout
from fiolake.aggregator.lake import delta
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import LEGACY_FORMAT, Generation, Partition
from fiolake.aggregator.lake.lake import configure_s3, connect, extension_file, quote
from fiolake.aggregator.lake.snapshot import read_parquet_object, scan
from fiolake.s3client import S3Settings
from fiolake.schema import parquet_bytes
from fiolake.store import LocalStore, ObjectStore, S3Store, open_store
from fiolake.timetext import now_iso
from tests.aggregator import lakegen
from tests.aggregator.answer_rows import Rows, canonical
from tests.aggregator.lake.test_compaction import build

TABLES = layout.TABLES[:4]  # the tables lakegen writes


@contextmanager
def ssl_cert_file(store: ObjectStore) -> Iterator[None]:
    """SSL_CERT_FILE = the lake's CA, for DuckDB's delta extension only: it takes no CA
    option (delta-rs, polars and fiolake pass the CA in their storage options)."""
    ca = store.settings.ca_bundle if store.settings else None
    before = os.environ.get("SSL_CERT_FILE")
    if ca:
        os.environ["SSL_CERT_FILE"] = ca
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SSL_CERT_FILE", None)
        else:
            os.environ["SSL_CERT_FILE"] = before


def read_duckdb(store: ObjectStore, table: str) -> pa.Table:
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")
        if isinstance(store, S3Store):
            configure_s3(con, store.settings)  # the S3 secret delta_scan uses too
        con.execute(f"LOAD {quote(str(extension_file(duckdb_extension_delta, 'delta')))}")
        uri = delta.table_uri(store, table)
        with ssl_cert_file(store):
            return con.execute(f"SELECT * FROM delta_scan({quote(uri)})").to_arrow_table()
    finally:
        con.close()


def read_polars(store: ObjectStore, table: str) -> pa.Table:
    frame = pl.scan_delta(
        delta.table_uri(store, table), storage_options=delta.storage_options(store) or None
    )
    return frame.collect().to_arrow()


def read_deltalake(store: ObjectStore, table: str) -> pa.Table:
    uri = delta.table_uri(store, table)
    return DeltaTable(uri, storage_options=delta.storage_options(store)).to_pyarrow_table()


READERS: dict[str, Callable[[ObjectStore, str], pa.Table]] = {
    "duckdb delta_scan": read_duckdb,
    "polars scan_delta": read_polars,
    "DeltaTable→pyarrow": read_deltalake,
}


def sql_rows(url: str, s3: S3Settings | None, table: str, runs: set[str]) -> tuple[list, Rows]:
    """What `fiolake sql` has for `runs` in `table`: its columns and rows."""
    with connect(url, s3) as lake:
        data = lake.con.sql(f"SELECT * FROM {table}").to_arrow_table()
    data = data.filter(pa.compute.is_in(data.column("run_id"), pa.array(sorted(runs))))
    return data.column_names, canonical(data, data.column_names)


def assert_readers_agree(url: str, store: ObjectStore, s3: S3Settings | None, runs: set[str]):
    for table in TABLES:
        columns, expected = sql_rows(url, s3, table, runs)
        assert expected  # the comparison below means something
        for name, reader in READERS.items():
            got = canonical(reader(store, table), columns)
            assert got == expected, f"{name} on {table}"


def compacted_runs(url: str, s3: S3Settings | None) -> set[str]:
    with connect(url, s3) as lake:
        return set(lake.compacted.covered("runs"))


def exercise(url: str, store: ObjectStore, s3: S3Settings | None) -> None:
    """Two compactions with orphan attempts and a run committed in between."""
    compact(store, grace=timedelta(0))
    first = compacted_runs(url, s3)
    assert len(first) == 11 and not {"lost", "dead"} & first
    assert_readers_agree(url, store, s3, first)

    # a new committed run and a new orphan: not compacted yet, so outside readers lack
    # the one and never see the other, while `fiolake sql` has the committed one
    lakegen.write_run(store, run_id="late", job_id="late", metrics={("job1", "read"): {}})
    lakegen.write_run(store, run_id="ghost", job_id="late", commit=False)
    with connect(url, s3) as lake:
        assert lake.con.sql("SELECT count(*) FROM runs WHERE run_id = 'late'").fetchone() == (1,)
    assert_readers_agree(url, store, s3, first)
    assert "late" not in read_deltalake(store, "runs").column("run_id").to_pylist()

    compact(store, grace=timedelta(0))
    second = compacted_runs(url, s3)
    assert second == first | {"late"}
    assert_readers_agree(url, store, s3, second)
    dt = DeltaTable(delta.table_uri(store, "runs"), storage_options=delta.storage_options(store))
    assert dt.version() == 1


@pytest.mark.slow  # several compactions and three readers: seconds
def test_outside_readers_local(tmp_path: Path) -> None:
    store = build(tmp_path)
    exercise(str(tmp_path), store, None)


@pytest.mark.stack
def test_outside_readers_on_each_real_server(s3_server) -> None:  # noqa: ANN001
    url = f"s3://{s3_server.bucket}/delta-{secrets.token_hex(4)}"
    s3 = s3_server.settings
    store = open_store(url, s3)
    assert isinstance(store, S3Store)
    lakegen.write_campaign(
        store, "c1", {"a": {("job1", "read"): {"iops": 10}}, "b": {("job1", "write"): {}}}, 3
    )
    lakegen.write_campaign(
        store, "c2", {"a": {("job1", "read"): {}}}, 2, start=lakegen.T0 + timedelta(days=1)
    )
    lakegen.write_run(store, run_id="lost", job_id="c1-a-j0", commit=False)
    lakegen.write_run(store, run_id="dead", job_id="zz", commit=False)
    lakegen.write_run(store, run_id="rej", job_id="rej", status="rejected")
    lakegen.write_run(store, run_id="rej2", job_id="rej2", status="failed")
    lakegen.write_run(store, run_id="rej3", job_id="rej3", status="failed")
    exercise(url, store, s3)


@pytest.mark.slow  # several compactions and three readers: seconds
def test_many_appends_are_rewritten_and_vacuumed(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    store = build(tmp_path)
    monkeypatch.setattr(delta, "MAX_FILES", 2)
    for i in range(3):
        lakegen.write_run(store, run_id=f"n{i}", job_id=f"n{i}")
        compact(store, grace=timedelta(0))
    with connect(str(tmp_path)) as lake:
        assert len(lake.files["runs"]) == 1  # three appends, then one rewrite
        assert lake.con.sql("SELECT count(*) FROM runs").fetchone() == (14,)
    assert_readers_agree(str(tmp_path), store, None, compacted_runs(str(tmp_path), None))
    folder = tmp_path / layout.delta_table_prefix("runs")
    assert len(list(folder.glob("*.parquet"))) == 1  # superseded files vacuumed (grace 0)
    assert isinstance(store, LocalStore)


@pytest.mark.slow  # several compactions: seconds
def test_only_small_files_count_towards_a_rewrite(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    store = build(tmp_path)
    monkeypatch.setattr(delta, "MAX_FILES", 2)
    monkeypatch.setattr(delta, "TARGET_FILE_BYTES", 2)  # every file is over half of it: full
    for i in range(3):
        lakegen.write_run(store, run_id=f"n{i}", job_id=f"n{i}")
        compact(store, grace=timedelta(0))
    with connect(str(tmp_path)) as lake:
        assert len(lake.files["runs"]) == 3  # three appends, no rewrite: full files stay
        assert lake.con.sql("SELECT count(*) FROM runs").fetchone() == (14,)


def write_legacy_generation(store: ObjectStore) -> None:
    """Compact `store` the way fiolake did before Delta: merged files + a format-1 generation."""
    snap = scan(store)
    parts = {}
    for table in TABLES:
        merged = []
        for (t, day), runs in snap.loose.items():
            for key in runs.values():
                if t == table:
                    data = read_parquet_object(store, key)
                    days = pa.array([date.fromisoformat(day)] * data.num_rows, pa.date32())
                    merged.append(data.append_column("date", days))
        data = pa.concat_tables(merged)
        key = layout.compacted_key(table, "2025-03", 1, "abc123")
        store.put(key, parquet_bytes(data))
        covered = {r for (t, _), runs in snap.loose.items() if t == table for r in runs}
        parts[(table, "2025-03")] = Partition(table, "2025-03", key, frozenset(covered), len(data))
    commits = layout.commits_index_key(1, "abc123")
    store.put(commits, parquet_bytes(snap.commits))
    old = Generation(1, now_iso(), commits, snap.commits.num_rows, parts, format=LEGACY_FORMAT)
    store.put(layout.generation_key(1), old.legacy_bytes())


@pytest.mark.slow  # several compactions and three readers: seconds
def test_lake_of_the_merged_file_layout_is_read_then_migrated(tmp_path: Path) -> None:
    store = build(tmp_path)
    url = str(tmp_path)
    with connect(url) as lake:
        before = {t: lake.con.sql(f"SELECT count(*) FROM {t}").fetchone() for t in TABLES}
    write_legacy_generation(store)
    with connect(url) as lake:
        assert lake.compacted.legacy
        assert lake.files["runs"] == [layout.compacted_key("runs", "2025-03", 1, "abc123")]
        assert {t: lake.con.sql(f"SELECT count(*) FROM {t}").fetchone() for t in TABLES} == before
    report = compact(store, grace=timedelta(0))
    assert report.generation == 2 and report.migrated
    assert {m.table for m in report.merged} == {*TABLES, *layout.DERIVED_TABLES}
    with connect(url) as lake:
        assert not lake.compacted.legacy
        assert {t: lake.con.sql(f"SELECT count(*) FROM {t}").fetchone() for t in TABLES} == before
    assert_readers_agree(url, store, None, compacted_runs(url, None))
    # the old layout's objects are gone (grace 0); only Delta tables, the generation (its
    # record, covered ids and case summaries) and the (released) compaction lock remain
    left = {p.relative_to(tmp_path).as_posix() for p in (tmp_path / "compacted").rglob("*.*")}
    kept = {k for k in left if layout.generation_object(k) == 2} | {layout.COMPACTION_LOCK_KEY}
    assert len(kept) == 4
    assert all(k.startswith(layout.DELTA_PREFIX) for k in left - kept if "/." not in k)
    assert compact(store, grace=timedelta(0)).generation is None
