"""trend, regressions, env-diff and lake check on synthetic lakes."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from fiolake import layout
from fiolake.aggregator.lake.check import check_lake
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.rows.envdiff import env_diff, env_diffs
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats.regressions import regressions
from fiolake.aggregator.stats.trend import trend
from fiolake.cli import cli
from tests.aggregator import lakegen

READ = ("job1", "read")
T0 = lakegen.T0


def history(tmp_path: Path, step_at: int | None, factor: float = 0.7, n: int = 40) -> str:
    """Backend nvme: `n` runs, one every 6 h, σ = 3 % lognormal noise (seeded), four a
    night in one campaign each (change points count nights); from run `step_at` on, iops
    × `factor` and a newer kernel."""
    rng = np.random.default_rng(11)
    store = lakegen.local_store(tmp_path)
    for i in range(n):
        after = step_at is not None and i >= step_at
        iops = 1000.0 * (factor if after else 1.0) * rng.lognormal(0, 0.03)
        lakegen.write_run(
            store,
            run_id=f"r{i:02d}",
            job_id=f"j{i:02d}",
            started_at=T0 + timedelta(hours=6 * i),
            campaign=f"night-{i // 4}",
            metrics={READ: {"iops": iops}},
            kernel="6.8.0" if after else "6.1.0-18-amd64",
        )
    return str(tmp_path)


def test_trend_per_run_and_per_day_marks_the_change_point(tmp_path: Path) -> None:
    root = history(tmp_path, 24)
    with connect(root) as lake:
        points = trend(lake, "iops")
        assert [p.run_id for p in points][:2] == ["r00", "r01"]
        assert len(points) == 40 and all(p.n == 1 for p in points)
        assert [p.run_id for p in points if p.change_point] == ["r24"]
        days = trend(lake, "iops", bucket="day")
        assert len(days) == 11 and days[1].n == 4  # T0 is 12:00: two runs on the first day


def test_regression_found_sized_and_explained(tmp_path: Path) -> None:
    root = history(tmp_path, 24)
    with connect(root) as lake:
        report = regressions(lake, since=None, metrics=["iops", "lat_mean_ns"])
    # Latency mirrors IOPS here: the same size of change, so they tie, in metric order.
    assert [(r.metric, r.run_before, r.run_after) for r in report.rows] == [
        ("iops", "r23", "r24"),
        ("lat_mean_ns", "r23", "r24"),
    ]
    iops = report.rows[0]
    assert iops.ratio == pytest.approx(0.7, abs=0.03)
    assert iops.ratio_ci_low < iops.ratio < iops.ratio_ci_high < 1
    assert (iops.n_before, iops.n_after, iops.verdict) == (24, 16, "worse")
    assert iops.p_value <= 0.001
    assert "kernel 6.1.0-18-amd64 → 6.8.0" in iops.env_changes


def test_no_change_point_when_stable(tmp_path: Path) -> None:
    root = history(tmp_path, None)
    with connect(root) as lake:
        assert regressions(lake, since=None).rows == []
    res = CliRunner().invoke(cli, ["regressions", "--lake", root, "--since", "all"])
    assert res.exit_code == 0, res.output
    assert "0 change point(s) in 4 series (0 too short to test)" in res.stderr


def test_improvements_only_with_all(tmp_path: Path) -> None:
    root = history(tmp_path, 20, factor=1.5)
    with connect(root) as lake:
        assert regressions(lake, since=None, metrics=["iops"]).rows == []
        better = regressions(lake, since=None, metrics=["iops"], include_better=True).rows
    assert [(r.verdict, r.run_after) for r in better] == [("better", "r20")]


def test_cli_regressions_lists_change_points(tmp_path: Path) -> None:
    root = history(tmp_path, 24, factor=0.5)
    args = ["regressions", "--lake", root, "--since", "all", "--metric", "iops"]
    res = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    [row] = json.loads(res.stdout)
    assert (row["backend"], row["run_after"], row["verdict"]) == ("nvme", "r24", "worse")
    assert row["ratio"] == pytest.approx(0.5, abs=0.03)
    assert "1 change point(s) in 1 series" in res.stderr
    res = CliRunner().invoke(cli, args)
    assert "0.5" in res.stdout and "kernel 6.1.0-18-amd64 → 6.8.0" in res.stdout


def test_env_diff(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_run(store, run_id="a", job_id="a")
    lakegen.write_run(
        store,
        run_id="b",
        job_id="b",
        kernel="6.9.0",
        mount_options="rw,noatime",
        labels=[("rack", "r2"), ("zone", "z1")],
        canonical_job_file="[global]\ndirectory=/mnt/x\n",
    )
    lakegen.write_run(store, run_id="c", job_id="c")
    with connect(str(tmp_path)) as lake:
        diffs = {d.field: (d.a, d.b) for d in env_diff(lake, "a", "b")}
        assert env_diff(lake, "a", "c") == []
        # `regressions` asks for every change point's pair at once: one query of `runs`
        pairs = [("a", "b"), ("a", "c"), ("b", "a"), ("c", "b")]
        one_by_one = [env_diff(lake, x, y) for x, y in pairs]
        asked: list[str] = []
        real_cursor = lake.cursor

        def counting_cursor() -> Any:
            cur = real_cursor()

            class Counting:
                def execute(self, sql: str, *args: Any) -> Any:
                    asked.append(sql)
                    return cur.execute(sql, *args)

                def __getattr__(self, name: str) -> Any:
                    return getattr(cur, name)

            return Counting()

        lake.cursor = counting_cursor  # type: ignore[method-assign]
        assert env_diffs(lake, pairs) == one_by_one
        assert len([q for q in asked if "canonical_job_file" in q]) == 1
        assert one_by_one[2] and one_by_one[2][0].a == one_by_one[0][0].b  # b → a: swapped
    assert diffs.pop("kernel") == ("6.1.0-18-amd64", "6.9.0")
    assert diffs.pop("mount_options") == ("rw,relatime", "rw,noatime")
    assert diffs.pop("labels.rack") == ("r1", "r2")
    assert diffs.pop("labels.zone") == (None, "z1")
    assert set(diffs) == {"workload_sha256", "job"}
    assert diffs["job"] == ("jobs=1 vs 0", None)  # b's file has a [global] only
    res = CliRunner().invoke(cli, ["env-diff", "--lake", str(tmp_path), "--run", "a", "--run", "c"])
    assert (res.exit_code, res.output) == (0, "no environment differences\n")
    res = CliRunner().invoke(cli, ["env-diff", "--lake", str(tmp_path), "--run", "a", "--run", "x"])
    assert (res.exit_code, res.stderr) == (
        1,
        "Error: no committed runs match run 'x' — see which exist: "
        'fiolake sql "SELECT DISTINCT run_id FROM runs"\n',
    )


def test_lake_check(tmp_path: Path) -> None:
    store = lakegen.local_store(tmp_path)
    lakegen.write_run(store, run_id="good", job_id="j1")
    lakegen.write_run(store, run_id="rej", job_id="j2", status="rejected")  # no rows: fine
    lakegen.write_run(store, run_id="noraw", job_id="j3", raw=False)
    lakegen.write_run(store, run_id="nots", job_id="j4")
    (tmp_path / layout.result_key("timeseries", T0, "nots")).unlink()
    with connect(str(tmp_path)) as lake:
        problems = [(p.run_id, p.problem) for p in check_lake(lake)]
    assert problems == [
        ("noraw", "raw/noraw/fio.json is missing"),
        ("nots", "no timeseries rows though 1 results row(s) moved data"),
    ]
    res = CliRunner().invoke(cli, ["lake", "check", "--lake", str(tmp_path), "--format", "csv"])
    assert res.exit_code == 1
    assert res.stdout.splitlines()[1:] == [
        "j3,noraw,ok,raw/noraw/fio.json is missing",
        "j4,nots,ok,no timeseries rows though 1 results row(s) moved data",
    ]


def test_filters_since(tmp_path: Path) -> None:
    root = history(tmp_path, None)
    with connect(root) as lake:
        points = trend(lake, "iops", filt=RunFilter(since=T0 + timedelta(hours=6 * 37)))
    assert [p.run_id for p in points] == ["r37", "r38", "r39"]


def test_runs_started_at_the_same_instant_trend_in_run_id_order(tmp_path: Path) -> None:
    # Imported histories and gangs start many runs at one instant: the table (and the
    # change points, found in this order) must be the same on every call.
    store = lakegen.local_store(tmp_path)
    for i in range(40):
        lakegen.write_run(
            store,
            run_id=f"r{i:02d}",
            job_id=f"j{i:02d}",
            started_at=T0,
            campaign=f"night-{i // 4}",
            metrics={READ: {"iops": 1000.0 + i}},
        )
    with connect(str(tmp_path)) as lake:
        assert [p.run_id for p in trend(lake, "iops")] == [f"r{i:02d}" for i in range(40)]


def test_trend_points_carry_their_instants_in_utc(tmp_path: Path) -> None:
    root = history(tmp_path, None, n=8)
    with connect(root) as lake:
        runs = trend(lake, "iops")
        days = trend(lake, "iops", bucket="day")
    assert [p.at for p in runs] == [T0 + timedelta(hours=6 * i) for i in range(8)]
    midnight = T0.replace(hour=0, minute=0, second=0, microsecond=0)
    assert [p.at for p in days] == [midnight + timedelta(days=d) for d in range(3)]
    assert all(p.at.utcoffset() == timedelta(0) for p in runs + days)


def two_jobs(tmp_path: Path) -> str:
    store = lakegen.local_store(tmp_path)
    for i in range(6):
        lakegen.write_run(
            store,
            run_id=f"r{i:02d}",
            job_id=f"j{i:02d}",
            started_at=T0 + timedelta(hours=i),
            metrics={READ: {"iops": 1000.0 + i}, ("job2", "write"): {"iops": 500.0 + i}},
        )
    return str(tmp_path)


def test_cli_trend_follows_one_job_and_direction(tmp_path: Path) -> None:
    root = two_jobs(tmp_path)
    runner = CliRunner()
    every = runner.invoke(cli, ["trend", "--lake", root, "--format", "json"])
    assert every.exit_code == 0, every.output
    assert {(p["job_name"], p["direction"]) for p in json.loads(every.stdout)} == {
        READ,
        ("job2", "write"),
    }
    for args, want in (
        (["--job", "job2"], [500.0 + i for i in range(6)]),
        (["--job", "job1", "--direction", "read"], [1000.0 + i for i in range(6)]),
        (["--direction", "write"], [500.0 + i for i in range(6)]),
    ):
        one = runner.invoke(cli, ["trend", "--lake", root, "--format", "json", *args])
        assert one.exit_code == 0, one.output
        assert [p["iops"] for p in json.loads(one.stdout)] == want, args


def test_cli_trend_of_a_job_no_run_ran_names_it(tmp_path: Path) -> None:
    root = two_jobs(tmp_path)
    result = CliRunner().invoke(
        cli, ["trend", "--lake", root, "--job", "job1", "--direction", "write"]
    )
    assert result.exit_code == 1
    assert result.output == (
        "Error: no successful runs with results match job 'job1', direction 'write' — see "
        'which jobs exist: fiolake sql "SELECT DISTINCT job_name, direction FROM results"\n'
    )
