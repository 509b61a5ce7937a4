"""Compaction counts the gang members it compacts, so `compare` asks only the runs not
compacted whether a selection holds gang members when the count is 0 (issue 44: a
year's `runs` footers cost 0.12 s of every `compare` over MinIO)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from fiolake.aggregator.lake import gang
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.rows.filters import RunFilter
from tests.aggregator import lakegen

ZERO = timedelta(0)


def _run(root: Path, name: str, backend: str = "nvme", **extra: object) -> None:
    lakegen.write_run(lakegen.local_store(root), run_id=name, job_id=f"j-{name}",
                      backend=backend, **extra)  # fmt: skip


def _asked(root: Path, filt: RunFilter) -> tuple[bool, bool]:
    """(has_gangs from the generation's count, has_gangs from every run)."""
    with connect(str(root)) as lake:
        known = lake.compacted.gang_runs if lake.compacted else 0
        return (
            gang.has_gangs(lake.con, filt, compacted_gang_runs=known),
            gang.has_gangs(lake.con, filt),
        )


def test_the_count_follows_compaction_and_loose_members_are_found(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    _run(tmp_path, "plain-1")
    _run(tmp_path, "plain-2", backend="ssd")
    compact(store, grace=ZERO)
    assert latest_generation(store).gang_runs == 0  # type: ignore[union-attr]
    assert _asked(tmp_path, RunFilter()) == (False, False)
    _run(tmp_path, "member-0", backend="ssd", gang_size=2, gang_slot=0)  # not compacted
    assert _asked(tmp_path, RunFilter()) == (True, True)
    assert _asked(tmp_path, RunFilter(backends=("nvme",))) == (False, False)
    compact(store, grace=ZERO)
    assert latest_generation(store).gang_runs == 1  # type: ignore[union-attr]
    assert _asked(tmp_path, RunFilter()) == (True, True)
    assert _asked(tmp_path, RunFilter(backends=("nvme",))) == (False, False)


def test_a_lake_compacted_before_the_count_is_counted_from_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path)
    _run(tmp_path, "member-0", gang_size=2, gang_slot=0)
    _run(tmp_path, "member-1", gang_size=2, gang_slot=1)
    with monkeypatch.context() as m:  # as a compactor before the count left it
        m.setattr(gang, "compacted_members", lambda *_: None)
        compact(store, grace=ZERO)
    assert latest_generation(store).gang_runs is None  # type: ignore[union-attr]
    report = compact(store, grace=ZERO)  # nothing new: a generation for the count alone
    assert report.generation is not None
    assert latest_generation(store).gang_runs == 2  # type: ignore[union-attr]
    _run(tmp_path, "plain-1")
    compact(store, grace=ZERO)
    assert latest_generation(store).gang_runs == 2  # type: ignore[union-attr]
    assert _asked(tmp_path, RunFilter()) == (True, True)
