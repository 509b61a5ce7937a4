"""A lake written by real fio (`fiolake run`): compare agrees with hand-written SQL.

scipy.stats and statsmodels, the oracles, are imported inside the tests that use them:
~1 s of import in each process that collects this file (four in `make test-fast`).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.aggregator.lake.check import check_lake
from fiolake.aggregator.lake.lake import connect
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.stats.compare import compare
from fiolake.cli import cli

HAND = """
    WITH per_run AS (
        SELECT r.backend, x.job_name, x.direction, x.run_id,
               sum(x.iops) AS iops, sum(x.bw_bytes) AS bw_bytes, avg(x.clat_p99_ns) AS p99
        FROM results x JOIN runs r USING (run_id)
        WHERE r.status = 'ok' AND r.campaign_id = 'real'
        GROUP BY ALL
    )
    SELECT backend, job_name, direction, count(*), avg(iops), stddev_samp(iops),
           avg(bw_bytes), avg(p99)
    FROM per_run GROUP BY ALL ORDER BY ALL
"""


@pytest.mark.slow
def test_two_backends_three_repetitions(tmp_path: Path) -> None:
    from scipy import stats as scipy_stats

    lake = tmp_path / "lake"
    for backend in ("disk-a", "disk-b"):
        target = tmp_path / backend
        target.mkdir()
        args = ["run", "random-reads", "--create-dir", "--dir", str(target), "--backend", backend]
        args += ["--lake", str(lake), "--runtime", "1", "--size", "4M", "--repeat", "3"]
        res = CliRunner().invoke(cli, [*args, "--campaign", "real", "--format", "csv"])
        assert res.exit_code == 0, res.output
    with connect(str(lake)) as handle:
        expected = handle.con.sql(HAND).fetchall()
        result = compare(
            handle, metrics=["iops", "bw_bytes", "clat_p99_ns"], filt=RunFilter(campaign="real")
        )
        assert check_lake(handle) == []
    assert result.groups == ["disk-a", "disk-b"]
    got = {(r.group, r.job_name, r.direction, r.metric): r for r in result.rows}
    assert len(expected) == 2 and len(got) == 6
    for backend, job, direction, n, *_ in expected:
        assert n == 3
        assert got[(backend, job, direction, "iops")].n == 3
        verdict = got[(backend, job, direction, "iops")].verdict
        assert verdict in ("baseline", "better", "worse", "equivalent", "inconclusive")
    per_run = {}
    with connect(str(lake)) as handle:
        for backend, value in handle.con.sql(
            "SELECT r.backend, sum(x.iops) FROM results x JOIN runs r USING (run_id) "
            "GROUP BY r.backend, x.run_id, x.job_name, x.direction"
        ).fetchall():
            per_run.setdefault(backend, []).append(value)
    for backend, values in per_run.items():
        row = got[(backend, "random-reads", "read", "iops")]
        assert row.geomean == pytest.approx(scipy_stats.gmean(values))


FSYNC_WRITES = """
[fsync-writes]
ioengine=psync
rw=write
bs=4k
size=2M
fsync=1
time_based=1
runtime=2
"""


@pytest.mark.slow
@pytest.mark.alone  # `better` from 3 runs a side: `inconclusive` beside busy workers
def test_tmpfs_fsync_latency_is_better_than_disk(tmp_path: Path) -> None:
    """disk (/tmp here) vs tmpfs (/dev/shm), fsync=1 writes, 3 repetitions each."""
    job = tmp_path / "fsync-writes.fio"
    job.write_text(FSYNC_WRITES)
    lake = tmp_path / "lake"
    shm = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        for backend, target in (("disk", tmp_path / "disk"), ("tmpfs", shm / "t")):
            args = ["run", str(job), "--create-dir", "--dir", str(target), "--backend", backend]
            args += ["--lake", str(lake), "--repeat", "3", "--campaign", "fsync"]
            res = CliRunner().invoke(cli, [*args, "--format", "csv"])
            assert res.exit_code == 0, res.output
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    with connect(str(lake)) as handle:
        result = compare(handle, metrics=["clat_p99_ns", "lat_mean_ns", "iops"])
    rows = {(r.group, r.metric): r for r in result.rows}
    for metric in ("clat_p99_ns", "lat_mean_ns"):
        row = rows[("tmpfs", metric)]
        assert row.verdict == "better", (metric, row)
        assert row.ratio_ci_high < 1 and row.ratio_ci_low > 0
    assert rows[("tmpfs", "iops")].verdict == "better"


def test_lake_check_passes_gtod_reduce_and_names_what_is_missing(tmp_path: Path) -> None:
    """gtod_reduce=1 measures no latency, so no percentiles: a healthy lake all the same.
    A normal run whose percentiles file is gone is named."""
    lake = tmp_path / "lake"
    target = tmp_path / "t"
    target.mkdir()
    jobs = {
        "gtod": "[g]\nioengine=null\nrw=randread\nbs=4k\nsize=1M\ngtod_reduce=1\n",
        "plain": "[p]\nioengine=null\nrw=randread\nbs=4k\nsize=1M\n",
    }
    for name, text in jobs.items():
        (tmp_path / f"{name}.fio").write_text(text)
        args = ["run", str(tmp_path / f"{name}.fio"), "--dir", str(target), "--backend", "b"]
        res = CliRunner().invoke(cli, [*args, "--lake", str(lake), "--format", "csv"])
        assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["lake", "check", "--lake", str(lake)])
    assert res.exit_code == 0, res.output
    took = r"\(checked in \d+\.\d\d (ms|s)\)"
    assert re.fullmatch(rf"ok: 2 committed run\(s\), nothing missing {took}\n", res.stderr)
    with connect(str(lake)) as handle:
        (run_id,) = handle.con.sql("SELECT run_id FROM runs WHERE profile = 'plain'").fetchone()
        (gtod,) = handle.con.sql("SELECT count(*) FROM percentiles p JOIN runs USING (run_id) "
                                 "WHERE profile = 'gtod'").fetchone()  # fmt: skip
    assert gtod == 0
    for path in (lake / "results" / "percentiles").glob(f"*/{run_id}.parquet"):
        path.unlink()
    res = CliRunner().invoke(cli, ["lake", "check", "--lake", str(lake), "--format", "csv"])
    assert res.exit_code == 1
    (line,) = res.stdout.splitlines()[1:]
    assert line.endswith(f",{run_id},ok,no percentiles rows though 1 results row(s) have latencies")
    assert re.fullmatch(rf"1 problem\(s\) in 2 committed run\(s\) {took}\n", res.stderr)
