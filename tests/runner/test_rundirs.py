"""runner.rundirs: a killed run's output directory (in the temporary directory) and fio's
data directory (on the target) are removed by the next run; a live run's never are."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fiolake.runner import rundirs
from tests.proc_evidence import fio_job_writes, process_evidence, wait_until
from tests.runner.conftest import lock_is_held

LONG = "[w]\nrw=randwrite\nbs=4k\nsize=4m\nioengine=psync\nruntime=60\ntime_based=1\n"
SHORT = "[r]\nrw=read\nbs=4k\nsize=1m\nioengine=psync\nruntime=1\ntime_based=1\n"


def backdate(path: Path, seconds: float) -> None:
    """As if `path` was last changed `seconds` ago (a sweep leaves young ones alone)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def holders(path: Path) -> str:
    """The processes with `path` open, as /proc shows them (a failure's evidence)."""
    found = []
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if fd.readlink() == path:
                found.append(process_evidence(int(fd.parts[2])))
        except OSError:
            continue
    return "\n".join(found) or "none"


def abandoned_dir(base: Path, run_id: str, data_dir: Path | None, *, lock: bool = True) -> Path:
    """An output directory as a killed run leaves it: the lock file no one holds."""
    outdir = base / f"fiolake-{run_id}-abcdefgh"
    outdir.mkdir(parents=True)
    if lock:
        (outdir / rundirs.LOCK_NAME).touch()
    if data_dir is not None:
        data_dir.mkdir(parents=True)
        (data_dir / "w.0.0").write_bytes(b"x" * 4096)
        rundirs.note_data_dir(outdir, data_dir)
    return outdir


def test_an_abandoned_directory_goes_with_its_data_and_a_live_or_young_one_stays(
    tmp_path: Path,
) -> None:
    tmp, target = tmp_path / "tmp", tmp_path / "target"
    dead_data = rundirs.data_dir_for(target, "r-20261128T010000-aaaaaaaaaa")
    dead = abandoned_dir(tmp, "r-20261128T010000-aaaaaaaaaa", dead_data)
    young = abandoned_dir(tmp, "r-20261128T010001-bbbbbbbbbb", None)
    # a note that names anything but a run's data directory is not followed
    odd_data = target / "precious"
    odd = abandoned_dir(tmp, "r-20261128T010002-cccccccccc", odd_data)
    unlocked_old = abandoned_dir(tmp, "r-20261128T010003-dddddddddd", None, lock=False)
    unlocked_new = abandoned_dir(tmp, "r-20261128T010004-eeeeeeeeee", None, lock=False)
    for path in (dead, odd):
        backdate(path, 2 * rundirs.YOUNG_S)
    backdate(unlocked_old, rundirs.UNLOCKED_STALE_S + 60)
    backdate(unlocked_new, 2 * rundirs.YOUNG_S)
    with rundirs.run_output_dir("r-20261128T010005-ffffffffff", tmp) as live:
        backdate(live.path, 2 * rundirs.YOUNG_S)
        removed = rundirs.remove_abandoned(tmp)
        assert live.path.is_dir()  # its lock is held (here, by this process's descriptor)
    assert sorted(removed) == sorted([dead, dead_data, odd, unlocked_old])
    assert not dead.exists() and not dead_data.exists() and not unlocked_old.exists()
    assert young.is_dir() and unlocked_new.is_dir()
    assert (odd_data / "w.0.0").is_file()
    assert not live.path.exists()  # removed when its block ended


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_the_next_run_removes_what_a_sigkilled_run_left(tmp_path: Path) -> None:
    tmp, target, lake = tmp_path / "tmp", tmp_path / "target", tmp_path / "lake"
    tmp.mkdir()
    target.mkdir()
    (tmp_path / "long.fio").write_text(LONG)
    (tmp_path / "short.fio").write_text(SHORT)
    env = {**os.environ, "TMPDIR": str(tmp)}  # the runs' output directories go here

    def run(job: str) -> list[str]:
        return [sys.executable, "-m", "fiolake", "run", str(tmp_path / job), "--dir",
                str(target), "--backend", "t", "--lake", str(lake), "--share-host"]  # fmt: skip

    log = tmp_path / "killed-run.log"
    with log.open("w") as out:
        proc = subprocess.Popen(run("long.fio"), env=env, stdout=out, stderr=out,
                                start_new_session=True)  # fmt: skip
    try:
        try:
            # once fio's job process writes, not when the data file appears (then fio
            # forks the job, where a SIGTERM deadlocks it: tests.proc_evidence)
            wait_until("fio's job process writes", lambda: fio_job_writes(proc.pid))
        except AssertionError as exc:
            evidence = f"{log.read_text()}\n{process_evidence(proc.pid)}"
            raise AssertionError(f"{exc}\n{evidence}") from None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # fiolake and its fio, as an OOM kill would
        proc.wait()
    [outdir] = tmp.glob("fiolake-r-*")
    [data_dir] = target.glob(".fiolake-r-*")
    assert (outdir / "job.fio").is_file()
    # fio holds the lock too (inherited) until it and its job processes have gone: it
    # ends with fiolake (SIGTERM on its parent's death), not at once
    lock = outdir / rundirs.LOCK_NAME
    try:
        wait_until("fio lets the run's lock go", lambda: not lock_is_held(lock))
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {holders(lock)}") from None
    backdate(outdir, 2 * rundirs.YOUNG_S)  # an hour later, say: the next run comes
    done = subprocess.run(run("short.fio"), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not outdir.exists() and not data_dir.exists()
    assert list(tmp.iterdir()) == [] and list(target.iterdir()) == []  # its own are gone too
