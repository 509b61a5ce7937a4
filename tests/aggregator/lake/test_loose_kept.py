"""Rows of runs committed since the last compaction, kept merged on this machine
(aggregator.lake.loose), over a real MinIO; and the snapshot work a connection skips: the
markers an earlier scan read, the listings of tables it does not read."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from pathlib import Path

import pytest

from fiolake import layout
from fiolake.aggregator.lake import lake as lake_module
from fiolake.aggregator.lake import loose, snapcache
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import SUMMARY_TABLES, connect
from fiolake.aggregator.lake.snapcache import cached_scan
from fiolake.store import LocalStore, open_store
from tests.aggregator import lakegen

READ = ("job1", "read")
DAY2, DAY3 = lakegen.T0 + timedelta(days=1), lakegen.T0 + timedelta(days=2)
ANSWER = """
    SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM results),
           (SELECT sum(iops) FROM results), (SELECT count(*) FROM timeseries),
           (SELECT string_agg(run_id || date, ',' ORDER BY run_id) FROM results)
"""


def _answer(url: str, s3, cache: Path | None) -> tuple:  # noqa: ANN001
    snapcache.clear_memory()  # as a new process finds it
    with connect(url, s3, snapshot_cache=cache) as lake:
        return lake.con.sql(ANSWER).fetchone()


def _held(where: Path, table: str) -> list[str]:
    return json.loads((where / f"{table}.json").read_text())["keys"]


@pytest.mark.stack
def test_loose_rows_are_kept_merged_and_read_again_only_where_new(
    stack,  # noqa: ANN001
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"{stack.lake}/loose-{secrets.token_hex(4)}"
    s3 = stack.s3_settings("admin")
    store = open_store(url, s3)
    lakegen.write_campaign(store, "c1", {"a": {READ: {"iops": 1000}}}, 3)
    compact(store, grace=timedelta(0))
    lakegen.write_campaign(store, "c2", {"a": {READ: {"iops": 900}}}, 2, start=DAY2)
    cache = tmp_path / "cache"
    where = loose.folder(cache, store)

    in_place = _answer(url, s3, None)  # no cache directory: the files are read in the lake
    assert in_place[:2] == (5, 5)
    assert _answer(url, s3, cache) == in_place
    first = {t: _held(where, t) for t in ("runs", "results", "timeseries", "percentiles")}
    assert all(len(keys) == 2 for keys in first.values())
    kept_files = sorted(p.name for p in where.glob("*.parquet"))

    # Unchanged lake: the kept files answer (no per-run file is read), nothing is rewritten.
    read: list[str] = []
    real = lake_module.parquet_source

    def reading(paths: list[str], *, hive: bool = True, one_schema: bool = False) -> str:
        read.extend(p for p in paths if "/date=" in p)  # per-run files only
        return real(paths, hive=hive, one_schema=one_schema)

    monkeypatch.setattr(lake_module, "parquet_source", reading)
    assert _answer(url, s3, cache) == in_place
    assert read == []
    assert sorted(p.name for p in where.glob("*.parquet")) == kept_files
    snapcache.clear_memory()
    with connect(url, s3, snapshot_cache=cache, kept_rows=False) as lake:  # as `lake check`
        assert lake.con.sql(ANSWER).fetchone() == in_place
    assert len(read) == 4 * 2  # every loose file of every table, from the lake

    # One run more: two read from the kept file, one from the lake; kept anew, once.
    lakegen.write_campaign(store, "c3", {"a": {READ: {"iops": 800}}}, 1, start=DAY3)
    assert _answer(url, s3, cache) == _answer(url, s3, None)
    assert len(_held(where, "results")) == 3
    assert len(list(where.glob("results-*.parquet"))) == 1  # the one it replaced is gone

    # A damaged kept file: the views read the lake's files instead (and keep them anew).
    for path in where.glob("results-*.parquet"):
        path.write_bytes(b"PAR1 not parquet")
    assert _answer(url, s3, cache) == _answer(url, s3, None)

    # A loose file gone from the lake (damage): its kept rows are not read either.
    gone = next(k for k in store.list(f"{layout.RESULTS_PREFIX}results/") if "c3" in k)
    store.delete(gone)
    assert _answer(url, s3, cache) == _answer(url, s3, None)
    assert len(_held(where, "results")) == 2

    # Compacted, then one run more: the kept rows of the compacted runs are not read.
    compact(store, grace=timedelta(0))
    lakegen.write_campaign(store, "c4", {"a": {READ: {"iops": 700}}}, 1, start=DAY3)
    assert _answer(url, s3, cache) == _answer(url, s3, None)
    assert len(_held(where, "results")) == 1


def test_a_connection_lists_only_the_tables_it_reads(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_campaign(store, "c1", {"a": {READ: {"iops": 1000}}}, 2)
    compact(store, grace=timedelta(0))
    lakegen.write_run(store, run_id="late", job_id="late")
    listed: list[str] = []

    class Listing(LocalStore):
        def list(self, prefix: str, *, start_after: str | None = None):  # noqa: ANN201
            listed.append(prefix)
            return super().list(prefix, start_after=start_after)

    snapcache.clear_memory()
    with connect(str(tmp_path), tables=()) as lake:  # no table at all: commits only
        assert lake.con.sql("SELECT count(*) FROM commits").fetchone() == (3,)
    snapcache.clear_memory()
    snap = cached_scan(Listing(tmp_path), tables=SUMMARY_TABLES)
    results = {p.split("/")[1] for p in listed if p.startswith(layout.RESULTS_PREFIX)}
    assert results == set(SUMMARY_TABLES)
    assert snap.tables == SUMMARY_TABLES and snap.loose_files("runs")
    with pytest.raises(ValueError, match="did not list the files of timeseries"):
        snap.loose_files("timeseries")
    # A later connection that reads every table lists them (and sees the loose run).
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql("SELECT count(*) FROM timeseries WHERE run_id = 'late'").fetchone()[0]


def test_markers_read_once_are_not_read_again(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_campaign(store, "c1", {"a": {READ: {"iops": 1000}}}, 2)
    compact(store, grace=timedelta(0))
    lakegen.write_campaign(store, "c2", {"a": {READ: {"iops": 900}}}, 3, start=DAY2)
    got: list[str] = []

    class Counting(LocalStore):
        def get(self, key: str):  # noqa: ANN201
            got.append(key)
            return super().get(key)

    cache = tmp_path / "cache"
    snapcache.clear_memory()
    first = cached_scan(Counting(tmp_path), cache)
    markers = [k for k in got if k.startswith(layout.COMMITS_PREFIX)]
    assert len(markers) == 3
    lakegen.write_run(store, run_id="late", job_id="late")
    got.clear()
    snapcache.clear_memory()  # a new process: from the disk cache
    second = cached_scan(Counting(tmp_path), cache)
    assert [k for k in got if k.startswith(layout.COMMITS_PREFIX)] == [layout.commit_key("late")]
    assert second.commits.num_rows == first.commits.num_rows + 1
    snapcache.clear_memory()
    fresh = cached_scan(store)  # no cache at all: the same commits, the same order
    assert second.commits.equals(fresh.commits)
