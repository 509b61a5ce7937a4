"""The commit log: readers find commits made since a compaction without listing every marker."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fiolake import layout
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.lake.snapshot import scan
from fiolake.commits import COMMIT_LOG_SLACK, Commit, logged_job_ids
from fiolake.runner.lake_writer import commit_marker
from fiolake.store import LocalStore
from tests.aggregator import lakegen


class ListingStore(LocalStore):
    """A local store that records every prefix it is asked to list."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.listed: list[str] = []

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[str]:
        self.listed.append(prefix)
        return super().list(prefix, start_after=start_after)


def add_runs(store: LocalStore, first: int, count: int, *, log: bool = True) -> None:
    for i in range(first, first + count):
        lakegen.write_run(store, run_id=f"run-{i:03d}", job_id=f"job-{i:03d}", log=log)


def committed_runs(root: Path) -> int:
    with connect(str(root)) as lake:
        return lake.con.sql("SELECT count(*) FROM runs").fetchone()[0]


def test_commits_after_a_compaction_are_found_without_listing_markers(tmp_path: Path) -> None:
    store = ListingStore(tmp_path)
    add_runs(store, 0, 5)
    report = compact(store, grace=timedelta(0))
    assert report.unlogged == 0
    assert layout.COMMITS_PREFIX in store.listed  # compaction lists every marker
    add_runs(store, 5, 2)
    store.listed.clear()
    snap = scan(store)
    assert snap.commits.num_rows == 7
    assert snap.unindexed == {"job-005", "job-006"}
    assert layout.COMMITS_PREFIX not in store.listed
    assert layout.COMMIT_LOG_PREFIX in store.listed
    assert committed_runs(tmp_path) == 7


def test_a_marker_without_log_entry_is_found_by_the_next_compaction(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    add_runs(store, 0, 3)
    compact(store, grace=timedelta(0))
    add_runs(store, 3, 1, log=False)  # a runner older than the log
    assert committed_runs(tmp_path) == 3  # the documented gap, until the next compaction
    report = compact(store, grace=timedelta(0))
    assert report.unlogged == 1
    assert scan(store).compacted.commits_listed_at is None  # readers list every marker again
    add_runs(store, 4, 1, log=False)
    assert committed_runs(tmp_path) == 5
    add_runs(store, 5, 1)
    report = compact(store, grace=timedelta(0))
    assert report.unlogged == 1  # job-004: new since the last generation, never logged
    add_runs(store, 6, 1)
    report = compact(store, grace=timedelta(0))
    assert report.unlogged == 0
    assert scan(store).compacted.commits_listed_at is not None
    assert committed_runs(tmp_path) == 7


def test_runner_commit_writes_the_log_entry_once_per_winner(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    first = Commit("job-1", "run-a", "c1", "r1", "ok", datetime.now(UTC).isoformat())
    assert commit_marker(store, first) == first
    assert logged_job_ids(store, None) == {"job-1"}
    loser = Commit("job-1", "run-b", "c1", "r2", "ok", datetime.now(UTC).isoformat())
    assert commit_marker(store, loser) is None
    entries = list(store.list(layout.COMMIT_LOG_PREFIX))
    assert len(entries) == 1
    assert Commit.from_bytes(store.get(entries[0])[0]) == first


def test_log_keys_sort_by_time_and_parse_back() -> None:
    t = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    keys = [layout.commit_log_key(t + timedelta(microseconds=d), "job-x") for d in (0, 1, 10**6)]
    assert keys == sorted(keys)
    assert layout.commit_log_start(t) < keys[0]
    assert layout.commit_log_start(t + timedelta(microseconds=1)) > keys[0]
    assert {layout.job_id_from_commit_log_key(k) for k in keys} == {"job-x"}
    for junk in ("commit-log/x.json", "commits/job.json", f"{keys[0]}.tmp", "commit-log/"):
        assert layout.job_id_from_commit_log_key(junk) is None


def test_log_entries_older_than_the_slack_are_not_listed(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    now = datetime.now(UTC)
    for job, age in (("old", COMMIT_LOG_SLACK * 2), ("recent", COMMIT_LOG_SLACK / 2)):
        store.put(layout.commit_log_key(now - age, job), b"{}")
    assert logged_job_ids(store, now) == {"recent"}
    assert logged_job_ids(store, None) == {"old", "recent"}
