"""results complete and honest (real fio 3.33): percentiles from json+ bins when fio's
percentile_list lacks them, rw per folded section, fio's defaults, no sentinels, and the
disk_util / iodepth / latency_bins tables."""

from __future__ import annotations

import json
import subprocess

import pytest

from fiolake.fio_bins import PLAT_NR, bin_percentiles, plat_idx_to_val
from fiolake.runner.policy.jobfile import parse_job_file
from fiolake.runner.report.extras import disk_util_rows, iodepth_rows, latency_bin_rows
from fiolake.runner.report.results import FioReport, parse_fio_json, result_rows
from fiolake.schema import RESULT_PERCENTILES, to_table

JOB = """
[global]
directory={data}
size=2M
bs=4k

[plist]
rw=randread
percentile_list=90:99.5

[r]
new_group
rw=randread
group_reporting=1
[w]
rw=randwrite
group_reporting=1
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[FioReport, list]:
    base = tmp_path_factory.mktemp("fio_results")
    (base / "data").mkdir()
    text = JOB.format(data=base / "data")
    (base / "job.fio").write_text(text)
    subprocess.run(
        ["fio", "--output-format=json+", "--output=out.json", "job.fio"],
        cwd=base, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    sections = [(s.name, s.options) for s in parse_job_file(text).jobs]
    return parse_fio_json((base / "out.json").read_text()), sections


def rows(run, with_sections: bool = True) -> list[dict]:
    report, sections = run
    return result_rows(
        report, run_id="r", backend="b", job_options=lambda name: {},
        sections=sections if with_sections else None,
    )  # fmt: skip


def test_standard_percentiles_come_from_bins_when_fios_list_lacks_them(run):
    report, _ = run
    (row,) = [r for r in rows(run) if r["job_name"] == "plist"]
    clat = report.jobs[0]["read"]["clat_ns"]
    assert set(clat["percentile"]) == {"90.000000", "99.500000"}
    assert row["clat_p90_ns"] == clat["percentile"]["90.000000"]  # fio's own, kept
    for column, p in RESULT_PERCENTILES.items():
        assert row[column] == bin_percentiles(clat["bins"], [p])[0], column
        assert row[column] is not None


def test_rw_per_direction_of_a_folded_group(run):
    folded = {r["direction"]: r["rw"] for r in rows(run) if r["job_index"] == 1}
    assert folded == {"read": "randread", "write": "randwrite"}
    # the report alone holds one section's options for the whole group: one row is wrong
    alone = {r["direction"]: r["rw"] for r in rows(run, False) if r["job_index"] == 1}
    assert alone["read"] == alone["write"]


def test_unset_options_have_fios_defaults(run):
    row = rows(run)[0]
    assert (row["iodepth"], row["numjobs"], row["direct"], row["ioengine"]) == (
        1,
        1,
        False,
        "psync",
    )
    assert row["bs"] == "4k"  # set in [global]
    to_table("results", rows(run))


def test_sentinels_become_null():
    section = {"io_bytes": 0, "total_ios": 0, "runtime": 0,
               "clat_ns": {"min": 0, "max": 0, "mean": 8.8e12, "stddev": 0.0, "N": 1,
                           "percentile": {"50.000000": 8_800_000_000_000}}}  # fmt: skip
    doc = {"fio version": "fio-3.33", "jobs": [
        {"jobname": "f", "groupid": 0, "error": 5, "elapsed": 2, "job options": {"rw": "read"},
         "read": section}]}  # fmt: skip
    (row,) = result_rows(parse_fio_json(json.dumps(doc)), run_id="r", backend="b",
                         job_options=lambda n: {})  # fmt: skip
    assert row["clat_mean_ns"] is None and row["clat_min_ns"] is None
    assert row["clat_p50_ns"] is None


def test_disk_util_rows_are_fios(run):
    report, _ = run
    rows_ = disk_util_rows(report, run_id="r")
    to_table("disk_util", rows_)
    disks = report.raw.get("disk_util") or []
    if not disks:
        pytest.skip("fio saw no block device under the test directory")
    first = rows_[0]
    assert first["device"] == disks[0]["name"]
    assert first["read_ios"] == disks[0]["read_ios"] and first["util"] == disks[0]["util"]
    assert first["in_queue_ms"] == disks[0]["in_queue"]


def test_iodepth_distribution(run):
    report, _ = run
    rows_ = iodepth_rows(report, run_id="r")
    to_table("iodepth", rows_)
    level = [r for r in rows_ if r["job_index"] == 0 and r["kind"] == "level"]
    assert {r["depth"] for r in level} >= {"1", ">=64"}
    assert sum(r["percent"] for r in level) == pytest.approx(100, abs=0.5)


def test_latency_bins_keep_fios_buckets(run):
    report, _ = run
    rows_ = latency_bin_rows(report, run_id="r")
    to_table("latency_bins", rows_)
    clat = report.jobs[0]["read"]["clat_ns"]
    mine = {
        r["value_ns"]: r["count"]
        for r in rows_
        if r["job_index"] == 0 and r["lat_type"] == "clat" and r["direction"] == "read"
    }
    assert mine == {int(k): v for k, v in clat["bins"].items()}
    assert sum(mine.values()) == clat["N"]


def test_bucket_values_are_fios(run):
    """fio's json+ keys are its plat_idx_to_val midpoints: fio_bins reproduces each one."""
    report, _ = run
    keys = {int(k) for k in report.jobs[0]["read"]["clat_ns"]["bins"]}
    assert len(keys) > 10
    assert keys <= {plat_idx_to_val(i) for i in range(PLAT_NR)}
