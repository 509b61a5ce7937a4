"""What sysfs says about a block device: its files' text, the whole disk a partition
belongs to, and the disk's settings that change results. One place for the device claim
(`blockinfo.identity`) and the environment record of a file-system run
(`sysinfo.environment_columns`), so the two never disagree about a disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


def read_sys(path: Path) -> str | None:
    """A sysfs (or proc) file's text, stripped; None if missing, unreadable or empty."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return None
    return text or None


def sys_int(path: Path) -> int | None:
    """A sysfs file holding a whole number; None if missing or not one."""
    text = read_sys(path)
    return int(text) if text is not None and text.isdigit() else None


def active_scheduler(text: str | None) -> str | None:
    """The active I/O scheduler in a queue/scheduler text ('none [mq-deadline]')."""
    # "none [mq-deadline] kyber bfq": the active one is bracketed; a lone name is active
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else (text if " " not in text else None)


def whole_disk(sysdir: Path) -> Path:
    """The disk a sysfs block directory belongs to: a partition's parent (the kernel marks
    a partition with a `partition` file), else the directory itself (a disk, loop, dm, md)."""
    return sysdir.parent if (sysdir / "partition").exists() else sysdir


@dataclass(frozen=True)
class DiskSettings:
    """What a whole disk's sysfs says about it that can change results; None = unknown."""

    model: str | None  # device/model; MMC/SD: device/name; a loop device: "loop: FILE"
    firmware: str | None  # NVMe firmware_rev, SCSI/SATA rev
    scheduler: str | None  # the active one: none, mq-deadline, kyber, bfq ...
    read_ahead_bytes: int | None
    write_cache: str | None  # 'write back' | 'write through' (the kernel's words)


def disk_settings(disk: Path) -> DiskSettings:
    """The settings of the whole disk whose sysfs directory is `disk` (`whole_disk`)."""
    queue = disk / "queue"
    read_ahead = sys_int(queue / "read_ahead_kb")
    backing = read_sys(disk / "loop/backing_file")
    model = read_sys(disk / "device/model") or read_sys(disk / "device/name")
    return DiskSettings(
        model=model or (f"loop: {backing}" if backing else None),
        firmware=read_sys(disk / "device/firmware_rev") or read_sys(disk / "device/rev"),
        scheduler=active_scheduler(read_sys(queue / "scheduler")),
        read_ahead_bytes=read_ahead * 1024 if read_ahead is not None else None,
        write_cache=read_sys(queue / "write_cache"),
    )
