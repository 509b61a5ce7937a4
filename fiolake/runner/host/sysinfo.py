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


@dataclass(frozen=True)
class MountInfo:
    """Where a directory lives: mount point, file system, options, backing device."""

    mount_point: str | None
    fs_type: str | None
    mount_options: str | None
    device: str | None
    device_model: str | None


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_info(path: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> MountInfo:
    """File system type, mount options and device of the mount holding `path`."""
    target = os.path.realpath(path)
    best: tuple[str, str, str, str] | None = None
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 6 or len(rfields) < 2:
            continue
        mount_point = _unescape(fields[4])
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        if inside and (best is None or len(mount_point) >= len(best[0])):
            # per-mount options first, then the super block's, each once
            opts = fields[5].split(",") + (rfields[2].split(",") if len(rfields) > 2 else [])
            options = ",".join(dict.fromkeys(opts))
            best = (mount_point, rfields[0], options, rfields[1])
    if best is None:
        return MountInfo(None, None, None, None, None)
    mount_point, fs_type, options, source = best
    return MountInfo(mount_point, fs_type, options, source, _device_model(path))


def _disk_dir(path: Path, sys: Path) -> Path | None:
    """The sysfs directory of the whole disk (or dm/md device) holding `path`, if any.

    st_dev -> /sys/dev/block/MAJ:MIN -> a partition's parent disk. None for file systems
    without a block device (tmpfs, overlay, NFS: major 0).
    """
    try:
        dev = os.stat(path).st_dev
        sys_dir = (sys / f"dev/block/{os.major(dev)}:{os.minor(dev)}").resolve(strict=True)
    except OSError:
        return None
    for candidate in (sys_dir, sys_dir.parent):
        if (candidate / "queue").is_dir():
            return candidate
    return sys_dir


def read_sys(path: Path) -> str | None:
    """A sysfs (or proc) file's text, stripped; None if missing, unreadable or empty."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return None
    return text or None


def _device_model(path: Path, sys: Path = Path("/sys")) -> str | None:
    disk = _disk_dir(path, sys)
    if disk is None:
        return None
    return read_sys(disk / "device/model") or read_sys(disk / "device/name")


@dataclass(frozen=True)
class DeviceSettings:
    """Settings of the block device under a target that change results; None = unknown."""

    device_firmware: str | None  # NVMe firmware_rev, SCSI/SATA rev
    io_scheduler: str | None  # the active one: none, mq-deadline, kyber, bfq ...
    read_ahead_bytes: int | None
    write_cache: str | None  # 'write back' | 'write through' (the kernel's words)


def active_scheduler(text: str | None) -> str | None:
    """The active I/O scheduler in a queue/scheduler text ('none [mq-deadline]')."""
    # "none [mq-deadline] kyber bfq": the active one is bracketed; a lone name is active
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else (text if " " not in text else None)


def device_settings(path: Path, sys: Path = Path("/sys")) -> DeviceSettings:
    """Scheduler, read-ahead, write cache and firmware of the device holding `path`."""
    disk = _disk_dir(path, sys)
    if disk is None:
        return DeviceSettings(None, None, None, None)
    read_ahead = read_sys(disk / "queue/read_ahead_kb")
    return DeviceSettings(
        device_firmware=read_sys(disk / "device/firmware_rev") or read_sys(disk / "device/rev"),
        io_scheduler=active_scheduler(read_sys(disk / "queue/scheduler")),
        read_ahead_bytes=int(read_ahead) * 1024 if read_ahead and read_ahead.isdigit() else None,
        write_cache=read_sys(disk / "queue/write_cache"),
    )


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
