"""`lake prune --keep-timeseries`: a Delta DELETE of old per-second rows, then a new generation.

Local and on the real MinIO (TLS, private CA): old runs lose their timeseries rows, recent
ones and every other table keep theirs, commits/ and results/ are untouched, compaction
does not bring the rows back, DuckDB `delta_scan` and fiolake's views read every table,
and the runner and publisher roles are refused."""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.aggregator.lake import delta
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation_number
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.lake.prune import prune_timeseries
from fiolake.cli import cli
from fiolake.errors import AccessDenied, LakeError, UsageProblem
from fiolake.layout import generation_key
from fiolake.store import ObjectStore, open_store
from tests.aggregator import lakegen
from tests.aggregator.lake.test_delta_readers import read_duckdb

KEEP = timedelta(days=90)
COUNTS = """
    SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM results),
           (SELECT count(*) FROM percentiles), (SELECT count(*) FROM commits),
           (SELECT count(DISTINCT run_id) FROM timeseries)
"""


def build(store: ObjectStore, compactor: ObjectStore | None = None) -> None:
    """Two runs from 2025 (old) and one from today, 3 s of timeseries each; compacted
    (with `compactor`'s credentials when given)."""
    lakegen.write_run(store, run_id="old-1", job_id="j1")
    lakegen.write_run(store, run_id="old-2", job_id="j2", started_at=lakegen.T0 + KEEP)
    lakegen.write_run(store, run_id="new-1", job_id="j3", started_at=datetime.now(UTC))
    compact(compactor or store, grace=timedelta(0))


def untouched(store: ObjectStore) -> dict[str, str]:
    """Every object outside compacted/ with its ETag (what prune must never change)."""
    out = {}
    for key in store.list(""):
        if not key.startswith("compacted/"):
            info = store.head(key)
            out[key] = info.etag if info else ""
    return out


def check_pruned(url: str, store: ObjectStore, s3: object = None) -> None:
    with connect(url, s3) as lake:  # type: ignore[arg-type]
        assert lake.con.sql(COUNTS).fetchone() == (3, 3, 6, 3, 1)
        assert lake.con.sql("SELECT DISTINCT run_id FROM timeseries").fetchall() == [("new-1",)]
    for table in ("runs", "results", "timeseries", "percentiles", "commits"):
        assert read_duckdb(store, table).num_rows > 0, table  # an outside reader, via Delta


def test_prune_deletes_old_timeseries_rows_only(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    build(store)
    before = untouched(store)
    with connect(str(tmp_path / "lake")) as lake:
        assert lake.con.sql(COUNTS).fetchone() == (3, 3, 6, 3, 3)
    report = prune_timeseries(store, KEEP)
    assert report.deleted_rows == 2 * 3 and report.rows == 3 and report.generation == 2
    check_pruned(str(tmp_path / "lake"), store)
    assert untouched(store) == before
    assert compact(store, grace=timedelta(0)).merged == []  # the rows do not come back
    check_pruned(str(tmp_path / "lake"), store)
    again = prune_timeseries(store, KEEP)
    assert (again.deleted_rows, again.generation) == (0, None)


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_interrupted_prune_is_finished_by_compaction(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    build(store)
    dt = delta.open_table(store, "timeseries")
    assert dt is not None
    dt.delete("run_id = 'old-1'")  # the DELETE committed, the manifest never written
    with pytest.raises(
        LakeError,
        match=r"changed since the last compaction .*run `fiolake lake compact`, then prune",
    ):
        prune_timeseries(store, KEEP)
    compact(store, grace=timedelta(0))
    assert prune_timeseries(store, KEEP).deleted_rows == 3
    check_pruned(str(tmp_path / "lake"), store)


def test_prune_needs_a_compacted_lake_and_a_window_of_days(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    lakegen.write_run(store, run_id="old-1", job_id="j1")
    with pytest.raises(LakeError, match="no compacted timeseries table in .* lake compact"):
        prune_timeseries(store, KEEP)
    with pytest.raises(UsageProblem, match="under a day"):
        prune_timeseries(store, timedelta(hours=3))


def test_cli_prune(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path / "lake")
    build(store)
    args = ["lake", "prune", "--lake", str(tmp_path / "lake"), "--keep-timeseries"]
    res = CliRunner().invoke(cli, [*args, "90d"])
    assert res.exit_code == 0, res.output
    # The cutoff day as the UTC instant it starts (fiolake.timetext's spelling).
    assert re.fullmatch(
        r"deleted 6 timeseries row\(s\) of runs started before \d{4}-\d\d-\d\dT00:00Z; "
        r"3 row\(s\) kept; generation 2; done in \d+\.\d\d (ms|s)\n",
        res.stderr,
    ), res.stderr
    res = CliRunner().invoke(cli, [*args, "ninety"])
    assert res.exit_code == 2
    assert "Invalid value for '--keep-timeseries': 'ninety' is not a duration" in res.stderr


@pytest.mark.stack
def test_prune_on_minio_roles(stack) -> None:  # noqa: ANN001
    url = f"{stack.lake}/prune-{secrets.token_hex(4)}"
    admin, compactor = (open_store(url, stack.s3_settings(r)) for r in ("admin", "compactor"))
    build(admin, compactor)
    before = untouched(admin)
    for role in ("runner", "publisher"):
        refused = "access denied .* lake prune needs the compactor's credentials"
        with pytest.raises(AccessDenied, match=refused):
            prune_timeseries(open_store(url, stack.s3_settings(role)), KEEP)
    report = prune_timeseries(compactor, KEEP)
    assert report.deleted_rows == 6 and report.generation == 2
    with delta.mapped_errors(compactor):
        check_pruned(url, compactor, stack.s3_settings("analyst"))
    assert untouched(admin) == before


def test_covered_ids_of_a_pruned_table_are_not_rebuilt_from_its_files(tmp_path: Path) -> None:
    """A pruned table's files no longer name the runs it covers: rebuilding its ids from
    them would append the pruned rows again, so compaction stops and says why."""
    store = lakegen.local_store(tmp_path / "lake")
    build(store)
    assert prune_timeseries(store, KEEP).generation == 2
    ids_key = json.loads(store.get(generation_key(2))[0])["keys_file"]
    store.delete(ids_key)
    with pytest.raises(LakeError) as caught:
        compact(store, grace=timedelta(0))
    assert str(caught.value) == (
        "the covered ids of the compacted timeseries table cannot be rebuilt from its files: "
        "`lake prune` deleted rows from it — restore the generation's covered-ids object "
        "(e.g. from a bucket version), then run `fiolake lake compact` again"
    )
    assert latest_generation_number(store) == 2  # nothing written
