"""One reading of a disk's sysfs and of the mount table for the device claim and the
environment record (issue 41): a loop device's partition, mounted at a path with a space
and a tab, reads the same through `blockinfo.identity` and `sysinfo`; the mount table's
octal escapes come back byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from fiolake.runner.host import blockinfo, sysinfo
from fiolake.runner.host.mounts import Mount, mounts
from tests.runner.loopdev import NEEDS, can_loop, loop_device, mounted


def test_the_mount_tables_escapes_are_undone(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_bytes(
        b"36 25 7:3 / /mnt/a\\040b\\011c\\012d\\134e rw,noatime shared:1 - ext4 "
        b"/dev/loop3p1 rw,errors=remount-ro\n"
        b"40 25 0:50 / /srv/caf\xc3\xa9 rw - tmpfs my\\040tmpfs rw,size=1024k\n"
        b"garbage\n"
    )
    assert mounts(table) == [
        Mount("7:3", "/mnt/a b\tc\nd\\e", "ext4", "/dev/loop3p1", "rw,noatime,errors=remount-ro"),
        Mount("0:50", "/srv/café", "tmpfs", "my tmpfs", "rw,size=1024k"),
    ]
    assert mounts(tmp_path / "none") == []


@pytest.mark.skipif(not can_loop(), reason=NEEDS)
def test_claim_and_environment_read_a_disk_alike(tmp_path: Path) -> None:
    backing = tmp_path / "disk.img"
    with loop_device(backing, partitions=True) as loop:
        part = Path(f"{loop}p1")
        where = tmp_path / "mnt a\tb"
        where.mkdir()
        with mounted(part, where):
            mount = sysinfo.mount_info(where / "x")
            settings = sysinfo.device_settings(where)
            claimed = blockinfo.identity(part)
        assert (mount.mount_point, mount.fs_type, mount.device) == (str(where), "ext4", str(part))
        # a loop device has no device/model: both name its backing file, from its disk
        assert mount.device_model == claimed.model == f"loop: {backing}"
        assert settings == sysinfo.DeviceSettings(
            claimed.firmware, claimed.scheduler, claimed.read_ahead_bytes, claimed.write_cache
        )
        disk = Path("/sys/block") / loop.name
        assert claimed.read_ahead_bytes == int((disk / "queue/read_ahead_kb").read_text()) * 1024
        assert (
            claimed.scheduler is not None
            and claimed.scheduler in (disk / "queue/scheduler").read_text()
        )
