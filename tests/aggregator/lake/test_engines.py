"""docs/engines.md is what `aggregator.lake.engines` renders, and its DuckDB SQL, run on a lake
written by real fio, answers what `fiolake sql` and `compare` answer (Spark: test_spark.py)."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import duckdb_extension_delta
import pyarrow as pa
import pytest

from fiolake.aggregator.lake import engines, gang
from fiolake.aggregator.lake.lake import connect, extension_file, quote
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats.compare import compare
from fiolake.errors import UsageProblem
from tests.aggregator.answer_rows import Rows, canonical
from tests.aggregator.conftest import FioLakes

DOC = Path(__file__).resolve().parent.parents[2] / "docs" / "engines.md"


def fiolake_rows(lake: Path, table: str) -> pa.Table:
    """What `fiolake sql 'SELECT * FROM <table>'` reads."""
    with connect(str(lake)) as handle:
        return handle.con.execute(f"SELECT * FROM {table}").to_arrow_table()


def library_geomeans(lake: Path, metric: str) -> dict[tuple[str, str, str, str], float]:
    """(backend, profile, job, direction) -> the geometric mean `compare` reports."""
    with connect(str(lake)) as handle:
        result = compare(handle, metrics=[metric], filt=RunFilter())
    return {
        (r.group, r.profile, r.job_name, r.direction): r.geomean
        for r in result.rows
        if r.geomean is not None
    }


def assert_same_geomeans(rows: Rows, expected: dict[tuple[str, str, str, str], float]) -> None:
    got = {tuple(r[:4]): float(r[5]) for r in rows}
    assert set(got) == set(expected) and expected
    for key, value in expected.items():
        assert math.isclose(got[key], value, rel_tol=1e-9), key


def _duckdb(statements: list[str]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"LOAD {quote(str(extension_file(duckdb_extension_delta, 'delta')))}")
    for sql in statements:
        con.execute(sql)
    return con


def test_docs_engines_md_is_current() -> None:
    assert DOC.read_text() == engines.document(), (
        "docs/engines.md is stale: "
        ".venv/bin/python -m fiolake.aggregator.lake.engines > docs/engines.md"
    )


def test_unknown_engine_is_a_usage_problem() -> None:
    with pytest.raises(UsageProblem, match="unknown engine 'presto': choose from duckdb, spark"):
        engines.compare_core("iops", "presto")


@pytest.mark.slow  # the fio lake of every table takes ~15 s to write
@pytest.mark.parametrize("layer", ["compacted", "loose"])
def test_duckdb_reads_every_table_as_fiolake_sql(fio_lakes: FioLakes, layer: str) -> None:
    lake = getattr(fio_lakes, layer)
    if layer == "compacted":
        statements = [engines.register_delta("duckdb", str(lake), t) for t in engines.tables()]
    else:
        statements = engines.register_loose("duckdb", str(lake), "commits")
        for t in engines.tables()[:-1]:
            statements += engines.register_loose("duckdb", str(lake), t)
    con = _duckdb(statements)
    try:
        for table in engines.tables():
            ours = fiolake_rows(lake, table)
            theirs = con.execute(f"SELECT * FROM {table}").to_arrow_table()
            assert ours.num_rows > 0, table
            assert set(ours.column_names) <= set(theirs.column_names), table
            cols = ours.column_names
            assert canonical(theirs, cols) == canonical(ours, cols), table
    finally:
        con.close()


@pytest.mark.slow  # the fio lake of every table takes ~15 s to write
def test_duckdb_compare_core_and_gang_views(fio_lakes: FioLakes) -> None:
    lake = str(fio_lakes.compacted)
    statements = [engines.register_delta("duckdb", lake, t) for t in engines.tables()]
    con = _duckdb(statements)
    try:
        gang.register_functions(con)
        for sql in engines.gang_views("duckdb"):
            con.execute(sql)
        assert con.execute("SELECT count(*) FROM gang_results").fetchone() == (0,)
        for metric in ("iops", "clat_p99_ns"):
            rows = con.execute(engines.compare_core(metric, "duckdb")).fetchall()
            assert_same_geomeans(rows, library_geomeans(fio_lakes.compacted, metric))
    finally:
        con.close()
