"""`--device`, `--destroy-data`, `--expect-device`, `--wipe-signatures`, `--purge`,
`--prefill`, `--mkfs`: a raw block device as the target of `run` and `runner`
(runner.host.device), or the file systems fiolake makes on it (runner.host.mkfs)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from fiolake.errors import UsageProblem
from fiolake.units import human_bytes

TARGET_HELP = (
    "give --dir DIR to benchmark a file system, or --device PATH --destroy-data to benchmark "
    "a raw block device"
)


def device_options(fn: Any) -> Any:
    """The options that name a raw block device and say it may be overwritten."""
    fn = click.option(
        "--wipe-signatures",
        is_flag=True,
        help="Allow a --device that holds a file system, partition table or RAID/LVM "
        "signature, and erase them (wipefs -a) once every other check has passed.",
    )(fn)
    fn = click.option(
        "--expect-device",
        metavar="KEY=VALUE",
        multiple=True,
        help="Refuse a --device whose serial=, wwn= or model= differs (device names move "
        "after a reboot). Repeatable.",
    )(fn)
    fn = click.option(
        "--destroy-data",
        is_flag=True,
        help="Confirm that fio may overwrite every byte of --device.",
    )(fn)
    return click.option(
        "--device",
        metavar="PATH",
        help="A raw block device to benchmark instead of --dir (e.g. /dev/nvme0n1 or "
        "/dev/disk/by-id/…): fio overwrites it. Checked first: not mounted, not in use, "
        "no signatures; see docs/usage.md, 'Benchmarking a block device'.",
    )(fn)


def prepare_options(fn: Any) -> Any:
    """`--purge`, `--prefill`, `--prefill-passes`: purge → prefill → measure on a device."""
    fn = click.option(
        "--prefill-passes",
        type=click.IntRange(1, 10),
        default=2,
        show_default=True,
        help="Times --prefill writes the whole device.",
    )(fn)
    fn = click.option(
        "--prefill",
        is_flag=True,
        help="Before the measured runs, write the whole --device sequentially in 128 KiB "
        "blocks (SNIA PTS preconditioning), as a run of role 'prefill'; one that runs out "
        "of time (--max-runtime) before it wrote it all fails, and nothing is measured.",
    )(fn)
    return click.option(
        "--purge",
        is_flag=True,
        help="Before the measured runs (and --prefill), discard the whole --device (or "
        "zero-fill it where it has no discard), as a run of role 'purge'.",
    )(fn)


def mkfs_options(fn: Any) -> Any:
    """`--mkfs` (repeatable), `--mkfs-options`, `--mount-options`: file systems made on --device."""
    fn = click.option(
        "--mount-options",
        "mount_opts",
        metavar="[TYPE:]OPTIONS",
        multiple=True,
        help="mount -o OPTIONS for the file systems --mkfs makes (TYPE: for one of them "
        "only, e.g. xfs:noatime). Repeatable.",
    )(fn)
    fn = click.option(
        "--mkfs-options",
        "mkfs_opts",
        metavar="[TYPE:]OPTIONS",
        multiple=True,
        help="More options for mkfs (TYPE: for one file system only, e.g. 'xfs:-m "
        "reflink=0'). Repeatable.",
    )(fn)
    return click.option(
        "--mkfs",
        "mkfs",
        metavar="TYPE",
        multiple=True,
        help="Make this file system (ext4, xfs, btrfs) on --device and run the job files on "
        "it, mounted where only fiolake sees it; the device is purged first. Repeatable: "
        "each file system in turn, repetitions interleaved.",
    )(fn)


def mkfs_specs(
    mkfs: tuple[str, ...],
    mkfs_opts: tuple[str, ...],
    mount_opts: tuple[str, ...],
    *,
    prefill: bool = False,
    one: bool = False,
) -> list[Any]:
    """The file systems --mkfs asks for (runner.host.mkfs.FsSpec; [] without it), checked
    before the device is: UsageProblem for options without --mkfs, --prefill with it, more
    than one where `one` (a runner), an unknown type or a missing mkfs."""
    from fiolake.runner.host import mkfs as fs

    if not mkfs:
        given = [
            f for f, v in (("--mkfs-options", mkfs_opts), ("--mount-options", mount_opts)) if v
        ]
        if given:
            raise UsageProblem(
                f"{', '.join(given)} without --mkfs — they say how fiolake makes and mounts a "
                "file system: add --mkfs TYPE (with --device), or drop them"
            )
        return []
    if prefill:
        raise UsageProblem(
            "--prefill with --mkfs — mkfs and the file system's own writes would undo it; "
            "--mkfs purges the device before each file system instead: drop --prefill"
        )
    if one and len(mkfs) > 1:
        raise UsageProblem(
            f"--mkfs given {len(mkfs)} times — a runner serves one file system: start one "
            "runner per file system in turn, or use `fiolake run` for a matrix"
        )
    return fs.parse_specs(mkfs, mkfs_opts, mount_opts)


def mkfs_mount_point(specs: list[Any]) -> Path | None:
    """Where --mkfs mounts (None without it): the mount points dead fiolake processes left
    removed (runner.host.mkfs.remove_stale, while this process still sees the host's
    mounts), then this process moved into its private mount namespace — now, so that
    every thread it starts later, and every fio, is in it — and a fresh mount point."""
    from fiolake.runner.host import mkfs as fs

    if not specs:
        return None
    fs.remove_stale()
    fs.enter_private_namespace()
    return fs.new_mount_point()


def drop_mount_point(mount_point: Path | None) -> None:
    """Remove the mount point `mkfs_mount_point` made, empty again once unmounted; never
    raises, so it never hides why the command ended."""
    if mount_point is not None:
        with contextlib.suppress(OSError):
            mount_point.rmdir()


def claim_target(
    target_dir: Path | None,
    device: str | None,
    *,
    destroy_data: bool,
    expect_device: Iterable[str],
    wipe_signatures: bool,
    lake: str,
    protected: Iterable[Path],
    purge: bool = False,
    prefill: bool = False,
    dir_flags: Iterable[str] = (),
    mkfs: bool = False,
) -> Any:
    """The claimed device (runner.host.device.DeviceClaim) for `--device`, None for
    `--dir`; UsageProblem when neither or both are given, a device flag without it, or
    one of `dir_flags` (the --dir-only flags given) with it. A local `lake` and
    `protected` must not be on the device."""
    from fiolake.runner.host import device as dev

    if (target_dir is None) == (device is None):
        both = "both --dir and --device" if device else "neither --dir nor --device"
        raise UsageProblem(f"{both} given — {TARGET_HELP}")
    if device is not None and (given := list(dir_flags)):
        raise UsageProblem(
            f"{', '.join(given)} with --device — they describe a --dir (a file system); a raw "
            "device has none: drop them (--expect-device names the device)"
        )
    if device is None:
        flags = [
            name
            for name, given in (
                ("--destroy-data", destroy_data),
                ("--expect-device", bool(tuple(expect_device))),
                ("--wipe-signatures", wipe_signatures),
                ("--purge", purge),
                ("--prefill", prefill),
                ("--mkfs", mkfs),
            )
            if given
        ]
        if flags:
            raise UsageProblem(
                f"{', '.join(flags)} without --device — they apply to a raw block device only; "
                "drop them, or give --device PATH instead of --dir"
            )
        return None
    local_lake = [] if "://" in lake else [Path(lake)]
    held = dev.claim(
        device,
        destroy_data=destroy_data,
        wipe_signatures=wipe_signatures,
        expect=dev.parse_expect(expect_device),
        protected=[*local_lake, *protected],
    )
    try:
        # --purge and --prefill cover the whole device: refused now if its size is unknown.
        for flag in [f for f, given in (("--purge", purge), ("--prefill", prefill)) if given]:
            dev.whole_size(held.path, held.identity.size_bytes, flag)
    except BaseException:
        held.release()
        raise
    return held


def dir_flags_given(create_dir: bool, expect_mount: str | None, expect_fs: str | None) -> list[str]:
    """The --dir-only flags of `target_options` that were given."""
    flags = (("--create-dir", create_dir), ("--expect-mount", expect_mount))
    return [name for name, value in (*flags, ("--expect-fs", expect_fs)) if value]


def announce_device(claim: Any, specs: list[Any] | None = None, mount_point: Any = None) -> None:
    """Name on stderr the device fio will overwrite (nothing is written to it yet), and the
    file systems --mkfs will make on it."""
    ident = claim.identity
    size = human_bytes(ident.size_bytes) if ident.size_bytes is not None else "size unknown"
    what = ", ".join(f"{k} {v}" for k, v in (("model", ident.model), ("serial", ident.serial)) if v)
    click.echo(f"target {claim.path}: raw block device, {size}, {what or 'no identity'}", err=True)
    if specs:
        kinds = ", ".join(s.fs_type for s in specs)
        click.echo(
            f"file systems {kinds}, each made on {claim.path} after a purge and mounted on "
            f"{mount_point}, seen by fiolake only",
            err=True,
        )


def erase_signatures(claim: Any) -> None:
    """Erase the signatures --wipe-signatures allowed, each named on stderr. The first
    write to the device: call it only once the command's last check that can refuse
    (job files, host lock, spool, keys, lake) has passed."""
    for found in claim.erase_signatures():
        click.echo(f"wiped signature {found} from {claim.path} (--wipe-signatures)", err=True)
