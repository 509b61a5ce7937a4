"""Night summaries written at compaction give the answers of folding every run (issue 44).

The oracle is `nightly`'s own fold of every run from the views (`nightly._sql`), which
tests/aggregator/stats/test_nightly.py holds to the per-run code it replaced. On lakes
with runs compacted and not, nights a time window cuts through, a compaction
interrupted and rerun, and a lake compacted before summaries existed, the summaries'
path must give the same nights: the same counts, runs and order, means and M2s to 9
significant digits.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from fiolake import layout
from fiolake.aggregator.lake import clustered, delta, derived, summaries, workloads
from fiolake.aggregator.lake.compact import compact
from fiolake.aggregator.lake.generations import latest_generation
from fiolake.aggregator.lake.lake import Lake, connect
from fiolake.aggregator.rows import night_rows
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats import nightly as folding
from fiolake.aggregator.stats.nightly import BY_BACKEND, nightly
from fiolake.schema import SCHEMAS
from fiolake.workload import workload_sha256
from tests.aggregator import lakegen
from tests.aggregator.stats.test_nightly import JOBS, _label, _lake

METRICS = ["iops", "bw_bytes"]  # summarised (columns.HEADLINE_METRICS)
ZERO = timedelta(0)


class Interrupt(Exception):
    pass


def _folded(lake: Lake, filt: RunFilter, monkeypatch: pytest.MonkeyPatch) -> dict[Any, Any]:
    """`nightly` from every run (the summaries turned away), as comparable tuples."""
    with monkeypatch.context() as m:
        m.setattr(night_rows, "partial_rows", lambda *_: None)
        return _flat(nightly(lake, BY_BACKEND, filt, METRICS))


def _flat(data: dict[Any, Any]) -> dict[Any, Any]:
    out = {}
    for key, by_metric in data.items():
        for metric, s in by_metric.items():
            out[(key, metric)] = (
                s.n.tolist(), s.mean, s.m2, s.labels.to_pylist(), s.first_run.to_pylist(),
                s.first_ms.to_pylist(), s.last_run.to_pylist(),
            )  # fmt: skip
    return out


def _assert_same(lake: Lake, filt: RunFilter, monkeypatch: pytest.MonkeyPatch) -> int:
    """The summaries' nights equal the folded ones; how many nights there were."""
    assert night_rows.partial_rows(lake, filt, METRICS) is not None  # the summaries answer
    got, want = _flat(nightly(lake, BY_BACKEND, filt, METRICS)), _folded(lake, filt, monkeypatch)
    assert got.keys() == want.keys() and want
    for key, (n, mean, m2, *runs) in want.items():
        assert got[key][0] == n, key
        np.testing.assert_allclose(got[key][1], mean, rtol=1e-9, atol=0)
        np.testing.assert_allclose(got[key][2], m2, rtol=1e-9, atol=1e-15)
        assert list(got[key][3:]) == runs, key
    return sum(len(v[0]) for v in want.values())


def test_summaries_give_every_nights_fold_loose_runs_and_cut_nights_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lake(tmp_path)  # nights 0-11 compacted (with their summaries), 12-23 runners' files
    # A late run of compacted night 3: its night is a summary row and a run to merge.
    late = {job: {"iops": 1300.0, "bw_bytes": 3e6} for job in JOBS}
    lakegen.write_run(lakegen.local_store(tmp_path), run_id="n03-nvme-late", job_id="j-late",
                      campaign=_label(3), metrics=late,
                      started_at=lakegen.T0 + timedelta(days=3, hours=2))  # fmt: skip
    cut = lakegen.T0 + timedelta(days=10, minutes=5)  # between night 10's two runs
    filters = [
        RunFilter(),
        RunFilter(since=cut),
        RunFilter(until=cut),
        RunFilter(backends=("ssd",), since=cut, until=cut + timedelta(days=5)),
        RunFilter(campaign="night-14"),
    ]
    with connect(str(tmp_path)) as lake:
        nights = [_assert_same(lake, f, monkeypatch) for f in filters]
    assert nights[0] > nights[1] > 0 and nights[2] > 0
    compact(lakegen.local_store(tmp_path), grace=ZERO)  # every night compacted
    with connect(str(tmp_path)) as lake:
        assert [_assert_same(lake, f, monkeypatch) for f in filters] == nights
        # Nothing to fold from the runs: the question never reads `results`.
        partial = night_rows.partial_rows(lake, RunFilter(), METRICS) or ""
        assert "results" not in partial and night_rows.VIEW in partial
        # A night the window cuts is folded from its runs, the others read whole.
        partial = night_rows.partial_rows(lake, RunFilter(since=cut), METRICS) or ""
        assert "results" in partial and "'night-22'" in partial  # night 10's label


def test_merged_summary_files_are_sorted_by_backend_and_answer_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nights' files merged (`clustered`): one backend's rows together in each file, so
    `regressions --backend` reads its row groups only; the same nights as before."""
    monkeypatch.setattr(delta, "MAX_FILES", 1)  # the second night's append merges both
    small_groups = replace(derived.NIGHT_SUMMARIES, row_group_rows=4)
    monkeypatch.setattr(derived, "NIGHT_SUMMARIES", small_groups)  # several per file
    _lake(tmp_path)  # nights 0-11 compacted, one append
    store = lakegen.local_store(tmp_path)
    compact(store, grace=ZERO)  # nights 12-23: a second append, then both merged
    dt = delta.open_table(store, summaries.TABLE)
    assert dt is not None
    files, rows = delta.data_files(store, dt, summaries.TABLE)
    assert files and all(clustered.MERGED_PREFIX in k for k in files)
    for key in files:
        data = pq.ParquetFile(tmp_path / key)
        table = data.read()
        assert table.equals(clustered.sort_rows(table, summaries.SORT_KEYS))
        backends = [  # each row group's backends: a range, so a filter skips the others
            data.metadata.row_group(i).column(table.column_names.index("backend")).statistics
            for i in range(data.metadata.num_row_groups)
        ]
        assert len(backends) > 1 and any(b.min == b.max for b in backends)
    assert rows == dt.count()
    with connect(str(tmp_path)) as lake:
        for filt in (RunFilter(), RunFilter(backends=("ssd",))):
            _assert_same(lake, filt, monkeypatch)


def test_summaries_answer_only_what_they_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lake(tmp_path)
    with connect(str(tmp_path)) as lake:
        assert night_rows.partial_rows(lake, RunFilter(), ["clat_mean_ns"]) is None
        assert night_rows.partial_rows(lake, RunFilter(runs=("n00-nvme-r0",)), METRICS) is None
        assert night_rows.partial_rows(lake, RunFilter(), METRICS) is not None
        monkeypatch.setattr(night_rows, "LOOSE_LIMIT", 47)  # the lake has 48 loose runs
        assert night_rows.partial_rows(lake, RunFilter(), METRICS) is None
    # A compaction that leaves `runs` out leaves the summaries behind: runs fold again.
    lakegen.write_run(lakegen.local_store(tmp_path), run_id="late", job_id="j-late",
                      campaign="night-01", started_at=lakegen.T0 + timedelta(days=30))  # fmt: skip
    compact(lakegen.local_store(tmp_path), tables=["results"], grace=ZERO)
    with connect(str(tmp_path)) as lake:
        assert not night_rows.summarised(lake)
        assert night_rows.partial_rows(lake, RunFilter(), METRICS) is None


@pytest.mark.parametrize("stage", ["files-written", "generation-written"])
def test_an_interrupted_compaction_never_summarises_a_run_twice(
    tmp_path: Path, stage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lake(tmp_path)
    store = lakegen.local_store(tmp_path)

    def hook(reached: str) -> None:
        if reached == stage:
            raise Interrupt(stage)

    with pytest.raises(Interrupt):
        compact(store, grace=ZERO, hook=hook)
    compact(store, grace=ZERO)
    state = latest_generation(store).delta[summaries.TABLE]  # type: ignore[union-attr]
    assert state.key_count == len(set(state.key_array.to_pylist())) == 96  # each run once
    with connect(str(tmp_path)) as lake:
        assert night_rows.loose_run_ids(lake) == []
        _assert_same(lake, RunFilter(), monkeypatch)


def test_a_lake_compacted_before_summaries_gets_them_from_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lake(tmp_path)
    store = lakegen.local_store(tmp_path)
    # As a compactor of a version before summaries left it: every run compacted, no summary.
    tables = [t for t in layout.TABLES if t != "runs"]
    compact(store, tables=tables, grace=ZERO)
    compact(store, tables=["runs"], grace=ZERO)
    gen = latest_generation(store)
    assert gen is not None and gen.delta[summaries.TABLE].key_count == 48  # the first compaction's
    report = compact(store, grace=ZERO)  # the summaries catch up from the tables' files
    caught_up = [(summaries.TABLE, 48), (layout.SERIES_TABLE, 48)]  # and the run series
    assert [(m.table, m.new_runs) for m in report.merged] == caught_up
    with connect(str(tmp_path)) as lake:
        assert night_rows.summarised(lake) and night_rows.loose_run_ids(lake) == []
        _assert_same(lake, RunFilter(), monkeypatch)


def _fleet(rng: np.random.Generator) -> tuple[Any, Any]:
    """runs and results tables of 2 backends × 2 jobs × 25 nights × 1-5 runs with 1-2
    threads each: starts tied, missing or out of night order, values ≤ 0 now and then."""
    runs, results = [], []
    for night in range(25):
        for backend in ("nvme", "ssd"):
            for rep in range(int(rng.integers(1, 6))):
                run = f"{backend}-{night:02d}-{rep}"
                at = lakegen.T0 + timedelta(hours=int(rng.integers(0, 3)) + 24 * night)
                runs.append({
                    "run_id": run, "campaign_id": f"c{night % 20}", "backend": backend,
                    "profile": "p", "workload_sha256": "w", "role": None, "status": "ok",
                    "started_at": None if rng.random() < 0.05 else at,
                })  # fmt: skip
                for job in ("a", "b"):
                    for thread in range(int(rng.integers(1, 3))):
                        values = {m: float(rng.lognormal(7, 0.1)) for m in METRICS}
                        if rng.random() < 0.03:
                            values["iops"] = 0.0
                        results.append({"run_id": run, "job_name": job, "direction": "read",
                                        "job_index": thread, **values})  # fmt: skip
    return (
        pa.Table.from_pylist(runs, SCHEMAS["runs"]),
        pa.Table.from_pylist(results, SCHEMAS["results"]),
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_partial_summaries_of_any_split_merge_to_the_fold_of_every_run(seed: int) -> None:
    """Runs split among compactions at random (each part summarised alone) merge to what
    folding every run gives: `nightly`'s merge against its fold, in one DuckDB."""
    rng = np.random.default_rng(seed)
    runs, results = _fleet(rng)
    part = rng.integers(0, 3, size=runs.num_rows)
    partials = []
    for k in range(3):
        mine = runs.filter(pa.array(part == k))
        rows = results.filter(pc.is_in(results["run_id"], value_set=mine["run_id"]))
        partials.append(summaries.summarise(mine, rows))
    con = duckdb.connect()
    con.register("runs", runs)
    con.register("results", results)
    con.register("partials", pa.concat_tables(partials))
    metrics = list(summaries.METRICS)
    merged = con.execute(folding._merged_sql("SELECT * FROM partials", metrics)).fetchall()
    folded = con.execute(folding._sql("r.backend", "true", metrics)).fetchall()
    assert len(merged) == len(folded) == 2 * 2 * 20  # backends × jobs × campaigns
    names = [d[0] for d in con.description]
    key = lambda row: row[1:7]  # noqa: E731 - a sort key
    for got, want in zip(sorted(merged, key=key), sorted(folded, key=key), strict=True):
        mine = dict(zip(names, got, strict=True))
        for name, value in zip(names, want, strict=True):
            if isinstance(value, float):
                assert mine[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name
            else:
                assert mine[name] == value, (name, got, want)


def test_runs_compacted_before_the_workload_column_are_summarised_by_their_job_text(
    tmp_path: Path,
) -> None:
    """A runs file compacted by a fiolake before the workload hash holds none: the fold
    computes it from the job text, as the `runs` view does, so the summaries pool those
    runs with the same workload's new ones."""
    text = "[job1]\nrw=randread\nbs=4k\n"
    rows = [
        {"run_id": "old", "canonical_job_file": text, "gang_size": None},
        {"run_id": "new", "canonical_job_file": text, "gang_size": None,
         workloads.COLUMN: "recorded"},
    ]  # fmt: skip
    store = lakegen.local_store(tmp_path)
    table = pa.Table.from_pylist(rows, SCHEMAS["runs"])
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    store.put("compacted/delta/runs/part-0.parquet", sink.getvalue().to_pybytes())
    got = summaries.read_rows(
        store, "runs", ["compacted/delta/runs/part-0.parquet"], pa.array(["old", "new"])
    )
    hashes = dict(zip(got["run_id"].to_pylist(), got[workloads.COLUMN].to_pylist(), strict=True))
    assert hashes == {"old": workload_sha256(text, None), "new": "recorded"}
