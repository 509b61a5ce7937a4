"""A raw block device as the target: refuse every device nobody meant to hand over.

The operator names one device (`--device PATH --destroy-data`); fio then writes over it.
Before anything is written, `claim` checks, in order: a block device; --destroy-data;
the `--expect-device` identity; not mounted (nor any partition), not swap, no holders
(device-mapper, md, LVM), not backing `/`, the lake, the spool or fiolake itself; opened
exclusively (O_EXCL) by nobody else; no file-system, partition-table, RAID or LVM
signature (libblkid's view through `wipefs -n`) unless --wipe-signatures. Each refusal is
a DeviceRefused (exit 2) saying what and how to fix it, with the device untouched.

A successful claim keeps the O_EXCL descriptor open for the whole run: the kernel then
refuses mounts and other exclusive opens (mkfs, wipefs, another fiolake), and frees the
claim when the process ends, however it ends. fio opens the device without O_EXCL, which
the claim allows.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import stat
import struct
import subprocess
import sys as sys_module
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fiolake.errors import DeviceRefused, FiolakeError
from fiolake.runner.host import blockinfo
from fiolake.runner.host.mounts import mounts
from fiolake.runner.host.sysfs import read_sys

SYS = Path("/sys")
# <linux/fs.h>: _IO(0x12, 119) and _IO(0x12, 127); both take (start, length) in bytes.
BLKDISCARD = 0x1277
BLKZEROOUT = 0x127F
# --expect-device keys -> the DeviceIdentity field they compare with.
EXPECT_KEYS = {"serial": "serial", "wwn": "wwn", "model": "model"}


@dataclass
class DeviceClaim:
    """A device checked and held open with O_EXCL until `release` (or process exit)."""

    path: Path  # the /dev node (symlinks such as /dev/disk/by-id/… resolved)
    given: str  # what the operator wrote
    identity: blockinfo.DeviceIdentity
    fd: int
    found: list[str] = field(default_factory=list)  # signatures on it (--wipe-signatures)
    wiped: list[str] = field(default_factory=list)  # what `erase_signatures` erased

    def erase_signatures(self) -> list[str]:
        """Erase the signatures `claim` found (wipefs -a): the first write to the device, so
        the caller calls it only after its last check that can refuse has passed."""
        if self.found and not self.wiped:
            # --force: wipefs would want its own exclusive open, which the claim blocks
            # (every check --force skips has passed, and the claim keeps it so).
            _util(["wipefs", "--all", "--force", str(self.path)])
            self.wiped = list(self.found)
        return self.wiped

    def purge(self, *, discard: bool | None = None) -> str:
        """Return every block of the device to the unwritten state: discard it all
        (BLKDISCARD), or write zeros (BLKZEROOUT) where the device has no discard; the
        method used ('discard' or 'zero-fill'). `discard` None: as the device supports.
        DeviceRefused, the device untouched, when its size is unknown (`whole_size`)."""
        size = whole_size(self.path, self.identity.size_bytes, "--purge")
        if discard is None:
            discard = bool(self.identity.discard_max_bytes)
        if discard:
            try:
                fcntl.ioctl(self.fd, BLKDISCARD, struct.pack("QQ", 0, size))
                return "discard"
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise FiolakeError(f"discarding {self.path} failed: {exc.strerror}") from exc
        try:
            fcntl.ioctl(self.fd, BLKZEROOUT, struct.pack("QQ", 0, size))
        except OSError as exc:
            raise FiolakeError(f"zero-filling {self.path} failed: {exc.strerror}") from exc
        return "zero-fill"

    def reclaim(self) -> None:
        """Hold the device exclusively again after `release` (runner.host.mkfs gives the
        claim up to mkfs and mount); DeviceRefused when another program took it meanwhile."""
        if self.fd < 0:
            self.fd = _open_exclusive(self.path)

    def release(self) -> None:
        """Close the exclusive descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> DeviceClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def whole_size(path: Path, size_bytes: int | None, flag: str) -> int:
    """The device's size in bytes for `flag` (--purge, --prefill), which must cover all of
    it; DeviceRefused when it is unknown: a purge of 0 bytes would report 'discard', a
    prefill could not tell a full fill from a partial one."""
    if not size_bytes:
        raise DeviceRefused(
            f"{flag} {path}: the device's size is unknown (neither sysfs nor a seek to its end "
            f"gives one) — {flag} covers the whole device, so fiolake must know its size: "
            f"check `blockdev --getsize64 {path}`, or drop {flag}"
        )
    return size_bytes


def parse_expect(values: Iterable[str]) -> dict[str, str]:
    """`serial=…`, `wwn=…`, `model=…` -> {key: value}; DeviceRefused for anything else."""
    wanted: dict[str, str] = {}
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or key not in EXPECT_KEYS or not value:
            raise DeviceRefused(
                f"--expect-device {text!r} is not KEY=VALUE with KEY one of serial, wwn, "
                "model — e.g. --expect-device serial=S4EWNX0R123456"
            )
        wanted[key] = value
    return wanted


def block_device(given: str) -> Path:
    """The block device node `given` names (symlinks resolved); DeviceRefused otherwise."""
    real = Path(os.path.realpath(given))
    shown = given if str(real) == given else f"{given} (-> {real})"
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise DeviceRefused(
            f"--device {shown}: {exc.strerror} — give a block device such as /dev/nvme0n1 "
            "or /dev/disk/by-id/…"
        ) from None
    if not stat.S_ISBLK(mode):
        kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISREG, "a regular file"))
        kind = next((k for test, k in kinds if test(mode)), "a special file")
        raise DeviceRefused(
            f"--device {shown} is {kind}, not a block device — give a block device such as "
            "/dev/nvme0n1 (to benchmark a file system, use --dir)"
        )
    return real


def claim(
    given: str,
    *,
    destroy_data: bool,
    wipe_signatures: bool = False,
    expect: Mapping[str, str] | None = None,
    protected: Iterable[Path] = (),
    sys: Path = SYS,
) -> DeviceClaim:
    """Check `given` (see the module doc) and hold it exclusively; DeviceRefused says why not.

    `protected` are paths whose storage must not be the device (the lake, the spool, …);
    `/`, fiolake's own files and Python are always protected. With `wipe_signatures`, the
    signatures found are allowed: the caller erases them with `DeviceClaim.erase_signatures`
    once its own checks (job files, host lock, spool, keys, lake) have all passed.
    """
    path = block_device(given)
    if not destroy_data:
        raise DeviceRefused(
            f"--device {path}: fio will overwrite every byte of it — pass --destroy-data to "
            "confirm that it holds nothing you need"
        )
    sysdir = blockinfo.sys_dir(path, sys)
    identity = blockinfo.identity(path, sys)
    _check_identity(path, identity, expect or {})
    if read_sys(sysdir / "ro") == "1":
        raise DeviceRefused(
            f"--device {path} is read-only (blockdev --getro {path}) — make it writable "
            f"(blockdev --setrw {path}), or choose another device"
        )
    names = blockinfo.with_partitions(sysdir)
    _check_unused(path, sysdir, names, sys)
    always = [Path("/"), Path(__file__), Path(sys_module.executable)]
    _check_not_backing(path, names, [*always, *protected], sys)
    fd = _open_exclusive(path)
    try:
        found = signatures(path)
        if found and not wipe_signatures:
            raise DeviceRefused(
                f"--device {path} holds {', '.join(found)} (wipefs -n {path}) — if that data "
                "may go, pass --wipe-signatures as well, or choose another device"
            )
    except BaseException:
        os.close(fd)
        raise
    return DeviceClaim(path, given, identity, fd, found)


def _check_identity(
    path: Path, identity: blockinfo.DeviceIdentity, expect: Mapping[str, str]
) -> None:
    for key, wanted in expect.items():
        found = getattr(identity, EXPECT_KEYS[key])
        if found != wanted:
            raise DeviceRefused(
                f"--device {path} has {key} {found or 'unknown'}, expected {wanted} — device "
                "names can move after a reboot: check `lsblk -o NAME,MODEL,SERIAL,WWN` and "
                "give the right device (or /dev/disk/by-id/…)"
            )


def _check_unused(path: Path, sysdir: Path, names: list[str], sys: Path) -> None:
    numbers = {blockinfo.dev_number(sys / "class/block" / n): n for n in names}
    for mount in mounts():
        if mount.dev in numbers:
            where = mount.mount_point
            part = numbers[mount.dev]
            whose = "it" if part == sysdir.name else f"its partition /dev/{part}"
            raise DeviceRefused(
                f"--device {path}: {whose} is mounted on {where} — unmount it first (umount "
                f"{where}), or choose another device"
            )
    for line in _lines(Path("/proc/swaps"))[1:]:
        swap = line.split()[0] if line.split() else ""
        if Path(os.path.realpath(swap)).name in names:
            raise DeviceRefused(
                f"--device {path}: {swap} is in use as swap — swapoff {swap} first, or choose "
                "another device"
            )
    for name in names:
        holders = sorted(p.name for p in (sys / "class/block" / name / "holders").glob("*"))
        if holders:
            raise DeviceRefused(
                f"--device {path}: /dev/{name} is held by {', '.join(holders)} (device-mapper, "
                "md or LVM: see lsblk) — remove that mapping first, or choose another device"
            )


def _check_not_backing(path: Path, names: list[str], paths: Iterable[Path], sys: Path) -> None:
    for place in paths:
        existing = next((p for p in [place, *place.absolute().parents] if p.exists()), place)
        if set(blockinfo.backing_devices(existing, sys)) & set(names):
            raise DeviceRefused(
                f"--device {path} holds {place} — fiolake will not write over the storage of "
                "/, the lake, the spool or fiolake itself; choose another device"
            )


def _open_exclusive(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_EXCL | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise DeviceRefused(
                f"--device {path}: cannot open it for writing ({exc.strerror}) — run as a "
                "user who may (root, or one in the device's group, usually disk), or choose "
                "another device"
            ) from None
        raise DeviceRefused(
            f"--device {path} is open exclusively by another program (a mount, mkfs, another "
            f"fiolake…) — find it with `fuser -v {path}` or lsblk and stop it, or choose "
            "another device"
        ) from None


def signatures(path: Path) -> list[str]:
    """What libblkid finds on the device: ['ext4 at 0x438', 'dos at 0x1fe', …]."""
    proc = _util(["wipefs", "--no-act", "--json", str(path)])
    found = json.loads(proc.stdout or "{}").get("signatures", [])
    return [f"{s.get('type')} at {s.get('offset')}" for s in found]


def _util(argv: list[str]) -> subprocess.CompletedProcess[str]:
    # util-linux puts wipefs in /usr/sbin, which a non-root user's PATH (a container's
    # runner, uid 10001) often lacks.
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    binary = shutil.which(argv[0], path=search) or argv[0]
    try:
        proc = subprocess.run(
            [binary, *argv[1:]], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeviceRefused(
            f"cannot run {argv[0]}: {exc} — install util-linux (wipefs, blkid)"
        ) from None
    if proc.returncode != 0:
        raise DeviceRefused(
            f"{' '.join(argv)} failed: {proc.stderr.strip()} — check the device, or choose another"
        )
    return proc


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []
