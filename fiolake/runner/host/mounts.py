"""The mount table (`/proc/self/mountinfo`), read one way for every caller: where a
directory lives (`sysinfo.mount_info`) and whether a device is mounted (`device`).

A line is `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER`
(proc(5)); the kernel writes a space, tab, newline or backslash in a path as an octal
escape (`\\040`, `\\011`, `\\012`, `\\134`), undone here byte-wise so any path comes back
as the kernel has it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
_OCTAL = re.compile(rb"\\([0-3][0-7]{2})")


@dataclass(frozen=True)
class Mount:
    """One line of the mount table."""

    dev: str  # MAJ:MIN of the file system's device (0:N for tmpfs, overlay, NFS)
    mount_point: str
    fs_type: str
    source: str  # the device or what stands for one ('tmpfs', 'server:/export')
    options: str  # the mount's own options, then the super block's, each once


def unescape(field: str) -> str:
    """A mountinfo field with the kernel's octal escapes undone (`a\\040b` → `a b`)."""
    raw = field.encode("utf-8", "surrogateescape")
    done = _OCTAL.sub(lambda m: bytes([int(m.group(1), 8)]), raw)
    return done.decode("utf-8", "surrogateescape")


def mounts(mountinfo: Path = MOUNTINFO) -> list[Mount]:
    """Every mount in the table, in its order; [] if it cannot be read."""
    try:
        text = mountinfo.read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 6 or len(rfields) < 2:
            continue
        opts = fields[5].split(",") + (rfields[2].split(",") if len(rfields) > 2 else [])
        found.append(
            Mount(
                dev=fields[2],
                mount_point=unescape(fields[4]),
                fs_type=unescape(rfields[0]),
                source=unescape(rfields[1]),
                options=",".join(dict.fromkeys(opts)),
            )
        )
    return found
