"""The environment fingerprint recorded with every run (host, kernel, CPU, target storage)."""

from __future__ import annotations

import os
import platform
import re
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

from fiolake.runner.fio_binary import FioBinary


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


def _device_model(path: Path) -> str | None:
    # st_dev -> /sys/dev/block/MAJ:MIN -> the disk (a partition's parent) -> device/model.
    try:
        dev = os.stat(path).st_dev
        sys_dir = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
    except OSError:
        return None
    for candidate in (sys_dir, sys_dir.parent):
        for name in ("device/model", "device/name"):
            model = candidate / name
            if model.is_file():
                text = model.read_text(errors="replace").strip()
                if text:
                    return text
    return None


@dataclass(frozen=True)
class HostInfo:
    """Host facts that can explain a difference between two runs."""

    host: str
    kernel: str
    os: str
    cpu_model: str | None
    cpu_count: int
    mem_bytes: int | None


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
    )


def environment_columns(target_dir: Path, fio: FioBinary) -> dict[str, object]:
    """The `runs` columns describing the environment of a run of `fio` against `target_dir`."""
    mount = mount_info(target_dir)
    cols: dict[str, object] = asdict(host_info())
    cols.update(
        fio_version=fio.version,
        fio_path=fio.path,
        target_dir=str(Path(target_dir).resolve()),
        mount_point=mount.mount_point,
        fs_type=mount.fs_type,
        mount_options=mount.mount_options,
        device=mount.device,
        device_model=mount.device_model,
    )
    return cols
