"""Compaction: same answers before and after, at every interruption point, never doubled."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from fiolake import layout
from fiolake.aggregator.lake import generations, snapcache
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation
from fiolake.aggregator.lake.lake import connect
from fiolake.cli import cli
from tests.aggregator import lakegen

READ, WRITE = ("job1", "read"), ("job1", "write")
FINGERPRINT = """
    SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM results),
           (SELECT count(*) FROM timeseries), (SELECT count(*) FROM percentiles),
           (SELECT sum(iops) FROM results), (SELECT sum(iops) FROM timeseries),
           (SELECT count(*) FROM commits),
           (SELECT string_agg(run_id, ',' ORDER BY run_id) FROM runs)
"""
ZERO = timedelta(0)


class Interrupt(Exception):
    pass


def build(root: Path) -> lakegen.LocalStore:
    store = lakegen.local_store(root)
    metrics = {"a": {READ: {"iops": 1000}, WRITE: {"iops": 200}}, "b": {READ: {"iops": 800}}}
    lakegen.write_campaign(store, "c1", metrics, 3, jitter=0.05)
    lakegen.write_campaign(store, "c2", metrics, 2, start=lakegen.T0 + timedelta(days=1))
    lakegen.write_run(
        store, run_id="lost", job_id="c1-a-j0", metrics={READ: {"iops": 1e6}}, commit=False
    )
    lakegen.write_run(
        store, run_id="dead", job_id="zz", metrics={READ: {"iops": 1e6}}, commit=False
    )
    lakegen.write_run(store, run_id="rej", job_id="rej", status="rejected")
    return store


def fingerprint(root: Path) -> tuple:
    with connect(str(root)) as lake:
        return lake.con.sql(FINGERPRINT).fetchone()


def compacted_objects(root: Path) -> set[str]:
    """Objects under compacted/ (not LocalStore's own dot-files, which it never lists)."""
    return {
        p.relative_to(root).as_posix()
        for p in (root / "compacted").rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def test_compaction_keeps_answers_and_reads_few_files(tmp_path: Path) -> None:
    store = build(tmp_path)
    before = fingerprint(tmp_path)
    assert before[0] == 11 and before[6] == 11
    report = compact(store, grace=ZERO)
    assert report.generation == 1
    # one Delta table per table, one data file each, with its own date column
    # (lakegen writes the first four tables only, as lakes did before disk_util & co.)
    # and the night summaries and run series that compaction derives from runs and results
    written = set(layout.TABLES[:4])
    summarised = {(table, 11, 11) for table in layout.DERIVED_TABLES}
    assert {(m.table, m.new_runs, m.runs) for m in report.merged} == {
        (t, 11, 11) for t in written
    } | summarised
    assert fingerprint(tmp_path) == before
    with connect(str(tmp_path)) as lake:
        assert all(len(keys) == (t in written) for t, keys in lake.files.items())
        for table, keys in lake.files.items():
            assert all(k.startswith(layout.delta_table_prefix(table)) for k in keys)
        for table in set(layout.TABLES) - written:  # older lakes: empty views, not errors
            assert lake.con.sql(f"SELECT count(*) FROM {table}").fetchone() == (0,)
        days = lake.con.sql("SELECT DISTINCT date::VARCHAR FROM timeseries ORDER BY 1").fetchall()
        assert days == [("2025-03-01",), ("2025-03-02",)]
        assert all(k.startswith("compacted/") for keys in lake.files.values() for k in keys)
    # nothing new: idempotent, nothing written
    assert compact(store, grace=ZERO).generation is None
    assert fingerprint(tmp_path) == before


def test_new_runs_after_compaction_are_read_once(tmp_path: Path) -> None:
    store = build(tmp_path)
    compact(store, grace=ZERO)
    lakegen.write_run(store, run_id="late", job_id="late", metrics={READ: {"iops": 5}})
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql("SELECT count(*) FROM runs WHERE run_id = 'late'").fetchone() == (1,)
        # the Delta table's file plus the new run's own file
        assert lake.files["runs"][1] == layout.result_key("runs", lakegen.T0, "late")
    grown = fingerprint(tmp_path)
    assert grown[0] == 12
    report = compact(store, grace=ZERO)
    assert [(m.table, m.new_runs, m.runs) for m in report.merged if m.table == "runs"] == [
        ("runs", 1, 12)
    ]
    assert fingerprint(tmp_path) == grown


def test_run_committed_days_after_it_started_is_found(tmp_path: Path) -> None:
    store = build(tmp_path)
    compact(store, grace=ZERO)
    # a run spooled for ten days: its files sit in the partition of its start date
    lakegen.write_run(
        store,
        run_id="spooled",
        job_id="spooled",
        started_at=lakegen.T0,
        committed_at=lakegen.T0 + timedelta(days=10),
    )
    lakegen.write_run(store, run_id="fresh", job_id="fresh", started_at=lakegen.T0)
    with connect(str(tmp_path)) as lake:
        found = lake.con.sql("SELECT run_id FROM runs WHERE run_id IN ('spooled', 'fresh')")
        assert sorted(found.fetchall()) == [("fresh",), ("spooled",)]
        assert lake.con.sql(
            "SELECT count(*) FROM timeseries WHERE run_id = 'spooled'"
        ).fetchone() == (3,)


@pytest.mark.parametrize("stage", ["files-written", "generation-written"])
def test_interrupted_compaction_then_rerun(tmp_path: Path, stage: str) -> None:
    store = build(tmp_path)
    before = fingerprint(tmp_path)

    def hook(reached: str) -> None:
        if reached == stage:
            raise Interrupt(stage)

    with pytest.raises(Interrupt):
        compact(store, grace=ZERO, hook=hook)
    assert fingerprint(tmp_path) == before  # readers see the old or the new state, whole
    rerun = compact(store, grace=ZERO)
    assert fingerprint(tmp_path) == before
    # the Delta tables already hold the interrupted compaction's rows: none appended twice
    assert rerun.merged == []
    assert rerun.generation == (1 if stage == "files-written" else None)
    with connect(str(tmp_path)) as lake:
        for table in layout.TABLES[:4]:
            views = lake.con.sql(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert DeltaTable(str(tmp_path / layout.delta_table_prefix(table))).count() == views
        live = {k for keys in lake.files.values() for k in keys}
        live |= {*lake.compacted.commit_files()}
        live |= {k for t in layout.DERIVED_TABLES for k in lake.compacted.files(t)}
        live.add(layout.generation_key(lake.compacted.generation))
        live.add(lake.compacted.keys_file)  # the covered ids the record names
        live.add(lake.compacted.cases_file)  # and its case summaries
        live.add(layout.COMPACTION_LOCK_KEY)  # released, kept: its token only ever grows
    data_files = {k for k in compacted_objects(tmp_path) if "/_delta_log/" not in k}
    assert data_files == live


def test_views_tolerate_deleted_small_files(tmp_path: Path) -> None:
    store = build(tmp_path)
    before = fingerprint(tmp_path)
    compact(store, grace=ZERO)
    for key in list(store.list("results/")):
        parsed = layout.parse_result_key(key)
        if parsed and parsed[2] not in ("lost", "dead"):
            (tmp_path / key).unlink()
    for key in list(store.list("commits/")):
        (tmp_path / key).unlink()  # the commit index stands in for the markers
    assert fingerprint(tmp_path) == before


def test_table_option_and_grace_period(tmp_path: Path) -> None:
    store = build(tmp_path)
    before = fingerprint(tmp_path)
    report = compact(store, tables=["timeseries"], grace=ZERO)
    assert {m.table for m in report.merged} == {"timeseries"}
    with connect(str(tmp_path)) as lake:
        assert lake.files["runs"][0].startswith("results/")
        assert all(k.startswith("compacted/") for k in lake.files["timeseries"])
    assert fingerprint(tmp_path) == before
    first = compacted_objects(tmp_path)
    report = compact(store)  # default grace 1 h: generation 1 objects are kept for old readers
    assert report.generation == 2 and report.removed == []
    assert first <= compacted_objects(tmp_path)
    assert fingerprint(tmp_path) == before


def test_cli_compact(tmp_path: Path) -> None:
    build(tmp_path)
    res = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(tmp_path)])
    assert res.exit_code == 0, res.output
    # Each says how long it worked (human_ns's spelling: "840.12 ms", "1.25 s").
    took = r" in \d+\.\d\d (ms|s)"
    assert re.fullmatch(
        r"generation 1: appended 66 run\(s\) × table to 6 Delta table\(s\); "
        rf"11 commit\(s\) indexed \(every commit marker listed\){took}\n"
        r"case summaries: folded in 11 run\(s\)\n",
        res.stderr,
    ), res.stderr
    res = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(tmp_path)])
    assert re.fullmatch(
        r"nothing to compact: every committed run is already compacted "
        rf"\(commit log read; checked{took}\)\n",
        res.stderr,
    ), res.stderr
    res = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(tmp_path), "--full-listing"])
    assert "(every commit marker listed; checked in " in res.stderr, res.stderr


ISSUE_23_COLUMNS = ("sequence", "role", "preconditioned_by", "host_lock_wait_ms")


def _written_before_issue_23(store, run_id: str) -> None:  # noqa: ANN001
    """Rewrite a run's `runs` file as runners before issue 23 wrote it: without its columns."""
    import pyarrow.parquet as pq

    from fiolake.schema import parquet_bytes

    key = layout.result_key("runs", lakegen.T0, run_id)
    table = pq.read_table(store.root / key).drop_columns(list(ISSUE_23_COLUMNS))
    store.put(key, parquet_bytes(table))


def test_runs_written_before_the_issue_23_columns_read_them_as_null(tmp_path: Path) -> None:
    """Old files, new columns: NULL in the views and in the Delta table, and an old run
    counts as measured (role NULL), never as a precondition run."""
    store = lakegen.local_store(tmp_path)
    lakegen.write_run(store, run_id="old", job_id="old", backend="a")
    _written_before_issue_23(store, "old")
    lakegen.write_run(store, run_id="new", job_id="new", backend="b", role="measure", sequence=0)
    query = f"SELECT run_id, {', '.join(ISSUE_23_COLUMNS)} FROM runs ORDER BY run_id"
    expected = [("new", 0, "measure", None, None), ("old", None, None, None, None)]
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql(query).fetchall() == expected
    compact(store, grace=ZERO)
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql(query).fetchall() == expected
        assert lake.con.sql(
            "SELECT count(*) FROM runs WHERE coalesce(role, 'measure') = 'measure'"
        ).fetchone() == (2,)


def test_generation_records_name_their_covered_ids_and_format_2_still_reads(
    tmp_path: Path,
) -> None:
    """Format 3 keeps the covered ids in a Parquet object beside the record (at 100,000
    runs, 500,000 ids were 6.5 MB of JSON); a lake whose newest record is format 2 (the
    ids inline) reads the same, and its next compaction writes format 3."""
    store = build(tmp_path)
    before = fingerprint(tmp_path)
    compact(store, grace=ZERO)
    record = json.loads(store.get(layout.generation_key(1))[0])
    assert record["format"] == 3 and "keys" not in json.dumps(record["delta"])
    ids = pq.read_table(tmp_path / record["keys_file"])
    # runs, results, timeseries, percentiles, the night summaries, the run series; commits
    assert ids.num_rows == sum(d["key_count"] for d in record["delta"]) == 6 * 11 + 11
    with connect(str(tmp_path)) as lake:
        covered = {t: lake.compacted.covered(t) for t in lake.compacted.delta}
    # The same state as format 2 wrote it, as generation 2.
    per_table: dict[str, list[str]] = {}
    for table, key in zip(ids["table"].to_pylist(), ids["key"].to_pylist(), strict=True):
        per_table.setdefault(table, []).append(key)
    old = dict(record, format=2, generation=2)
    old.pop("keys_file")
    old["delta"] = [
        {**{k: v for k, v in d.items() if k != "key_count"}, "keys": per_table[d["table"]]}
        for d in record["delta"]
    ]
    store.put(layout.generation_key(2), json.dumps(old).encode())
    with connect(str(tmp_path)) as lake:
        assert lake.compacted.generation == 2 and lake.compacted.format == 2
        assert {t: lake.compacted.covered(t) for t in lake.compacted.delta} == covered
        assert lake.con.sql(FINGERPRINT).fetchone() == before
    lakegen.write_run(store, run_id="later", job_id="later")
    assert compact(store, grace=ZERO).generation == 3
    assert json.loads(store.get(layout.generation_key(3))[0])["format"] == 3
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql("SELECT count(*) FROM runs").fetchone() == (before[0] + 1,)
        assert "later" in lake.compacted.covered("runs")


@pytest.mark.parametrize(
    ("damage", "what"),
    [
        ("delete", "is missing"),
        ("replace", "is unreadable (it holds 2 ids where the record counts 77)"),
    ],
)
def test_a_record_whose_covered_ids_are_gone_is_an_error_that_compaction_mends(
    tmp_path: Path, damage: str, what: str
) -> None:
    store = build(tmp_path)
    before = fingerprint(tmp_path)
    compact(store, grace=ZERO)
    with connect(str(tmp_path)) as lake:
        covered = lake.compacted.covered("runs")
    compared = CliRunner().invoke(cli, ["compare", "--lake", str(tmp_path), "--format", "csv"])
    assert compared.exit_code == 0, compared.stderr
    compared = compared.stdout
    ids_key = json.loads(store.get(layout.generation_key(1))[0])["keys_file"]
    if damage == "delete":
        store.delete(ids_key)
    else:  # a valid Parquet object, with other ids
        pq.write_table(pa.table({"table": ["runs"] * 2, "key": ["x", "y"]}), tmp_path / ids_key)
    snapcache.clear_memory()  # as a new process finds it
    # Queries do without them (every table covers the commit index: coveredids.LazyIds)
    result = CliRunner().invoke(cli, ["compare", "--lake", str(tmp_path), "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == compared
    # ... `lake check` says what is wrong and how to mend it.
    result = CliRunner().invoke(cli, ["lake", "check", "--lake", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: malformed compaction generation "
        f"{layout.generation_key(1)}: its covered-ids object {ids_key} {what}; "
        "`fiolake lake compact` reads them from the compacted tables and writes a whole "
        "generation\n"
    )
    result = CliRunner().invoke(cli, ["lake", "compact", "--lake", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert json.loads(store.get(layout.generation_key(2))[0])["format"] == 3
    assert fingerprint(tmp_path) == before
    with connect(str(tmp_path)) as lake:  # a run without results rows is covered by runs
        assert lake.compacted.covered("runs") == covered


def test_covered_ids_an_interrupted_compaction_left_are_cleaned_up(tmp_path: Path) -> None:
    store = build(tmp_path)
    compact(store, grace=ZERO)
    stray = layout.generation_keys_key(2, "interrupted")  # written, then no record
    store.put(stray, b"PAR1")
    lakegen.write_run(store, run_id="later", job_id="later")
    report = compact(store, grace=ZERO)
    assert report.generation == 2 and stray in report.removed
    left = {k for k in compacted_objects(tmp_path) if layout.generation_object(k)}
    gen = latest_generation(store)
    assert gen is not None and gen.cases_file  # the record's case summaries stay too
    assert left == {layout.generation_key(2), fresh_ids(store, 2), gen.cases_file}


def fresh_ids(store: lakegen.LocalStore, generation: int) -> str:
    return json.loads(store.get(layout.generation_key(generation))[0])["keys_file"]


def test_a_reader_that_listed_a_generation_cleaned_up_since_reads_the_newer_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cleanup removes a superseded generation's record and covered ids at once when they
    are older than the grace period; a reader that listed it just before, and needs its
    ids (a table of it does not cover the index), moves on."""
    store = build(tmp_path)
    compact(store, grace=ZERO)
    lakegen.write_run(store, run_id="later", job_id="later")
    compact(store, tables=["runs"], grace=ZERO)  # generation 2: results no longer covers
    lakegen.write_run(store, run_id="later2", job_id="later2")
    compact(store, grace=timedelta(days=1))  # generation 3; generation 2 kept for now
    second = json.loads(store.get(layout.generation_key(2))[0])["keys_file"]
    store.delete(second)  # as the cleanup right after a reader's listing leaves it
    listings = iter([2])  # this reader's listing saw generation 2 as the newest
    real = generations.latest_generation_number
    monkeypatch.setattr(
        snapcache, "latest_generation_number", lambda s: next(listings, None) or real(s)
    )
    snapcache.clear_memory()
    snap = snapcache.cached_scan(store)
    assert snap.compacted is not None and snap.compacted.generation == 3
    listings2 = iter([2])
    monkeypatch.setattr(
        generations, "latest_generation_number", lambda s: next(listings2, None) or real(s)
    )
    assert generations.latest_generation(store).generation == 3  # type: ignore[union-attr]


def test_a_format_2_lake_is_rewritten_as_format_3_with_nothing_new(tmp_path: Path) -> None:
    store = build(tmp_path)
    compact(store, grace=ZERO)
    record = json.loads(store.get(layout.generation_key(1))[0])
    ids = pq.read_table(tmp_path / record["keys_file"])
    per_table: dict[str, list[str]] = {}
    for table, key in zip(ids["table"].to_pylist(), ids["key"].to_pylist(), strict=True):
        per_table.setdefault(table, []).append(key)
    old = {k: v for k, v in record.items() if k != "keys_file"} | {"format": 2, "generation": 2}
    old["delta"] = [
        {**{k: v for k, v in d.items() if k != "key_count"}, "keys": per_table[d["table"]]}
        for d in record["delta"]
    ]
    store.put(layout.generation_key(2), json.dumps(old).encode())
    assert compact(store, grace=ZERO).generation == 3
    assert json.loads(store.get(layout.generation_key(3))[0])["format"] == 3
    assert compact(store, grace=ZERO).generation is None  # and then nothing to do


def test_a_newer_format_says_to_upgrade(tmp_path: Path) -> None:
    store = build(tmp_path)
    compact(store, grace=ZERO)
    record = json.loads(store.get(layout.generation_key(1))[0])
    store.put(layout.generation_key(2), json.dumps(record | {"format": 4}).encode())
    snapcache.clear_memory()
    result = CliRunner().invoke(cli, ["compare", "--lake", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: compaction generation {layout.generation_key(2)} is of format 4, written by "
        "a newer fiolake (this one reads formats 1 to 3) — upgrade fiolake here (readers "
        "before the compactor)\n"
    )


def test_delta_states_compare_by_their_ids_whatever_the_array() -> None:
    one = generations.DeltaState.of("runs", 1, ["f"], ["a", "b"], 2)
    chunked = pa.chunked_array([pa.array(["a"]), pa.array(["b"])])
    assert generations.DeltaState("runs", 1, ("f",), chunked, 2) == one
    wide = pa.array(["a", "b"], pa.large_string())
    assert generations.DeltaState("runs", 1, ("f",), wide, 2) == one
    assert hash(one) == hash(generations.DeltaState("runs", 1, ("f",), chunked, 2))


def test_runs_written_before_the_workload_column_get_it_at_read_time_and_compaction(
    tmp_path: Path,
) -> None:
    """Issue 43: a per-run file without workload_sha256 shows it in the runs view, and
    `lake compact` writes it into the Delta rows it appends; no result changes."""
    store = lakegen.local_store(tmp_path)
    job = "[global]\ndirectory=/x/{}\n[r]\nrw=randread\nbs=4k\n"
    lakegen.write_run(
        store, run_id="old", job_id="old", canonical_job_file=job.format("old"),
        workload_sha256=None, metrics={READ: {"iops": 100}},
    )  # fmt: skip
    lakegen.write_run(
        store, run_id="new", job_id="new", canonical_job_file=job.format("new"),
        metrics={READ: {"iops": 200}},
    )  # fmt: skip
    query = "SELECT run_id, workload_sha256 FROM runs ORDER BY run_id"
    with connect(str(tmp_path)) as lake:
        before = lake.con.sql(query).fetchall()
        results = lake.con.sql("SELECT run_id, iops FROM results ORDER BY 1").fetchall()
    assert before[0][1] == before[1][1] and len(before[0][1]) == 64
    compact(store, grace=ZERO)
    delta = DeltaTable(str(tmp_path / layout.delta_table_prefix("runs"))).to_pyarrow_table()
    stored = dict(
        zip(
            delta.column("run_id").to_pylist(),
            delta.column("workload_sha256").to_pylist(),
            strict=True,
        )
    )
    assert stored == dict(before)
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql(query).fetchall() == before
        assert lake.con.sql("SELECT run_id, iops FROM results ORDER BY 1").fetchall() == results


def test_a_table_a_newer_fiolake_keeps_is_carried_forward_not_refused(tmp_path: Path) -> None:
    """A lake a newer fiolake compacted may name a Delta table this one does not know (a
    downgrade: fiolake before the run series refused its own cleanup, `unknown table
    'run_series'`). Compaction here leaves that table's files alone and keeps its state
    in the next record, for the newer fiolake to catch up on when it is back."""
    import dataclasses

    store = build(tmp_path)
    compact(store, grace=ZERO)
    gen = latest_generation(store)
    assert gen is not None
    future = dataclasses.replace(gen.delta["runs"], table="future_table")
    newer = dataclasses.replace(
        gen, generation=gen.generation + 1, delta={**gen.delta, "future_table": future}
    )
    generations.write_generation(store, newer)
    lakegen.write_run(store, run_id="late", job_id="j-late", campaign="c2", backend="b",
                      metrics={READ: {"iops": 500.0}})  # fmt: skip
    report = compact(store, grace=ZERO)
    assert report.generation == newer.generation + 1
    kept = latest_generation(store)
    assert kept is not None
    carried = kept.delta["future_table"]
    assert (carried.version, carried.files, carried.keys) == (future.version, future.files,
                                                              future.keys)  # fmt: skip
    assert not carried.covers_index  # this compaction added runs it does not hold
    assert "late" in kept.covered("runs") and "late" not in carried.keys
    with connect(str(tmp_path)) as lake:  # and readers read it
        assert lake.con.sql("SELECT count(*) FROM runs").fetchone() == (12,)


def test_a_table_version_without_new_files_reads_no_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cleanup's vacuum commits a version of its own after the record: the next night
    finds each table one version on but with the same files, and reads none of them again
    (issue 44: the year's covered ids turned into a Python set, 0.1 s a table, each night)."""
    from fiolake.aggregator.lake import delta

    monkeypatch.setattr(delta, "MAX_FILES", 0)  # optimize every night: vacuum has work
    store = build(tmp_path)
    compact(store, grace=ZERO)
    lakegen.write_run(store, run_id="second", job_id="second", metrics={READ: {"iops": 5}})
    compact(store, grace=ZERO)  # merges two files; its cleanup vacuums the two it removed
    record = latest_generation(store)
    moved = [
        t
        for t, state in record.delta.items()  # type: ignore[union-attr]
        if (dt := delta.open_table(store, t)) is not None and dt.version() != state.version
    ]
    assert moved, "no table has a version beyond the record: the case is not exercised"
    read: list[str] = []
    monkeypatch.setattr(delta, "keys_in", lambda store, table, files: read.append(table) or set())
    lakegen.write_run(store, run_id="late", job_id="late", metrics={READ: {"iops": 5}})
    report = compact(store, grace=ZERO)
    assert [m.new_runs for m in report.merged if m.table == "runs"] == [1]
    assert read == []
    with connect(str(tmp_path)) as lake:  # and every run once
        assert lake.con.sql("SELECT count(*), count(DISTINCT run_id) FROM runs").fetchone() == (
            13,
            13,
        )
