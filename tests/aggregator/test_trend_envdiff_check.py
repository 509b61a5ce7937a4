"""trend, regressions, env-diff and lake check on synthetic lakes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake import layout
from fiolake.aggregator.check import check_lake
from fiolake.aggregator.envdiff import env_diff
from fiolake.aggregator.filters import RunFilter
from fiolake.aggregator.lake import connect
from fiolake.aggregator.trend import regressions, trend
from fiolake.cli import cli
from tests.aggregator import lakegen

READ = ("job1", "read")
T0 = lakegen.T0


def history(tmp_path: Path, recent_iops: float) -> str:
    """Backend a: 8 daily runs at ~1000 iops, then 3 runs in the last day at `recent_iops`."""
    store = lakegen.local_store(tmp_path)
    for day in range(8):
        iops = 1000.0 * (1 + 0.01 * ((day % 3) - 1))
        lakegen.write_run(
            store,
            run_id=f"h{day}",
            job_id=f"h{day}",
            started_at=T0 + timedelta(days=day),
            metrics={READ: {"iops": iops}},
        )
    for i in range(3):
        iops = recent_iops * (1 + 0.01 * (i - 1))
        lakegen.write_run(
            store,
            run_id=f"n{i}",
            job_id=f"n{i}",
            started_at=T0 + timedelta(days=8, hours=i),
            metrics={READ: {"iops": iops}},
        )
    return str(tmp_path)


def test_trend_per_run_and_per_day(tmp_path: Path) -> None:
    root = history(tmp_path, 1000.0)
    with connect(root) as lake:
        points = trend(lake, "iops")
        assert [p.run_id for p in points][:2] == ["h0", "h1"]
        assert len(points) == 11 and all(p.n == 1 for p in points)
        days = trend(lake, "iops", bucket="day")
        assert len(days) == 9
        assert days[-1].n == 3 and days[-1].value == pytest.approx(1000.0)


def test_regression_found_and_sized(tmp_path: Path) -> None:
    root = history(tmp_path, 700.0)
    with connect(root) as lake:
        report = regressions(
            lake,
            since=timedelta(days=10),
            window=timedelta(days=1),
            metrics=["iops", "lat_mean_ns"],
        )
    assert [(r.metric, r.recent_n, r.baseline_n) for r in report.rows] == [
        ("lat_mean_ns", 3, 8),
        ("iops", 3, 8),
    ]
    iops = report.rows[1]
    assert iops.change_pct == pytest.approx(-30.0, abs=0.5)
    assert report.rows[0].change_pct == pytest.approx(42.9, abs=0.5)  # 1/0.7 - 1


def test_no_regression_when_stable(tmp_path: Path) -> None:
    root = history(tmp_path, 1000.0)
    with connect(root) as lake:
        assert regressions(lake, since=timedelta(days=10)).rows == []
    res = CliRunner().invoke(cli, ["regressions", "--lake", root, "--since", "10d"])
    assert res.exit_code == 0
    assert "0 significant slow-down(s)" in res.stderr


def test_cli_regressions_lists_slowdowns(tmp_path: Path) -> None:
    root = history(tmp_path, 500.0)
    res = CliRunner().invoke(
        cli,
        ["regressions", "--lake", root, "--since", "10d", "--metric", "iops", "--format", "csv"],
    )
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[1].startswith("nvme,random-reads,job1,read,iops,")
    assert "1 significant slow-down(s)" in res.stderr


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
    assert diffs.pop("kernel") == ("6.1.0-18-amd64", "6.9.0")
    assert diffs.pop("mount_options") == ("rw,relatime", "rw,noatime")
    assert diffs.pop("labels.rack") == ("r1", "r2")
    assert diffs.pop("labels.zone") == (None, "z1")
    assert set(diffs) == {"canonical_job_file_sha256"}
    res = CliRunner().invoke(cli, ["env-diff", "--lake", str(tmp_path), "--run", "a", "--run", "c"])
    assert (res.exit_code, res.output) == (0, "no environment differences\n")
    res = CliRunner().invoke(cli, ["env-diff", "--lake", str(tmp_path), "--run", "a", "--run", "x"])
    assert (res.exit_code, res.stderr) == (1, "Error: no committed runs match run 'x'\n")


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
    root = history(tmp_path, 1000.0)
    with connect(root) as lake:
        points = trend(lake, "iops", filt=RunFilter(since=T0 + timedelta(days=8)))
    assert [p.run_id for p in points] == ["n0", "n1", "n2"]
