"""`fiolake import` on output made here with real fio: several documents, status-interval
dumps, idempotence, a folder with a bad file, and the round trip of a run's own raw output."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.runner.importing import eras, reading

NULL_JOB = (
    "[a]\nioengine=null\nrw=randread\nbs=4k\nsize=64m\n[b]\nioengine=null\nrw=write\nsize=32m\n"
)
TINY = "[t]\nrw=randread\nbs=4k\nsize=1M\nioengine=psync\ndirect=0\nruntime=1\ntime_based=1\n"


def _fio(tmp: Path, *args: str) -> str:
    job = tmp / "null.fio"
    job.write_text(NULL_JOB)
    run = subprocess.run(
        ["fio", "--output-format=json+", *args, str(job)],
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stdout


def _import(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["import", *args])
    return result.exit_code, result.output


def _rows(lake: Path, table: str) -> list[dict]:
    return [
        row for path in sorted((lake / "results" / table).glob("*/*.parquet"))
        for row in pq.read_table(path).to_pylist()
    ]  # fmt: skip


def test_several_documents_in_a_ci_log_are_several_runs(tmp_path: Path) -> None:
    log = tmp_path / "ci.log"
    first, second = _fio(tmp_path), _fio(tmp_path)
    log.write_text(f"+ fio job\nfio: some warning\n{first}+ again\n{second}done\n")
    code, out = _import(str(log), "--backend", "null", "--lake", str(tmp_path / "lake"))
    assert code == 0, out
    runs = _rows(tmp_path / "lake", "runs")
    assert len(runs) == 2 and {r["source_file"] for r in runs} == {str(log)}
    assert len(_rows(tmp_path / "lake", "results")) == 4  # 2 jobs × 1 direction each


@pytest.mark.slow  # real fio for over 3 s: not in the fast tier
def test_status_interval_dumps_fold_into_the_final_document(tmp_path: Path) -> None:
    job = tmp_path / "slow.fio"
    job.write_text("[s]\nioengine=null\nrw=read\nsize=1g\nruntime=3\ntime_based=1\nrate=100m\n")
    out = subprocess.run(
        ["fio", "--output-format=json", "--status-interval=1", str(job)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert out.count('"fio version"') >= 3
    (found,) = reading.found_runs(out)
    final = json.loads(out[out.rindex('{\n  "fio version"') :])
    assert found.doc["jobs"][0]["read"]["io_bytes"] == final["jobs"][0]["read"]["io_bytes"]


def test_importing_twice_adds_nothing_and_a_bad_file_does_not_stop_the_rest(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "one.json").write_text(_fio(tmp_path))
    lake = str(tmp_path / "lake")
    code, out = _import(str(folder), "--backend", "null", "--lake", lake)
    assert code == 0, out
    (folder / "two.json").write_text(_fio(tmp_path))
    (folder / "broken.txt").write_text("fio-3.33\nStarting 1 process\n")
    code, out = _import(str(folder), "--backend", "null", "--lake", lake, "--format", "csv")
    assert code == 1
    assert f"{folder}/one.json,1,,r-" in out and out.count(",skipped") == 1
    assert f"{folder}/two.json,1,,r-" in out and out.count(",imported") == 1
    assert f"Error: {folder}/broken.txt: no fio JSON document in it" in out
    assert out.endswith(
        f"Error: 1 of 3 file(s) not imported ({folder}/broken.txt); imported 1 run(s), skipped 1\n"
    )
    assert len(_rows(tmp_path / "lake", "runs")) == 2


def test_usec_era_bins_by_index_become_ns_values() -> None:
    bins = {"FIO_IO_U_PLAT_BITS": 6, "FIO_IO_U_PLAT_VAL": 64, "FIO_IO_U_PLAT_NR": 1216,
            "10": 3, "130": 2}  # fmt: skip
    doc = {"jobs": [{"jobname": "j", "read": {"io_bytes": 8, "clat": {
        "min": 10, "max": 131, "mean": 12.5, "stddev": 1.25, "bins": bins}}}]}  # fmt: skip
    section = eras.normalise(doc)["jobs"][0]["read"]
    # index 130: group 1, offset 2 → 128 + 2.5 × 2 = 133 µs
    assert section["clat_ns"]["bins"] == {"10000": 3, "133000": 2}
    assert section["clat_ns"]["mean"] == 12500.0 and section["clat_ns"]["min"] == 10000
    assert section["io_bytes"] == 8192 and section["io_kbytes"] == 8


def test_a_file_past_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "FILE_CAP_BYTES", 10)
    with pytest.raises(Exception, match="larger than 0 MiB, the cap for one file"):
        reading.read_text(b"{" * 11)


ROUND_TRIP_SKIP = {"run_id"}


def test_a_runs_own_raw_output_imported_gives_the_same_rows(tmp_path: Path) -> None:
    (tmp_path / "tiny.fio").write_text(TINY)
    lake = tmp_path / "lake"
    result = CliRunner().invoke(
        cli, ["run", str(tmp_path / "tiny.fio"), "--dir", str(tmp_path), "--lake", str(lake),
              "--backend", "here"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (measured,) = _rows(lake, "runs")
    raw = lake / "raw" / measured["run_id"]
    logs = tmp_path / "logs"
    with tarfile.open(raw / "logs.tar.gz") as tar:
        tar.extractall(logs, filter="data")
    code, out = _import(
        str(raw / "fio.json"), "--backend", "here", "--lake", str(lake), "--profile", "tiny",
        "--logs", str(logs),
    )  # fmt: skip
    assert code == 0, out
    (imported,) = [r for r in _rows(lake, "runs") if r["origin"] == "import"]
    for table in ("results", "percentiles", "latency_bins", "iodepth", "disk_util", "timeseries"):
        rows = _rows(lake, table)
        mine = [
            {k: v for k, v in r.items() if k not in ROUND_TRIP_SKIP}
            for r in rows
            if r["run_id"] == measured["run_id"]
        ]
        theirs = [
            {k: v for k, v in r.items() if k not in ROUND_TRIP_SKIP}
            for r in rows
            if r["run_id"] == imported["run_id"]
        ]
        assert mine == theirs and (mine or table == "disk_util"), table
    diff = CliRunner().invoke(
        cli, ["env-diff", "--run", measured["run_id"], "--run", imported["run_id"],
              "--lake", str(lake), "--format", "csv"],
    )  # fmt: skip
    assert diff.exit_code == 0, diff.output
    assert f"kernel,{measured['kernel']},unknown (imported)" in diff.output
    assert "origin,run,import" in diff.output


def test_the_same_document_twice_in_one_import_is_one_run(tmp_path: Path) -> None:
    out = _fio(tmp_path)
    (tmp_path / "a.json").write_text(out)
    (tmp_path / "copy.txt").write_text(f"a copy\n{out}")
    lake = str(tmp_path / "lake")
    code, text = _import(
        str(tmp_path / "a.json"), str(tmp_path / "copy.txt"), "--backend", "x", "--lake", lake,
        "--format", "csv",
    )  # fmt: skip
    assert code == 0, text
    assert text.count(",imported") == 1 and text.count(",skipped") == 1
    assert len(_rows(tmp_path / "lake", "runs")) == 1


SYNC_WRITES = "[w]\nrw=write\nbs=4k\nsize=1m\nioengine=psync\nfdatasync=1\n"


@pytest.mark.slow
def test_compare_decides_imported_tmpfs_against_measured_disk(tmp_path: Path) -> None:
    """fio run by hand on tmpfs (fdatasync costs nothing there), imported, against the
    same job measured by `fiolake run` on disk: tmpfs is decided better."""
    job = tmp_path / "sync-writes.fio"
    job.write_text(SYNC_WRITES)
    shm = Path(tempfile.mkdtemp(prefix="fiolake-import-", dir="/dev/shm"))
    out = tmp_path / "by-hand"
    out.mkdir()
    try:
        for rep in range(4):
            run = subprocess.run(
                ["fio", "--output-format=json", f"--directory={shm}", str(job)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            (out / f"sync-writes.{rep}.json").write_text(run.stdout)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    lake = str(tmp_path / "lake")
    code, text = _import(str(out), "--backend", "tmpfs", "--lake", lake)
    assert code == 0, text
    disk = tmp_path / "disk"
    disk.mkdir()
    measured = CliRunner().invoke(
        cli, ["run", str(job), "--dir", str(disk), "--backend", "disk", "--repeat", "4",
              "--lake", lake],
    )  # fmt: skip
    assert measured.exit_code == 0, measured.output
    result = CliRunner().invoke(
        cli, ["compare", "--backend", "disk", "--backend", "tmpfs", "--metric", "iops",
              "--lake", lake, "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    (tmpfs,) = [r for r in rows if r["backend"] == "tmpfs"]
    assert tmpfs["profile"] == "sync-writes" and tmpfs["n"] == 4 and tmpfs["n_baseline"] == 4
    assert tmpfs["verdict"] == "better", tmpfs
    assert "origin import vs run" in tmpfs["notes"]  # one workload: pooled without --allow-mixed


# Written the way people write job files by hand: a [global], aliases, comments, units.
BY_HAND = """; by hand, before fiolake
[global]
readwrite=randread   ; an alias
blocksize={bs}
size=1024k
ioengine=psync
runtime=1s
time_based

[t]
direct=0
"""


@pytest.mark.slow
def test_a_job_run_by_hand_and_imported_pools_with_fiolake_run_of_it(tmp_path: Path) -> None:
    """Issue 43: fio run by hand on a directory, imported with its job file, and `fiolake
    run` of the same job file on the same directory are one workload: one compare row
    without --allow-mixed, naming `origin import vs run`; the same job with another bs is
    not pooled; without --job-file fio's echo lacks the bare flag and the row says so."""
    target = tmp_path / "target"
    target.mkdir()
    jobs = {}
    for name, bs in (("tiny", "4k"), ("other", "8k")):
        jobs[name] = tmp_path / f"{name}.fio"
        jobs[name].write_text(BY_HAND.format(bs=bs))
        (tmp_path / name).mkdir()
        for rep in range(2):
            run = subprocess.run(
                ["fio", "--output-format=json", f"--directory={target}", str(jobs[name])],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            (tmp_path / name / f"{name}.{rep}.json").write_text(run.stdout)
    lake = str(tmp_path / "lake")
    for name in jobs:
        args = (str(tmp_path / name), "--backend", "disk", "--profile", "tiny", "--lake", lake)
        code, text = _import(*args, "--job-file", str(jobs[name]))
        assert code == 0, text
    code, text = _import(str(tmp_path / "other"), "--job-file", str(jobs["tiny"]),
                         "--backend", "wrong-file", "--lake", lake)  # fmt: skip
    assert code == 1
    assert "fio's output disagrees with --job-file (job 0: bs is 8192 in fio's output, " in text
    measured = CliRunner().invoke(
        cli, ["run", str(jobs["tiny"]), "--dir", str(target), "--backend", "disk",
              "--repeat", "2", "--lake", lake, "--share-host"],
    )  # fmt: skip
    assert measured.exit_code == 0, measured.output
    rows = _compared(lake)
    assert [r["n"] for r in rows] == [2, 4]
    other, pooled = rows
    assert "origin import vs run" in pooled["notes"]
    assert other["workload_sha256"] != pooled["workload_sha256"]
    assert "not pooled with 1 other job version(s): bs=8k vs 4k" in other["notes"]
    # Without --job-file: fio's JSON leaves out the bare `time_based`, and the row names it.
    bare = str(tmp_path / "bare")
    code, text = _import(str(tmp_path / "tiny"), "--backend", "disk", "--profile", "tiny",
                         "--lake", bare)  # fmt: skip
    assert code == 0, text
    assert CliRunner().invoke(
        cli, ["run", str(jobs["tiny"]), "--dir", str(target), "--backend", "disk",
              "--repeat", "2", "--lake", bare, "--share-host"],
    ).exit_code == 0  # fmt: skip
    notes = " ".join(n for r in _compared(bare) for n in r["notes"])
    assert "time_based=(default 0) vs 1" in notes and "time_based=1 vs (default 0)" in notes


def _compared(lake: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["compare", "--metric", "iops", "--lake", lake,
                                      "--format", "json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return sorted(json.loads(result.output), key=lambda r: r["n"])
