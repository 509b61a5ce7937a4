"""Loop devices for the block-device tests: real block devices over a file on disk or in
/dev/shm, created by the test and always detached by it (never a device it did not make).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

NEEDS = "needs root and losetup (loop devices)"


def can_loop() -> bool:
    """Root with losetup and /dev/loop-control: the loop-device tests can run."""
    return (
        os.geteuid() == 0
        and shutil.which("losetup") is not None
        and os.path.exists("/dev/loop-control")
    )


requires_loop = pytest.mark.skipif(not can_loop(), reason=NEEDS)


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def write_mbr(backing: Path, start_sector: int = 2048) -> None:
    """One Linux partition from `start_sector` to the end, in a DOS partition table."""
    sectors = backing.stat().st_size // 512 - start_sector
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", start_sector, sectors)
    with backing.open("r+b") as f:
        f.write(bytes(446) + entry + bytes(48) + b"\x55\xaa")


@contextlib.contextmanager
def loop_device(
    backing: Path,
    size: int = 64 * 2**20,
    *,
    partitions: bool = False,
    direct_io: bool = False,
    sparse: bool = False,
) -> Iterator[Path]:
    """A loop device over `backing` (created with `size` bytes of data; with `sparse`, a
    hole that reads as zeros and is slow to write), detached and the file removed
    afterwards, whatever happens in between."""
    with backing.open("wb") as f:
        if sparse:
            f.truncate(size)
        chunk = os.urandom(2**20)
        for _ in range(0 if sparse else size // len(chunk)):
            f.write(chunk)
    if partitions:
        write_mbr(backing)
    args = ["losetup", "-f", "--show"] + (["-P"] if partitions else [])
    args += ["--direct-io=on"] if direct_io else []
    device = Path(_run(*args, str(backing)))
    try:
        if partitions:
            _wait_for(Path(f"{device}p1"))
        yield device
    finally:
        for _ in range(50):  # a just-closed holder (mount, fio) can keep it busy briefly
            if subprocess.run(["losetup", "-d", str(device)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        backing.unlink(missing_ok=True)


def _own_throttle_file() -> Path:
    """The blkio read-IOPS rule file of this process's own cgroup (v1): the test's fio
    runs there too. cgroup v1 throttling is flat, so a rule on a parent would not hold."""
    cgroups = Path("/proc/self/cgroup").read_text() if Path("/proc/self/cgroup").exists() else ""
    where = next((line.split(":", 2)[2] for line in cgroups.splitlines()
                  if line.split(":")[1:2] == ["blkio"]), "/")  # fmt: skip
    return Path("/sys/fs/cgroup/blkio") / where.lstrip("/") / "blkio.throttle.read_iops_device"


THROTTLE = _own_throttle_file()
NEEDS_THROTTLE = "needs cgroup v1 blkio throttling (to make a loop device slow by construction)"
requires_throttle = pytest.mark.skipif(not THROTTLE.exists(), reason=NEEDS_THROTTLE)


@contextlib.contextmanager
def reads_throttled(device: Path, iops: int) -> Iterator[Path]:
    """`device` with its reads capped at `iops` a second (blkio throttling of the cgroup
    the tests and their fio run in), the cap lifted afterwards. A loop device over a file
    on disk is no slower than one in /dev/shm where the host caches the disk's file, so
    a test that needs a slow device makes one."""
    rdev = os.stat(device).st_rdev
    rule = f"{os.major(rdev)}:{os.minor(rdev)}"
    THROTTLE.write_text(f"{rule} {iops}\n")
    try:
        yield device
    finally:
        THROTTLE.write_text(f"{rule} 0\n")


def _wait_for(node: Path) -> None:
    for _ in range(50):
        if node.exists():
            return
        subprocess.run(["partx", "-a", str(node)[: -len("p1")]], capture_output=True)
        time.sleep(0.1)
    raise AssertionError(f"{node} did not appear")


def sha256(device: Path) -> str:
    """The checksum of every byte of the device."""
    digest = hashlib.sha256()
    with device.open("rb") as f:
        while chunk := f.read(4 * 2**20):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def mounted(device: Path, where: Path, *, read_only: bool = False) -> Iterator[Path]:
    """`device` formatted ext4 and mounted on `where` (unmounted afterwards); read-only
    leaves its bytes as mkfs wrote them."""
    _run("mkfs.ext4", "-q", str(device))
    where.mkdir(exist_ok=True)
    _run("mount", *(["-o", "ro"] if read_only else []), str(device), str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@contextlib.contextmanager
def held_exclusively(device: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding `device` open with O_EXCL (ended afterwards)."""
    code = (
        "import os, sys, time; os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL); "
        "print('held', flush=True); time.sleep(600)"
    )
    argv = [sys.executable, "-c", code, str(device)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def devices_in_every_state(tmp: Path) -> Iterator[dict[str, Path]]:
    """Loop devices fiolake must refuse (and one it must not), for tables of refusals:
    `loop` free, `ext4` holding a file system, `mounted` on `mnt`, `parted` with its
    partition mounted on `pmnt`, `held` open with O_EXCL by another process, `rodev` set
    read-only."""
    with contextlib.ExitStack() as stack:
        made = {
            name: stack.enter_context(
                loop_device(tmp / f"{name}.img", 16 * 2**20, partitions=name == "parted")
            )
            for name in ("loop", "ext4", "mounted", "parted", "held", "rodev")
        }
        _run("blockdev", "--setro", str(made["rodev"]))
        stack.callback(_run, "blockdev", "--setrw", str(made["rodev"]))
        _run("mkfs.ext4", "-q", str(made["ext4"]))
        made["mnt"] = stack.enter_context(mounted(made["mounted"], tmp / "mnt", read_only=True))
        partition = Path(f"{made['parted']}p1")
        made["pmnt"] = stack.enter_context(mounted(partition, tmp / "pmnt", read_only=True))
        stack.enter_context(held_exclusively(made["held"]))
        yield made
