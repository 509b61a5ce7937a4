"""Commit markers of gang jobs: one marker names every member run."""

from __future__ import annotations

import json

import pytest

from fiolake.aggregator.lake.snapshot import commits_table
from fiolake.commits import Commit, new_commit


def test_gang_marker_names_every_member_and_solo_markers_keep_their_bytes() -> None:
    solo = new_commit("job-1", "run-a", "c1", "r1", "ok")
    assert "members" not in json.loads(solo.to_bytes())  # byte-identical to older markers
    assert Commit.from_bytes(solo.to_bytes()) == solo and solo.run_ids == ("run-a",)
    gang = new_commit("job-2", "run-x", "c1", "r1", "ok", members=("run-x", "run-y", "run-z"))
    assert json.loads(gang.to_bytes())["members"] == ["run-x", "run-y", "run-z"]
    assert Commit.from_bytes(gang.to_bytes()) == gang
    # The lake's commits table (what the views filter on) holds every member run.
    table = commits_table([solo, gang])
    assert table.column("run_id").to_pylist() == ["run-a", "run-x", "run-y", "run-z"]
    assert table.column("job_id").to_pylist() == ["job-1", "job-2", "job-2", "job-2"]


def test_malformed_members_are_refused() -> None:
    body = json.loads(new_commit("job-1", "run-a", "c1", "r1", "ok").to_bytes())
    with pytest.raises(ValueError, match="members is not a list of run ids"):
        Commit.from_bytes(json.dumps(body | {"members": "run-a"}).encode())
