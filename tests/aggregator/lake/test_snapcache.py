"""Snapshots reused while the compaction generation is unchanged (aggregator.lake.snapcache)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from fiolake import layout
from fiolake.aggregator.lake import snapcache, snapshot
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import Generation
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.lake.snapcache import cached_scan
from fiolake.aggregator.lake.snapshot import scan
from fiolake.store import LocalStore
from tests.aggregator import lakegen


class CountingStore(LocalStore):
    """A local store that counts parses of generation records (reset by `add_runs`)."""

    parses = 0

    def __init__(self, root: Path) -> None:
        super().__init__(root)

    @property
    def generation_gets(self) -> int:
        return CountingStore.parses


@pytest.fixture(autouse=True)
def _fresh_memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    snapcache.clear_memory()
    parse = Generation.from_bytes.__func__  # type: ignore[attr-defined]

    def counting(cls, data: bytes, key: str, ids=None) -> Generation:  # noqa: ANN001
        CountingStore.parses += 1
        return parse(cls, data, key, ids)

    monkeypatch.setattr(Generation, "from_bytes", classmethod(counting))
    yield
    snapcache.clear_memory()


def add_runs(store: LocalStore, first: int, count: int) -> None:
    for i in range(first, first + count):
        lakegen.write_run(store, run_id=f"run-{i:03d}", job_id=f"job-{i:03d}")


def same(a, b) -> bool:  # noqa: ANN001
    """Two snapshots that show the same lake."""
    return (
        a.commits.equals(b.commits)
        and a.loose == b.loose
        and a.unindexed == b.unindexed
        and a.compacted == b.compacted
        and {t: a.files(t) for t in layout.TABLES} == {t: b.files(t) for t in layout.TABLES}
    )


def test_a_compacted_lake_is_parsed_once_per_generation(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    add_runs(store, 0, 4)
    compact(store, grace=timedelta(0))
    CountingStore.parses = 0
    first = cached_scan(store)
    again = cached_scan(store)
    assert store.generation_gets == 1  # the second scan only listed and HEADed
    assert same(first, again) and same(again, scan(store))


def test_a_new_generation_invalidates_the_cache(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    add_runs(store, 0, 3)
    compact(store, grace=timedelta(0))
    assert cached_scan(store).commits.num_rows == 3
    add_runs(store, 3, 2)
    compact(store, grace=timedelta(0))
    snap = cached_scan(store)
    assert snap.compacted.generation == 2 and snap.commits.num_rows == 5
    assert snap.compacted.covered("results") == {f"run-{i:03d}" for i in range(5)}
    assert same(snap, scan(store))


def test_commits_since_the_compaction_show_without_a_new_generation(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    add_runs(store, 0, 3)
    compact(store, grace=timedelta(0))
    CountingStore.parses = 0
    cached_scan(store)
    add_runs(store, 3, 2)
    snap = cached_scan(store)
    assert snap.commits.num_rows == 5
    assert snap.unindexed == {"job-003", "job-004"}
    assert snap.loose_files("results")  # read from their per-run files
    assert store.generation_gets == 1  # the record and index still came from the cache
    assert same(snap, scan(store))
    with connect(str(tmp_path)) as lake:
        assert lake.con.sql("SELECT count(*) FROM runs").fetchone()[0] == 5


def test_a_rewritten_generation_record_is_read_again(tmp_path: Path) -> None:
    # Same key, other bytes (a lake rebuilt at the same place): the ETag differs.
    store = CountingStore(tmp_path)
    add_runs(store, 0, 2)
    compact(store, grace=timedelta(0))
    cached_scan(store)
    key = layout.generation_key(1)
    data, _ = store.get(key)
    store.put(key, data.replace(b'"commits":2', b'"commits":3'))
    assert cached_scan(store).compacted.commits == 3


def test_the_disk_cache_serves_the_next_process(tmp_path: Path) -> None:
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    store = CountingStore(lake)
    add_runs(store, 0, 4)
    compact(store, grace=timedelta(0))
    first = cached_scan(store, cache)
    assert len(list(cache.glob("*.arrow"))) == 1
    snapcache.clear_memory()  # as a new process starts
    CountingStore.parses = 0
    fresh = CountingStore(lake)
    again = cached_scan(fresh, cache)
    assert fresh.generation_gets == 0  # nothing parsed: all from the cache file
    assert same(first, again)
    # A new generation makes the file stale: it is not used, and is replaced.
    add_runs(store, 4, 1)
    compact(store, grace=timedelta(0))
    snapcache.clear_memory()
    later = cached_scan(CountingStore(lake), cache)
    assert later.commits.num_rows == 5 and same(later, scan(store))


@pytest.mark.parametrize("process", ["same process", "next process"])
def test_a_new_generation_reads_only_the_index_files_the_last_one_lacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, process: str
) -> None:
    """After a compaction the commit index is read again only where it changed: the files
    the earlier generation's index (kept in memory, or in the cache directory) shares
    with the new one are taken from it (issue 44: 0.2-0.4 s at 1,000,000 runs)."""
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    store = CountingStore(lake)
    add_runs(store, 0, 4)
    compact(store, grace=timedelta(0))
    before = set(cached_scan(store, cache).compacted.commit_files())
    add_runs(store, 4, 3)
    compact(store, grace=timedelta(0))
    if process == "next process":
        snapcache.clear_memory()
    read: list[str] = []
    real = snapshot.read_all

    def reading(where: LocalStore, keys: list[str]):  # noqa: ANN202
        read.extend(keys)
        return real(where, keys)

    monkeypatch.setattr(snapshot, "read_all", reading)
    snap = cached_scan(CountingStore(lake), cache)
    files = snap.compacted.commit_files()
    assert len(files) == 2 and read == [f for f in files if f not in before]
    assert snap.commits.num_rows == 7
    monkeypatch.setattr(snapshot, "read_all", real)
    assert same(snap, scan(store))
    # Saved with its files: the next generation takes both from the cache file.
    add_runs(store, 7, 2)
    compact(store, grace=timedelta(0))
    snapcache.clear_memory()
    read.clear()
    monkeypatch.setattr(snapshot, "read_all", reading)
    later = cached_scan(CountingStore(lake), cache)
    assert len(later.compacted.commit_files()) == 3
    assert read == [f for f in later.compacted.commit_files() if f not in files]
    monkeypatch.setattr(snapshot, "read_all", real)
    assert same(later, scan(store))


def test_the_cache_file_is_rewritten_only_when_what_it_holds_changed(tmp_path: Path) -> None:
    """With runs committed since the compaction the snapshot is scanned on every connect;
    the file (the whole commit index: 14 MB at 100,000 runs) is written again only when
    the markers beyond the index changed."""
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    store = LocalStore(lake)
    add_runs(store, 0, 3)
    compact(store, grace=timedelta(0))
    add_runs(store, 3, 2)  # per-run files: the snapshot is not reusable
    cached_scan(store, cache)
    (path,) = cache.glob("*.arrow")
    written = path.stat().st_ino, path.stat().st_mtime_ns
    for _ in range(2):
        snapcache.clear_memory()  # as a new process starts
        assert same(cached_scan(store, cache), scan(store))
        assert (path.stat().st_ino, path.stat().st_mtime_ns) == written
    add_runs(store, 5, 1)  # one more marker beyond the index: written again, with it
    snapcache.clear_memory()
    assert same(cached_scan(store, cache), scan(store))
    assert (path.stat().st_ino, path.stat().st_mtime_ns) != written
    snapcache.clear_memory()
    assert cached_scan(store, cache).commits.num_rows == 6


def test_a_damaged_cache_file_is_ignored(tmp_path: Path) -> None:
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    store = LocalStore(lake)
    add_runs(store, 0, 2)
    compact(store, grace=timedelta(0))
    cached_scan(store, cache)
    (path,) = cache.glob("*.arrow")
    path.write_bytes(path.read_bytes()[:100])
    snapcache.clear_memory()
    assert same(cached_scan(store, cache), scan(store))


def test_the_cli_keeps_snapshots_where_fiolake_snapshot_cache_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fiolake.aggregator.lake.lake import open_lake

    lake, cache = tmp_path / "lake", tmp_path / "cache"
    store = LocalStore(lake)
    add_runs(store, 0, 2)
    compact(store, grace=timedelta(0))
    monkeypatch.setenv("FIOLAKE_SNAPSHOT_CACHE", str(cache))
    open_lake(str(lake)).close()
    assert len(list(cache.glob("*.arrow"))) == 1
    monkeypatch.setenv("FIOLAKE_SNAPSHOT_CACHE", "off")
    snapcache.clear_memory()
    other = tmp_path / "other"
    add_runs(LocalStore(other), 0, 1)
    compact(LocalStore(other), grace=timedelta(0))
    open_lake(str(other)).close()
    assert len(list(cache.glob("*.arrow"))) == 1
