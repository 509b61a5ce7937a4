"""Comparison engine: known distributions give known verdicts; numbers equal plain SQL.

scipy.stats and statsmodels, the oracles, are imported inside the tests that use them:
~1 s of import in each process that collects this file (four in `make test-fast`).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats.compare import compare
from fiolake.cli import cli
from fiolake.errors import LakeError, UsageProblem
from fiolake.schema import parquet_bytes
from tests.aggregator import lakegen

READ = ("job1", "read")


def lake_with(tmp_path: Path, backends: dict, reps: int, jitter: float = 0.02) -> str:
    lakegen.write_campaign(lakegen.local_store(tmp_path), "c1", backends, reps, jitter=jitter)
    return str(tmp_path)


def rows_by(comparison, metric: str) -> dict[str, object]:
    return {r.group: r for r in comparison.rows if r.metric == metric}


def test_twenty_percent_fewer_iops_is_worse(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 800}}}, 5)
    with connect(root) as lake:
        rows = rows_by(compare(lake, metrics=["iops", "clat_p99_ns"]), "iops")
    assert rows["a"].verdict == "baseline"
    b = rows["b"]
    assert b.verdict == "worse"
    assert b.ratio == pytest.approx(0.8)
    assert 0 < b.ratio_ci_low < 0.8 < b.ratio_ci_high < 1
    assert b.p_adjusted < 1e-6 and b.p_adjusted >= b.p_value
    assert (b.n, b.n_baseline) == (5, 5)


def test_lower_latency_is_better(tmp_path: Path) -> None:
    root = lake_with(
        tmp_path,
        {
            "a": {READ: {"iops": 1000, "clat_p99_ns": 4e6}},
            "b": {READ: {"iops": 1000, "clat_p99_ns": 3e6}},
        },
        5,
    )
    with connect(root) as lake:
        row = rows_by(compare(lake, metrics=["clat_p99_ns"]), "clat_p99_ns")["b"]
    assert row.verdict == "better" and row.ratio == pytest.approx(0.75)


def test_identical_data_is_equivalent(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 1000}}}, 5)
    with connect(root) as lake:
        row = rows_by(compare(lake, metrics=["iops"]), "iops")["b"]
    assert (row.verdict, row.ratio, row.p_value) == ("equivalent", pytest.approx(1.0), 1.0)
    assert row.p_equivalence_adjusted < 0.05


def test_noisy_small_difference_is_inconclusive_with_the_reps_needed(tmp_path: Path) -> None:
    root = lake_with(
        tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 1030}}}, 3, jitter=0.3
    )
    with connect(root) as lake:
        row = rows_by(compare(lake, metrics=["iops"]), "iops")["b"]
    assert row.verdict == "inconclusive"
    assert row.reps_needed > 3


def test_single_repetition_is_not_enough(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 500}}}, 1)
    with connect(root) as lake:
        row = rows_by(compare(lake, metrics=["iops"]), "iops")["b"]
    assert (row.verdict, row.ratio, row.ratio_ci_low, row.p_value) == (
        "too few repetitions",
        pytest.approx(0.5),
        None,
        None,
    )


def test_two_runs_directly(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 800}}}, 2)
    with connect(root) as lake:
        result = compare(lake, metrics=["iops"], filt=RunFilter(runs=("c1-b-r0", "c1-a-r0")))
    assert (result.by, result.groups) == ("run_id", ["c1-b-r0", "c1-a-r0"])
    row = rows_by(result, "iops")["c1-a-r0"]
    assert (row.verdict, row.n, row.ratio) == ("too few repetitions", 1, pytest.approx(1.25))


def seeded_lake(tmp_path: Path, runs: int, sigma: float, seed: int, label) -> str:  # noqa: ANN001
    """`runs` runs of 3 jobs × 2 directions with lognormal noise; `label(i)` names the backend."""
    rng = np.random.default_rng(seed)
    store = lakegen.local_store(tmp_path)
    for i in range(runs):
        metrics = {
            (f"job{j}", d): {
                "iops": 1000 * (j + 1) * rng.lognormal(0, sigma),
                "bw_bytes": 4096e3 * (j + 1) * rng.lognormal(0, sigma),
                "clat_p99_ns": 2e6 * rng.lognormal(0, sigma),
            }
            for j in range(3)
            for d in ("read", "write")
        }
        lakegen.write_run(
            store,
            run_id=f"r{i:03d}",
            job_id=f"j{i:03d}",
            backend=label(i),
            metrics=metrics,
            started_at=lakegen.T0 + timedelta(minutes=i),
        )
    return str(tmp_path)


def test_a_a_no_difference_is_declared_after_adjustment(tmp_path: Path) -> None:
    """One job, one target, runs alternately labelled as two backends (σ = 5 %)."""
    root = seeded_lake(tmp_path, 20, 0.05, seed=7, label=lambda i: "a" if i % 2 else "b")
    with connect(root) as lake:
        result = compare(lake, metrics=["iops", "bw_bytes", "clat_p99_ns"])
    judged = [r for r in result.rows if r.verdict != "baseline"]
    assert len(judged) == 18
    assert not [r for r in judged if r.verdict in ("better", "worse")]


def test_one_row_equals_an_independent_scipy_computation(tmp_path: Path) -> None:
    from scipy import stats as scipy_stats
    from statsmodels.stats.multitest import multipletests

    root = seeded_lake(tmp_path, 12, 0.1, seed=3, label=lambda i: "a" if i < 6 else "b")
    sql = """SELECT r.backend, x.iops FROM results x JOIN runs r USING (run_id)
             WHERE x.job_name = 'job1' AND x.direction = 'write' ORDER BY r.run_id"""
    with connect(root) as lake:
        values = lake.con.sql(sql).fetchall()
        result = compare(lake, metrics=["clat_p99_ns", "iops"], family="table")
    a = np.array([v for b, v in values if b == "a"])
    b = np.array([v for b, v in values if b == "b"])
    row = next(
        r
        for r in result.rows
        if (r.group, r.job_name, r.direction, r.metric) == ("b", "job1", "write", "iops")
    )
    test = scipy_stats.ttest_ind(np.log(b), np.log(a), equal_var=False)
    ci = test.confidence_interval(0.95)
    assert row.geomean == pytest.approx(scipy_stats.gmean(b))
    assert row.ratio == pytest.approx(scipy_stats.gmean(b) / scipy_stats.gmean(a))
    assert (row.ratio_ci_low, row.ratio_ci_high) == (
        pytest.approx(np.exp(ci.low)),
        pytest.approx(np.exp(ci.high)),
    )
    assert row.p_value == pytest.approx(test.pvalue)
    # Holm across the shown table (--family table): one test per group × job × direction
    # × metric here.
    judged = [r for r in result.rows if r.p_value is not None]
    expected = multipletests([r.p_value for r in judged], method="holm")[1]
    assert [r.p_adjusted for r in judged] == pytest.approx(list(expected))
    assert result.tests == len(judged) == 12  # b × 3 jobs × 2 directions × 2 metrics
    fdr = compare(
        lake_handle := connect(root),
        metrics=["clat_p99_ns", "iops"],
        adjustment="fdr",
        family="table",
    )
    lake_handle.close()
    judged = [r for r in fdr.rows if r.p_value is not None]
    expected = multipletests([r.p_value for r in judged], method="fdr_bh")[1]
    assert [r.p_adjusted for r in judged] == pytest.approx(list(expected))


def test_runs_of_different_runtimes_are_never_pooled(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    for i, runtime in enumerate((30, 30, 30, 5, 5, 5)):
        for backend in ("a", "b"):
            lakegen.write_run(
                store,
                run_id=f"{backend}{i}",
                job_id=f"{backend}{i}",
                backend=backend,
                metrics={READ: {"iops": 1000.0 + i}},
                canonical_job_file=f"[global]\ndirectory=/x/{backend}{i}\n[random-reads]\n"
                f"rw=randread\ntime_based=1\nruntime={runtime}\n",
            )
    with connect(str(tmp_path)) as lake:
        split = compare(lake, metrics=["iops"])
        pooled = compare(lake, metrics=["iops"], allow_mixed=True)
    assert sorted(r.n for r in split.rows) == [3, 3, 3, 3]
    assert len({r.workload_sha256 for r in split.rows}) == 2
    notes = {n for r in split.rows for n in r.notes}
    assert notes == {
        "not pooled with 1 other job version(s): runtime=30 vs 5",
        "not pooled with 1 other job version(s): runtime=5 vs 30",
    }
    assert sorted(r.n for r in pooled.rows) == [6, 6]
    assert all(
        "pooled on purpose (--allow-mixed): job versions mixed" in r.notes for r in pooled.rows
    )
    # The table says it in every row, not once in a footnote.
    table = cli_compare(str(tmp_path), "--metric", "iops").stdout.splitlines()
    assert table[0].split()[-1] == "note"
    assert sum("runtime=30 vs 5" in line for line in table) == 2
    assert sum("runtime=5 vs 30" in line for line in table) == 2
    mixed = cli_compare(str(tmp_path), "--metric", "iops", "--allow-mixed").stdout.splitlines()
    assert sum("pooled on purpose" in line for line in mixed) == 2


def test_lakes_from_before_the_workload_column_still_compare(tmp_path: Path) -> None:
    """Runs written without workload_sha256 (NULL) get it from their stored canonical
    job file (the runs view): they pool with new runs of the same job and split from other
    runtimes."""
    store = lakegen.local_store(tmp_path)
    for i in range(9):
        backend, runtime, legacy = ("a", 30, True) if i < 3 else ("b", 30 if i < 6 else 5, i >= 6)
        extra = {"effective_job_sha256": None, "workload_sha256": None} if legacy else {}
        lakegen.write_run(
            store,
            run_id=f"r{i}",
            job_id=f"j{i}",
            backend=backend,
            metrics={READ: {"iops": 1000.0 + i}},
            canonical_job_file=f"[global]\ndirectory=/x/{backend}{i}\n[random-reads]\n"
            f"rw=randread\ntime_based=1\nruntime={runtime}\n",
            **extra,
        )
    with connect(str(tmp_path)) as lake:
        stored = lake.con.sql(
            "SELECT count(*) FILTER (WHERE workload_sha256 IS NULL), "
            "count(DISTINCT workload_sha256) FROM runs"
        )
        assert stored.fetchone() == (0, 2)
        result = compare(lake, metrics=["iops"])
    rows = {(r.group, r.n, r.verdict) for r in result.rows}
    assert rows == {
        ("a", 3, "baseline"),
        ("b", 3, "equivalent"),
        ("b", 3, "no baseline for this job"),
    }
    assert all(r.workload_sha256 and len(r.workload_sha256) == 64 for r in result.rows)
    short = next(r for r in result.rows if r.verdict == "no baseline for this job")
    assert short.notes == ["not pooled with 1 other job version(s): runtime=5 vs 30"]


def test_steady_state_outliers_and_fio_versions_per_row(tmp_path: Path) -> None:
    """Six repetitions per backend: b's run 5 is a robust-z outlier, two of b's runs were
    not steady (one unknown), and b ran another fio version than a."""
    store = lakegen.local_store(tmp_path)
    steady = [True, True, False, False, None, True]
    for i in range(6):
        for backend in ("a", "b"):
            iops = 1000.0 + i if backend == "a" or i < 5 else 5000.0
            values: dict = {"iops": iops}
            if backend == "b":
                values["steady_state"] = steady[i]
            lakegen.write_run(
                store,
                run_id=f"{backend}{i}",
                job_id=f"{backend}{i}",
                backend=backend,
                metrics={READ: values},
                fio_version="fio-3.33" if backend == "a" else "fio-3.36",
            )
    with connect(str(tmp_path)) as lake:
        row = compare(lake, metrics=["iops"]).rows[1]
        kept = compare(lake, metrics=["iops"], exclude_unsteady=True).rows[1]
    assert (row.group, row.n, row.steady, row.unsteady, row.steady_unknown) == ("b", 6, 3, 2, 1)
    assert row.outliers == ["b5"]
    assert row.notes == ["fio 3.33 vs 3.36"]
    assert (kept.n, kept.unsteady, kept.outliers) == (4, 0, [])  # b2, b3 left out
    table = cli_compare(str(tmp_path), "--metric", "iops").stdout
    assert "outliers: 1" in table and "3/5 (1 unknown)" in table
    assert "fio 3.33 vs 3.36" in table


def test_threads_of_one_job_are_summed_for_throughput(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    for rep in range(2):
        lakegen.write_run(
            store,
            run_id=f"r{rep}",
            job_id=f"j{rep}",
            metrics={("t", "read"): {"iops": 100}},
        )
    # a second thread of job "t" in run r0: same job_name, another job_index
    from fiolake import layout
    from fiolake.schema import to_table

    rows = [lakegen.result_row("r0", "nvme", "t", "read", i, {"iops": 100}) for i in (0, 1)]
    store.put(
        layout.result_key("results", lakegen.T0, "r0"),
        parquet_bytes(to_table("results", rows)),
    )
    with connect(str(tmp_path)) as lake:
        row = rows_by(compare(lake, metrics=["iops", "lat_mean_ns"]), "iops")["nvme"]
        lat = rows_by(compare(lake, metrics=["lat_mean_ns"]), "lat_mean_ns")["nvme"]
    assert (row.min, row.max) == (100.0, 200.0)  # r1: one thread, r0: two threads summed
    assert lat.geomean == pytest.approx(1e7)  # latencies are averaged, not summed


def test_orphans_and_second_attempts_are_not_counted(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_run(store, run_id="win", job_id="j1", metrics={READ: {"iops": 100}})
    lakegen.write_run(
        store, run_id="lose", job_id="j1", metrics={READ: {"iops": 9999}}, commit=False
    )
    lakegen.write_run(
        store, run_id="dead", job_id="j2", metrics={READ: {"iops": 9999}}, commit=False
    )
    with connect(str(tmp_path)) as lake:
        row = rows_by(compare(lake, metrics=["iops"]), "iops")["nvme"]
    assert (row.n, row.geomean) == (1, pytest.approx(100.0))


def test_baseline_option_and_by_column(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 800}}}, 3)
    with connect(root) as lake:
        result = compare(lake, metrics=["iops"], baseline="b")
        assert result.groups == ["b", "a"]
        assert rows_by(result, "iops")["a"].verdict == "better"
        assert compare(lake, metrics=["iops"], by="host").groups == ["host-a"]
        with pytest.raises(LakeError, match="baseline 'zz' is not among the compared backend"):
            compare(lake, baseline="zz")
        with pytest.raises(UsageProblem, match="cannot group by 'nope': choose a runs column"):
            compare(lake, by="nope")


def cli_compare(root: str, *args: str):
    return CliRunner().invoke(cli, ["compare", "--lake", root, *args])


def test_cli_table_csv_json(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 800}}}, 5)
    res = cli_compare(root, "--metric", "iops", "--metric", "bw_bytes")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split() == [
        "backend", "profile", "job", "dir", "metric", "n", "geomean", "spread", "vs", "a", "[95%",
        "CI]", "p", "adj", "verdict", "steady", "precond",
    ]  # fmt: skip
    b_iops = next(line for line in lines if line.startswith("b ") and " iops " in line)
    assert "0.8× (20 % lower) [0.7" in b_iops and "▼ worse" in b_iops
    # The family is the question (default metrics: throughput, mean and p99 latency),
    # not the two metrics shown.
    assert "family: all runs vs a, 3 tests, Holm; " in res.stderr
    res = cli_compare(root, "--metric", "iops", "--format", "json")
    rows = json.loads(res.stdout)
    b = next(r for r in rows if r["backend"] == "b")
    assert {k: b[k] for k in ("baseline", "n", "n_baseline", "verdict")} == {
        "baseline": "a",
        "n": 5,
        "n_baseline": 5,
        "verdict": "worse",
    }
    assert b["ratio"] == pytest.approx(0.8) and b["ratio_ci_low"] < 0.8 < b["ratio_ci_high"]
    assert b["p_adjusted"] < 0.05 and len(b["workload_sha256"]) == 64
    res = cli_compare(root, "--metric", "iops", "--fdr")
    assert "family: all runs vs a, 3 tests, Benjamini–Hochberg;" in res.stderr


def test_cli_errors(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}}, 2)
    res = cli_compare(root, "--campaign", "nope")
    assert (res.exit_code, res.stderr) == (
        1,
        "Error: no committed runs match campaign 'nope' — see which exist: "
        'fiolake sql "SELECT DISTINCT campaign_id FROM runs"\n',
    )
    res = cli_compare(root, "--backend", "a", "--backend", "zfs")
    assert (res.exit_code, res.stderr) == (
        1,
        "Error: no committed runs match backend 'zfs' — see which exist: "
        'fiolake sql "SELECT DISTINCT backend FROM runs"\n',
    )
    res = cli_compare(root, "--metric", "speed")
    assert res.exit_code == 2
    assert res.stderr.splitlines()[-1].startswith(
        "Error: unknown metric 'speed': choose from io_bytes, total_ios, bw_bytes, iops, "
    )
    res = cli_compare(str(tmp_path / "empty"))
    assert res.stderr == (
        f"Error: no results in lake {tmp_path / 'empty'}: "
        "run `fiolake run` (or start runners) first\n"
    )


def test_runs_needed_are_for_the_adjusted_verdict_not_the_raw_one(tmp_path: Path) -> None:
    """Ten jobs, 2× apart, three noisy runs each: each p alone is small, Holm over the ten
    leaves them inconclusive — and the runs that would decide them are counted at the
    family's α, so no row asks for fewer runs than it already has (`~2 runs per side
    would confirm 2×` beside three inconclusive runs would read as nonsense)."""
    jobs = {(f"job{i}", "read"): {"iops": 1000.0} for i in range(10)}
    doubled = {key: {"iops": 2000.0} for key in jobs}
    root = lake_with(tmp_path, {"a": jobs, "b": doubled}, 3, jitter=0.3)
    with connect(root) as lake:
        rows = [r for r in compare(lake, metrics=["iops"]).rows if r.group == "b"]
    assert len(rows) == 10 and {r.verdict for r in rows} == {"inconclusive"}
    assert all(r.p_value < 0.05 < r.p_adjusted for r in rows)
    # the family is the question: every job × the default metrics (throughput, mean, p99)
    assert {r.family_tests for r in rows} == {30}
    assert all(r.reps_to_confirm is not None and r.reps_to_confirm > r.n for r in rows), [
        (r.n, r.reps_to_confirm) for r in rows
    ]
