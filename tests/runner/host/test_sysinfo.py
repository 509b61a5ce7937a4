"""Device settings recorded with a run: what this machine's /sys says, NULL where it says
nothing (tmpfs), and the forms other machines' sysfs takes (a partition's disk, SCSI
firmware, CPUs whose governors differ)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from fiolake.runner import attempt
from fiolake.runner import execute as ex
from fiolake.runner.host import sysinfo

JOB = "[r]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"
SETTINGS = ("device_firmware", "io_scheduler", "read_ahead_bytes", "write_cache")


def run_row(target: Path) -> dict:
    request = ex.RunRequest(
        job_file_text=JOB, profile="r", backend="b", target_dir=target, job_id="j", campaign_id="c"
    )
    outcome = ex.execute(attempt.prepare(request).measured)
    assert outcome.status == "ok", outcome.error
    [row] = outcome.tables["runs"].to_pylist()
    return row


def test_settings_of_the_disk_under_the_target_are_recorded(tmp_path: Path) -> None:
    source = subprocess.run(
        ["findmnt", "-no", "SOURCE", "-T", str(tmp_path)], capture_output=True, text=True
    ).stdout.strip()
    disk = Path("/sys/block") / Path(source).name
    if not source.startswith("/dev/") or not (disk / "queue").is_dir():
        pytest.skip(f"{tmp_path} is not on a whole-disk block device ({source!r})")
    row = run_row(tmp_path)
    scheduler = (disk / "queue/scheduler").read_text()
    assert row["io_scheduler"] == re.search(r"\[(.+?)\]", scheduler).group(1)
    assert row["read_ahead_bytes"] == int((disk / "queue/read_ahead_kb").read_text()) * 1024
    assert row["write_cache"] == (disk / "queue/write_cache").read_text().strip()
    cpufreq = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    assert row["cpu_governor"] == (cpufreq.read_text().strip() if cpufreq.exists() else None)


def test_tmpfs_has_no_device_settings() -> None:
    target = Path("/dev/shm") / f"fiolake-sysinfo-{os.getpid()}"
    target.mkdir()
    try:
        row = run_row(target)
    finally:
        subprocess.run(["rm", "-rf", str(target)], check=False)
    assert row["fs_type"] == "tmpfs"
    assert {k: row[k] for k in SETTINGS} == dict.fromkeys(SETTINGS)


def fake_sys(root: Path, target: Path, *, partition: bool) -> Path:
    """A sysfs tree whose dev/block entry for `target`'s device is a SCSI disk."""
    disk = root / "devices/pci0/host0/block/sda"
    (disk / "queue").mkdir(parents=True)
    (disk / "device").mkdir()
    (disk / "queue/scheduler").write_text("mq-deadline kyber [bfq] none\n")
    (disk / "queue/read_ahead_kb").write_text("4096\n")
    (disk / "queue/write_cache").write_text("write through\n")
    (disk / "device/model").write_text("ST4000NM0035   \n")
    (disk / "device/rev").write_text("TN04\n")
    node = disk / "sda1" if partition else disk
    node.mkdir(exist_ok=True)
    if partition:
        (node / "partition").write_text("1\n")  # how the kernel marks a partition
    dev = os.stat(target).st_dev
    (root / "dev/block").mkdir(parents=True)
    (root / f"dev/block/{os.major(dev)}:{os.minor(dev)}").symlink_to(node)
    for cpu, governor in (("cpu0", "performance"), ("cpu1", "powersave"), ("cpu2", "powersave")):
        (root / f"devices/system/cpu/{cpu}/cpufreq").mkdir(parents=True)
        (root / f"devices/system/cpu/{cpu}/cpufreq/scaling_governor").write_text(governor)
    return root


@pytest.mark.parametrize("partition", [False, True])
def test_sysfs_forms(tmp_path: Path, partition: bool) -> None:
    sys = fake_sys(tmp_path / "sys", tmp_path, partition=partition)
    assert sysinfo.device_settings(tmp_path, sys) == sysinfo.DeviceSettings(
        device_firmware="TN04",
        io_scheduler="bfq",
        read_ahead_bytes=4 * 1024 * 1024,
        write_cache="write through",
    )
    assert sysinfo.device_model(tmp_path, sys) == "ST4000NM0035"
    assert sysinfo.cpu_governor(sys) == "performance,powersave"
    assert sysinfo.cpu_governor(tmp_path / "nothing") is None
