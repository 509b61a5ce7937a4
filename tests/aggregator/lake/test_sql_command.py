"""`fiolake sql`: formats, human units, exact errors, row cap, time limit, read-only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli


def sql(lake: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["sql", *args, "--lake", str(lake)])
    return result.exit_code, result.stdout, result.stderr


def test_table_shows_human_units_csv_and_json_raw(two_backends: Path) -> None:
    query = (
        "SELECT backend, avg(bw_bytes) AS bw_bytes, avg(clat_mean_ns) AS clat_mean_ns "
        "FROM results WHERE direction = 'read' GROUP BY backend ORDER BY backend"
    )
    code, out, _ = sql(two_backends, query)
    assert code == 0
    assert out.splitlines()[2].split() == ["a", "3.9", "MiB/s", "904.54", "µs"]
    code, out, _ = sql(two_backends, query, "--format", "csv")
    assert out.splitlines()[:2] == [
        "backend,bw_bytes,clat_mean_ns",
        "a,4075520.0,904537.8407187453",
    ]
    code, out, _ = sql(two_backends, query, "--format", "json")
    assert json.loads(out)[1]["backend"] == "b"


def test_bound_parameters_are_not_sql(two_backends: Path) -> None:
    from fiolake.aggregator.lake.lake import connect
    from fiolake.aggregator.lake.query import run_query

    with connect(str(two_backends)) as lake:
        res = run_query(lake, "SELECT count(*) FROM runs WHERE backend = ?", ["a' OR 'x'='x"])
        assert res.rows == [(0,)]
        res = run_query(lake, "SELECT count(*) AS n FROM runs WHERE backend = $b", {"b": "a"})
        assert (res.columns, res.rows) == (["n"], [(3,)])


def test_bad_sql_is_an_sql_error(two_backends: Path) -> None:
    code, out, err = sql(two_backends, "SELECT nope FROM runs")
    assert code == 1 and out == ""
    assert err.startswith('Error: SQL error: Binder Error: Referenced column "nope" not found')


def test_empty_lake(tmp_path: Path) -> None:
    code, _, err = sql(tmp_path / "nothing", "SELECT 1")
    assert code == 1
    assert err == (
        f"Error: no results in lake {tmp_path / 'nothing'}: "
        "run `fiolake run` (or start runners) first\n"
    )


@pytest.mark.parametrize(
    "statement, kind",
    [
        ("COPY (SELECT 1) TO 'out.csv'", "COPY"),
        ("CREATE TABLE t AS SELECT 1", "CREATE"),
        ("INSERT INTO commits SELECT * FROM commits", "INSERT"),
        ("ATTACH 'x.db'", "ATTACH"),
        ("INSTALL httpfs", "LOAD"),
        ("LOAD httpfs", "LOAD"),
        ("SET threads = 1", "SET"),
    ],
)
def test_writes_are_refused(two_backends: Path, statement: str, kind: str) -> None:
    code, _, err = sql(two_backends, statement)
    assert code == 1
    assert err == (
        f"Error: refusing a {kind} statement: the lake is read-only here "
        "(use SELECT, WITH … SELECT, DESCRIBE, SHOW or EXPLAIN)\n"
    )


def test_two_statements_are_refused(two_backends: Path) -> None:
    code, _, err = sql(two_backends, "SELECT 1; SELECT 2")
    assert (code, err) == (1, "Error: the query has 2 statements: run one statement at a time\n")


def test_row_cap_truncates_with_a_note(two_backends: Path) -> None:
    code, out, err = sql(
        two_backends, "SELECT * FROM range(10) t(n)", "--max-rows", "4", "--format", "csv"
    )
    assert code == 0
    assert out.splitlines() == ["n", "0", "1", "2", "3"]
    assert err == "truncated: showing the first 4 rows (raise --max-rows or add LIMIT)\n"


def test_slow_query_is_interrupted(two_backends: Path) -> None:
    slow = "SELECT count(*) FROM range(1000000000) a, range(100000) b WHERE a.range + b.range = 7"
    code, _, err = sql(two_backends, slow, "--timeout", "1")
    assert code == 1
    assert err == (
        "Error: query exceeded the 1 s time limit: narrow it (WHERE, LIMIT) "
        "or raise the limit (--timeout)\n"
    )


def test_duckdb_threads_caps_every_lake_connection(
    two_backends: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = ("SELECT current_setting('threads') AS t", "--format", "csv")
    monkeypatch.setenv("FIOLAKE_DUCKDB_THREADS", "3")
    assert sql(two_backends, *query)[:2] == (0, "t\n3\n")
    monkeypatch.delenv("FIOLAKE_DUCKDB_THREADS")  # DuckDB's own default: one per core
    assert sql(two_backends, *query)[:2] == (0, f"t\n{os.cpu_count()}\n")
