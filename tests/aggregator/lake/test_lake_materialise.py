"""What a connection holds goes into DuckDB without pandas, and only the views asked for.

`lake.connect` puts the commit index and each table's empty contract into DuckDB through
Parquet files, and binds filter values as literals: DuckDB's Python client imports
pyarrow.dataset and pandas to take Arrow data or to bind a parameter (0.1-0.3 s of every
command that reads the lake; BENCHMARKS.md, issue 24).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fiolake.aggregator.lake import lake as lake_module
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import SUMMARY_TABLES, connect, literal
from fiolake.aggregator.lake.snapshot import COMMITS_SCHEMA
from fiolake.aggregator.lake.sqltext import column_definitions
from fiolake.layout import TABLES
from fiolake.schema import SCHEMAS
from tests.aggregator import lakegen

READ = ("job1", "read")


def _described(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {name}").fetchall()]


@pytest.mark.parametrize("name", [*TABLES, "commits"])
def test_through_parquet_the_types_are_those_of_arrow(name: str, tmp_path: Path) -> None:
    schema = COMMITS_SCHEMA if name == "commits" else SCHEMAS[name]
    if name != "commits":  # as connect makes each table's contract
        schema = schema.append(pa.field("date", pa.date32()))
    rows = pa.Table.from_pylist([{f.name: None for f in schema}], schema=schema)
    con = lake_module.new_connection(None)
    lake_module._materialise(con, "via_parquet", rows, tmp_path)
    lake_module._materialise(con, "via_arrow", rows, None)
    assert _described(con, "via_parquet") == _described(con, "via_arrow")
    assert con.execute("SELECT count(*) FROM via_parquet").fetchone() == (1,)
    assert list(tmp_path.iterdir()) == []  # the file is gone once read
    # No rows: the columns are declared, as those types.
    lake_module._materialise(con, "declared", rows.slice(0, 0), None)
    assert _described(con, "declared") == _described(con, "via_parquet")
    assert con.execute("SELECT count(*) FROM declared").fetchone() == (0,)


def test_an_empty_table_of_a_type_not_declared_goes_through_parquet(tmp_path: Path) -> None:
    schema = pa.schema([("run_id", pa.string()), ("ratio", pa.float32())])
    assert column_definitions(schema) is None
    con = lake_module.new_connection(None)
    lake_module._materialise(con, "t", pa.Table.from_batches([], schema), tmp_path)
    assert _described(con, "t") == [("run_id", "VARCHAR"), ("ratio", "FLOAT")]


def test_a_key_value_folder_in_the_temp_path_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TMPDIR=/…/run_id=x must not become a `run_id` column of the commits (hive
    partitioning would overwrite every run id with 'x': an empty lake, no error)."""
    store = lakegen.local_store(tmp_path / "lake")
    lakegen.write_campaign(store, "night-1", {"nvme": {READ: {"iops": 1000}}}, 2)
    scratch = tmp_path / "run_id=x" / "date=2020-01-01"
    scratch.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with connect(str(tmp_path / "lake")) as lake:
        assert lake.con.execute("SELECT count(*) FROM runs").fetchone() == (2,)
        assert [name for name, _ in _described(lake.con, "commits")] == COMMITS_SCHEMA.names
        runs = lake.con.execute("SELECT count(DISTINCT run_id) FROM commits").fetchone()
        assert runs == (2,)


def test_an_unwritable_scratch_directory_falls_back_to_arrow(tmp_path: Path) -> None:
    con = lake_module.new_connection(None)
    missing = tmp_path / "gone"  # pq.write_table raises OSError (FileNotFoundError)
    lake_module._materialise(con, "commits", COMMITS_SCHEMA.empty_table(), missing)
    assert _described(con, "commits")[0] == ("job_id", "VARCHAR")


def test_comparing_a_campaign_imports_neither_pandas_nor_pyarrow_dataset(tmp_path: Path) -> None:
    """With an empty snapshot cache (a CI runner's first command) and with the snapshot
    from the cache, with runs committed since the compaction: a compacted lake's covered
    ids arrive as Arrow arrays (generation format 3) and new markers become Arrow through
    its JSON reader, so nothing builds Arrow arrays of Python objects, for which pyarrow
    imports pandas."""
    lake = tmp_path / "lake"
    store = lakegen.local_store(lake)
    metrics = {"nvme": {READ: {"iops": 1000}}, "ceph": {READ: {"iops": 500}}}
    lakegen.write_campaign(store, "night-1", metrics, 3)
    compact(store, grace=timedelta(0))
    # A night since: markers to read and per-run files to list (commits_table, Arrow sets).
    lakegen.write_campaign(store, "night-2", metrics, 1, start=lakegen.T0 + timedelta(days=1))
    probe = f"""
import json, sys
from pathlib import Path
from fiolake.aggregator.stats.compare import compare
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.lake.lake import SUMMARY_TABLES, connect
cache = Path({str(tmp_path / "cache")!r})
with connect({str(lake)!r}, tables=SUMMARY_TABLES, snapshot_cache=cache) as lake:
    rows = compare(lake, filt=RunFilter(campaign="night-1", backends=("nvme", "ceph"))).rows
print(json.dumps([len(rows), sorted(m for m in ("pandas", "pyarrow.dataset") if m in sys.modules)]))
"""
    answers = []
    for _ in range(2):  # the first fills the snapshot cache
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        answers.append(json.loads(done.stdout))
    assert answers == [[8, []], [8, []]]  # 2 backends × 4 metrics, nothing heavy imported


def test_tables_limits_the_views_and_the_gang_views_that_need_the_rest(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_campaign(store, "night-1", {"nvme": {READ: {"iops": 1000}}}, 2)
    with connect(str(tmp_path), tables=SUMMARY_TABLES) as lake:
        views = {r[0] for r in lake.con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        assert {"runs", "results", "gang_members"} <= views
        assert not views & {"timeseries", "percentiles", "gang_seconds", "gang_results"}
        assert set(lake.files) == set(SUMMARY_TABLES)
        assert lake.con.execute("SELECT count(*) FROM results").fetchone() == (2,)
    with connect(str(tmp_path)) as lake:  # by default every table and gang view
        views = {r[0] for r in lake.con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        assert {*TABLES, "gang_members", "gang_seconds", "gang_results"} <= views
    with pytest.raises(ValueError, match="not lake tables: runz"):
        connect(str(tmp_path), tables=("runz",))


@given(st.text())
def test_a_string_literal_reads_back_as_itself(text: str) -> None:
    con = duckdb.connect()
    assert con.execute(f"SELECT {literal(text)}").fetchone() == (text,)


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 1),
        max_value=datetime(2200, 1, 1),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7, minutes=-30))]),
    )
)
def test_a_time_literal_is_that_instant(at: datetime) -> None:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    assert con.execute(f"SELECT {literal(at)}").fetchone() == (at.astimezone(UTC),)


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="naive"):
        literal(datetime(2026, 1, 1))


@pytest.mark.parametrize(
    "command",
    [
        ["gate", "--campaign", "night-3", "--baseline-campaign", "night-2"],
        ["regressions", "--since", "all"],
        ["trend", "--metric", "iops"],
        ["env-diff", "--run", "night-1-nvme-r0", "--run", "night-3-nvme-r0"],
    ],
)
def test_the_judging_commands_import_no_pandas(tmp_path: Path, command: list[str]) -> None:
    """Their queries' values are written in as literals: DuckDB binding one imported
    pandas, 0.2-0.5 s of a gate (issue 44)."""
    store = lakegen.local_store(tmp_path)
    for night in range(1, 4):
        start = lakegen.T0 + timedelta(days=night)
        lakegen.write_campaign(store, f"night-{night}", {"nvme": {READ: {"iops": 1000}}}, 3,
                               start=start, jitter=0.02)  # fmt: skip
    probe = f"""
import sys
from click.testing import CliRunner
from fiolake.cli import cli
done = CliRunner().invoke(cli, {[*command, "--lake", str(tmp_path)]!r})
print(done.exit_code, "pandas" in sys.modules, done.output[-300:] if done.exit_code else "")
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" ", 2)[:2] == ["0", "False"], done.stdout
