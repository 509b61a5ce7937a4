"""runner.host.mkfs: the file systems `--mkfs` makes, mounted in fiolake's private mount
namespace — nothing of the device stays mounted even after a SIGKILL of `fiolake run`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fiolake.errors import UsageProblem
from fiolake.runner import rundirs
from fiolake.runner.host import mkfs
from tests.proc_evidence import fio_job_writes, wait_until
from tests.runner.loopdev import loop_device, requires_loop

LONG = "[w]\nrw=randwrite\nbs=4k\nsize=8m\nioengine=psync\nruntime=60\ntime_based=1\n"


def mounted_anywhere(dev: Path) -> list[str]:
    """The mountinfo lines, of every process's mount namespace, that mount `dev`."""
    st = os.stat(dev)
    number = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    found = []
    for info in Path("/proc").glob("[0-9]*/mountinfo"):
        try:
            lines = info.read_text().splitlines()
        except OSError:  # the process ended meanwhile
            continue
        found += [f"{info}: {line}" for line in lines if line.split()[2] == number]
    return found


def free(dev: Path) -> bool:
    """Whether `dev` can be opened exclusively (nothing mounts or claims it)."""
    try:
        os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))
    except OSError:
        return False
    return True


def _measuring(pid: int) -> bool:
    """Whether process `pid` has a child fio running a job (not --version, --parse-only)."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            ppid = int((proc / "stat").read_text().rpartition(")")[2].split()[1])
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and Path(argv[0].decode()).name == "fio" and b"--output" in b" ".join(argv):
            return True
    return False


@requires_loop
def test_nothing_stays_mounted_after_a_sigkill_of_fiolake_run(tmp_path: Path) -> None:
    (tmp_path / "long.fio").write_text(LONG)
    image = Path("/dev/shm") / f"fiolake-sigkill-{os.getpid()}.img"
    with loop_device(image, 64 * 2**20, sparse=True) as dev:
        argv = [sys.executable, "-m", "fiolake", "run", str(tmp_path / "long.fio"),
                "--device", str(dev), "--destroy-data", "--mkfs", "ext4",
                "--lake", str(tmp_path / "lake"), "--share-host"]  # fmt: skip
        tmp = tmp_path / "tmp"  # where the run's output directory goes (runner.rundirs)
        tmp.mkdir()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, "TMPDIR": str(tmp)})  # fmt: skip
        try:
            wait_until("fio measures on the mounted file system", lambda: _measuring(proc.pid))
            # past fio's fork of the job, where our SIGTERM would deadlock it (proc_evidence)
            wait_until("fio's job process writes", lambda: fio_job_writes(proc.pid))
            assert mounted_anywhere(dev), "fio runs, so the file system is mounted"
            [stale] = mkfs.MOUNT_ROOT.glob(f"{proc.pid}-*")
        finally:
            proc.kill()
            proc.wait()
        # fio ends with fiolake (PR_SET_PDEATHSIG); the namespace, and its mount, with both
        wait_until("no namespace mounts the device", lambda: not mounted_anywhere(dev))
        # the kernel shuts the file system down after the namespace went: free soon after
        wait_until("the device is free for anyone again", lambda: free(dev))
        # the next start removes the mount point the killed run left
        assert stale.is_dir()
        assert stale in mkfs.remove_stale()
        assert not stale.exists()
        # and its output directory, once its lock is free (fio, holding it too, has gone)
        [outdir] = tmp.glob("fiolake-r-*")
        assert rundirs.remove_abandoned(tmp, min_age_s=0) == [outdir]


def test_options_go_to_every_file_system_or_to_the_one_they_name() -> None:
    specs = mkfs.parse_specs(
        ["ext4", "xfs"], ["xfs:-m reflink=0", "-L bench"], ["noatime", "xfs:logbsize=256k"]
    )
    assert [(s.fs_type, s.extra, s.mount_options) for s in specs] == [
        ("ext4", ("-L", "bench"), "noatime"),
        ("xfs", ("-m", "reflink=0", "-L", "bench"), "noatime,logbsize=256k"),
    ]
    assert specs[1].mkfs_options() == "-f -q -m reflink=0 -L bench"
    assert specs[1].mkfs_argv(Path("/dev/x"))[1:] == ["-f", "-q", "-m", "reflink=0", "-L",
                                                       "bench", "/dev/x"]  # fmt: skip


def test_a_missing_mkfs_names_its_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mkfs, "SBIN", ())  # only PATH, which holds no mkfs.btrfs
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UsageProblem) as raised:
        mkfs.parse_specs(["btrfs"], [], [])
    assert str(raised.value) == (
        "--mkfs btrfs needs mkfs.btrfs, which is not installed — install the Debian package "
        "btrfs-progs (apt-get install btrfs-progs), or drop --mkfs btrfs"
    )


@requires_loop
@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [
        ("kill fio", 1, "1 of 1 run(s) failed"),  # fio SIGKILLed: its run fails
        ("SIGTERM", 143, "stopped by SIGTERM"),  # fiolake stops fio, records it interrupted
    ],
)
def test_a_run_that_ends_early_unmounts_its_file_system(
    tmp_path: Path, stop: str, code: int, said: str
) -> None:
    """In this process (whose mount namespace outlives the run), so only fiolake's own
    unmount can have ended the mount."""
    import threading

    from click.testing import CliRunner

    from fiolake.cli import cli

    (tmp_path / "long.fio").write_text(LONG)
    done: list[int] = []

    def end_it() -> None:
        wait_until("fio measures", lambda: _measuring(os.getpid()))
        if stop == "SIGTERM":
            os.kill(os.getpid(), signal.SIGTERM)
            done.append(os.getpid())
            return
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
                ppid = int((proc / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == os.getpid() and Path(argv[0].decode()).name == "fio":
                os.kill(int(proc.name), signal.SIGKILL)
                done.append(int(proc.name))

    with loop_device(tmp_path / "disk.img", 64 * 2**20, sparse=True) as dev:
        ender = threading.Thread(target=end_it, daemon=True)
        ender.start()
        args = ["run", str(tmp_path / "long.fio"), "--device", str(dev), "--destroy-data",
                "--mkfs", "ext4", "--lake", str(tmp_path / "lake"), "--share-host"]  # fmt: skip
        result = CliRunner().invoke(cli, args)
        ender.join(timeout=5)
        assert done, result.output
        assert result.exit_code == code, result.output
        assert said in result.output
        assert not mounted_anywhere(dev)
        os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))
