"""A trend read from the run series against the same trend folded from the views.

The lake has every kind of case (threads folded, a zero bandwidth, flagged and
preconditioned runs, several workloads and profiles: test_summary_equivalence's), is
compacted, and then gets runs not compacted yet (one failed). Every trend asked of it —
filters, jobs, directions, both buckets, each kept metric — gives the same points read
from the series as folded from `results`, whichever way the series was written: a night
at a time, merged into sorted files, or caught up from the tables' files.
"""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fiolake import layout
from fiolake.aggregator.lake import clustered, delta, series
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.lake import Lake, connect
from fiolake.aggregator.rows import case_series
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats import trend as trend_module
from fiolake.aggregator.stats.trend import trend
from tests.aggregator import lakegen
from tests.aggregator.stats.test_summary_equivalence import every_kind_lake

ZERO = timedelta(0)
QUESTIONS: list[tuple[RunFilter, Any]] = [
    (RunFilter(), None),
    (RunFilter(backends=("a",)), ("job1", "read")),
    (RunFilter(backends=("b", "c"), profile="seq-writes"), ("job1", None)),
    (RunFilter(profile="random-reads"), (None, "write")),
    (RunFilter(since=lakegen.T0 + timedelta(minutes=130)), ("job2", "read")),
    (RunFilter(until=lakegen.T0 + timedelta(minutes=220), backends=("c",)), None),
    # a whole case named (the key's full range), and its first three parts
    (RunFilter(backends=("b",), profile="seq-writes"), ("job1", "write")),
    (RunFilter(backends=("a",), profile="random-reads"), ("job2", None)),
]


def _late_runs(root: Path) -> None:
    """Runs committed after the compaction: two ok, one failed."""
    store = lakegen.local_store(root)
    later = lakegen.T0 + timedelta(hours=6)
    for rep, status in enumerate(("ok", "ok", "failed")):
        lakegen.write_run(
            store,
            run_id=f"late-{rep}",
            job_id=f"late-j{rep}",
            campaign="c2",
            backend="a",
            metrics={("job1", "read"): {"iops": 900.0 + rep, "bw_bytes": 7 * rep}},
            started_at=later + timedelta(minutes=rep),
            status=status,
        )


def _both(lake: Lake, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[list, list]:
    """(trend from the series, trend folded from the views); fails unless the first one
    read the series."""
    asked: list[Any] = []
    real = case_series.compacted_rows

    def spy(*args: Any) -> Any:
        asked.append(real(*args))
        return asked[-1]

    with monkeypatch.context() as patch:
        patch.setattr(case_series, "compacted_rows", spy)
        fast = trend(lake, **kw)
    assert asked and asked[0] is not None, "the trend did not read the run series"
    with monkeypatch.context() as patch:
        patch.setattr(case_series, "compacted_rows", lambda *a: None)
        exact = trend(lake, **kw)
    return fast, exact


def _assert_same_trends(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with connect(str(root)) as lake:
        for metric in series.METRICS:
            for filt, case in QUESTIONS:
                for bucket in ("run", "day"):
                    fast, exact = _both(
                        lake, monkeypatch, metric=metric, filt=filt, case=case, bucket=bucket
                    )
                    asked = (metric, filt, case, bucket)
                    assert [replace(p, value=None) for p in fast] == [
                        replace(p, value=None) for p in exact
                    ], asked
                    # A day's mean is a parallel float sum: its order, not the series, moves
                    # the last bit (test_summary_equivalence); one run's value is the same.
                    rel = 1e-12 if bucket == "day" else 0
                    values = [p.value for p in exact]
                    assert [p.value for p in fast] == pytest.approx(values, rel=rel), asked
                    assert fast  # every question has points


def _described(root: Path) -> dict[str, str]:
    """Each series data file of the newest version, and its columns as DuckDB reads them."""
    store = lakegen.local_store(root)
    dt = delta.open_table(store, series.TABLE)
    assert dt is not None
    files, _ = delta.data_files(store, dt, series.TABLE)
    return {
        key: repr(duckdb.sql(f"DESCRIBE SELECT * FROM '{root / key}'").fetchall()) for key in files
    }


def test_a_case_prefix_bounds_exactly_the_keys_starting_with_it() -> None:
    """The key range a trend reads by holds every row of the case parts named (whatever
    characters the names hold, the separator too), and no other where names hold no
    separator."""

    @given(
        st.lists(st.text(min_size=1, max_size=4), min_size=4, max_size=4),
        st.lists(st.text(min_size=1, max_size=4), min_size=4, max_size=4),
        st.integers(1, 4),
    )
    def check(row: list[str], other: list[str], named: int) -> None:
        prefix = series.case_prefix(row[:named])
        for parts in (row, other, row[:named] + other[named:]):
            key = series.case_prefix(parts).encode()  # DuckDB compares bytes
            inside = prefix.encode() <= key < (prefix[:-1] + chr(32)).encode()
            if parts[:named] == row[:named]:
                assert inside  # what the reader skips never holds a row it wants
            elif series.SEPARATOR not in "".join(parts + row):
                assert not inside

    check()


def test_a_trend_from_the_series_is_the_trend_folded_from_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(every_kind_lake(tmp_path / "lake"))
    compact(lakegen.local_store(root), grace=ZERO)
    with connect(str(root)) as lake:  # nothing loose: the query never reads `results`
        seen: list[str] = []
        real = trend_module.fetch_rows

        def spy(handle: Lake, sql: str) -> Any:
            seen.append(sql)
            return real(handle, sql)

        monkeypatch.setattr(trend_module, "fetch_rows", spy)
        trend(lake, "iops", case=("job1", "read"))
        monkeypatch.undo()
        assert seen and "results" not in seen[0] and case_series.VIEW in seen[0]
    _late_runs(root)
    _assert_same_trends(root, monkeypatch)
    with connect(str(root)) as lake:  # the late runs are in it, the failed one is not
        only = RunFilter(backends=("a",), profile="random-reads")
        points = trend(lake, "iops", filt=only, case=("job1", "read"))
        assert [p.run_id for p in points][-2:] == ["late-0", "late-1"]


def test_merged_series_files_are_sorted_by_case_and_answer_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(every_kind_lake(tmp_path / "lake"))
    store = lakegen.local_store(root)
    monkeypatch.setattr(delta, "MAX_FILES", 1)  # the second append merges both
    monkeypatch.setattr(clustered, "MERGED_ROWS", 40)  # into several files
    compact(store, grace=ZERO)
    appended = _described(root)  # one night, appended by delta-rs
    _late_runs(root)
    compact(store, grace=ZERO)
    # Merged files read as the same columns as appended ones: the view binds from one.
    assert set(_described(root).values()) == set(appended.values()) and len(appended) == 1
    dt = delta.open_table(store, series.TABLE)
    assert dt is not None
    files, rows = delta.data_files(store, dt, series.TABLE)
    names = [k.rsplit("/", 1)[-1] for k in files]
    assert len(files) > 2 and all(n.startswith(clustered.MERGED_PREFIX) for n in names)
    total = 0
    for key in files:  # each file sorted by case, in row groups of the series' size
        table = pq.read_table(io.BytesIO(store.get(key)[0]))
        total += table.num_rows
        assert table.equals(clustered.sort_rows(table, series.SORT_KEYS))
    assert total == rows == dt.count()
    with connect(str(root)) as lake:
        assert case_series.covered(lake)
    _assert_same_trends(root, monkeypatch)


def test_a_lake_compacted_before_the_series_gets_it_from_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(every_kind_lake(tmp_path / "lake"))
    store = lakegen.local_store(root)
    # As a compactor of a version before the series left it: every run compacted, none in it.
    compact(store, tables=[t for t in layout.TABLES if t != "runs"], grace=ZERO)
    compact(store, tables=["runs"], grace=ZERO)
    with connect(str(root)) as lake:
        assert not case_series.covered(lake)  # so trends fold `results`
        assert case_series.compacted_rows(lake, RunFilter(), "iops", None) is None
    # Written in files of 50 rows as it goes (a year: 2,000,000), the table created so.
    monkeypatch.setattr(series, "SPEC", replace(series.SPEC, file_rows=50))
    report = compact(store, grace=ZERO)
    assert (layout.SERIES_TABLE, 42) in [(m.table, m.new_runs) for m in report.merged]
    levels = [clustered.level(k) for k in _described(root)]
    assert len(levels) > 1 and set(levels) == {clustered.TOP_LEVEL}
    _late_runs(root)
    _assert_same_trends(root, monkeypatch)


def test_a_series_file_gone_folds_the_trend_from_the_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The series' files deleted behind the generation record (a hand-made cleanup): the
    trend is folded from the views, the same points, not DuckDB's IO error."""
    every_kind_lake(tmp_path)
    compact(lakegen.local_store(tmp_path), grace=timedelta(0))
    with connect(str(tmp_path)) as lake:
        want = trend(lake, "iops", filt=RunFilter(backends=("a",)))
    for path in (tmp_path / "compacted" / "delta" / series.TABLE).glob("*.parquet"):
        path.unlink()
    with connect(str(tmp_path)) as lake:
        assert case_series.covered(lake)  # the record still says the series covers them
        assert trend(lake, "iops", filt=RunFilter(backends=("a",))) == want
