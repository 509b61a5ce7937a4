"""`fiolake run` / `validate` end to end with the real fio, into a local lake."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.runner.profiles import list_profiles

TINY = """\
; tiny random read/write mix for tests
[global]
rw=randrw
rwmixread=70
bs=4k
ioengine=psync
size=4M
runtime=2
time_based=1

[mix]
"""


def invoke(*args: str, **kwargs: object):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **kwargs)


def sql(lake: Path, query: str) -> list[dict]:
    result = invoke("sql", query, "--lake", str(lake), "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def raw_report(lake: Path, run_id: str) -> dict:
    text = (lake / "raw" / run_id / "fio.json").read_text()
    return json.loads(text[text.index("{") :])


@pytest.fixture
def tiny_job(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.fio"
    path.write_text(TINY)
    return path


@pytest.mark.slow  # real fio for about 3 s: not in the fast tier
def test_run_stores_what_fio_reported(tmp_path: Path, tiny_job: Path) -> None:
    lake, target = tmp_path / "lake", tmp_path / "target"
    result = invoke(
        "run",
        str(tiny_job),
        "--create-dir",
        "--dir",
        str(target),
        "--lake",
        str(lake),
        "--backend",
        "tmp",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert len(summary) == 1 and summary[0]["status"] == "ok"
    run_id = summary[0]["run_id"]
    report = raw_report(lake, run_id)
    job = report["jobs"][0]
    # the summary carries fio's own numbers, raw
    assert summary[0]["read_io_bytes"] == job["read"]["io_bytes"]
    assert summary[0]["write_iops"] == pytest.approx(job["write"]["iops"])
    assert summary[0]["read_clat_p99_ns"] == job["read"]["clat_ns"]["percentile"]["99.000000"]
    assert summary[0]["ctx"] == job["ctx"]
    # the lake agrees with fio's totals
    total = sql(lake, "SELECT sum(io_bytes) AS b FROM results")[0]["b"]
    assert total == job["read"]["io_bytes"] + job["write"]["io_bytes"]
    runs = sql(lake, "SELECT status, backend, profile, fio_version, fs_type, host FROM runs")
    assert runs == [runs[0]] and runs[0]["status"] == "ok" and runs[0]["profile"] == "tiny"
    assert runs[0]["backend"] == "tmp" and runs[0]["fio_version"].startswith("fio-")
    assert runs[0]["fs_type"]
    # per-second series: one row per thread x direction x second, no gaps
    ts = sql(
        lake,
        "SELECT direction, count(*) AS n, count(DISTINCT second) AS s, "
        "max(second) AS last FROM timeseries GROUP BY 1 ORDER BY 1",
    )
    assert [r["direction"] for r in ts] == ["read", "write"]
    for row in ts:
        assert row["n"] == row["s"] == row["last"] >= 1
    # percentiles: the stored p99 equals fio's
    p99 = sql(
        lake,
        "SELECT value_ns FROM percentiles WHERE direction='read' AND "
        "lat_type='clat' AND percentile=99.0 AND source='fio_json'",
    )
    assert p99[0]["value_ns"] == job["read"]["clat_ns"]["percentile"]["99.000000"]
    # fio's data files are removed from the target dir
    assert list(target.iterdir()) == []


def test_table_summary_shows_human_units_and_dashes(tmp_path: Path) -> None:
    job = tmp_path / "reads.fio"
    job.write_text("[r]\nrw=read\nbs=64k\nsize=4M\nioengine=psync\nruntime=1\ntime_based=1\n")
    result = invoke(
        "run",
        str(job),
        "--create-dir",
        "--dir",
        str(tmp_path / "t"),
        "--lake",
        str(tmp_path / "lake"),
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Read bandwidth" in out and "/s" in out
    write_line = next(line for line in out.splitlines() if line.startswith("Write IOPS"))
    assert write_line.split()[-1] == "---"


def test_exec_prerun_is_refused_and_never_runs(tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    job = tmp_path / "evil.fio"
    job.write_text(f"[evil]\nrw=read\nsize=1M\nexec_prerun=touch {pwned}\n")
    lake = tmp_path / "lake"
    for args in (
        ("validate", str(job)),
        ("run", str(job), "--create-dir", "--dir", str(tmp_path / "t"), "--lake", str(lake)),
    ):
        result = invoke(*args)
        assert result.exit_code == 1
        assert "exec_prerun" in result.output and result.output.startswith("Error: ")
    assert not pwned.exists()
    assert not lake.exists()


def test_validate_reports_every_violation(tmp_path: Path) -> None:
    job = tmp_path / "bad.fio"
    job.write_text("[a]\nrw=randtrim\nfilename=/dev/sda\nnumjobs=500\n")
    result = invoke("validate", str(job))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "Error: job file refused:"
    assert any("bad: [a] rw=randtrim" in line for line in lines)
    assert any("bad: [a] filename=/dev/sda" in line for line in lines)
    assert any("bad: [a] numjobs=500: above the cap of 64" in line for line in lines)


def test_unknown_profile_names_the_known_ones(tmp_path: Path) -> None:
    result = invoke("run", "no-such-profile", "--create-dir", "--dir", str(tmp_path))
    assert result.exit_code == 2
    known = ", ".join(p.name for p in list_profiles())
    assert result.output.endswith(
        "Error: no job file or profile named 'no-such-profile' — give a path to a .fio file "
        f"or one of the shipped profiles: {known}\n"
    )


def test_fio_failure_is_recorded_as_failed(tmp_path: Path) -> None:
    # Reading back files fio laid out without verify headers: fio fails the job (EILSEQ).
    job = tmp_path / "verify.fio"
    job.write_text("[v]\nrw=read\nbs=4k\nsize=1M\nverify=crc32c\nioengine=psync\n")
    lake = tmp_path / "lake"
    result = invoke(
        "run", str(job), "--create-dir", "--dir", str(tmp_path / "t"), "--lake", str(lake),
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 1
    assert "1 of 1 run(s) failed" in result.output
    runs = sql(lake, "SELECT status, error FROM runs")
    assert runs[0]["status"] == "failed"
    assert "verify: bad magic header" in runs[0]["error"]


def test_too_little_free_space_is_refused_with_the_numbers(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs: {mounted.stderr.decode().strip()}")
    try:
        job = tmp_path / "fill.fio"
        job.write_text("[fill]\nrw=write\nbs=64k\nsize=8M\nnumjobs=2\nioengine=psync\n")
        lake = tmp_path / "lake"
        result = invoke("run", str(job), "--dir", str(small), "--lake", str(lake))
        assert result.exit_code == 1
        assert result.output.endswith(
            f"Error: not enough free space in {small}: fill lays out 16.0 MiB (16777216 bytes), "
            f"{small} has 1.0 MiB (1048576 bytes) free — free some space, scale the job down "
            "with --size, or choose another --dir\n"
        )
        assert not lake.exists() and list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=False)


@pytest.mark.slow
def test_default_suite_runs_every_profile(tmp_path: Path) -> None:
    from fiolake.runner.profiles import DEFAULT_SUITE

    lake = tmp_path / "lake"
    result = invoke(
        "run",
        "--create-dir",
        "--dir",
        str(tmp_path / "t"),
        "--lake",
        str(lake),
        "--runtime",
        "1",
        "--size",
        "4M",
    )
    assert result.exit_code == 0, result.output
    for profile in DEFAULT_SUITE:
        assert f"{profile}  (run " in result.stdout
    counted = sql(lake, "SELECT count(DISTINCT run_id) AS n FROM results")[0]["n"]
    assert counted == len(DEFAULT_SUITE)


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_progress_lines_show_elapsed_expected_and_fio_rates(tmp_path: Path) -> None:
    job = tmp_path / "three.fio"
    job.write_text(TINY.replace("runtime=2", "runtime=3"))
    result = invoke(
        "run",
        str(job),
        "--create-dir",
        "--dir",
        str(tmp_path / "t"),
        "--lake",
        str(tmp_path / "lake"),
        "--progress",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("[three]")]
    assert len(lines) >= 2  # about one per second
    assert all(" / ~3s" in line for line in lines)
    assert any("IOPS" in line and "/s" in line for line in lines), lines
    json.loads(result.stdout)  # stdout stays pure data


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path, tiny_job: Path) -> None:
    result = invoke(
        "run",
        str(tiny_job),
        "--create-dir",
        "--dir",
        str(tmp_path / "t"),
        "--lake",
        str(tmp_path / "lake"),
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    assert "[tiny]" not in result.stderr


@pytest.mark.slow  # several real fio runs (~6-9 s): kept out of the fast tier
def test_repeat_interleaves_job_files_and_records_the_order(tmp_path: Path) -> None:
    """job1 rep0, job2 rep0, job1 rep1, job2 rep1 — not job1 twice, then job2 twice."""
    quick = TINY.replace("runtime=2", "runtime=1")
    for name in ("one", "two"):
        (tmp_path / f"{name}.fio").write_text(quick)
    lake = tmp_path / "lake"
    result = invoke(
        "run", str(tmp_path / "one.fio"), str(tmp_path / "two.fio"), "--repeat", "2",
        "--dir", str(tmp_path), "--lake", str(lake), "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    runs = sql(lake, "SELECT profile, repetition, sequence FROM runs ORDER BY started_at")
    assert [(r["profile"], r["repetition"], r["sequence"]) for r in runs] == [
        ("one", 0, 0),
        ("two", 0, 1),
        ("one", 1, 2),
        ("two", 1, 3),
    ]
