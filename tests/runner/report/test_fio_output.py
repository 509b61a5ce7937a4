"""runner.report.results against real fio 3.33 output (tiny runs, all started at once) and a
hand-written fio-3.1-style report (docs/fio-output.md §1)."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fiolake.errors import FioError
from fiolake.runner.report.results import (
    STANDARD_PERCENTILES,
    FioReport,
    bin_percentiles,
    job_errors,
    parse_fio_json,
    percentile_rows,
    result_rows,
)
from fiolake.schema import RESULT_PERCENTILES, to_table

DATA = Path(__file__).parent.parent / "data"

MAIN_JOB = """
[global]
directory={data}
size=4M
bs=4k
runtime=1
time_based=1
ioengine=psync
rate_iops=3000

[rr]
rw=randrw
numjobs=2

[seqw]
new_group
rw=write
bs=64k
time_based=0
rate_iops=0
numjobs=2

[grp]
new_group
rw=randread
numjobs=2
group_reporting=1

[gtod]
new_group
ioengine=null
rw=randwrite
gtod_reduce=1

[aio]
new_group
ioengine=libaio
iodepth=4
rw=randread
lat_percentiles=1
slat_percentiles=1

[mix]
new_group
ioengine=null
rw=randrw
unified_rw_reporting=1
"""

ENOSPC_JOB = """
[full]
directory={small}
ioengine=psync
rw=write
bs=64k
size=4M
"""


@dataclass
class Runs:
    texts: dict[str, str] = field(default_factory=dict)
    skip: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Start every fio run in parallel (≈1.5 s in all) and collect the --output texts."""
    base = tmp_path_factory.mktemp("fio_output")
    (base / "data").mkdir()
    (base / "main.fio").write_text(MAIN_JOB.format(data=base / "data"))
    small = base / "small"
    small.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(small)], capture_output=True
    )
    (base / "enospc.fio").write_text(ENOSPC_JOB.format(small=small))
    commands = {
        "main": ["main.fio", "--output-format=json+"],
        "nofile": ["--name=nofile", f"--filename={base / 'missing'}", "--allow_file_create=0",
                   "--rw=randrw", "--size=1M", "--output-format=json"],
        "status": ["--name=si", "--ioengine=null", "--rw=read", "--size=1M", "--time_based",
                   "--runtime=1", "--rate_iops=100", "--status-interval=1",
                   "--output-format=json"],
        "bogus": ["--name=x", "--ioengine=bogus", "--size=1M", "--output-format=json"],
    }  # fmt: skip
    result = Runs()
    if mounted.returncode == 0:
        commands["enospc"] = ["enospc.fio", "--output-format=json"]
    else:
        result.skip["enospc"] = f"cannot mount a 1 MiB tmpfs: {mounted.stderr.decode().strip()}"
    procs = {}
    try:
        for name, args in commands.items():
            procs[name] = subprocess.Popen(
                ["fio", f"--output={base / name}.out", *args],
                cwd=base,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        for proc in procs.values():
            proc.wait(timeout=60)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
        if mounted.returncode == 0:
            subprocess.run(["umount", str(small)], check=False)
    for name in procs:
        result.texts[name] = (base / f"{name}.out").read_text()
    return result


@pytest.fixture(scope="module")
def main(runs: Runs) -> FioReport:
    return parse_fio_json(runs.texts["main"])


def canonical(name: str) -> dict[str, str]:
    """Stand-in for the runner's canonical options: only 'rr' has extra ones."""
    return {"iodepth": "8", "direct": "1", "rw": "randrw"} if name == "rr" else {}


def rows_of(report: FioReport) -> list[dict]:
    return result_rows(report, run_id="r1", backend="tmp", job_options=canonical)


def test_main_report_header(main: FioReport):
    assert main.fio_version == "fio-3.33"
    assert main.documents == 1
    assert main.prefix_text == ""
    assert main.timestamp_ms == main.raw["timestamp_ms"] > 1_500_000_000_000
    assert [j["jobname"] for j in main.jobs] == ["rr", "rr", "seqw", "seqw", "grp", "gtod",
                                                 "aio", "mix"]  # fmt: skip
    assert job_errors(main) == []


def test_result_rows_equal_fio_json(main: FioReport):
    rows = rows_of(main)
    keys = [(r["job_index"], r["direction"]) for r in rows]
    assert keys == [(0, "read"), (0, "write"), (1, "read"), (1, "write"), (2, "write"),
                    (3, "write"), (4, "read"), (5, "write"), (6, "read"), (7, "mixed")]  # fmt: skip
    for row in rows:
        job = main.jobs[row["job_index"]]
        section = job[row["direction"]]
        assert row["job_name"] == job["jobname"]
        assert row["groupid"] == job["groupid"]
        assert row["io_bytes"] == section["io_bytes"] > 0
        assert row["total_ios"] == section["total_ios"]
        assert row["bw_bytes"] == section["bw_bytes"]
        assert row["iops"] == section["iops"]
        assert row["runtime_ms"] == section["runtime"]
        assert (row["usr_cpu"], row["sys_cpu"]) == (job["usr_cpu"], job["sys_cpu"])
        assert (row["ctx"], row["majf"], row["minf"]) == (job["ctx"], job["majf"], job["minf"])
        assert row["job_runtime_ms"] == job["job_runtime"]
        assert row["job_error"] == 0
        if section["bw_samples"]:
            assert row["bw_min_bytes"] == section["bw_min"] * 1024
            assert row["bw_max_bytes"] == section["bw_max"] * 1024
            assert row["bw_mean_bytes"] == pytest.approx(section["bw_mean"] * 1024)
            assert row["iops_mean"] == pytest.approx(section["iops_mean"])
        else:
            assert row["bw_min_bytes"] is None and row["iops_mean"] is None
        pct = section["clat_ns"].get("percentile")
        for column, p in RESULT_PERCENTILES.items():
            assert row[column] == (pct[f"{p:.6f}"] if pct else None), (row["job_name"], column)
    to_table("results", rows)


def test_io_bytes_sum_matches_fio(main: FioReport):
    rows = rows_of(main)
    for direction in ("read", "write", "mixed"):
        fio_total = sum(j[direction]["io_bytes"] for j in main.jobs if direction in j)
        assert sum(r["io_bytes"] for r in rows if r["direction"] == direction) == fio_total
    # A size-bounded job writes exactly size per clone: 2 × 4 MiB.
    assert sum(r["io_bytes"] for r in rows if r["job_name"] == "seqw") == 2 * 4 * 1024 * 1024


def test_numjobs_without_group_reporting_repeat_names(main: FioReport):
    rr = [r for r in rows_of(main) if r["job_name"] == "rr"]
    assert sorted({r["job_index"] for r in rr}) == [0, 1]
    assert all(r["group_reporting"] is False for r in rr)
    # canonical options win over fio's echo; JSON fills the rest (numjobs, global ioengine)
    assert {(r["iodepth"], r["direct"], r["numjobs"], r["ioengine"], r["bs"]) for r in rr} == {
        (8, True, 2, "psync", "4k")
    }


def test_group_reporting_folds_threads(main: FioReport):
    (grp,) = [r for r in rows_of(main) if r["job_name"] == "grp"]
    job = main.jobs[grp["job_index"]]
    assert grp["job_index"] == 4 and grp["group_reporting"] is True and grp["numjobs"] == 2
    assert grp["job_runtime_ms"] == job["job_runtime"] >= 1800  # summed over both threads
    assert grp["rw"] == "randread" and grp["iodepth"] == 1  # unset: fio's default


def test_gtod_reduce_leaves_latency_null(main: FioReport):
    (gtod,) = [r for r in rows_of(main) if r["job_name"] == "gtod"]
    assert gtod["io_bytes"] > 0 and gtod["iops"] > 0
    lat_cols = [c for c in gtod if c.endswith("_ns")]
    assert len(lat_cols) == 12 + len(RESULT_PERCENTILES)
    assert all(gtod[c] is None for c in lat_cols)
    assert not [p for p in percentile_rows(main, run_id="r1") if p["job_name"] == "gtod"]


def test_sync_engine_slat_null_libaio_measured(main: FioReport):
    by_name = {r["job_name"]: r for r in rows_of(main)}
    assert by_name["seqw"]["slat_mean_ns"] is None  # psync measures no submission latency
    assert by_name["seqw"]["clat_mean_ns"] > 0
    aio = main.jobs[6]["read"]
    assert by_name["aio"]["slat_min_ns"] == aio["slat_ns"]["min"]
    assert by_name["aio"]["lat_stddev_ns"] == aio["lat_ns"]["stddev"]


def test_unified_rw_reporting_gives_mixed_row(main: FioReport):
    (mix,) = [r for r in rows_of(main) if r["job_name"] == "mix"]
    assert mix["direction"] == "mixed"
    assert mix["io_bytes"] == main.jobs[7]["mixed"]["io_bytes"] > 0


def test_percentile_rows_cover_every_fio_percentile(main: FioReport):
    rows = percentile_rows(main, run_id="r1")
    to_table("percentiles", rows)
    fio_json = [r for r in rows if r["source"] == "fio_json"]
    expected = sum(
        len(job[d][f"{t}_ns"].get("percentile", {}))
        for job in main.jobs
        for d in ("read", "write", "trim", "mixed")
        if d in job
        for t in ("slat", "clat", "lat")
    )
    assert len(fio_json) == expected > 0
    aio_types = {r["lat_type"] for r in fio_json if r["job_name"] == "aio"}
    assert aio_types == {"slat", "clat", "lat"}
    for row in fio_json:
        section = main.jobs[row["job_index"]][row["direction"]][f"{row['lat_type']}_ns"]
        assert section["percentile"][f"{row['percentile']:.6f}"] == row["value_ns"]


def test_json_plus_bins_reproduce_fio_percentiles_exactly(main: FioReport):
    rows = percentile_rows(main, run_id="r1")
    fio = {
        (r["job_index"], r["direction"], r["lat_type"], r["percentile"]): r["value_ns"]
        for r in rows
        if r["source"] == "fio_json"
    }
    ours = {
        (r["job_index"], r["direction"], r["lat_type"], r["percentile"]): r["value_ns"]
        for r in rows
        if r["source"] == "json_plus_bins"
    }
    assert set(ours) == set(fio)
    mismatches = {k: (fio[k], ours[k]) for k in fio if fio[k] != ours[k]}
    assert mismatches == {}
    per_series = Counter(k[:3] for k in ours)
    assert set(per_series.values()) == {len(STANDARD_PERCENTILES)}
    assert len(per_series) >= 10  # several jobs × directions × the three latency types


def test_bin_percentiles_threshold_is_exact():
    # fio compares in long double: 99.95 % of 2000 is a hair above 1999 (the double 99.95 is
    # 99.9500000000000028…), so it lands in the next bucket. Plain doubles round to 1999.0.
    assert 99.95 / 100 * 2000 == 1999.0
    bins = {"100": 1999, "200": 1}
    assert bin_percentiles(bins, [99.95, 50.0, 99.9]) == [200, 100, 100]


def test_enospc_failure_is_reported(runs: Runs):
    if "enospc" in runs.skip:
        pytest.skip(runs.skip["enospc"])
    report = parse_fio_json(runs.texts["enospc"])
    (message,) = job_errors(report)
    assert message == "job 'full' (#0) failed: errno 28 (No space left on device)"
    rows = result_rows(report, run_id="r1", backend="tmp", job_options=lambda _: {})
    assert [(r["direction"], r["job_error"]) for r in rows] == [("write", 28)]
    assert rows[0]["io_bytes"] <= 1024 * 1024
    to_table("results", rows)


def test_job_without_io_keeps_rows_and_fio_error_line(runs: Runs):
    report = parse_fio_json(runs.texts["nofile"])
    assert report.prefix_text == "fio: file creation disallowed by allow_file_create=0"
    assert job_errors(report) == ["fio: file creation disallowed by allow_file_create=0"]
    rows = result_rows(report, run_id="r1", backend="tmp", job_options=lambda _: {})
    assert [(r["direction"], r["io_bytes"], r["total_ios"]) for r in rows] == [
        ("read", 0, 0),
        ("write", 0, 0),
    ]
    assert all(r["clat_mean_ns"] is None and r["clat_p99_ns"] is None for r in rows)
    assert percentile_rows(report, run_id="r1") == []
    to_table("results", rows)


def test_status_interval_documents_keep_the_last(runs: Runs):
    text = runs.texts["status"]
    report = parse_fio_json(text)
    assert report.documents >= 2
    decoder = json.JSONDecoder()
    first, _ = decoder.raw_decode(text)
    assert report.jobs[0]["read"]["total_ios"] >= first["jobs"][0]["read"]["total_ios"]
    assert report.raw["jobs"] is not first["jobs"]


def test_prefix_text_and_concatenated_documents(main: FioReport, runs: Runs):
    error_line = "fio: pid=4242, err=28/file:io_u.c:1876, func=io_u error, error=No space left"
    first = runs.texts["status"].split("\n}\n", 1)[0] + "\n}\n"
    text = f"{error_line}\nsome other line\n{first}{runs.texts['main']}"
    report = parse_fio_json(text)
    assert report.documents == 2
    assert report.prefix_text == f"{error_line}\nsome other line"
    assert [j["jobname"] for j in report.jobs] == [j["jobname"] for j in main.jobs]
    assert job_errors(report) == [error_line]


def test_tab_in_job_name_parses(tmp_path: Path):
    # fio escapes only '"' and '\\' → a raw tab; strict json.loads would refuse it.
    text = '{\n "fio version" : "fio-3.33",\n "jobs" : [ { "jobname" : "a\tb" } ]\n}\n'
    assert parse_fio_json(text).jobs[0]["jobname"] == "a\tb"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "fio produced no JSON output: (empty output)"),
        ("fio: engine bogus not loadable\nfio: failed to load engine\n",
         "fio produced no JSON output: fio: engine bogus not loadable\nfio: failed to load engine"),
        ('{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n',
         'fio produced no JSON output: {\n  "fio version" : "fio-3.33",\n  "jobs" : ['),
    ],
)  # fmt: skip
def test_no_json_raises(text: str, message: str):
    with pytest.raises(FioError) as info:
        parse_fio_json(text)
    assert str(info.value) == message


def test_real_engine_failure_raises(runs: Runs):
    with pytest.raises(FioError, match=r"^fio produced no JSON output: fio: engine bogus"):
        parse_fio_json(runs.texts["bogus"])


def test_truncated_final_document_raises(runs: Runs):
    text = runs.texts["status"]
    cut = text[: len(text) - 200]
    with pytest.raises(FioError) as info:
        parse_fio_json(cut)
    assert "incomplete document at line" in str(info.value)


def test_fio_3_1_report():
    report = parse_fio_json((DATA / "fio-3.1.json").read_text())
    assert report.fio_version == "fio-3.1" and report.timestamp_ms == 1508313455123
    assert report.prefix_text.startswith("fio: this platform does not support")
    assert job_errors(report) == []  # a warning, not an error
    rows = result_rows(report, run_id="old", backend="b", job_options=lambda _: {})
    assert [(r["job_name"], r["direction"]) for r in rows] == [
        ("old-read", "read"),
        ("old-lat", "write"),
    ]
    read, write = rows
    assert read["bw_bytes"] == 80 * 1024  # no bw_bytes before 3.2: KiB/s × 1024
    assert read["job_runtime_ms"] is None  # job_runtime arrived in 3.8
    assert read["slat_mean_ns"] is None and read["clat_min_ns"] == 9900
    assert (read["clat_p50_ns"], read["clat_p99_ns"]) == (10112, 98816)
    assert read["ioengine"] == "psync"  # from global options
    # lat_percentiles=1 in 3.1: the list under clat_ns is total latency, not clat.
    assert write["clat_p50_ns"] is None and write["clat_mean_ns"] == 55000.0
    pct = percentile_rows(report, run_id="old")
    to_table("percentiles", pct)
    to_table("results", rows)
    assert {(r["job_name"], r["lat_type"]) for r in pct} == {
        ("old-read", "clat"),
        ("old-lat", "lat"),
    }
    assert all(r["percentile"] > 0 for r in pct)  # padded "0.00" keys dropped
    assert Counter(r["source"] for r in pct) == {"fio_json": 34, "json_plus_bins": 34}
    fio = {
        (r["job_name"], r["percentile"]): r["value_ns"] for r in pct if r["source"] == "fio_json"
    }
    bins = {
        (r["job_name"], r["percentile"]): r["value_ns"] for r in pct if r["source"] != "fio_json"
    }
    assert fio == bins
