"""Measure what the user named; fio never outlives fiolake; cut-short and contention flags.

Real fio, real signals, real mounts (/dev/shm is tmpfs here, tmp_path is on disk).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fiolake.cli import cli
from fiolake.runner.host.contention import descends_from, other_fio_pids
from fiolake.runner.host.sysinfo import mount_info
from fiolake.runner.policy.check import Caps, apply_overrides, check_job_file

TINY = "[tiny]\nrw=randread\nbs=4k\nsize=4M\nioengine=psync\ndirect=1\nruntime=1\ntime_based=1\n"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def runs(lake: Path) -> list[dict]:
    result = invoke("sql", "SELECT * FROM runs", "--lake", str(lake), "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fio_pids_under(parent: int) -> list[int]:
    """The benchmark fio processes started by `parent` (not `fio --parse-only`).

    One scan of the host's fio, each judged by its own ancestry: the difference of two
    scans counted a fio another worker started between them as ours (CI, 4 workers), and
    the test then signalled a fiolake that had not yet set its handler."""
    ours = []
    for pid in sorted(other_fio_pids(ours=-1)):  # -1 is nobody's ancestor: every fio
        try:
            mine = descends_from(pid, parent)
            if mine and b"--output-format" in Path(f"/proc/{pid}/cmdline").read_bytes():
                ours.append(pid)
        except OSError:
            continue
    return ours


@pytest.fixture
def job(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.fio"
    path.write_text(TINY)
    return path


def test_missing_dir_exits_2_and_creates_nothing(tmp_path: Path, job: Path) -> None:
    target, lake = tmp_path / "no" / "such", tmp_path / "lake"
    result = invoke("run", str(job), "--dir", str(target), "--lake", str(lake))
    assert result.exit_code == 2
    assert result.output.endswith(
        f"Error: --dir {target} does not exist — create it on the storage under test "
        "(is the file system mounted?), or pass --create-dir\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.fio"]


def test_expect_fs_mismatch_exits_2_before_fio(tmp_path: Path, job: Path) -> None:
    lake = tmp_path / "lake"
    m = mount_info(tmp_path)
    result = invoke(
        "run", str(job), "--dir", str(tmp_path), "--lake", str(lake), "--expect-fs", "tmpfs"
    )
    assert result.exit_code == 2
    assert result.output.endswith(
        f"Error: --dir {tmp_path} is on mount point {m.mount_point}, {m.fs_type} on "
        f"{m.device}; expected file system tmpfs — point --dir at the storage under test, "
        "or fix --expect-fs\n"
    )
    assert not lake.exists()


def test_expect_mount_mismatch_exits_2(tmp_path: Path, job: Path) -> None:
    result = invoke("run", str(job), "--dir", str(tmp_path), "--expect-mount", "/dev/shm")
    assert result.exit_code == 2
    assert "expected mount point /dev/shm — mount the storage under test" in result.output


def test_create_dir_on_tmpfs_names_the_mount_and_records_it(tmp_path: Path, job: Path) -> None:
    target = Path("/dev/shm") / f"fiolake-test-{os.getpid()}" / "deep"
    lake = tmp_path / "lake"
    try:
        result = CliRunner().invoke(
            cli,
            ["run", str(job), "--dir", str(target), "--create-dir", "--lake", str(lake),
             "--expect-fs", "tmpfs", "--expect-mount", "/dev/shm"],
            catch_exceptions=False,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert f"target {target}: mount point /dev/shm, tmpfs on tmpfs" in result.stderr
        assert "root file system" not in result.stderr
        (row,) = runs(lake)
        assert (row["mount_point"], row["fs_type"], row["status"]) == ("/dev/shm", "tmpfs", "ok")
    finally:
        subprocess.run(["rm", "-rf", str(target.parent)], check=False)


def test_root_file_system_gets_a_warning_saying_how_to_make_it_an_error(
    tmp_path: Path, job: Path
) -> None:
    if mount_info(tmp_path).mount_point != "/":
        pytest.skip("tmp_path is not on the root file system here")
    result = CliRunner().invoke(
        cli, ["run", str(job), "--dir", str(tmp_path), "--lake", str(tmp_path / "lake")]
    )
    assert result.exit_code == 0, result.output
    assert "is on the root file system" in result.stderr
    assert "pass --expect-mount PATH or --expect-fs TYPE to make this an error" in result.stderr


def test_read_only_dir_is_refused(tmp_path: Path, job: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    immutable = os.geteuid() == 0 and subprocess.run(["chattr", "+i", str(ro)]).returncode == 0
    try:
        result = invoke("run", str(job), "--dir", str(ro / "sub"), "--create-dir")
        assert result.exit_code == 2
        assert f"Error: cannot create --dir {ro / 'sub'}: " in result.output
        result = invoke("run", str(job), "--dir", str(ro))
        assert result.exit_code == 2
        assert f"Error: --dir {ro} is not writable (" in result.output
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(ro)], check=False)
        ro.chmod(0o755)
    assert list(ro.iterdir()) == []


def _start_run(tmp_path: Path, job: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "fiolake", "run", str(job), "--dir", str(tmp_path / "t"),
         "--create-dir", "--lake", str(tmp_path / "lake")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _wait_for_fio(parent: int, timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pids := fio_pids_under(parent):
            return pids
        time.sleep(0.2)
    raise AssertionError("fio never started")


@pytest.mark.slow
def test_sigterm_stops_fio_and_records_the_run_as_interrupted(tmp_path: Path) -> None:
    job = tmp_path / "long.fio"
    job.write_text(TINY.replace("runtime=1", "runtime=60"))
    proc = _start_run(tmp_path, job)
    pids = _wait_for_fio(proc.pid)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err.decode()
    assert "Error: stopped by SIGTERM: fio was stopped and the run recorded with status " in (
        err.decode()
    )
    assert [p for p in pids if Path(f"/proc/{p}").exists()] == []
    (row,) = runs(tmp_path / "lake")
    assert (row["status"], row["error"]) == ("interrupted", "stopped by a signal to fiolake")


@pytest.mark.slow
def test_fio_dies_with_its_parent_even_on_sigkill(tmp_path: Path) -> None:
    job = tmp_path / "long.fio"
    job.write_text(TINY.replace("runtime=1", "runtime=60"))
    proc = _start_run(tmp_path, job)
    pids = _wait_for_fio(proc.pid)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        time.sleep(0.2)
    alive = [p for p in pids if Path(f"/proc/{p}").exists()]
    assert alive == [], "fio outlived the fiolake that started it"


@pytest.mark.parametrize(
    ("text", "option"),
    [
        ("[a]\nrw=read\nsize=4m\nrate=1\n", "rate=1"),
        ("[a]\nrw=read\nsize=4m\nloops=100000000\n", "loops=100000000"),
        ("[a]\nrw=randread\nsize=1g\nrate_iops=10\n", "rate_iops=10"),
        ("[a]\nrw=randread\nsize=1g\nthinktime=1s\n", "thinktime=1s"),
    ],
)
def test_policy_refuses_a_job_that_cannot_finish_within_the_cap(text: str, option: str) -> None:
    from fiolake.errors import PolicyError

    with pytest.raises(PolicyError) as info:
        apply_overrides(check_job_file(text), runtime_s=None, size_bytes=None)
    (message,) = info.value.violations
    assert message.startswith(f"[a] {option}: the workload needs at least ")
    assert "above the runtime cap of 3600 s" in message
    # With its own runtime (or --runtime) the job says when to stop: accepted.
    apply_overrides(check_job_file(text + "runtime=10\n"), runtime_s=None, size_bytes=None)
    apply_overrides(check_job_file(text), runtime_s=10, size_bytes=None, caps=Caps())


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_a_job_stopped_by_the_injected_cap_is_flagged_cut_short(tmp_path: Path) -> None:
    job = tmp_path / "slow.fio"
    # 16384 O_SYNC writes take well over a second on a real disk; the estimate can't know.
    job.write_text("[w]\nrw=randwrite\nbs=4k\nsize=64M\nsync=1\nioengine=psync\n")
    lake = tmp_path / "lake"
    result = CliRunner().invoke(
        cli, ["run", str(job), "--dir", str(tmp_path), "--lake", str(lake), "--max-runtime", "1"]
    )
    assert result.exit_code == 0, result.output
    (row,) = runs(lake)
    assert "cut-short" in row["flags"]
    # Every write is O_SYNC: the page cache cannot make it measure RAM (test_target.py).
    assert "page-cache" not in row["flags"] and row["page_cache_bytes"] is None
    assert "flagged" in result.stderr and "cut-short" in result.stderr


@pytest.mark.slow  # waits on real time or a real fio run (2-4 s): out of the fast tier
def test_another_fio_on_the_host_is_recorded(tmp_path: Path, job: Path) -> None:
    # Started through a shell that exits at once, so this fio is nobody's child here — like
    # a benchmark someone else started on the host.
    other = int(subprocess.run(
        ["sh", "-c", f"fio --name=other --rw=read --size=1m --directory={tmp_path} --time_based "
         "--runtime=20 --thinktime=100ms --output=/dev/null >/dev/null 2>&1 & echo $!"],
        capture_output=True, text=True, check=True,
    ).stdout)  # fmt: skip
    try:
        time.sleep(0.5)
        lake = tmp_path / "lake"
        result = invoke("run", str(job), "--dir", str(tmp_path), "--lake", str(lake))
        assert result.exit_code == 0, result.output
    finally:
        os.kill(other, signal.SIGTERM)
    (row,) = runs(lake)
    assert row["other_fio_procs"] >= 1 and "other-fio" in row["flags"]
    assert row["outside_cpu_pct"] is not None and row["steal_pct"] is not None
