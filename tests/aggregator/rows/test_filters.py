"""Filter validation: every value named once, all checked in one query of `runs`."""

from __future__ import annotations

from pathlib import Path

import pytest

from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.rows.filters import RunFilter, present, runs_columns, validate
from fiolake.errors import LakeError
from tests.aggregator import lakegen


def test_values_are_checked_in_one_scan_and_a_found_one_is_not_looked_for_again(
    tmp_path: Path,
) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_campaign(store, "night-1", {"nvme": {("j", "read"): {"iops": 1.0}}}, 2)
    with connect(str(tmp_path)) as lake:
        scans = lakegen.counted_cursors(lake)
        both = RunFilter(campaign="night-1", backends=("nvme",))
        validate(lake, both)
        validate(lake, both)
        validate(lake, RunFilter(campaign="night-1"))
        assert scans == ["cursor"]
        assert lake.present == {("campaign_id", "night-1"), ("backend", "nvme")}
        with pytest.raises(LakeError, match="no committed runs match backend 'zfs'"):
            validate(lake, RunFilter(campaign="night-1", backends=("nvme", "zfs")))
        assert len(scans) == 2  # only zfs was looked for


def test_values_read_from_runs_and_the_views_columns_are_asked_once(tmp_path: Path) -> None:
    """A value the caller read from `runs` (the gate's backends) is never looked for, and
    each view is described once a connection (issue 44: ten DESCRIBEs a gate)."""
    store = lakegen.local_store(tmp_path)
    lakegen.write_campaign(store, "night-1", {"nvme": {("j", "read"): {"iops": 1.0}}}, 2)
    with connect(str(tmp_path)) as lake:
        scans = lakegen.counted_cursors(lake)
        present(lake, "backend", ["nvme"])
        validate(lake, RunFilter(backends=("nvme",)))
        assert scans == []
        assert runs_columns(lake) == runs_columns(lake)
        assert "backend" in runs_columns(lake)
        assert len(scans) == 1
