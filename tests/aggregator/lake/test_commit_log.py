"""The commit log: readers find commits made since a compaction without listing every marker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fiolake import layout
from fiolake.aggregator.lake.compact import FULL_LISTING_EVERY, _lists_every_marker, compact
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.lake.snapshot import scan
from fiolake.commits import COMMIT_LOG_SLACK, Commit, logged_job_ids
from fiolake.runner.lake_writer import commit_marker
from fiolake.store import LocalStore
from fiolake.timetext import parse_iso
from tests.aggregator import lakegen


def add_runs(store: LocalStore, first: int, count: int, *, log: bool = True) -> None:
    for i in range(first, first + count):
        lakegen.write_run(store, run_id=f"run-{i:03d}", job_id=f"job-{i:03d}", log=log)


def committed_runs(root: Path) -> int:
    with connect(str(root)) as lake:
        return lake.con.sql("SELECT count(*) FROM runs").fetchone()[0]


def test_commits_after_a_compaction_are_found_without_listing_markers(tmp_path: Path) -> None:
    store = lakegen.ListingStore(tmp_path)
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


def test_a_marker_without_log_entry_is_found_by_the_next_full_listing(tmp_path: Path) -> None:
    store = lakegen.ListingStore(tmp_path)
    add_runs(store, 0, 3)
    assert compact(store, grace=timedelta(0)).full_listing  # the first lists every marker
    add_runs(store, 3, 1, log=False)  # a runner older than the log
    assert committed_runs(tmp_path) == 3  # the documented gap, until a full listing
    store.listed.clear()
    report = compact(store, grace=timedelta(0))
    assert not report.full_listing and report.generation is None  # the log names nothing new
    assert layout.COMMITS_PREFIX not in store.listed
    report = compact(store, grace=timedelta(0), full_listing=True)  # as a week later
    assert report.full_listing and report.unlogged == 1
    assert scan(store).compacted.commits_listed_at is None  # readers list every marker again
    add_runs(store, 4, 1, log=False)
    assert committed_runs(tmp_path) == 5
    add_runs(store, 5, 1)
    report = compact(store, grace=timedelta(0))
    assert report.full_listing  # the generation does not vouch for the log: list in full
    assert report.unlogged == 1  # job-004: new since the last generation, never logged
    add_runs(store, 6, 1)
    report = compact(store, grace=timedelta(0))
    assert report.full_listing and report.unlogged == 0
    assert scan(store).compacted.commits_listed_at is not None
    add_runs(store, 7, 1)
    store.listed.clear()
    report = compact(store, grace=timedelta(0))
    assert not report.full_listing and report.generation is not None
    assert layout.COMMITS_PREFIX not in store.listed
    assert committed_runs(tmp_path) == 8


def test_a_full_listing_is_due_a_week_after_the_last(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    add_runs(store, 0, 2)
    compact(store, grace=timedelta(0))
    gen = scan(store).compacted
    listed = parse_iso(gen.markers_listed_at)
    assert listed == parse_iso(gen.commits_listed_at)
    week = FULL_LISTING_EVERY
    assert not _lists_every_marker(gen, listed + week - timedelta(seconds=1), forced=False)
    assert _lists_every_marker(gen, listed + week, forced=False)
    assert _lists_every_marker(gen, listed, forced=True)
    assert _lists_every_marker(replace(gen, markers_listed_at=None), listed, forced=False)
    assert _lists_every_marker(replace(gen, commits_listed_at=None), listed, forced=False)
    assert _lists_every_marker(None, listed, forced=False)
    add_runs(store, 2, 1)
    compact(store, grace=timedelta(0))  # from the log: the full listing's time is kept
    assert scan(store).compacted.markers_listed_at == gen.markers_listed_at


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


def test_log_keys_sort_by_time_in_hour_folders_and_parse_back() -> None:
    t = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    later = (0, 1, 10**6, 3600 * 10**6)
    keys = [layout.commit_log_key(t + timedelta(microseconds=d), "job-x") for d in later]
    assert keys == sorted(keys)
    assert [k.split("/")[1] for k in keys] == ["20260102T03h"] * 3 + ["20260102T04h"]
    flat = [layout.parse_commit_log_key(k)[0] for k in keys]
    assert flat == sorted(flat)
    assert layout.commit_log_start(t) < keys[0] and layout.commit_log_start(t) < flat[0]
    assert layout.commit_log_start(t + timedelta(microseconds=1)) > flat[0]
    # A start sorts after every entry of the hours before its own, in either layout.
    assert keys[2] < layout.commit_log_start(t + timedelta(hours=1)) < keys[3]
    legacy = "commit-log/20260102T030405.678000Z-job-x.json"  # before the hour folders
    assert layout.parse_commit_log_key(legacy) == (legacy, "job-x")
    assert {layout.job_id_from_commit_log_key(k) for k in keys} == {"job-x"}
    for junk in (
        "commit-log/x.json",
        "commits/job.json",
        f"{keys[0]}.tmp",
        "commit-log/",
        keys[0].replace("T03h/", "T04h/"),  # an entry outside its own hour's folder
        keys[0].replace("T03h/", "x/T03h/"),
    ):
        assert layout.job_id_from_commit_log_key(junk) is None


def test_log_entries_older_than_the_slack_are_not_listed(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    now = datetime.now(UTC)
    for job, age in (("old", COMMIT_LOG_SLACK * 2), ("recent", COMMIT_LOG_SLACK / 2)):
        store.put(layout.commit_log_key(now - age, job), b"{}")
    assert logged_job_ids(store, now) == {"recent"}
    assert logged_job_ids(store, None) == {"old", "recent"}


class FolderRecordingStore(LocalStore):
    """A local store that records every directory its listings read."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.read: dict[str, int] = {}  # folder -> entries in it

    def _folder(self, path: str) -> Sequence[str]:
        names = super()._folder(path)
        self.read[Path(path).relative_to(self.root).as_posix()] = len(names)
        return names


HOURS, PER_HOUR = 8, 3
RUNS = HOURS * PER_HOUR


def test_a_reader_reads_the_log_only_from_just_before_the_compaction(tmp_path: Path) -> None:
    store = FolderRecordingStore(tmp_path)
    now = datetime.now(UTC)
    # Hours of history up to 2 hours ago, a few runs each, each logged when committed.
    for i in range(RUNS):
        lakegen.write_run(store, run_id=f"run-{i:03d}", job_id=f"job-{i:03d}", log=False)
        marker = store.get(layout.commit_key(f"job-{i:03d}"))[0]
        # From the half hour: `now` minus a few minutes crossed an hour in the first
        # minutes of an hour, and one more folder failed the count below (seen 16:01).
        at = now.replace(minute=30, second=0, microsecond=0) - timedelta(
            hours=HOURS + 1 - i // PER_HOUR, minutes=i % PER_HOUR
        )
        store.put(layout.commit_log_key(at, f"job-{i:03d}"), marker)
    assert compact(store, grace=timedelta(0)).unlogged == 0
    listed_at = parse_iso(scan(store).compacted.commits_listed_at)
    add_runs(store, RUNS, 1)  # logged in the new layout, as runners now write
    # ... and one by a runner older than the hour folders
    lakegen.write_run(store, run_id="run-old", job_id="job-old", log=False)
    store.put(f"commit-log/{layout.commit_log_key(now, 'job-old').split('/')[-1]}", b"{}")
    store.read.clear()
    snap = scan(store)
    assert snap.unindexed == {f"job-{RUNS:03d}", "job-old"}
    hours = {f"commit-log/{(at - COMMIT_LOG_SLACK):%Y%m%dT%H}h" for at in (listed_at, now)}
    hours |= {f"commit-log/{datetime.now(UTC):%Y%m%dT%H}h"}  # an hour may have begun since
    read = {f: n for f, n in store.read.items() if f.startswith(layout.COMMIT_LOG_PREFIX)}
    assert set(read) - hours == set()  # not the hours before the compaction
    # The log's folder holds an entry per hour (not per commit: RUNS + 2 of them flat) and
    # one without a folder; the hours read hold only the run committed since.
    assert store.read["commit-log"] == HOURS + 2 and sum(read.values()) == 1
    assert layout.COMMITS_PREFIX.rstrip("/") not in store.read
    assert committed_runs(tmp_path) == RUNS + 2
