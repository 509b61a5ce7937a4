"""Comparison engine: known distributions give known verdicts; numbers equal plain SQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.aggregator.compare import compare
from fiolake.aggregator.filters import RunFilter
from fiolake.aggregator.lake import connect
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
    assert rows["b"].verdict == "worse"
    assert rows["b"].delta_pct == pytest.approx(-20.0)
    assert rows["b"].p_value < 1e-6
    assert rows["b"].n == 5


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
        assert (
            rows_by(compare(lake, metrics=["clat_p99_ns"]), "clat_p99_ns")["b"].verdict == "better"
        )


def test_identical_data_is_no_significant_difference(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 1000}}}, 5)
    with connect(root) as lake:
        row = rows_by(compare(lake, metrics=["iops"]), "iops")["b"]
    assert (row.verdict, row.delta_pct, row.p_value) == ("no significant difference", 0.0, 1.0)


def test_single_repetition_is_not_enough(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 500}}}, 1)
    with connect(root) as lake:
        row = rows_by(compare(lake, metrics=["iops"]), "iops")["b"]
    assert (row.verdict, row.ci_half, row.p_value) == ("not enough repetitions", None, None)


def test_two_runs_directly(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}, "b": {READ: {"iops": 800}}}, 2)
    with connect(root) as lake:
        result = compare(lake, metrics=["iops"], filt=RunFilter(runs=("c1-b-r0", "c1-a-r0")))
    assert (result.by, result.groups) == ("run_id", ["c1-b-r0", "c1-a-r0"])
    row = rows_by(result, "iops")["c1-a-r0"]
    assert row.verdict == "single runs: no significance test"
    assert row.n == 1


def test_numbers_equal_hand_written_sql(tmp_path: Path) -> None:
    root = lake_with(
        tmp_path,
        {
            "a": {READ: {"iops": 1000}, ("job2", "write"): {"iops": 50}},
            "b": {READ: {"iops": 700}, ("job2", "write"): {"iops": 55}},
        },
        4,
        jitter=0.1,
    )
    hand = """
        SELECT r.backend, x.job_name, x.direction, count(*), avg(x.iops), stddev_samp(x.iops),
               min(x.iops), max(x.iops), median(x.iops), avg(x.clat_p99_ns)
        FROM results x JOIN runs r USING (run_id)
        WHERE r.status = 'ok' GROUP BY ALL ORDER BY ALL
    """
    with connect(root) as lake:
        expected = lake.con.sql(hand).fetchall()
        result = compare(lake, metrics=["iops", "clat_p99_ns"])
    got = {(r.group, r.job_name, r.direction, r.metric): r for r in result.rows}
    assert len(expected) == 4
    for backend, job, direction, n, mean, sd, lo, hi, med, p99 in expected:
        row = got[(backend, job, direction, "iops")]
        assert (row.n, row.min, row.max) == (n, lo, hi)
        assert row.mean == pytest.approx(mean)
        assert row.stddev == pytest.approx(sd)
        assert row.median == pytest.approx(med)
        assert got[(backend, job, direction, "clat_p99_ns")].mean == pytest.approx(p99)


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
    assert lat.mean == pytest.approx(1e7)  # latencies are averaged, not summed


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
    assert (row.n, row.mean) == (1, 100.0)


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
        "backend",
        "profile",
        "job",
        "dir",
        "metric",
        "n",
        "mean",
        "±",
        "95%",
        "CI",
        "Δ%",
        "vs",
        "a",
        "verdict",
    ]
    b_bw = next(line for line in lines if line.startswith("b ") and "bw_bytes" in line)
    assert "3.1 MiB/s ± 62.8 KiB/s" in b_bw and "-20.0%" in b_bw and b_bw.endswith("▼ worse")
    res = cli_compare(root, "--metric", "iops", "--format", "csv")
    assert res.stdout.splitlines()[2].startswith("b,random-reads,job1,read,iops,5,800.0,")
    assert res.stdout.splitlines()[2].endswith(",worse")
    res = cli_compare(root, "--metric", "iops", "--format", "json")
    assert '"verdict": "baseline"' in res.stdout


def test_cli_errors(tmp_path: Path) -> None:
    root = lake_with(tmp_path, {"a": {READ: {"iops": 1000}}}, 2)
    res = cli_compare(root, "--campaign", "nope")
    assert (res.exit_code, res.stderr) == (1, "Error: no committed runs match campaign 'nope'\n")
    res = cli_compare(root, "--backend", "a", "--backend", "zfs")
    assert (res.exit_code, res.stderr) == (1, "Error: no committed runs match backend 'zfs'\n")
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
