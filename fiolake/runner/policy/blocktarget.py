"""What changes in the policy when the target is a raw block device (`--device`).

The operator named the device; the job file still never names a path. fiolake writes
`filename=<device>` into the canonical job file, so every option that would choose other
files (or delete the one it has) is refused, the workload must fit on the device, and
trim workloads, refused on a directory, are allowed: discarding is what SSD tests do.
What never changes: everything else in the policy (docs/job-file-policy.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from fiolake.runner.policy.jobfile import JobFile
from fiolake.units import human_bytes, size_or_none

# A placeholder device for checks made before the device is known (publish, validate).
UNKNOWN_DEVICE = "/dev/fiolake-device"

# canonical option -> why it has no place on a device target (the message adds "; not allowed")
DEVICE_REFUSED: dict[str, str] = {
    "filename": "the device is fio's only file on a device target",
    "filesize": "the device is fio's only file on a device target (use size)",
    "nrfiles": "the device is fio's only file on a device target",
    "file_service_type": "the device is fio's only file on a device target",
    "openfiles": "the device is fio's only file on a device target",
    "unlink": "would delete the device node",
    "unlink_each_loop": "would delete the device node",
    "file_append": "a device has no end to append at",
    "create_only": "there is nothing to lay out on a device",
}


@dataclass(frozen=True)
class BlockTarget:
    """A raw block device as fio's target; `size_bytes` None while it is not known yet."""

    path: str = UNKNOWN_DEVICE
    size_bytes: int | None = None


def refused_on_device(name: str) -> str | None:
    """Why option `name` (canonical) is refused on a device target, or None."""
    return DEVICE_REFUSED.get(name)


def _offset_bytes(value: str, device_bytes: int) -> int:
    if value.endswith("%"):
        return device_bytes * (size_or_none(value[:-1]) or 0) // 100
    return size_or_none(value) or 0


def beyond_device(job: JobFile, target: BlockTarget) -> list[str]:
    """Jobs whose size plus offsets reach past the end of the device."""
    if target.size_bytes is None:
        return []
    device_bytes = target.size_bytes
    problems = []
    for section in job.jobs:
        opts = section.options
        numjobs = size_or_none(opts.get("numjobs", "")) or 1
        start = _offset_bytes(opts.get("offset", ""), device_bytes)
        start += (size_or_none(opts.get("offset_increment", "")) or 0) * (numjobs - 1)
        size = size_or_none(opts.get("size", "")) or max(device_bytes - start, 0)
        if start + size > device_bytes:
            problems.append(
                f"[{section.name}] size + offsets = {human_bytes(start + size)}: beyond the end "
                f"of {target.path} ({human_bytes(device_bytes)}) — lower size (or --size) or "
                "the offsets"
            )
    return problems
