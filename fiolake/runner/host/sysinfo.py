"""The environment fingerprint recorded with every run (host, kernel, CPU, target storage).

Besides what the machine is, the settings that change results: the target device's I/O
scheduler, read-ahead, write cache and firmware, and the CPU frequency governor. Each is
NULL where the machine does not say (tmpfs and overlay have no block device; VMs often
have no cpufreq).
"""

from __future__ import annotations

import os
import platform
import re
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

from fiolake.runner.fio.binary import FioBinary
from fiolake.runner.host.mounts import MOUNTINFO, Mount, mounts
from fiolake.runner.host.sysfs import disk_settings, read_sys, whole_disk


@dataclass(frozen=True)
class MountInfo:
    """Where a directory lives: mount point, file system, options, backing device."""

    mount_point: str | None
    fs_type: str | None
    mount_options: str | None
    device: str | None
    device_model: str | None


def mount_info(path: Path, mountinfo: Path = MOUNTINFO) -> MountInfo:
    """File system type, mount options and device of the mount holding `path`."""
    target = os.path.realpath(path)
    best: Mount | None = None
    for mount in mounts(mountinfo):
        point = mount.mount_point
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best.mount_point)):
            best = mount
    if best is None:
        return MountInfo(None, None, None, None, None)
    return MountInfo(
        best.mount_point,
        best.fs_type,
        best.options,
        best.source,
        device_model(Path(best.mount_point)),
    )


def _disk_dir(path: Path, sys: Path) -> Path | None:
    """The sysfs directory of the whole disk (or dm/md/loop device) holding `path`, if
    any: st_dev -> /sys/dev/block/MAJ:MIN -> a partition's disk (sysfs.whole_disk). None
    for file systems without a block device (tmpfs, overlay, NFS: major 0)."""
    try:
        dev = os.stat(path).st_dev
        sys_dir = (sys / f"dev/block/{os.major(dev)}:{os.minor(dev)}").resolve(strict=True)
    except OSError:
        return None
    return whole_disk(sys_dir)


@dataclass(frozen=True)
class DeviceSettings:
    """Settings of the block device under a target that change results; None = unknown."""

    device_firmware: str | None  # NVMe firmware_rev, SCSI/SATA rev
    io_scheduler: str | None  # the active one: none, mq-deadline, kyber, bfq ...
    read_ahead_bytes: int | None
    write_cache: str | None  # 'write back' | 'write through' (the kernel's words)


def device_settings(path: Path, sys: Path = Path("/sys")) -> DeviceSettings:
    """Scheduler, read-ahead, write cache and firmware of the device holding `path`."""
    disk = _disk_dir(path, sys)
    if disk is None:
        return DeviceSettings(None, None, None, None)
    found = disk_settings(disk)
    return DeviceSettings(
        found.firmware, found.scheduler, found.read_ahead_bytes, found.write_cache
    )


def device_model(path: Path, sys: Path = Path("/sys")) -> str | None:
    """The model of the disk holding `path` (sysfs.disk_settings), None without one."""
    disk = _disk_dir(path, sys)
    return disk_settings(disk).model if disk is not None else None


def cpu_governor(sys: Path = Path("/sys")) -> str | None:
    """The CPU frequency governors in use (comma-separated when CPUs differ); None without
    cpufreq (most VMs)."""
    found = sorted(
        {
            text
            for f in (sys / "devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")
            if (text := read_sys(f))
        }
    )
    return ",".join(found) or None


@dataclass(frozen=True)
class HostInfo:
    """Host facts that can explain a difference between two runs."""

    host: str
    kernel: str
    os: str
    cpu_model: str | None
    cpu_count: int
    mem_bytes: int | None
    cpu_governor: str | None


def _os_name() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return platform.platform()
    match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, re.M)
    return match.group(1) if match else platform.platform()


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _meminfo(field: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _mem_bytes() -> int | None:
    return _meminfo("MemTotal")


def mem_available_bytes() -> int | None:
    """Memory the kernel could give without swapping (free + reclaimable cache)."""
    return _meminfo("MemAvailable")


def host_info() -> HostInfo:
    """Facts about this machine."""
    return HostInfo(
        host=socket.gethostname(),
        kernel=platform.release(),
        os=_os_name(),
        cpu_model=_cpu_model(),
        cpu_count=os.cpu_count() or 1,
        mem_bytes=_mem_bytes(),
        cpu_governor=cpu_governor(),
    )


def environment_columns(target_dir: Path, fio: FioBinary) -> dict[str, object]:
    """The `runs` columns describing the environment of a run of `fio` against `target_dir`."""
    mount = mount_info(target_dir)
    cols: dict[str, object] = asdict(host_info())
    cols.update(
        fio_version=fio.version,
        fio_path=fio.path,
        target_dir=str(Path(target_dir).resolve()),
        target_kind="dir",
        mount_point=mount.mount_point,
        fs_type=mount.fs_type,
        mount_options=mount.mount_options,
        device=mount.device,
        device_model=mount.device_model,
    )
    cols.update(asdict(device_settings(target_dir)))
    return cols
