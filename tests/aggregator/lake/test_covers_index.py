"""A compacted table that covers the whole commit index: readers look for loose files only
among the commits since (issue 44), and read its covered ids only if they ask; a table a
compaction left out stops claiming it."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from fiolake import layout
from fiolake.aggregator.lake import snapcache
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.lake.snapshot import scan
from fiolake.store import LocalStore
from tests.aggregator import lakegen

WRITTEN = layout.TABLES[:4]  # the tables lakegen writes a file of for every run


def runs_in(root: Path, table: str) -> int:
    with connect(str(root), snapshot_cache=None) as lake:
        return lake.con.sql(f"SELECT count(DISTINCT run_id) FROM {table}").fetchone()[0]


def test_a_compacted_table_covers_runs_without_rows_and_readers_list_nothing(
    tmp_path: Path,
) -> None:
    store = lakegen.ListingStore(tmp_path)
    lakegen.write_run(store, run_id="ok1", job_id="j1")
    lakegen.write_run(store, run_id="rej", job_id="j2", status="rejected")  # no results rows
    compact(store, grace=timedelta(0))
    gen = latest_generation(store)
    assert all(gen.delta[t].covers_index for t in (*WRITTEN, "commits"))
    assert "rej" in gen.delta["results"].key_array.to_pylist()  # covered, rows or none
    store.listed.clear()
    snap = scan(store)
    assert snap.loose == {}
    # No partition of a table that covers the index is listed (the tables lakegen never
    # writes have no compacted table, so their empty folders still are).
    written = tuple(f"{layout.RESULTS_PREFIX}{t}/" for t in WRITTEN)
    assert not [p for p in store.listed if p.startswith(written)], store.listed
    lakegen.write_run(store, run_id="ok3", job_id="j3")  # after the compaction: loose
    store.listed.clear()
    snap = scan(store)
    assert {r for runs in snap.loose.values() for r in runs} == {"ok3"}
    assert runs_in(tmp_path, "results") == 2  # ok1 compacted, ok3 loose


def test_a_table_left_out_of_a_compaction_stops_claiming_the_index(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    lakegen.write_run(store, run_id="ok1", job_id="j1")
    compact(store, grace=timedelta(0))
    lakegen.write_run(store, run_id="ok2", job_id="j2")
    compact(store, tables=["runs"], grace=timedelta(0))  # results keeps its loose file
    gen = latest_generation(store)
    assert gen.delta["runs"].covers_index and not gen.delta["results"].covers_index
    assert runs_in(tmp_path, "results") == 2  # ok2's results found by comparing ids
    assert runs_in(tmp_path, "runs") == 2
    compact(store, grace=timedelta(0))
    gen = latest_generation(store)
    assert all(gen.delta[t].covers_index for t in (*WRITTEN, "commits"))
    assert runs_in(tmp_path, "results") == 2
    assert scan(store).loose == {}


def test_readers_read_the_covered_ids_only_when_they_ask(tmp_path: Path) -> None:
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    store = LocalStore(lake)
    lakegen.write_run(store, run_id="ok1", job_id="j1")
    lakegen.write_run(store, run_id="rej", job_id="j2", status="rejected")
    compact(store, grace=timedelta(0))
    ids = lake / json.loads(store.get(layout.generation_key(1))[0])["keys_file"]
    hidden = ids.rename(tmp_path / "ids")  # a reader that read them would fail
    for _ in range(2):  # from the store, then from the snapshot cache in a "new process"
        snapcache.clear_memory()
        with connect(str(lake), snapshot_cache=cache) as opened:
            assert opened.con.sql("SELECT count(*) FROM runs").fetchone() == (2,)
            state = opened.compacted.delta["runs"]
            assert not state.ids_read and state.key_count == 2
    hidden.rename(ids)
    with connect(str(lake), snapshot_cache=cache) as opened:
        assert opened.compacted.covered("runs") == {"ok1", "rej"}  # read now, once asked
        assert opened.compacted.delta["runs"].ids_read
