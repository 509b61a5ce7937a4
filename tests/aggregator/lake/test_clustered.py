"""Clustered Delta tables: appends merged in levels into sorted files, no row lost."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fiolake.aggregator.lake import clustered, delta
from fiolake.layout import SERIES_TABLE
from tests.aggregator import lakegen

KEYS = ("k", "n")


def _night(n: int) -> pa.Table:
    return pa.table(
        {"k": [f"case-{(n * 7 + i) % 5}" for i in range(6)], "n": [n * 10 + i for i in range(6)]}
    )


def _files(store: lakegen.LocalStore) -> list[tuple[int, pa.Table]]:
    dt = delta.open_table(store, SERIES_TABLE)
    assert dt is not None
    files, rows = delta.data_files(store, dt, SERIES_TABLE)
    found = [(clustered.level(k), pq.read_table(io.BytesIO(store.get(k)[0]))) for k in files]
    assert sum(t.num_rows for _, t in found) == rows == dt.count()
    return found


def test_appends_merge_level_by_level_into_sorted_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path)
    monkeypatch.setattr(delta, "MAX_FILES", 2)
    written: Counter[tuple] = Counter()
    levels = []
    for night in range(10):
        rows = clustered.sort_rows(_night(night), KEYS)
        written.update(zip(*rows.to_pydict().values(), strict=True))
        dt = delta.append(store, SERIES_TABLE, rows, night, 4)
        clustered.merge_levels(store, dt, SERIES_TABLE, KEYS, 4)
        found = _files(store)
        levels.append(sorted(level for level, _ in found))
        kept: Counter[tuple] = Counter()
        for _, table in found:  # no row lost or doubled, each file sorted
            kept.update(zip(*table.to_pydict().values(), strict=True))
            assert table.equals(clustered.sort_rows(table, KEYS))
        assert kept == written
    # 3 appends make a level-1 file; 3 of those a level-2 file, which stays
    assert levels[:3] == [[0], [0, 0], [1]]
    assert levels[8] == [2]
    assert levels[9] == [0, 2]


def test_a_big_file_of_level_0_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(tmp_path)
    monkeypatch.setattr(delta, "MAX_FILES", 1)
    big = pa.table({"k": ["z"] * 5000, "n": list(range(5000))})
    delta.append(store, SERIES_TABLE, big, 0)
    size = delta.data_files(store, delta.open_table(store, SERIES_TABLE), SERIES_TABLE)  # type: ignore[arg-type]
    monkeypatch.setattr(delta, "TARGET_FILE_BYTES", 2 * 2000)  # "small" is under 2,000 bytes
    for night in (1, 2):
        dt = delta.append(store, SERIES_TABLE, _night(night), night)
    dt = clustered.merge_levels(store, dt, SERIES_TABLE, KEYS, 4)
    found = _files(store)
    assert sorted(level for level, _ in found) == [0, 1]  # the big one kept, two merged
    assert size[1] == 5000 and any(t.num_rows == 5000 for level, t in found if level == 0)


def test_files_in_another_order_are_resorted_once(tmp_path: Path) -> None:
    """A table whose order changed: its files of more than a row group are re-sorted by
    the new keys, each once, rows kept; a one-row-group file and files already in the
    new order (named so) are left as they are."""
    store = lakegen.local_store(tmp_path)
    old, new = ("k", "n"), ("n", "k")
    rows = pa.table({"k": [f"case-{i % 3}" for i in range(12)], "n": list(range(12))[::-1]})
    dt = delta.append(store, SERIES_TABLE, clustered.sort_rows(rows, old), 0, 4)  # before tags
    dt = clustered.add_sorted(store, SERIES_TABLE, rows, new, 4, at_level=1)  # new order
    dt = delta.append(store, SERIES_TABLE, rows.slice(0, 3), 1, 4)  # one row group
    before = set(delta.data_files(store, dt, SERIES_TABLE)[0])
    version = dt.version()
    dt = clustered.resort(store, dt, SERIES_TABLE, new, 4, old)
    assert dt.version() == version + 1  # one file re-sorted
    found = _files(store)
    assert sorted(t.num_rows for _, t in found) == [3, 12, 12]
    assert sorted(level for level, _ in found) == [0, 0, 1]
    for _, table in found:
        if table.num_rows == 12:
            assert table.equals(clustered.sort_rows(table, new))
    after = set(delta.data_files(store, dt, SERIES_TABLE)[0])
    (gone,) = before - after  # the file before tags, in the old order
    assert clustered.file_tag(gone) is None and len(before & after) == 2
    assert {clustered.file_tag(k) for k in after - before} == {clustered.key_tag(new)}
    # nothing left in the old order: a second pass writes nothing
    assert clustered.resort(store, dt, SERIES_TABLE, new, 4, old).version() == version + 1
