"""The lake views: committed runs only, empty tables, empty lakes, sandboxing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.aggregator.lake import snapcache
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import connect, new_connection
from fiolake.cli import cli
from fiolake.errors import LakeError
from fiolake.s3client import S3Settings
from fiolake.schema import SCHEMAS
from fiolake.views import GRAINS, VIEWS
from tests.aggregator import lakegen


def test_views_show_only_committed_runs(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_run(store, run_id="r1", job_id="j1", metrics={("j", "read"): {"iops": 10}})
    # a losing second attempt at j1 and an attempt that never committed
    lakegen.write_run(store, run_id="r1-retry", job_id="j1", commit=False)
    lakegen.write_run(store, run_id="r2-dead", job_id="j2", commit=False)
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql("SELECT run_id FROM runs").fetchall() == [("r1",)]
        assert lake.con.sql("SELECT run_id, iops FROM results").fetchall() == [("r1", 10.0)]
        assert lake.con.sql("SELECT count(DISTINCT run_id) FROM timeseries").fetchone() == (1,)
        assert lake.con.sql("SELECT job_id, run_id FROM commits").fetchall() == [("j1", "r1")]
        assert lake.snapshot.orphan_files == 8


def test_compacted_rows_are_read_without_the_commit_filter_and_loose_ones_with_it(
    tmp_path: Path,
) -> None:
    """Compaction appends committed runs only, so the Delta files are read as they are:
    the filter against every committed run id cost 0.2 s of each query at 1,000,000 runs
    (issue 44). Runners' files still pass it: a lost or dead attempt stays hidden."""
    store = lakegen.local_store(tmp_path)
    lakegen.write_run(store, run_id="r1", job_id="j1", metrics={("j", "read"): {"iops": 10}})
    lakegen.write_run(store, run_id="r1-retry", job_id="j1", commit=False)
    compact(store, grace=timedelta(0))
    lakegen.write_run(store, run_id="r2", job_id="j2", metrics={("j", "read"): {"iops": 20}})
    lakegen.write_run(store, run_id="r3-dead", job_id="j3", commit=False)
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql("SELECT run_id, iops FROM results ORDER BY 1").fetchall() == [
            ("r1", 10.0),
            ("r2", 20.0),
        ]
        assert lake.con.sql("SELECT run_id FROM runs ORDER BY 1").fetchall() == [("r1",), ("r2",)]
        union = lake.con.sql(
            "SELECT sql FROM duckdb_views() WHERE view_name = 'files_results'"
        ).fetchone()[0]
    compacted, loose = union.split("UNION ALL BY NAME")
    assert "/compacted/" in compacted and "commits" not in compacted
    assert "/results/" in loose and "commits" in loose


def test_a_connected_lake_holds_exactly_the_views_sql_help_lists(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_run(store, run_id="r1", job_id="j1")
    with connect(str(tmp_path)) as lake:
        names = lake.con.sql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()
    assert sorted(n for (n,) in names) == sorted(VIEWS) == sorted(GRAINS)
    helped = CliRunner().invoke(cli, ["sql", "--help"])
    assert helped.exit_code == 0, helped.output
    listed = [line.split()[0] for line in helped.output.splitlines() if line.startswith("    ")]
    assert [name for name in VIEWS if name not in listed] == []


def test_views_have_contract_columns_and_date(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_run(store, run_id="r1", job_id="j1")
    with connect(str(tmp_path)) as lake:
        for table, schema in SCHEMAS.items():
            cols = [r[0] for r in lake.con.sql(f"DESCRIBE {table}").fetchall()]
            assert cols == [*schema.names, "date"]
        assert lake.con.sql("SELECT date FROM runs").fetchone()[0].isoformat() == "2025-03-01"


def test_the_commit_index_is_read_in_place_and_only_markers_beyond_it_are_loaded(
    tmp_path: Path,
) -> None:
    """`commits` reads the generation's commit index from its files (loading it into a
    table cost 0.25-0.34 s of a connect at 100,000 runs, issue 44); only the markers
    committed since are a table. Rows, their order and types are the snapshot's, with the
    snapshot scanned and with it (or the index) from the cache directory."""
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    store = lakegen.local_store(lake)
    metrics = {"nvme": {("job1", "read"): {"iops": 1000.0}}}

    def check(campaigns: list[str], beyond: int) -> None:
        for _ in range(2):  # the first scans and fills the cache, the second reads it
            snapcache.clear_memory()  # from the directory, as the next process does
            with connect(str(lake), snapshot_cache=cache) as handle:
                assert handle.compacted is not None
                assert len(handle.compacted.commit_files()) == 2
                con = handle.con
                got = con.sql("SELECT * FROM commits").fetchall()
                assert got == [tuple(r.values()) for r in handle.snapshot.commits.to_pylist()]
                assert sorted(r[2] for r in got) == campaigns
                new = con.sql("SELECT count(*) FROM _fiolake.new_commits").fetchone()
                assert new == (beyond,)
                kind = "SELECT table_type FROM information_schema.tables WHERE table_name = "
                assert con.sql(kind + "'commits'").fetchall() == [("VIEW",)]
                assert [tuple(r[:2]) for r in con.sql("DESCRIBE commits").fetchall()] == [
                    *((name, "VARCHAR") for name in ("job_id", "run_id", "campaign_id")),
                    *((name, "VARCHAR") for name in ("runner", "status")),
                    ("committed_at", "TIMESTAMP WITH TIME ZONE"),
                ]
                assert con.sql("SELECT count(*) FROM runs").fetchone() == (len(campaigns),)

    lakegen.write_campaign(store, "night-1", metrics, 3)
    compact(store, grace=timedelta(0))
    lakegen.write_campaign(store, "night-2", metrics, 2, start=lakegen.T0 + timedelta(days=1))
    compact(store, grace=timedelta(0))  # the index is now two files
    check(["night-1"] * 3 + ["night-2"] * 2, 0)
    lakegen.write_campaign(store, "night-3", metrics, 2, start=lakegen.T0 + timedelta(days=2))
    check(["night-1"] * 3 + ["night-2"] * 2 + ["night-3"] * 2, 2)


def test_table_without_files_is_an_empty_view(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    # a rejected run writes a runs row only (results etc. are empty tables) ...
    lakegen.write_run(store, run_id="r1", job_id="j1", status="rejected")
    # ... and here the timeseries/percentiles files are missing altogether
    for key in list(store.list("results/timeseries/")) + list(store.list("results/percentiles/")):
        (tmp_path / key).unlink()
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql("SELECT status FROM runs").fetchall() == [("rejected",)]
        assert lake.con.sql("SELECT count(*) FROM timeseries").fetchone() == (0,)
        cols = [r[0] for r in lake.con.sql("DESCRIBE percentiles").fetchall()]
        assert cols == [*SCHEMAS["percentiles"].names, "date"]


@pytest.mark.parametrize("make", ["missing", "empty", "only-orphans"])
def test_empty_lake_is_a_clear_error(tmp_path: Path, make: str) -> None:
    root = tmp_path / "lake"
    if make != "missing":
        root.mkdir()
    if make == "only-orphans":
        lakegen.write_run(lakegen.local_store(root), run_id="r1", job_id="j1", commit=False)
    with pytest.raises(LakeError) as err:
        connect(str(root))
    assert str(err.value) == (
        f"no results in lake {root}: run `fiolake run` (or start runners) first"
    )


def test_queries_cannot_read_outside_the_lake(tmp_path: Path) -> None:
    lakegen.write_run(lakegen.local_store(tmp_path / "lake"), run_id="r1", job_id="j1")
    (tmp_path / "secret.csv").write_text("a\n1\n")
    with connect(str(tmp_path / "lake")) as lake, pytest.raises(Exception, match="disabled"):
        lake.con.sql(f"SELECT * FROM read_csv('{tmp_path / 'secret.csv'}')").fetchall()


def test_s3_connections_cache_what_the_docs_say_without_revalidation() -> None:
    con = new_connection(S3Settings(endpoint="https://127.0.0.1:9"))
    # Questions run on cursors (Lake.cursor: new connections), which must cache too.
    for each in (con, con.cursor()):
        settings = dict(
            each.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN "
                "('parquet_metadata_cache', 'enable_http_metadata_cache', "
                "'validate_external_file_cache')"
            ).fetchall()
        )
        assert settings == {
            "parquet_metadata_cache": "true",
            "enable_http_metadata_cache": "true",
            "validate_external_file_cache": "NO_VALIDATION",
        }
