"""Spark (local mode, Delta 4.4) reads a lake written by real fio: every compacted Delta
table row for row as `fiolake sql` has it, the loose per-run Parquet joined with the
commit markers, the compare core and gang views of docs/engines.md, and a lake after
`lake prune`. One Spark
session for the whole test session (the `spark` fixture, tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from fiolake.aggregator.lake import engines
from fiolake.aggregator.lake.prune import prune_timeseries
from tests.aggregator import lakegen
from tests.aggregator.answer_rows import canonical
from tests.aggregator.conftest import FioLakes
from tests.aggregator.lake.test_engines import assert_same_geomeans, fiolake_rows, library_geomeans
from tests.aggregator.lake.test_prune import KEEP, build

pytestmark = pytest.mark.spark
TABLES_BUILT = ["runs", "results", "timeseries", "percentiles", "commits"]  # what lakegen writes


def _register(spark: Any, statements: list[str]) -> None:
    for sql in statements:
        spark.sql(sql)


def _spark_rows(spark: Any, table: str) -> pa.Table:
    return spark.table(table).toArrow()


def test_every_delta_table_equals_fiolake_sql(spark: Any, fio_lakes: FioLakes) -> None:
    lake = str(fio_lakes.compacted)
    _register(spark, [engines.register_delta("spark", lake, t) for t in engines.tables()])
    for table in engines.tables():
        ours = fiolake_rows(fio_lakes.compacted, table)
        theirs = _spark_rows(spark, table)
        assert ours.num_rows > 0, table
        assert theirs.column_names == ours.column_names, table
        assert canonical(theirs, ours.column_names) == canonical(ours, ours.column_names), table


def test_loose_parquet_joined_with_commit_markers(spark: Any, fio_lakes: FioLakes) -> None:
    lake = str(fio_lakes.loose)
    statements = engines.register_loose("spark", lake, "commits")
    for table in engines.tables()[:-1]:
        statements += engines.register_loose("spark", lake, table)
    _register(spark, statements)
    for table in engines.tables()[:-1]:
        ours = fiolake_rows(fio_lakes.loose, table)
        theirs = _spark_rows(spark, table)
        orphans = spark.sql(f"SELECT count(*) FROM fiolake_files_{table} WHERE run_id = 'r-orphan'")
        assert orphans.collect()[0][0] > 0, table  # the join is what leaves them out
        cols = ours.column_names
        assert set(cols) <= set(theirs.column_names), table
        assert canonical(theirs, cols) == canonical(ours, cols), table


def test_compare_core_and_gang_views_on_spark_sql(spark: Any, fio_lakes: FioLakes) -> None:
    lake = str(fio_lakes.compacted)
    _register(spark, [engines.register_delta("spark", lake, t) for t in engines.tables()])
    _register(spark, engines.gang_views("spark"))
    assert spark.sql("SELECT count(*) FROM gang_results").collect()[0][0] == 0
    for metric in ("iops", "clat_p99_ns"):
        rows = [tuple(r) for r in spark.sql(engines.compare_core(metric, "spark")).collect()]
        assert_same_geomeans(rows, library_geomeans(fio_lakes.compacted, metric))


def test_spark_reads_a_pruned_lake(spark: Any, tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    build(store)
    assert prune_timeseries(store, KEEP).deleted_rows > 0
    lake = str(tmp_path / "lake")
    _register(spark, [engines.register_delta("spark", lake, t) for t in TABLES_BUILT])
    for table in TABLES_BUILT:
        ours = fiolake_rows(tmp_path / "lake", table)
        theirs = _spark_rows(spark, table)
        assert canonical(theirs, ours.column_names) == canonical(ours, ours.column_names), table
    assert spark.sql("SELECT DISTINCT run_id FROM timeseries").collect()[0][0] == "new-1"
