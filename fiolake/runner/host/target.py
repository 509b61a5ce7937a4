"""The target directory: measure what the user named, or refuse before fio starts.

`--dir` must exist (or be created on request) and be a writable directory with room for
the job's files; its mount point, file system and device are named before a run, and
`--expect-mount`/`--expect-fs` (or a manifest's expect_mount/expect_fs) turn a mismatch
into an error. The classic mistake — /mnt/nvme not mounted, so the benchmark lands on the
root file system — gets a warning even without them.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fiolake.errors import FiolakeError, UsageProblem
from fiolake.runner.host import sysinfo
from fiolake.runner.policy.checks import layout_bytes
from fiolake.runner.policy.jobfile import JobFile
from fiolake.units import human_bytes
from fiolake.workload import ALIASES

EXPECT_HINT = "pass --expect-mount PATH or --expect-fs TYPE to make this an error"


def ensure_dir(path: Path, *, create: bool) -> list[Path]:
    """Check that `path` is a writable directory; with `create`, make the missing levels.

    Returns the directories it created (so a caller that refuses later can remove them);
    on any refusal nothing it created is left behind. UsageProblem says what and how.
    """
    path = Path(path)
    created: list[Path] = []
    if not path.exists():
        if path.is_symlink():
            raise UsageProblem(f"--dir {path} is a dangling symlink — point it at a directory")
        if not create:
            raise UsageProblem(
                f"--dir {path} does not exist — create it on the storage under test "
                "(is the file system mounted?), or pass --create-dir"
            )
        missing = [p for p in [path, *path.parents] if not p.exists()]
        try:
            for level in reversed(missing):
                level.mkdir()
                created.append(level)
        except OSError as exc:
            remove_created(created)
            raise UsageProblem(
                f"cannot create --dir {path}: {exc.strerror} ({exc.filename}) — create it "
                "yourself where you may write, or choose another --dir"
            ) from None
    elif not path.is_dir():
        raise UsageProblem(f"--dir {path} is a file, not a directory — give a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".fiolake-probe-", dir=path)
    except OSError as exc:
        remove_created(created)
        raise UsageProblem(
            f"--dir {path} is not writable ({exc.strerror}) — give a directory you may "
            "write to, or fix its permissions or mount options"
        ) from None
    os.close(fd)
    os.unlink(probe)
    return created


def remove_created(created: list[Path]) -> None:
    """Remove directories `ensure_dir` created (deepest first), if still empty."""
    for level in reversed(created):
        with contextlib.suppress(OSError):
            level.rmdir()


@dataclass(frozen=True)
class Target:
    """Where a target directory lands and how much room it has."""

    path: Path
    mount: sysinfo.MountInfo
    free_bytes: int

    def describe(self) -> str:
        """'mount point /, ext4 on /dev/vda' for stderr."""
        m = self.mount
        return f"mount point {m.mount_point}, {m.fs_type} on {m.device}"


def inspect(path: Path) -> Target:
    """The mount and free space of an existing directory (UsageProblem if it is gone)."""
    try:
        st = os.statvfs(path)
    except OSError as exc:
        raise UsageProblem(
            f"--dir {path}: {exc.strerror} — create it on the storage under test"
        ) from None
    return Target(Path(path).resolve(), sysinfo.mount_info(path), st.f_bavail * st.f_frsize)


def check_expectations(
    target: Target, *, expect_mount: str | None, expect_fs: str | None
) -> list[str]:
    """UsageProblem when the target is not on the expected mount or file system; else the
    warnings to show (the root file system without an expectation)."""
    m = target.mount
    where = f"mount point {m.mount_point}, {m.fs_type} on {m.device}"
    if expect_mount is not None:
        wanted = os.path.realpath(expect_mount)
        if m.mount_point != wanted:
            raise UsageProblem(
                f"--dir {target.path} is on {where}; expected mount point {wanted} — "
                f"mount the storage under test at {wanted}, or fix --dir/--expect-mount"
            )
    if expect_fs is not None and m.fs_type != expect_fs:
        raise UsageProblem(
            f"--dir {target.path} is on {where}; expected file system {expect_fs} — "
            "point --dir at the storage under test, or fix --expect-fs"
        )
    if expect_mount is None and expect_fs is None and m.mount_point == "/":
        return [
            f"--dir {target.path} is on the root file system ({where}); if you meant "
            f"other storage, it is not mounted there — {EXPECT_HINT}"
        ]
    return []


def check_space(target: Target, job: JobFile, label: str = "the job file") -> int:
    """Bytes the job lays out; FiolakeError with the numbers when they do not fit."""
    need = layout_bytes(job)
    if need > target.free_bytes:
        raise FiolakeError(
            f"not enough free space in {target.path}: {label} lays out {human_bytes(need)} "
            f"({need} bytes), {target.mount.mount_point} has {human_bytes(target.free_bytes)} "
            f"({target.free_bytes} bytes) free — free some space, scale the job down with "
            "--size, or choose another --dir"
        )
    return need


# Writes that each reach the storage before the next is issued: O_SYNC/O_DSYNC
# (`sync=1|sync|dsync`) or a flush after every write (`fsync=1`, `fdatasync=1`). The page
# cache cannot make such a job measure RAM, so a write-only one is never flagged.
_WRITE_ONLY = {"write", "randwrite"}


def _every_write_durable(options: dict[str, str]) -> bool:
    options = {ALIASES.get(name, name): value for name, value in options.items()}
    rw = options.get("rw", "read")
    if rw.split(":", 1)[0] not in _WRITE_ONLY:
        return False  # reads (or a mix) can still be served from the cache
    return (
        options.get("sync", "0") not in ("0", "none")
        or options.get("fsync", "0") == "1"
        or options.get("fdatasync", "0") == "1"
    )


def buffered_bytes(job: JobFile) -> int:
    """Bytes the buffered (direct=0) jobs lay out: what the page cache could hold. A
    write-only job whose every write is made durable is left out (`_every_write_durable`)."""
    total = 0
    for section in job.jobs:
        opts = section.options
        direct = opts.get("direct", "0") != "0" or opts.get("buffered", "1") == "0"
        if not direct and not _every_write_durable(opts):
            total += layout_bytes(JobFile(jobs=[section]))
    return total


def page_cache_warning(job: JobFile, mem_available: int | None) -> str | None:
    """A warning when buffered jobs' files fit in free memory (fio would measure RAM)."""
    working_set = buffered_bytes(job)
    if not working_set or mem_available is None or working_set > mem_available:
        return None
    return (
        f"buffered I/O (direct=0) on {human_bytes(working_set)} of files, which fit in "
        f"{human_bytes(mem_available)} of free memory: the page cache may serve it, so this "
        "measures RAM rather than the storage — set direct=1, or a size larger than free memory"
    )
