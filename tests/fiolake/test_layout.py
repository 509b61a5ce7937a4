from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fiolake import layout


def test_keys_round_trip_and_partition_by_date() -> None:
    key = layout.job_key("c-1", "job-1", "nvme")
    assert key == "jobs/by-backend/nvme/c-1/job-1.json"
    assert layout.parse_job_key(key) == ("c-1", "job-1")
    first_layout = layout.job_key("c-1", "job-1")
    assert first_layout == "jobs/c-1/job-1.json"
    assert layout.parse_job_key(first_layout) == ("c-1", "job-1")
    assert layout.done_key("nvme", "c-1") == "done/nvme/c-1.json"
    assert layout.campaign_from_done_key("done/nvme/c-1.json") == "c-1"
    assert layout.accepted_key("c-1") == "accepted/c-1.json"
    assert layout.campaign_from_accepted_key("accepted/c-1.json") == "c-1"
    assert layout.campaign_from_accepted_key("accepted/x/c-1.json") is None
    day = datetime(2026, 11, 22, 23, 59, tzinfo=UTC)
    assert layout.result_key("runs", day, "r-1") == "results/runs/date=2026-11-22/r-1.parquet"


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "x" * 200, "a b"])
def test_unsafe_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid job id"):
        layout.commit_key(bad)


def test_unknown_table_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown table 'jobs'"):
        layout.table_glob("jobs")


@pytest.mark.parametrize(
    "key",
    ["jobs/by-backend/c-1.json", "jobs/by-backend/b/c/x.txt", "jobs/a/b/c.json", "jobs/c.json"],
)
def test_keys_that_are_not_manifests_are_refused(key: str) -> None:
    with pytest.raises(ValueError, match="not a job key"):
        layout.parse_job_key(key)


def test_every_table_key_round_trips():
    """Table names with '_' (disk_util, latency_bins) parse like the others."""
    day = datetime(2026, 1, 2, tzinfo=UTC)
    for table in layout.TABLES:
        key = layout.result_key(table, day, "r-1")
        assert layout.parse_result_key(key) == (table, "2026-01-02", "r-1")
