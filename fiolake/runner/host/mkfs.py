"""A file system made on the claimed device: `--mkfs TYPE`, mounted where only fiolake sees it.

`fiolake run --device PATH --destroy-data --mkfs xfs` (and `fiolake runner … --mkfs`) makes
the file system itself, so the run records how it was made (`runs.mkfs_options`) and
mounted (`runs.mount_options`, fs_type and device from the mount itself).

The mount lives in a private mount namespace (`enter_private_namespace`: unshare(2) of
the mount namespace and `/` made private, as `unshare -m` does). Nobody else sees it, and
the kernel tears it down when the last process in the namespace ends — fiolake and fio,
whom PR_SET_PDEATHSIG ends with it (runner.fio.process) — so even a SIGKILL of fiolake
leaves nothing mounted and the device free. Every other way out (SIGTERM, fio killed, a
full file system, an exception) unmounts in `made_fs`'s finally. Mount points are fresh
directories under MOUNT_ROOT named after fiolake's pid; `remove_stale` unmounts and
removes those of dead processes (belt and braces: a mount there outside a namespace).

mkfs and mount open the device exclusively themselves, which the claim's O_EXCL
descriptor would refuse: `made_fs` gives the claim up for them (the mount then holds the
device exclusively) and takes it again after the unmount.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from fiolake.errors import FiolakeError, UsageProblem
from fiolake.runner.host.device import DeviceClaim
from fiolake.runner.host.mounts import mounts

MOUNT_ROOT = Path("/run/fiolake/mnt")
# mkfs.* and mount live here, which a non-root PATH often lacks.
SBIN = ("/usr/sbin", "/sbin")
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000


@dataclass(frozen=True)
class Maker:
    """How fiolake makes one file-system type: its mkfs, the options it always passes
    (no prompt; ext4 initialised now, not by a kernel thread during the measured runs),
    and the Debian package that ships it."""

    program: str
    fixed: tuple[str, ...]
    package: str


MAKERS = {
    "ext4": Maker(
        "mkfs.ext4", ("-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"), "e2fsprogs"
    ),
    "xfs": Maker("mkfs.xfs", ("-f", "-q"), "xfsprogs"),
    "btrfs": Maker("mkfs.btrfs", ("-f", "-q"), "btrfs-progs"),
}


@dataclass(frozen=True)
class FsSpec:
    """One file system of the matrix: its type, the operator's mkfs options and mount
    options (-o)."""

    fs_type: str
    extra: tuple[str, ...] = ()
    mount_options: str | None = None

    @property
    def maker(self) -> Maker:
        """The mkfs of this type."""
        return MAKERS[self.fs_type]

    def mkfs_options(self) -> str:
        """What runs.mkfs_options records: every option given to mkfs, fiolake's first."""
        return shlex.join([*self.maker.fixed, *self.extra])

    def mkfs_argv(self, device: Path) -> list[str]:
        """The mkfs command for `device`."""
        return [_tool(self.maker.program), *self.maker.fixed, *self.extra, str(device)]


def parse_specs(
    types: Sequence[str], mkfs_options: Iterable[str], mount_options: Iterable[str]
) -> list[FsSpec]:
    """The file systems of `--mkfs` (repeatable), each with the `--mkfs-options` and
    `--mount-options` values meant for it: 'TYPE:TEXT' for one type, plain TEXT for all.
    UsageProblem for an unknown or repeated type, a scope that is not among them, or a
    missing mkfs program."""
    for fs_type in types:
        if fs_type not in MAKERS:
            raise UsageProblem(
                f"--mkfs {fs_type}: fiolake cannot make that file system — choose from "
                f"{', '.join(MAKERS)}"
            )
    if len(set(types)) != len(types):
        twice = next(t for t in types if types.count(t) > 1)
        raise UsageProblem(
            f"--mkfs {twice} given twice — each file system runs once per repetition; "
            "use --repeat for more runs"
        )
    mkfs_by = _scoped("--mkfs-options", mkfs_options, types)
    mount_by = _scoped("--mount-options", mount_options, types)
    specs = []
    for fs_type in types:
        extra = tuple(w for text in mkfs_by[fs_type] for w in shlex.split(text))
        mount = ",".join(mount_by[fs_type]) or None
        specs.append(FsSpec(fs_type, extra, mount))
    for spec in specs:
        if _find(spec.maker.program) is None:
            raise UsageProblem(
                f"--mkfs {spec.fs_type} needs {spec.maker.program}, which is not installed — "
                f"install the Debian package {spec.maker.package} (apt-get install "
                f"{spec.maker.package}), or drop --mkfs {spec.fs_type}"
            )
    return specs


def _scoped(flag: str, values: Iterable[str], types: Sequence[str]) -> dict[str, list[str]]:
    """`values` of `flag` by file-system type: 'xfs:-m crc=1' for xfs only, the rest for all."""
    out: dict[str, list[str]] = {t: [] for t in types}
    for value in values:
        scope, sep, text = value.partition(":")
        if sep and scope.isalnum():
            if scope not in types:
                raise UsageProblem(
                    f"{flag} {value!r} is for {scope}, which no --mkfs names — add --mkfs "
                    f"{scope}, or fix the prefix (TYPE:OPTIONS, one of {', '.join(types)})"
                )
            out[scope].append(text)
        else:
            for fs_type in types:
                out[fs_type].append(value)
    return out


def _find(program: str) -> str | None:
    search = os.pathsep.join([os.environ.get("PATH", ""), *SBIN])
    return shutil.which(program, path=search)


def _tool(program: str) -> str:
    return _find(program) or program


_entered = threading.Lock()
_in_private: list[bool] = []


def enter_private_namespace() -> None:
    """Move this process into a mount namespace of its own, `/` private in it (once per
    process): mounts made after are seen by it and its children only, and go when the
    last of them ends. Call it from the main thread before the threads that need the
    mounts start (a thread that exists already stays in the old namespace).
    UsageProblem when the kernel refuses (not root)."""
    with _entered:
        if _in_private:
            return
        libc = ctypes.CDLL(None, use_errno=True)
        if (
            libc.unshare(CLONE_NEWNS) != 0
            or libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0
        ):
            err = ctypes.get_errno()
            raise UsageProblem(
                f"--mkfs: cannot make a private mount namespace ({os.strerror(err)}) — "
                "--mkfs mounts the file system it makes, which needs root (CAP_SYS_ADMIN)"
            )
        _in_private.append(True)


def new_mount_point(root: Path = MOUNT_ROOT) -> Path:
    """A fresh, empty directory to mount on, named after this process (`remove_stale`)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
    except OSError as exc:
        raise UsageProblem(
            f"--mkfs: cannot make a mount point in {root} ({exc.strerror}) — --mkfs mounts "
            "the file system it makes, which needs root"
        ) from None


def remove_stale(root: Path = MOUNT_ROOT) -> list[Path]:
    """Unmount and remove the mount points of fiolake processes that are gone (a SIGKILL
    leaves the directory; a mount only if it was ever made outside a private namespace);
    the ones removed."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    mounted = {m.mount_point for m in mounts()}
    for entry in root.iterdir():
        pid = entry.name.partition("-")[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        if str(entry) in mounted:
            subprocess.run([_tool("umount"), "--lazy", str(entry)], capture_output=True)
        with contextlib.suppress(OSError):
            entry.rmdir()
            removed.append(entry)
    return removed


@contextlib.contextmanager
def made_fs(claim: DeviceClaim, spec: FsSpec, mount_point: Path) -> Iterator[None]:
    """`spec`'s file system made on the claimed device and mounted on `mount_point` (in
    the private namespace: `enter_private_namespace` first); unmounted and the device
    claimed again afterwards, whatever happened. FiolakeError when mkfs or mount fail."""
    claim.release()
    try:
        _checked(spec.mkfs_argv(claim.path), f"making {spec.fs_type} on {claim.path}")
        options = ["-o", spec.mount_options] if spec.mount_options else []
        mount = [_tool("mount"), "-t", spec.fs_type, *options, str(claim.path), str(mount_point)]
        _checked(mount, f"mounting {spec.fs_type} from {claim.path} on {mount_point}")
        try:
            yield
        finally:
            _unmount(mount_point)
    finally:
        claim.reclaim()


def _unmount(mount_point: Path) -> None:
    # fio has ended by now (run_fio waits for it); a lazy unmount covers anything that
    # still holds a file, and the namespace drops whatever is left when fiolake ends.
    proc = subprocess.run([_tool("umount"), str(mount_point)], capture_output=True, text=True)
    if proc.returncode != 0:
        subprocess.run([_tool("umount"), "--lazy", str(mount_point)], capture_output=True)


def _checked(argv: list[str], what: str) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FiolakeError(f"{what} failed: {exc} — check the device and the tools") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()[-1500:]
        raise FiolakeError(
            f"{what} failed ({shlex.join(argv)} exited {proc.returncode}): {detail} — check "
            "--mkfs-options/--mount-options and the device"
        )
