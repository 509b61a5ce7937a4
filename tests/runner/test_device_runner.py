"""Runners and raw block devices: a job published for a device runs only on a runner
started with --device, and the other way round; a killed device runner frees the device."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from fiolake.campaign_progress import campaign_status
from fiolake.errors import ManifestError
from fiolake.manifest import _manifest_from_payload, new_manifest
from fiolake.runner.distributed.config import RunnerConfig
from fiolake.runner.distributed.service import Runner
from fiolake.runner.host import device
from fiolake.runner.policy.check import BlockTarget
from fiolake.signing import Keyring
from fiolake.store import LocalStore
from tests.proc_evidence import fio_job_writes, wait_until
from tests.runner.conftest import LakeEnv, sql
from tests.runner.loopdev import loop_device, requires_loop
from tests.signed_jobs import publish_signed

TRIM = "[t]\nrw=randtrim\nbs=64k\nsize=4m\nioengine=psync\nruntime=1\n"
LONG = "[l]\nrw=randwrite\nbs=4k\nioengine=psync\nsize=8m\nruntime=60\ntime_based=1\n"


def test_the_target_kind_is_signed_into_the_manifest() -> None:
    made = new_manifest(campaign_id="c-1", backend="b", profile="t", job_file_text=TRIM,
                        runtime_s=None, size_bytes=None, repetition=0, bucket="",
                        expires_in=timedelta(hours=1), target="device")  # fmt: skip
    assert made.on_device and b'"target":"device"' in made.payload()
    as_dir = replace(made, target=None)
    assert not as_dir.on_device and b"target" not in as_dir.payload()  # as before the field
    with pytest.raises(ManifestError, match="target is not one of dir, device"):
        _manifest_from_payload(made.payload().replace(b'"device"', b'"tape"'))


def _runner(tmp: Path, store: LocalStore, keyring: Keyring, name: str, **cfg: object) -> Runner:
    (tmp / "target").mkdir(exist_ok=True)
    config = RunnerConfig(
        backend="b", target_dir=tmp / "target", runner_id=name, spool_dir=tmp / name, once=True
    )
    return Runner(store, keyring, replace(config, **cfg), bucket="")


@requires_loop
def test_each_kind_of_runner_leaves_the_other_kinds_jobs_waiting(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "lake")
    _, keyring = publish_signed(store, tmp_path / "k", "c-dev", job=TRIM, target="device")
    publish_signed(store, tmp_path / "k2", "c-dir", job=TRIM.replace("randtrim", "randread"))
    keyring.add(*_key(tmp_path / "k2"))
    assert _runner(tmp_path, store, keyring, "dir-runner").serve().ok == 1  # c-dir's job only
    [dev_job] = campaign_status(store, "c-dev")
    assert dev_job.state == "pending"
    assert dev_job.reason == (
        "dir-runner: not run here: the job needs a raw block device (published with --target "
        f"device); this runner benchmarks the directory {tmp_path / 'target'} — start a "
        "runner with --device PATH --destroy-data"
    )
    publish_signed(store, tmp_path / "k3", "c-dir-2", job=TRIM.replace("randtrim", "read"))
    keyring.add(*_key(tmp_path / "k3"))
    with loop_device(tmp_path / "disk.img") as dev, device.claim(str(dev), destroy_data=True):
        block = BlockTarget(str(dev), 64 * 2**20)
        on_device = _runner(tmp_path, store, keyring, "dev-runner", block=block)
        assert on_device.serve().ok == 1  # c-dev's job only
    assert campaign_status(store, "c-dev")[0].state == "ok"
    [dir_job] = campaign_status(store, "c-dir-2")
    assert (dir_job.state, dir_job.reason) == (
        "pending",
        "dev-runner: not run here: the job needs a directory (published with --target dir); "
        f"this runner benchmarks the raw block device {dev} — start a runner with --dir",
    )
    rows = sql(tmp_path / "lake", "SELECT campaign_id, target_kind, device FROM runs")
    kinds = {(r["campaign_id"], r["target_kind"]) for r in rows}
    assert kinds == {("c-dir", "dir"), ("c-dev", "device")}
    assert [r["device"] for r in rows if r["campaign_id"] == "c-dev"] == [str(dev)]


def _key(path: Path) -> tuple[str, bytes]:
    from fiolake.signing import LocalSigner

    signer = LocalSigner.load(path)
    return signer.keyid, signer.public_key_bytes()


@requires_loop
@pytest.mark.slow  # a runner process and a fio it starts
def test_a_runner_killed_during_a_device_run_leaves_the_device_free(
    local_lake: LakeEnv, tmp_path: Path
) -> None:
    (tmp_path / "long.fio").write_text(LONG)
    local_lake.publish(tmp_path / "long.fio", "--backend", "raw", "--target", "device")
    with loop_device(tmp_path / "disk.img") as dev:
        env = {**os.environ, **local_lake.runner}
        argv = [sys.executable, "-m", "fiolake", "runner", "--backend", "raw", "--device",
                str(dev), "--destroy-data", "--spool-dir", str(tmp_path / "spool"),
                "--share-host"]  # fmt: skip
        with (tmp_path / "runner.log").open("w") as log:
            proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for_fio_on(dev, proc, tmp_path / "runner.log")
            with pytest.raises(OSError):  # the runner holds it while fio writes
                os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))  # free at once
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _wait_for_fio_on(dev: Path, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
                if Path(f"/proc/{pid}/comm").read_text().strip() != "fio":
                    continue
                if any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(dev) for fd in fds):
                    return
            except OSError:
                continue
        time.sleep(0.2)
    raise AssertionError(f"no fio opened {dev}:\n{log.read_text()}")


@requires_loop
def test_a_runner_with_mkfs_runs_dir_jobs_on_the_file_system_it_made(
    local_lake: LakeEnv, tmp_path: Path
) -> None:
    from tests.runner.host.test_mkfs import mounted_anywhere

    (tmp_path / "read.fio").write_text(TRIM.replace("randtrim", "randread"))
    local_lake.publish(tmp_path / "read.fio", "--backend", "fs")
    with loop_device(tmp_path / "disk.img", sparse=True) as dev:
        done = local_lake.cli("runner", "runner", "--backend", "fs", "--device", str(dev),
                              "--destroy-data", "--mkfs", "ext4", "--mkfs-options", "-L bench",
                              "--mount-options", "noatime", "--once", "--spool-dir",
                              str(tmp_path / "spool"), "--share-host")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"purged {dev} (discard); making ext4 on it" in done.stderr
        assert not mounted_anywhere(dev)
        os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))  # the runner's claim ended with it
    columns = "status, fs_type, mkfs_options, mount_options, device, target_kind"
    [row] = sql(local_lake.tmp / "lake", f"SELECT {columns} FROM runs")
    assert row["status"] == "ok" and row["fs_type"] == "ext4", row
    assert (row["mkfs_options"], row["device"], row["target_kind"]) == (
        "-F -q -E lazy_itable_init=0,lazy_journal_init=0 -L bench",
        str(dev),
        "dir",
    )
    assert "noatime" in row["mount_options"].split(",")


@requires_loop
@pytest.mark.slow  # a runner process and a fio it starts
def test_a_runner_with_mkfs_killed_mid_run_leaves_nothing_mounted(
    local_lake: LakeEnv, tmp_path: Path
) -> None:
    from tests.runner.host.test_mkfs import _measuring, free, mounted_anywhere

    (tmp_path / "long.fio").write_text(LONG)
    local_lake.publish(tmp_path / "long.fio", "--backend", "fs")
    with loop_device(tmp_path / "disk.img", sparse=True) as dev:
        (tmp_path / "tmp").mkdir()  # the killed run's output directory (runner.rundirs)
        env = {**os.environ, **local_lake.runner, "TMPDIR": str(tmp_path / "tmp")}
        argv = [sys.executable, "-m", "fiolake", "runner", "--backend", "fs", "--device",
                str(dev), "--destroy-data", "--mkfs", "ext4", "--spool-dir",
                str(tmp_path / "spool"), "--share-host"]  # fmt: skip
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until("fio measures on the runner's file system", lambda: _measuring(proc.pid), 60)
            # past fio's fork of the job, where our SIGTERM would deadlock it (proc_evidence)
            wait_until("fio's job process writes", lambda: fio_job_writes(proc.pid))
            assert mounted_anywhere(dev)
        finally:
            proc.kill()
            proc.wait()
        wait_until("no namespace mounts the device", lambda: not mounted_anywhere(dev))
        wait_until("the device is free for anyone again", lambda: free(dev))
