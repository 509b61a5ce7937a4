"""Views bind from one footer where files are known to share one schema (lake.footers)."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from fiolake.aggregator.lake import footers, snapcache
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import connect
from fiolake.store import LocalStore
from tests.aggregator import lakegen

METRICS = {
    "nvme": {("job1", "read"): {"iops": 1000.0}},
    "ceph": {("job1", "read"): {"iops": 500.0}},
}
# What every view shows: a count and an order-free digest of its rows.
_CONTENT = "SELECT count(*), sum(hash(t)::HUGEINT) FROM {} t"


def _binds(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """View -> how its files are bound: 'by name' (every footer) or 'one schema'."""
    views = con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall()
    return {
        name: "by name" if "union_by_name = CAST('t'" in sql else "one schema"
        for name, sql in views
        if "read_parquet" in sql
    }


def _contents(con: duckdb.DuckDBPyConnection) -> dict[str, tuple]:
    names = ["runs", "results", "timeseries", "percentiles", "commits"]
    return {n: con.execute(_CONTENT.format(n)).fetchone() for n in names}


def test_files_of_one_schema_bind_from_one_footer_once_their_schemas_are_kept(
    tmp_path: Path,
) -> None:
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    store = lakegen.local_store(lake)
    lakegen.write_campaign(store, "night-1", METRICS, 2)
    compact(store, grace=timedelta(0))
    lakegen.write_campaign(store, "night-2", METRICS, 2, start=lakegen.T0 + timedelta(days=1))
    compact(store, grace=timedelta(0))  # two compacted files per table
    lakegen.write_campaign(store, "night-3", METRICS, 2, start=lakegen.T0 + timedelta(days=2))
    with connect(str(lake)) as plain:  # no cache: every footer, as before
        assert set(_binds(plain.con).values()) == {"by name"}
        want = _contents(plain.con)
    binds = []
    for _ in range(2):  # the first learns the schemas, the second uses them
        snapcache.clear_memory()
        with connect(str(lake), snapshot_cache=cache) as handle:
            binds.append(_binds(handle.con))
            assert _contents(handle.con) == want
    assert set(binds[0].values()) == {"by name"}
    # Compacted files, the index and the loose files of night-3: two or more of each.
    views = ["commits", *(f"files_{t}" for t in ("runs", "results", "timeseries", "percentiles"))]
    views.append("files_uncompacted_runs")  # the loose part of `runs` (`gang.has_gangs`)
    assert binds[1] == dict.fromkeys(views, "one schema")
    # The next compaction folds night-3's files in: their digests are forgotten. Its new
    # files are described before the views are made (`footers.complete`): the first
    # connect after it still binds each table from one footer.
    compact(store, grace=timedelta(0))
    snapcache.clear_memory()
    with connect(str(lake), snapshot_cache=cache) as handle:
        assert _contents(handle.con) == want
        assert _binds(handle.con) == dict.fromkeys(views[:-1], "one schema")
    kept = footers.kept(cache, store)
    assert kept and not [k for k in kept if k.startswith("results/")]


def _parquet(table: pa.Table) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def test_files_that_differ_in_schema_keep_binding_by_name(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    a = pa.table({"run_id": ["r1"], "iops": [1.0]})
    store.put("x/a.parquet", _parquet(a))
    store.put("x/b.parquet", _parquet(a))
    store.put("x/c.parquet", _parquet(pa.table({"run_id": ["r2"], "iops": [2]})))  # int64
    store.put("x/d.parquet", _parquet(pa.table({"iops": [3.0], "run_id": ["r3"]})))  # order
    keys = ["x/a.parquet", "x/b.parquet", "x/c.parquet", "x/d.parquet"]
    cache = tmp_path / "cache"
    con = duckdb.connect()
    footers.learn(con, store, cache, {}, keys, keys)
    kept = footers.kept(cache, store)
    assert set(kept) == set(keys)
    assert footers.one_schema(kept, ["x/a.parquet", "x/b.parquet"])
    assert not footers.one_schema(kept, ["x/a.parquet", "x/c.parquet"])
    assert not footers.one_schema(kept, ["x/a.parquet", "x/d.parquet"])
    assert not footers.one_schema(kept, ["x/a.parquet", "x/unknown.parquet"])
    assert not footers.one_schema(kept, ["x/a.parquet"])  # one file: nothing to line up
    # `complete` describes a group's few new files when its kept files agree, only then.
    a, b, c = keys[:3]
    both = {a: kept[a], b: kept[b]}
    assert footers.complete(con, store, [[a, b, c]], both) == {c: kept[c]}
    assert footers.complete(con, store, [keys], {a: kept[a], c: kept[c]}) == {}  # they differ
    assert footers.complete(con, store, [keys], {a: kept[a]}) == {}  # one kept: no agreement
    assert footers.complete(con, store, [[a, b]], both) == {}  # nothing new
    # Held no longer: forgotten; a damaged cache file: nothing kept.
    footers.learn(con, store, cache, kept, ["x/a.parquet"], ["x/a.parquet"])
    assert set(footers.kept(cache, store)) == {"x/a.parquet"}
    next(cache.glob("schemas-*.json")).write_text("{not json")
    assert footers.kept(cache, store) == {}
