"""What a block device is, from sysfs: identity, geometry and queue settings.

Every field is None where the kernel does not say (a loop device has no serial, WWN or
firmware). Model, firmware and queue settings come from `sysfs.disk_settings`, as for a
file-system run's environment (a loop device's model is its backing file).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from fiolake.runner.host.sysfs import disk_settings, read_sys, sys_int, whole_disk

BY_ID = Path("/dev/disk/by-id")


@dataclass(frozen=True)
class DeviceIdentity:
    """A block device as the `runs` table records it (column = `device_` + field name,
    except the settings the file-system target already records under their own names)."""

    device: str  # /dev/… node
    model: str | None
    serial: str | None
    wwn: str | None
    firmware: str | None
    size_bytes: int | None
    logical_block_bytes: int | None
    physical_block_bytes: int | None
    rotational: bool | None
    discard_granularity_bytes: int | None  # 0: no discard support
    discard_max_bytes: int | None
    scheduler: str | None
    nr_requests: int | None
    write_cache: str | None  # 'write back' | 'write through'
    read_ahead_bytes: int | None

    def runs_columns(self) -> dict[str, object]:
        """The `runs` columns that describe this device."""
        return {
            "device": self.device,
            "device_model": self.model,
            "device_serial": self.serial,
            "device_wwn": self.wwn,
            "device_firmware": self.firmware,
            "device_size_bytes": self.size_bytes,
            "device_logical_block_bytes": self.logical_block_bytes,
            "device_physical_block_bytes": self.physical_block_bytes,
            "device_rotational": self.rotational,
            "device_discard_granularity_bytes": self.discard_granularity_bytes,
            "device_discard_max_bytes": self.discard_max_bytes,
            "device_nr_requests": self.nr_requests,
            "io_scheduler": self.scheduler,
            "write_cache": self.write_cache,
            "read_ahead_bytes": self.read_ahead_bytes,
        }


def sys_dir(device: Path, sys: Path = Path("/sys")) -> Path:
    """The sysfs directory of a block device node (a disk or a partition).

    /sys/dev/block/MAJ:MIN, or where a container runtime masks it (podman does), the
    /sys/class/block entry whose `dev` is MAJ:MIN."""
    number = os.stat(device).st_rdev
    wanted = f"{os.major(number)}:{os.minor(number)}"
    direct = sys / "dev/block" / wanted
    if direct.exists():
        return direct.resolve()
    for entry in (sys / "class/block").glob("*"):
        if read_sys(entry / "dev") == wanted:
            return entry.resolve()
    return direct


def dev_number(sysdir: Path) -> str:
    """'MAJ:MIN' of a sysfs block directory ('' if unreadable)."""
    return read_sys(sysdir / "dev") or ""


def with_partitions(sysdir: Path) -> list[str]:
    """The device's kernel name and those of its partitions (a partition has none)."""
    return [sysdir.name] + sorted(p.parent.name for p in sysdir.glob("*/partition"))


def backing_devices(path: Path, sys: Path = Path("/sys")) -> list[str]:
    """Kernel names of the block devices that hold `path`'s file system: its partition,
    that partition's disk, and what device-mapper/md stack under them (slaves/)."""
    try:
        own = (sys / f"dev/block/{_st_dev(path)}").resolve(strict=True)
    except OSError:
        return []
    found: list[str] = []
    todo = [own]
    while todo:
        here = todo.pop()
        if here.name in found:
            continue
        found.append(here.name)
        if (here / "partition").exists():
            todo.append(here.parent)
        todo += [s.resolve() for s in (here / "slaves").glob("*")]
    return found


def _st_dev(path: Path) -> str:
    number = os.stat(path).st_dev
    return f"{os.major(number)}:{os.minor(number)}"


def _seek_size(device: Path) -> int | None:
    """The device's size from the device itself (where sysfs does not show it)."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def _by_id_wwn(device: Path) -> str | None:
    """The WWN udev names the device by (/dev/disk/by-id/wwn-0x…), if any."""
    for link in sorted(BY_ID.glob("wwn-*")):
        if os.path.realpath(link) == str(device):
            return link.name.removeprefix("wwn-")
    return None


def identity(device: Path, sys: Path = Path("/sys")) -> DeviceIdentity:
    """What the kernel says about `device` (a /dev node)."""
    own = sys_dir(device, sys)
    disk = whole_disk(own)
    queue = disk / "queue"
    sectors = sys_int(own / "size")
    settings = disk_settings(disk)
    return DeviceIdentity(
        device=str(device),
        model=settings.model,
        serial=read_sys(disk / "device/serial"),
        wwn=read_sys(disk / "wwid") or read_sys(disk / "device/wwid") or _by_id_wwn(device),
        firmware=settings.firmware,
        size_bytes=sectors * 512 if sectors is not None else _seek_size(device),
        logical_block_bytes=sys_int(queue / "logical_block_size"),
        physical_block_bytes=sys_int(queue / "physical_block_size"),
        rotational={"0": False, "1": True}.get(read_sys(queue / "rotational") or ""),
        discard_granularity_bytes=sys_int(queue / "discard_granularity"),
        discard_max_bytes=sys_int(queue / "discard_max_bytes"),
        scheduler=settings.scheduler,
        nr_requests=sys_int(queue / "nr_requests"),
        write_cache=settings.write_cache,
        read_ahead_bytes=settings.read_ahead_bytes,
    )
