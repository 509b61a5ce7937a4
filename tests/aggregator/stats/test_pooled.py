"""`compare` over every run pooled, from the case summaries, against folding every run
(issue 44: the same verdicts, ratios and adjusted p to 9 significant digits; outliers
within the histogram's documented bound, here exactly the same).

The lake is test_summary_equivalence's (outliers, values ≤ 0, unsteady, flagged and
preconditioned runs, threads folded, several workloads, file systems, fio versions),
compacted, then given runs compaction has not seen: a late run of a compacted night and
a backend of its own, which the reader folds from the views.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fiolake.aggregator.lake import cases, summaries
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation
from fiolake.aggregator.lake.lake import Lake, connect
from fiolake.aggregator.rows import night_rows
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats import case_sketch, pooled, runsets
from fiolake.aggregator.stats.compare import compare
from tests.aggregator import lakegen
from tests.aggregator.stats.test_summary_equivalence import (
    _nine_digits,
    _same_summaries,
    every_kind_lake,
)

BY_BACKEND = 'CAST(r."backend" AS VARCHAR)'
ZERO = timedelta(0)
METRICS = ["bw_bytes", "iops", "lat_mean_ns", "clat_p99_ns"]


class Interrupt(Exception):
    pass


def _late_runs(root: Path) -> None:
    """Runs compaction has not seen: one more of backend a, five of a new backend d (one
    of them far off: an outlier of a case only the views hold)."""
    store = lakegen.local_store(root)
    base = {("job1", "read"): {"iops": 1010.0, "clat_p99_ns": 3.1e6}}
    lakegen.write_run(store, run_id="late-a", job_id="j-late-a", backend="a", metrics=base,
                      started_at=lakegen.T0 + timedelta(minutes=5))  # fmt: skip
    for rep in range(5):
        iops = 900.0 * (1 + 0.01 * rep) * (5 if rep == 4 else 1)
        lakegen.write_run(store, run_id=f"late-d-{rep}", job_id=f"j-late-d-{rep}", backend="d",
                          metrics={("job1", "read"): {"iops": iops, "clat_p99_ns": 3e9 / iops}},
                          started_at=lakegen.T0 + timedelta(days=1, minutes=rep))  # fmt: skip


def _exact(lake: Lake, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> Any:
    """`runsets.summarise` folding every run (the case summaries turned away)."""
    lake.summaries.clear()
    with monkeypatch.context() as m:
        m.setattr(pooled, "summarise", lambda *_, **__: None)
        return runsets.summarise(lake, BY_BACKEND, RunFilter(), METRICS, **kw)


def _fast(lake: Lake, **kw: Any) -> Any:
    lake.summaries.clear()
    sha = "NULL" if kw.pop("allow_mixed", False) else runsets.WORKLOAD
    unsteady = kw.pop("exclude_unsteady", False)
    got = pooled.summarise(lake, BY_BACKEND, RunFilter(), METRICS, sha, exclude_unsteady=unsteady)
    assert got is not None  # the case summaries answered
    return got


@pytest.fixture
def root(tmp_path: Path) -> Path:
    every_kind_lake(tmp_path)
    compact(lakegen.local_store(tmp_path), grace=ZERO)
    _late_runs(tmp_path)
    return tmp_path


@pytest.mark.parametrize("kw", [{}, {"allow_mixed": True, "exclude_unsteady": True}])
def test_case_summaries_give_the_fold_of_every_run(
    root: Path, monkeypatch: pytest.MonkeyPatch, kw: dict[str, bool]
) -> None:
    with connect(str(root)) as lake:
        assert len(night_rows.loose_run_ids(lake)) == 6
        mixed = kw.get("allow_mixed", False)
        want = _exact(lake, monkeypatch, **kw)
        got = _fast(lake, **kw)
        _same_summaries(got, want)
        found = [s for m in want.values() for s in m.values()]
        assert any(s.outliers for s in found)
        assert mixed or any(s.log is None for s in found)  # the zero is an unsteady run's
        assert any("late-d-4" in s.outliers for s in found)  # an outlier of loose runs
        assert mixed or len({c[3] for _, c in want}) > 1
    compact(lakegen.local_store(root), grace=ZERO)  # the late runs folded in
    with connect(str(root)) as lake:
        assert night_rows.loose_run_ids(lake) == []
        _same_summaries(_fast(lake, **kw), _exact(lake, monkeypatch, **kw))


def test_compare_pooled_gives_the_same_table(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with connect(str(root)) as lake:
        new = compare(lake)
        lake.summaries.clear()
        monkeypatch.setattr(pooled, "summarise", lambda *_, **__: None)
        old = compare(lake)
    assert len(new.rows) == len(old.rows) > 0 and new.tests == old.tests
    assert len({r.verdict for r in old.rows}) >= 3
    for got, want in zip(new.rows, old.rows, strict=True):
        where = (want.group, want.profile, want.job_name, want.direction, want.metric)
        assert (got.verdict, got.n, got.outliers, got.notes) == (
            want.verdict, want.n, want.outliers, want.notes,
        ), where  # fmt: skip
        for name in ("ratio", "ratio_ci_low", "ratio_ci_high", "p_value", "p_adjusted"):
            assert _nine_digits(getattr(got, name), getattr(want, name)), (where, name)
        assert _nine_digits(got.p_equivalence_adjusted, want.p_equivalence_adjusted), where


def test_case_summaries_answer_only_what_they_hold(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with connect(str(root)) as lake:
        assert pooled.answerable(lake, BY_BACKEND, RunFilter(backends=("a",)), METRICS)
        for filt in (RunFilter(campaign="c1"), RunFilter(since=lakegen.T0)):
            assert not pooled.answerable(lake, BY_BACKEND, filt, METRICS)
        assert not pooled.answerable(lake, BY_BACKEND, RunFilter(), ["clat_mean_ns"])
        assert not pooled.answerable(lake, "CAST(r.campaign_id AS VARCHAR)", RunFilter(), METRICS)
        nothing = RunFilter(status="failed")  # answerable, and no case summary row has one
        assert pooled.summarise(lake, BY_BACKEND, nothing, METRICS, "NULL",
                                exclude_unsteady=False) == {}  # fmt: skip
        monkeypatch.setattr(night_rows, "LOOSE_LIMIT", 5)  # 6 runs not compacted
        assert pooled.summarise(lake, BY_BACKEND, RunFilter(), METRICS, "NULL",
                                exclude_unsteady=False) is None  # fmt: skip


@pytest.mark.parametrize("top", [1, 2])
def test_a_side_with_as_many_outliers_as_extremes_kept_is_named_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, top: int
) -> None:
    """A side of a case with `cases.TOP` outliers or more (a level that changed during the
    history) is named, not listed — by the case summaries (the runs not compacted yet
    among them) and by folding every run alike; a side with fewer is listed whole."""
    monkeypatch.setattr(cases, "TOP", top)
    every_kind_lake(tmp_path)
    compact(lakegen.local_store(tmp_path), grace=ZERO)
    _late_runs(tmp_path)
    with connect(str(tmp_path)) as lake:
        assert len(night_rows.loose_run_ids(lake)) == 6
        got = _fast(lake)
        _same_summaries(got, _exact(lake, monkeypatch))
        found = [s for m in got.values() for s in m.values()]
        assert all(len(s.outliers) <= 2 * (top - 1) for s in found)  # each side < top
        # one extreme kept a side: every side with an outlier is named (late-d-4's too);
        # two: a side with one outlier is listed (late-d-4, a run not compacted yet)
        assert any(s.outliers_unlisted for s in found) == (top == 1)
        assert any("late-d-4" in s.outliers for s in found) == (top == 2)
        for kw in ({"exclude_unsteady": True}, {"allow_mixed": True}):
            _same_summaries(_fast(lake, **kw), _exact(lake, monkeypatch, **kw))
        if top == 1:
            row = next(r for r in compare(lake).rows if r.outliers_unlisted)
            words = "1+ outliers " + " and ".join(row.outliers_unlisted) + " the median"
            assert any(n.startswith(words) for n in row.notes), row.notes


@pytest.mark.parametrize("stage", ["files-written", None])
def test_case_summaries_survive_an_interrupted_compaction_and_an_upgrade(
    root: Path, monkeypatch: pytest.MonkeyPatch, stage: str | None
) -> None:
    store = lakegen.local_store(root)
    if stage is None:  # as a compactor before case summaries left it: none, every run compacted
        with monkeypatch.context() as m:
            m.setattr(cases, "compact_cases", lambda *_: (None, 0, 0))
            compact(store, grace=ZERO)
        assert latest_generation(store).cases_file is None  # type: ignore[union-attr]
        monkeypatch.setattr(summaries, "MERGE_EVERY", 0)  # each file's rows merged at once
    else:

        def hook(reached: str) -> None:
            if reached == stage:
                raise Interrupt(stage)

        with pytest.raises(Interrupt):
            compact(store, grace=ZERO, hook=hook)
    report = compact(store, grace=ZERO)  # a new generation, for the case summaries alone
    gen = latest_generation(store)
    assert gen is not None and report.generation == gen.generation and gen.cases_file
    assert report.cases_folded == (48 if stage is None else 6)  # all, or the night's
    assert gen.cases_runs == gen.delta[cases.summaries.TABLE].key_count == 48
    with connect(str(root)) as lake:
        _same_summaries(_fast(lake), _exact(lake, monkeypatch))
    assert compact(store, grace=ZERO).generation is None  # nothing new: nothing written


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-30, 30, allow_nan=False), min_size=1, max_size=200),
    st.integers(0, 3),
)
def test_the_histograms_median_and_mad_are_within_their_bound(
    logs: list[float], repeat: int
) -> None:
    values = np.repeat(np.asarray(logs), repeat + 1)
    bins, counts = np.unique(np.floor(values * cases.SCALE).astype(np.int64), return_counts=True)
    runs = [{b: int(n) for b, n in zip(bins.tolist(), counts.tolist(), strict=True)}]
    hist = case_sketch.histograms(
        pa.chunked_array([pa.array(runs, pa.map_(pa.int32(), pa.uint64()))])
    )
    found = case_sketch.median_and_mad(hist, np.zeros(1, dtype=np.int64), 1)
    median = float(np.median(values))
    mad = float(np.median(np.abs(values - median)))
    slack = 1e-9 * (1 + abs(median))  # the float rounding of bin centres
    assert abs(found[0] - median) <= cases.BIN / 2 + slack
    assert abs(found[1] - mad) <= cases.BIN + slack


def test_a_case_object_gone_folds_every_run_and_the_next_compaction_rebuilds_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = lakegen.local_store(root)
    gone = latest_generation(store).cases_file  # type: ignore[union-attr]
    assert gone is not None
    store.delete(gone)
    with connect(str(root)) as lake:
        assert pooled.answerable(lake, BY_BACKEND, RunFilter(), METRICS)
        assert pooled.summarise(lake, BY_BACKEND, RunFilter(), METRICS, runsets.WORKLOAD,
                                exclude_unsteady=False) is None  # fmt: skip
        assert compare(lake).rows  # folded from every run
    report = compact(store, grace=ZERO)
    assert report.cases_folded == 48  # all of them, not only the 6 new
    with connect(str(root)) as lake:
        _same_summaries(_fast(lake), _exact(lake, monkeypatch))


@pytest.mark.parametrize(("top", "listed"), [(4, 0), (5, 4)])
def test_a_changed_level_is_named_from_as_many_outliers_as_extremes_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, top: int, listed: int
) -> None:
    """A night 30 % slower puts its 4 runs below the median, beyond the cut: with 4
    extremes kept a side they are named (the level changed), with 5 listed — by both
    paths, on a lake without workload hashes (imported history)."""
    monkeypatch.setattr(cases, "TOP", top)
    store = lakegen.local_store(tmp_path)
    for night, level in enumerate((1000.0, 1000.0, 700.0)):  # a level that changed
        lakegen.write_campaign(
            store, f"n{night}", {"a": {("job1", "read"): {"iops": level}}}, 4, jitter=0.01,
            start=lakegen.T0 + timedelta(days=night), workload_sha256=None,
            canonical_job_file=None, effective_job_sha256=None,
        )  # fmt: skip
    compact(store, grace=ZERO)
    with connect(str(tmp_path)) as lake:
        got = _fast(lake)
        _same_summaries(got, _exact(lake, monkeypatch))
    iops = next(m["iops"] for m in got.values())
    assert len(iops.outliers) == listed
    assert iops.outliers_unlisted == (() if listed else ("below",))
