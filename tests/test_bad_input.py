"""Every bad input is a clear error: `Error: <what> — <how to fix>`, the right exit code
(2 usage, 1 failure), no traceback, nothing created.

One table over every command; `{tmp}` in an argument is the test's tmp_path, `{lake}` a
lake with one real run in it (campaign `c-bad-input`, run `{run}` on `{date}`), `{file}` a
regular file, `{ro}` a read-only directory. Each message is the whole error the user reads,
from `Error: ` to the end of the output; `{where}` in it is the mount of `{tmp}` and
`{denied}` what the system says when `{ro}` refuses a write, as this machine has them.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from fiolake import layout
from fiolake.cli import cli
from fiolake.cli.common import DurationParam, IdParam, SizeParam
from fiolake.errors import UsageProblem
from fiolake.runner.host.sysinfo import mount_info
from fiolake.signing import LocalSigner, public_key_path
from fiolake.units import parse_duration, parse_size
from tests.aggregator import lakegen
from tests.runner.loopdev import NEEDS, can_loop, devices_in_every_state, sha256
from tests.stack.ignoring_proxy import Misbehaviour, in_front_of

TINY = "[t]\nrw=randread\nbs=4k\nsize=1M\nioengine=psync\ndirect=1\nruntime=1\ntime_based=1\n"
JOBS = {
    "empty.fio": "",
    "comments.fio": "; nothing but a comment\n",
    "include.fio": "include other.fio\n[a]\nrw=read\nsize=1m\n",
    "dollar.fio": "[a]\nrw=read\nsize=${SIZE}\n",
    "exec.fio": "[a]\nrw=read\nsize=1m\nexec_prerun=rm -rf /\n",
    "rate.fio": "[a]\nrw=read\nsize=4m\nrate=1\n",
    "loops.fio": "[a]\nrw=read\nsize=4m\nloops=100000000\n",
    "trim.fio": "[a]\nrw=trim\nsize=1m\n",
    "huge.fio": "[a]\nrw=read\nsize=100t\n",
    "binary.fio": "[a]\nrw=read\x00\nsize=1m\n",
    "tiny.fio": TINY,
    "nofill.fio": "# precondition: nowhere.fio\n" + TINY,
    "emptyfill.fio": "# precondition:\n" + TINY,
    "filled.fio": "# precondition: exec.fio\n" + TINY,
    "devfile.fio": "[a]\nrw=read\nsize=1m\nfilename=/dev/loop0\nunlink=1\n",
    # options of one fio release and not another (issue 43): fio 3.33 added dedupe_global
    "dedupe.fio": "[a]\nrw=write\nsize=1m\ndedupe_percentage=50\ndedupe_global=1\n",
    "stride.fio": "[a]\nrw=randread\nsize=1m\nrandom_sequence_stride=4\n",
    "newer.fio": (
        "[a]\nrw=read\nsize=1m\npriohint=1\ncomm=x\ndp_scheme=s\nfiletype=block\nnum_range=2\n"
        "ramp_size=1m\n"
    ),
    # fiolake-gate.toml files (issue 34)
    "gate-syntax.toml": "[gate\n",
    "gate-key.toml": "[gate]\nmin_efect = 0.1\n",
    "gate-policy.toml": '[gate]\ninconclusive = "warn"\n',
    "gate-metrics.toml": '[gate]\nmetrics = "iops"\n',
    "gate-array.toml": "threshold = 3\n",
    "gate-threshold.toml": '[[threshold]]\nmetric = "iops"\n',
    "gate-effect.toml": "[[threshold]]\nmin_effect = 10\n",
    # issue 41: a threshold that matches no row of the gate
    "gate-backend.toml": '[[threshold]]\nbackend = "nvmee"\nmetric = "iops"\nmin_effect = 0.2\n',
    # `fiolake app --auth` login files (issue 36)
    "auth-empty.toml": "[auth]\n",
    "auth-syntax.toml": "[auth\n",
}
# fio output `import` refuses, each for one reason (a good document: GOOD_FIO).
GOOD_FIO = (
    '{"fio version": "fio-3.33", "timestamp": 1700000000, "jobs": [{"jobname": "j", '
    '"groupid": 0, "error": 0, "elapsed": 1, "read": {"io_bytes": 4096, "io_kbytes": 4, '
    '"iops": 1.0, "runtime": 1000, "total_ios": 1}}]}\n'
)
IMPORTS = {
    "text.log": "j: (g=0): rw=read, bs=(R) 4096B-4096B\nfio-3.33\nStarting 1 process\n",
    "other.json": '{"name": "not fio"}\n',
    "cut.json": GOOD_FIO[:80],
    "nan.json": GOOD_FIO.replace('"iops": 1.0', '"iops": NaN'),
    "negative.json": GOOD_FIO.replace('"total_ios": 1', '"total_ios": -1'),
    "deep.json": GOOD_FIO.replace(
        '"runtime": 1000', '"runtime": 1000, "x": ' + "[" * 40 + "]" * 40
    ),
    "undated.json": GOOD_FIO.replace('"timestamp": 1700000000, ', ""),
    "binary.out": "\x00\x01fio",
    "badlog.json": GOOD_FIO.replace(
        '"elapsed": 1, ', '"elapsed": 1, "job options": {"write_bw_log": "badlog"}, '
    ),
    "badlog_bw.1.log": "1000, x\n2000, 5, 0, 4096\n",
    # issue 41: fields checked before they are read; any other is the file's refusal
    "stamp.json": GOOD_FIO.replace("1700000000", '"soon"'),
    "options.json": GOOD_FIO.replace('"elapsed": 1, ', '"elapsed": 1, "job options": 5, '),
    # issue 41: deeper than Python's JSON parser goes (RecursionError), not just past 32
    "abyss.json": GOOD_FIO.replace(
        '"runtime": 1000', '"runtime": 1000, "x": ' + "[" * 100_000 + "]" * 100_000
    ),
    # issue 41: a field checked before a dump and its later document are compared
    "malformed.json": GOOD_FIO.replace('"total_ios": 1', '"total_ios": "many"')
    + GOOD_FIO.replace("1700000000", "1700000002"),
    # issue 43: --job-file that is not the file the output was made from, or not text
    "optioned.json": GOOD_FIO.replace(
        '"elapsed": 1, ', '"elapsed": 1, "job options": {"bs": "8k"}, '
    ),
    "job.fio": "[j]\nbs=4k\n",
    "latin1.fio": "[j]\nbs=4k ; caf\udce9\n",
}
NOT_IMPORTED = "Error: 1 of 1 file(s) not imported ({imp}/{name}); imported 0 run(s), skipped 0\n"
# Every results column a comparison can use, as `unknown metric` lists them.
METRICS = (
    "io_bytes, total_ios, bw_bytes, iops, runtime_ms, slat_min_ns, slat_max_ns, slat_mean_ns, "
    "slat_stddev_ns, clat_min_ns, clat_max_ns, clat_mean_ns, clat_stddev_ns, lat_min_ns, "
    "lat_max_ns, lat_mean_ns, lat_stddev_ns, clat_p50_ns, clat_p90_ns, clat_p95_ns, "
    "clat_p99_ns, clat_p999_ns, clat_p9999_ns, bw_min_bytes, bw_max_bytes, bw_mean_bytes, "
    "bw_stddev_bytes, iops_min, iops_max, iops_mean, iops_stddev, job_runtime_ms, usr_cpu, "
    "sys_cpu, ctx, majf, minf, warmup_s"
)
RUNS_COLUMNS = (
    "run_id, job_id, campaign_id, repetition, sequence, role, preconditioned_by, backend, "
    "runner, host, profile, job_file_sha256, "
    "canonical_job_file, effective_job_sha256, workload_sha256, fio_version, fio_path, kernel, "
    "os, cpu_model, "
    "cpu_count, mem_bytes, cpu_governor, target_dir, mount_point, fs_type, mount_options, "
    "mkfs_options, device, device_model, device_firmware, io_scheduler, read_ahead_bytes, "
    "write_cache, "
    "target_kind, device_serial, device_wwn, device_size_bytes, device_logical_block_bytes, "
    "device_physical_block_bytes, device_rotational, device_discard_granularity_bytes, "
    "device_discard_max_bytes, device_nr_requests, device_start, purge_method, purged_by, "
    "prefilled_by, "
    "runtime_s, size_bytes, started_at, finished_at, status, error, exit_code, watchdog, "
    "signer_keyid, other_fio_procs, outside_cpu_pct, steal_pct, page_cache_bytes, "
    "host_lock_wait_ms, flags, "
    "gang_size, gang_slot, gang_attempt, gang_start_at, start_skew_ms, clock_offset_ms, "
    "clock_offset_error_ms, origin, source_file, source_sha256, date"
)
NO_LAKE = "Error: no results in lake {tmp}/no-lake: run `fiolake run` (or start runners) first\n"


def no_runs(word: str, value: str, column: str) -> str:
    """The whole error for a filter value no committed run has."""
    return (
        f"Error: no committed runs match {word} '{value}' — see which exist: "
        f'fiolake sql "SELECT DISTINCT {column} FROM runs"\n'
    )


DURATION_FIX = "use a whole number and a unit (us, ms, s, m, h, d), e.g. 90s, 30m, 24h or 7d"
# How-to-fix tails that several messages share, as the user reads them.
SECONDS_FIX = (
    "use a whole number of seconds or one with a unit (us, ms, s, m, h, d), e.g. 30, 90s, 30m, "
    "24h or 7d"
)
SIZE_FIX = "use a whole number of bytes or one with a suffix, e.g. 4k, 256m, 1g (k = 1024)"
ID_FIX = "use letters, digits, '.', '_' or '-' (at most 128, starting with a letter or digit)"
SHIPPED = (
    "give a path to a .fio file or one of the shipped profiles: bs-sweep, database-oltp, "
    "git-small-files, iodepth-sweep, latency-at-load, media-streaming, precondition-fill, "
    "random-reads, random-writes, sequential-reads, sequential-writes, sync-write-latency, "
    "web-server-assets"
)
CUT_SHORT = (
    "above the runtime cap of 3600 s that stops it, so it would be cut short (change that "
    "option, set runtime= in the job file, or raise --max-runtime)"
)
HOST_LOCK_FIX = (
    "give --host-lock PATH (or FIOLAKE_HOST_LOCK) in a directory you may write to, or "
    "--share-host to run without it (runs are then flagged shared-host)"
)
READ_ONLY = "the lake is read-only here (use SELECT, WITH … SELECT, DESCRIBE, SHOW or EXPLAIN)"
NOT_WRITABLE_FIX = "give a directory you may write to, or fix its permissions or mount options"

# (args, env, exit code, the whole error from `Error: ` to the end of the output)
CASES: list[tuple[list[str], dict[str, str], int, str]] = [
    # -- run: the target directory
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}/missing"],
        {},
        2,
        (
            "Error: --dir {tmp}/missing does not exist — create it on the storage under test "
            "(is the file system mounted?), or pass --create-dir\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{file}"],
        {},
        2,
        "Error: --dir {file} is a file, not a directory — give a directory\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{file}/sub", "--create-dir"],
        {},
        2,
        (
            "Error: cannot create --dir {file}/sub: Not a directory ({file}/sub) — create it "
            "yourself where you may write, or choose another --dir\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{ro}/sub", "--create-dir"],
        {},
        2,
        (
            "Error: cannot create --dir {ro}/sub: {denied} ({ro}/sub) — create it yourself "
            "where you may write, or choose another --dir\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{ro}"],
        {},
        2,
        f"Error: --dir {{ro}} is not writable ({{denied}}) — {NOT_WRITABLE_FIX}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "/proc"],
        {},
        2,
        f"Error: --dir /proc is not writable (No such file or directory) — {NOT_WRITABLE_FIX}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--expect-fs", "tmpfs"],
        {},
        2,
        (
            "Error: --dir {tmp} is on {where}; expected file system tmpfs — point --dir at "
            "the storage under test, or fix --expect-fs\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--expect-mount", "/dev/shm"],
        {},
        2,
        (
            "Error: --dir {tmp} is on {where}; expected mount point /dev/shm — mount the "
            "storage under test at /dev/shm, or fix --dir/--expect-mount\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "/dev/shm", "--expect-fs", "xfs"],
        {},
        2,
        (
            "Error: --dir /dev/shm is on mount point /dev/shm, tmpfs on tmpfs; expected file "
            "system xfs — point --dir at the storage under test, or fix --expect-fs\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio"],
        {},
        2,
        (
            "Error: neither --dir nor --device given — give --dir DIR to benchmark a file "
            "system, or --device PATH --destroy-data to benchmark a raw block device\n"
        ),
    ),
    # -- run: a raw block device ({loop}: a free loop device this module made; those cases
    # also check that the device's bytes are unchanged)
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--device", "{file}"],
        {},
        2,
        (
            "Error: both --dir and --device given — give --dir DIR to benchmark a file "
            "system, or --device PATH --destroy-data to benchmark a raw block device\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--destroy-data", "--wipe-signatures"],
        {},
        2,
        (
            "Error: --destroy-data, --wipe-signatures without --device — they apply to a raw "
            "block device only; drop them, or give --device PATH instead of --dir\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{file}", "--expect-fs", "xfs", "--create-dir"],
        {},
        2,
        (
            "Error: --create-dir, --expect-fs with --device — they describe a --dir (a file "
            "system); a raw device has none: drop them (--expect-device names the device)\n"
        ),
    ),
    (
        ["runner", "--backend", "b", "--device", "{file}", "--expect-mount", "/mnt"],
        {},
        2,
        (
            "Error: --expect-mount with --device — they describe a --dir (a file system); a "
            "raw device has none: drop them (--expect-device names the device)\n"
        ),
    ),
    (
        ["runner", "--backend", "b"],
        {},
        2,
        (
            "Error: neither --dir nor --device given — give --dir DIR to benchmark a file "
            "system, or --device PATH --destroy-data to benchmark a raw block device\n"
        ),
    ),
    (
        ["runner", "--backend", "b", "--device", "{loop}"],
        {},
        2,
        (
            "Error: --device {loop}: fio will overwrite every byte of it — pass --destroy-data "
            "to confirm that it holds nothing you need\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{file}", "--destroy-data"],
        {},
        2,
        (
            "Error: --device {file} is a regular file, not a block device — give a block "
            "device such as /dev/nvme0n1 (to benchmark a file system, use --dir)\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{link}", "--destroy-data"],
        {},
        2,
        (
            "Error: --device {link} (-> {file}) is a regular file, not a block device — give "
            "a block device such as /dev/nvme0n1 (to benchmark a file system, use --dir)\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{tmp}/no-such-device", "--destroy-data"],
        {},
        2,
        (
            "Error: --device {tmp}/no-such-device: No such file or directory — give a block "
            "device such as /dev/nvme0n1 or /dev/disk/by-id/…\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{file}", "--expect-device", "size=1"],
        {},
        2,
        (
            "Error: --expect-device 'size=1' is not KEY=VALUE with KEY one of serial, wwn, "
            "model — e.g. --expect-device serial=S4EWNX0R123456\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{loop}"],
        {},
        2,
        (
            "Error: --device {loop}: fio will overwrite every byte of it — pass --destroy-data "
            "to confirm that it holds nothing you need\n"
        ),
    ),
    (
        [
            "run",
            "{job}/tiny.fio",
            "--device",
            "{loop}",
            "--destroy-data",
            "--expect-device",
            "serial=S4EWNX0R123456",
        ],
        {},
        2,
        (
            "Error: --device {loop} has serial unknown, expected S4EWNX0R123456 — device names "
            "can move after a reboot: check `lsblk -o NAME,MODEL,SERIAL,WWN` and give the "
            "right device (or /dev/disk/by-id/…)\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{mounted}", "--destroy-data"],
        {},
        2,
        (
            "Error: --device {mounted}: it is mounted on {mnt} — unmount it first (umount "
            "{mnt}), or choose another device\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{parted}", "--destroy-data"],
        {},
        2,
        (
            "Error: --device {parted}: its partition {parted}p1 is mounted on {pmnt} — unmount "
            "it first (umount {pmnt}), or choose another device\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{held}", "--destroy-data"],
        {},
        2,
        (
            "Error: --device {held} is open exclusively by another program (a mount, mkfs, "
            "another fiolake…) — find it with `fuser -v {held}` or lsblk and stop it, or "
            "choose another device\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{rodev}", "--destroy-data"],
        {},
        2,
        (
            "Error: --device {rodev} is read-only (blockdev --getro {rodev}) — make it "
            "writable (blockdev --setrw {rodev}), or choose another device\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{ext4}", "--destroy-data"],
        {},
        2,
        (
            "Error: --device {ext4} holds ext4 at 0x438 (wipefs -n {ext4}) — if that data may "
            "go, pass --wipe-signatures as well, or choose another device\n"
        ),
    ),
    # -- run/runner --mkfs: file systems made on the device (issue 43); every device
    # check comes first, and a refused device keeps every byte
    (
        ["run", "{job}/tiny.fio", "--device", "{mounted}", "--destroy-data", "--mkfs", "xfs"],
        {},
        2,
        (
            "Error: --device {mounted}: it is mounted on {mnt} — unmount it first (umount "
            "{mnt}), or choose another device\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{ext4}", "--destroy-data", "--mkfs", "xfs"],
        {},
        2,
        (
            "Error: --device {ext4} holds ext4 at 0x438 (wipefs -n {ext4}) — if that data may "
            "go, pass --wipe-signatures as well, or choose another device\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{loop}", "--destroy-data", "--mkfs", "zfs"],
        {},
        2,
        "Error: --mkfs zfs: fiolake cannot make that file system — choose from ext4, xfs, btrfs\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--mkfs", "ext4"],
        {},
        2,
        (
            "Error: --mkfs without --device — they apply to a raw block device only; drop "
            "them, or give --device PATH instead of --dir\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--mount-options", "noatime"],
        {},
        2,
        (
            "Error: --mount-options without --mkfs — they say how fiolake makes and mounts a "
            "file system: add --mkfs TYPE (with --device), or drop them\n"
        ),
    ),
    (
        [
            "run",
            "{job}/tiny.fio",
            "--device",
            "{loop}",
            "--destroy-data",
            "--mkfs",
            "ext4",
            "--mkfs",
            "ext4",
        ],  # fmt: skip
        {},
        2,
        (
            "Error: --mkfs ext4 given twice — each file system runs once per repetition; use "
            "--repeat for more runs\n"
        ),
    ),
    (
        [
            "run",
            "{job}/tiny.fio",
            "--device",
            "{loop}",
            "--destroy-data",
            "--mkfs",
            "ext4",
            "--mkfs-options",
            "xfs:-m reflink=0",
        ],  # fmt: skip
        {},
        2,
        (
            "Error: --mkfs-options 'xfs:-m reflink=0' is for xfs, which no --mkfs names — add "
            "--mkfs xfs, or fix the prefix (TYPE:OPTIONS, one of ext4)\n"
        ),
    ),
    (
        [
            "run",
            "{job}/tiny.fio",
            "--device",
            "{loop}",
            "--destroy-data",
            "--mkfs",
            "ext4",
            "--prefill",
        ],  # fmt: skip
        {},
        2,
        (
            "Error: --prefill with --mkfs — mkfs and the file system's own writes would undo "
            "it; --mkfs purges the device before each file system instead: drop --prefill\n"
        ),
    ),
    (
        [
            "runner",
            "--backend",
            "b",
            "--device",
            "{loop}",
            "--destroy-data",
            "--mkfs",
            "ext4",
            "--mkfs",
            "xfs",
        ],  # fmt: skip
        {},
        2,
        (
            "Error: --mkfs given 2 times — a runner serves one file system: start one runner "
            "per file system in turn, or use `fiolake run` for a matrix\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--device", "{loop}", "--destroy-data", "--size", "32m"],
        {},
        1,
        (
            "Error: job file refused:\n  tiny: [t] size + offsets = 32.0 MiB: beyond the end "
            "of {loop} (16.0 MiB) — lower size (or --size) or the offsets\n"
        ),
    ),
    (
        ["run", "{job}/devfile.fio", "--device", "{loop}", "--destroy-data"],
        {},
        1,
        (
            "Error: job file refused:\n  devfile: [a] filename: the device is fio's only file "
            "on a device target; not allowed\n  devfile: [a] unlink: would delete the device "
            "node; not allowed\n"
        ),
    ),
    (  # the job files are checked before --wipe-signatures wipes anything
        ["run", "{job}/devfile.fio", "--device", "{ext4}", "--destroy-data", "--wipe-signatures"],
        {},
        1,
        (
            "Error: job file refused:\n  devfile: [a] filename: the device is fio's only file "
            "on a device target; not allowed\n  devfile: [a] unlink: would delete the device "
            "node; not allowed\n"
        ),
    ),
    (  # so is the prefill job, before the signatures go or the purge runs (issue 41)
        [
            "run",
            "{job}/tiny.fio",
            "--device",
            "{ext4}",
            "--destroy-data",
            "--wipe-signatures",
            "--purge",
            "--prefill",
            "--max-iodepth",
            "16",
        ],
        {},
        1,
        (
            "Error: job file refused:\n  device-prefill: [prefill] iodepth=32: above the cap of "
            "16 (raise it with --max-iodepth)\n"
        ),
    ),
    (
        ["run", "{job}/devfile.fio", "--dir", "{tmp}"],
        {},
        1,
        (
            "Error: job file refused:\n  devfile: [a] filename=/dev/loop0: must be a plain file "
            "name inside the target dir (no '/', ':' or '..')\n"
        ),
    ),
    # -- run / runner: the host lock (one fio per host)
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--host-lock", "{file}/sub/host.lock"],
        {},
        2,
        (
            f"Error: cannot use the host lock {{file}}/sub/host.lock: Not a directory — "
            f"{HOST_LOCK_FIX}\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}"],
        {"FIOLAKE_HOST_LOCK": "/proc/host.lock"},
        2,
        (
            "Error: cannot use the host lock /proc/host.lock: No such file or directory — "
            f"{HOST_LOCK_FIX}\n"
        ),
    ),
    (
        ["runner", "--backend", "x", "--dir", "{tmp}", "--once", "--host-lock", "{file}/l/h"],
        {},
        2,
        f"Error: cannot use the host lock {{file}}/l/h: Not a directory — {HOST_LOCK_FIX}\n",
    ),
    (  # checked at start, before a device runner erases any signature (issue 41)
        ["runner", "--backend", "x", "--dir", "{tmp}", "--once", "--spool-dir", "{file}/s"],
        {"FIOLAKE_TRUSTED_KEY": "{pub}"},
        2,
        "Error: cannot use the spool directory {file}/s: Not a directory — give --spool-dir "
        "DIR where this user may create and write files\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--share-host", "--share-host=x"],
        {},
        2,
        "Error: Option '--share-host' does not take a value.\n",
    ),
    # -- run: job files and profiles
    (
        ["run", "no-such-profile", "--dir", "{tmp}"],
        {},
        2,
        f"Error: no job file or profile named 'no-such-profile' — {SHIPPED}\n",
    ),
    (
        ["run", "{tmp}/missing.fio", "--dir", "{tmp}"],
        {},
        2,
        f"Error: no job file or profile named '{{tmp}}/missing.fio' — {SHIPPED}\n",
    ),
    (
        ["run", "{job}/empty.fio", "--dir", "{tmp}"],
        {},
        1,
        "Error: job file refused:\n  empty: no job sections; add at least one [name] section\n",
    ),
    (
        ["run", "{job}/comments.fio", "--dir", "{tmp}"],
        {},
        1,
        (
            "Error: job file refused:\n  comments: no job sections; add at least one [name] "
            "section\n"
        ),
    ),
    (
        ["run", "{job}/include.fio", "--dir", "{tmp}"],
        {},
        1,
        "Error: job file refused:\n  include: line 1: include: reads other files; not allowed\n",
    ),
    (
        ["run", "{job}/dollar.fio", "--dir", "{tmp}"],
        {},
        1,
        (
            "Error: job file refused:\n  dollar: line 3: '$' expansion is not allowed "
            "(environment and arithmetic expansion run commands)\n"
        ),
    ),
    (
        ["run", "{job}/exec.fio", "--dir", "{tmp}"],
        {},
        1,
        "Error: job file refused:\n  exec: [a] exec_prerun: runs a shell command; not allowed\n",
    ),
    (
        ["run", "{job}/rate.fio", "--dir", "{tmp}"],
        {},
        1,
        (
            "Error: job file refused:\n  rate: [a] rate=1: the workload needs at least "
            f"4,194,304 s, {CUT_SHORT}\n"
        ),
    ),
    (
        ["run", "{job}/loops.fio", "--dir", "{tmp}"],
        {},
        1,
        (
            "Error: job file refused:\n  loops: [a] loops=100000000: the workload needs at "
            f"least 10,240 s, {CUT_SHORT}\n"
        ),
    ),
    (
        ["run", "{job}/trim.fio", "--dir", "{tmp}"],
        {},
        1,
        (
            "Error: job file refused:\n  trim: [a] rw=trim: trims (discards) data; allowed only "
            "on a block-device target (--device)\n"
        ),
    ),
    (
        ["run", "{job}/huge.fio", "--dir", "{tmp}"],
        {},
        1,
        (
            "Error: job file refused:\n  huge: [a] size=100t: above the cap of 64.0 GiB "
            "(raise it with --max-size)\n"
        ),
    ),
    (
        ["run", "{job}/binary.fio", "--dir", "{tmp}"],
        {},
        1,
        "Error: job file refused:\n  binary: line 2: control character 0x00 is not allowed\n",
    ),
    # -- run: sizes, durations, ids, formats
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--size", "12x"],
        {},
        2,
        f"Error: Invalid value for '--size': '12x' is not a size — {SIZE_FIX}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--size", "0"],
        {},
        2,
        f"Error: Invalid value for '--size': '0' is not a size — {SIZE_FIX}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--size", "1.5g"],
        {},
        2,
        f"Error: Invalid value for '--size': '1.5g' is not a size — {SIZE_FIX}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--size", "100t"],
        {},
        1,
        (
            "Error: job file refused:\n  tiny: --size=109951162777600: above the cap of 64.0 "
            "GiB (raise it with --max-size)\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--runtime", "0"],
        {},
        2,
        "Error: Invalid value for '--runtime': 0 is not in the range x>=1.\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--runtime", "10s"],
        {},
        2,
        "Error: Invalid value for '--runtime': '10s' is not a valid integer range.\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--runtime", "99999"],
        {},
        1,
        (
            "Error: job file refused:\n  tiny: --runtime=99999: above the cap of 3600 s "
            "(raise it with --max-runtime)\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--max-size", "lots"],
        {},
        2,
        f"Error: Invalid value for '--max-size': 'lots' is not a size — {SIZE_FIX}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--max-runtime", "-1"],
        {},
        2,
        "Error: Invalid value for '--max-runtime': -1 is not in the range x>=1.\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--backend", "bad id"],
        {},
        2,
        f"Error: Invalid value for '--backend': invalid backend 'bad id' — {ID_FIX}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--campaign", "../x"],
        {},
        2,
        f"Error: Invalid value for '--campaign': invalid campaign id '../x' — {ID_FIX}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--label", "novalue"],
        {},
        2,
        "Error: Invalid value for --label: 'novalue' is not KEY=VALUE\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--repeat", "0"],
        {},
        2,
        "Error: Invalid value for '--repeat': 0 is not in the range 1<=x<=1000.\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--format", "xml"],
        {},
        2,
        "Error: Invalid value for '--format': 'xml' is not one of 'table', 'csv', 'json'.\n",
    ),
    (  # issue 42: a profile is resolved once, for boto3, DuckDB and delta-rs alike
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--lake", "s3://b"],
        {
            "FIOLAKE_S3_ENDPOINT": "https://127.0.0.1:9",
            "AWS_PROFILE": "nobody",
            "AWS_ACCESS_KEY_ID": "",
            "AWS_SHARED_CREDENTIALS_FILE": "{tmp}/none",
            "AWS_CONFIG_FILE": "{tmp}/none",
        },
        2,
        "Error: AWS_PROFILE nobody: The config profile (nobody) could not be found — name a "
        "profile of ~/.aws/credentials or ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE, "
        "AWS_CONFIG_FILE), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n",
    ),  # fmt: skip
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--lake", "s3://b"],
        {"FIOLAKE_S3_ENDPOINT": "http://127.0.0.1:9"},
        2,
        (
            "Error: refusing plain-text endpoint 'http://127.0.0.1:9': use https:// (fiolake "
            "talks to object storage over TLS only)\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--lake", "s3://b"],
        {"FIOLAKE_S3_ENDPOINT": "https://127.0.0.1:9", "FIOLAKE_CA_BUNDLE": "/nonexistent"},
        2,
        (
            "Error: FIOLAKE_CA_BUNDLE=/nonexistent: no such file — point it at the CA "
            "certificate (PEM) that signed the object store's certificate (`eval \"$(fiolake "
            "stack env)\"` sets the local stack's)\n"
        ),
    ),
    (
        ["status", "--campaign", "c", "--lake", "s3://b"],
        {"FIOLAKE_S3_ENDPOINT": "https://127.0.0.1:9", "AWS_CA_BUNDLE": "{tmp}/ca.crt"},
        2,
        (
            "Error: AWS_CA_BUNDLE={tmp}/ca.crt: no such file — point it at the CA certificate "
            '(PEM) that signed the object store\'s certificate (`eval "$(fiolake stack env)"` '
            "sets the local stack's)\n"
        ),
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--lake", "s3://b"],
        {},
        1,
        (
            "Error: lake s3://b is on S3 but no endpoint is configured: set "
            'FIOLAKE_S3_ENDPOINT (run `eval "$(fiolake stack env)"` for the local stack)\n'
        ),
    ),
    (
        ["status", "--recent", "1", "--lake", "s3://b"],
        {"FIOLAKE_S3_ENDPOINT": "https://127.0.0.1:9", "FIOLAKE_S3_ADDRESSING": "vhost"},
        2,
        "Error: FIOLAKE_S3_ADDRESSING is 'vhost' — set it to 'path' (https://host/bucket/key, "
        "the default) or 'virtual' (https://bucket.host/key: AWS S3, R2)\n",
    ),
    (
        ["lake", "check", "--recheck", "--lake", "{tmp}"],
        {},
        2,
        "Error: --recheck goes with --store — add --store\n",
    ),
    # -- validate / profiles
    (["validate"], {}, 2, "Error: name at least one job file (or a profile), or use --list\n"),
    (["validate", "nope"], {}, 2, f"Error: no job file or profile named 'nope' — {SHIPPED}\n"),
    (
        ["validate", "{job}/empty.fio"],
        {},
        1,
        "Error: job file refused:\n  empty: no job sections; add at least one [name] section\n",
    ),
    (
        ["validate", "{job}/exec.fio"],
        {},
        1,
        "Error: job file refused:\n  exec: [a] exec_prerun: runs a shell command; not allowed\n",
    ),
    (
        ["validate", "{job}/rate.fio"],
        {},
        1,
        (
            "Error: job file refused:\n  rate: [a] rate=1: the workload needs at least "
            f"4,194,304 s, {CUT_SHORT}\n"
        ),
    ),
    (
        ["validate", "{job}/dedupe.fio"],
        {"PATH": "{fio328}"},
        1,
        (
            "Error: job file refused:\n  dedupe: [a] dedupe_global needs fio ≥ 3.33; this host "
            "has fio-3.28 — install fio 3.33 or newer, or remove dedupe_global\n"
        ),
    ),
    (
        ["validate", "{job}/stride.fio"],
        {},
        1,
        (
            "Error: job file refused:\n  stride: [a] random_sequence_stride is not an option of "
            "this host's fio (fio-3.33) — remove it (fiolake supports fio 3.28 to 3.42)\n"
        ),
    ),
    (
        ["validate", "{job}/newer.fio"],
        {},
        1,
        (
            "Error: job file refused:\n  newer: [a] priohint: sets I/O priority (the real-time "
            "class starves other work); not allowed\n  newer: [a] comm: renames fio's job "
            "processes (they would no longer show as fio); not allowed\n  newer: [a] dp_scheme: "
            "reads a placement scheme file; not allowed\n  newer: [a] filetype: tells fio what "
            "its files are instead of fio looking (the runner decides); not allowed\n  newer: "
            "[a] num_range: trims (discards) data; not allowed\n  newer: [a] ramp_size: not on "
            "the allowlist; not allowed (see `fiolake validate --list`)\n"
        ),
    ),
    (
        ["validate", "{job}/tiny.fio", "--max-numjobs", "0"],
        {},
        2,
        "Error: Invalid value for '--max-numjobs': 0 is not in the range x>=1.\n",
    ),
    (
        ["profiles", "--format", "xml"],
        {},
        2,
        "Error: Invalid value for '--format': 'xml' is not one of 'table', 'csv', 'json'.\n",
    ),
    # -- sql
    (
        ["sql", "SELEC 1", "--lake", "{lake}"],
        {},
        1,
        (
            'Error: SQL error: Parser Error: syntax error at or near "SELEC"\n'
            "\n"
            "LINE 1: SELEC 1\n"
            "        ^\n"
        ),
    ),
    (
        ["sql", "DROP VIEW runs", "--lake", "{lake}"],
        {},
        1,
        f"Error: refusing a DROP statement: {READ_ONLY}\n",
    ),
    (
        ["sql", "COPY runs TO '{tmp}/out.csv'", "--lake", "{lake}"],
        {},
        1,
        f"Error: refusing a COPY statement: {READ_ONLY}\n",
    ),
    (
        ["sql", "SELECT * FROM read_csv('/etc/passwd')", "--lake", "{lake}"],
        {},
        1,
        (
            'Error: SQL error: Permission Error: Cannot access file "/etc/passwd" - file '
            "system operations are disabled by configuration\n"
            "\n"
            "LINE 1: SELECT * FROM read_csv('/etc/passwd')\n"
            "                      ^\n"
        ),
    ),
    *(
        (
            ["sql", "SELECT 1", "--lake", "{lake}"],
            {"FIOLAKE_DUCKDB_THREADS": value},
            2,
            f"Error: FIOLAKE_DUCKDB_THREADS is {value!r} — set it to a whole number of threads "
            "(1, 2, …), or unset it to use every core\n",
        )
        for value in ("two", "0", "-1", "1.5", "²")
    ),
    (
        ["sql", "SELECT nope FROM runs", "--lake", "{lake}"],
        {},
        1,
        (
            'Error: SQL error: Binder Error: Referenced column "nope" not found in FROM clause!\n'
            'Candidate bindings: "role", "runner", "fio_path", "os", "preconditioned_by"\n'
            "\n"
            "LINE 1: SELECT nope FROM runs\n"
            "               ^\n"
        ),
    ),
    (["sql", "SELECT 1", "--lake", "{tmp}/no-lake"], {}, 1, NO_LAKE),
    (
        ["sql", "SELECT 1", "--lake", "{lake}", "--max-rows", "0"],
        {},
        2,
        "Error: Invalid value for '--max-rows': 0 is not in the range x>=1.\n",
    ),
    (
        ["sql", "SELECT count(*) FROM results", "--lake", "{corrupt}"],
        {},
        1,
        "Error: cannot read lake {corrupt}: Invalid Input Error: Footer length error in file "
        "'{corrupt}/results/runs/date={date}/{run}.parquet' — the file is damaged: restore it, "
        "or move it out of the lake; `fiolake lake check` then names the run that lost its "
        "rows\n",
    ),
    # -- compare / trend / regressions / env-diff / lake
    (
        ["compare", "--lake", "{lake}", "--metric", "nope"],
        {},
        2,
        f"Error: unknown metric 'nope': choose from {METRICS}\n",
    ),
    (
        ["compare", "--lake", "{lake}", "--backend", "nope"],
        {},
        1,
        no_runs("backend", "nope", "backend"),
    ),
    (
        ["compare", "--lake", "{lake}", "--campaign", "nope"],
        {},
        1,
        no_runs("campaign", "nope", "campaign_id"),
    ),
    (["compare", "--lake", "{lake}", "--run", "r-nope"], {}, 1, no_runs("run", "r-nope", "run_id")),
    (
        ["compare", "--lake", "{lake}", "--by", "nope"],
        {},
        2,
        f"Error: cannot group by 'nope': choose a runs column: {RUNS_COLUMNS}\n",
    ),
    (
        ["gate", "--lake", "{lake}", "--campaign", "nope"],
        {},
        2,
        no_runs("campaign", "nope", "campaign_id"),
    ),
    (
        ["gate", "--lake", "{lake}", "--campaign", "c", "--inconclusive", "maybe"],
        {},
        2,
        "Error: Invalid value for '--inconclusive': 'maybe' is not one of 'pass', 'fail'.\n",
    ),
    (["gate", "--lake", "{lake}"], {}, 2, "Error: Missing option '--campaign'.\n"),
    (
        ["compare", "--lake", "{lake}", "--family", "nope"],
        {},
        2,
        (
            "Error: Invalid value for '--family': 'nope' is not one of 'question', 'metric', "
            "'profile', 'table'.\n"
        ),
    ),
    (["compare", "--lake", "{tmp}/no-lake"], {}, 1, NO_LAKE),
    (
        ["trend", "--lake", "{lake}", "--metric", "nope"],
        {},
        2,
        f"Error: unknown metric 'nope': choose from {METRICS}\n",
    ),
    (
        ["trend", "--lake", "{lake}", "--since", "7x"],
        {},
        2,
        "Error: invalid time '7x' — use a duration (7d, 12h) or an ISO date (2025-03-01)\n",
    ),
    # -- issue 35: saturation, and iops_at_slo in trend and gate
    (
        ["saturation", "--lake", "{lake}", "--slo", "p99"],
        {},
        2,
        "Error: Invalid value for '--slo': 'p99' is not an SLO — write PERCENTILE<=LIMIT with "
        "a time unit, e.g. p99<=1ms, p50<=200us, p99.9<=5ms\n",
    ),
    (
        ["saturation", "--lake", "{lake}", "--slo", "p97<=1ms"],
        {},
        2,
        "Error: Invalid value for '--slo': 'p97<=1ms': fiolake keeps the clat percentiles p50, "
        "p99, p99.9 per job, not p97 — choose one of them\n",
    ),
    (
        ["saturation", "--lake", "{lake}", "--slo", "p99<=0ms"],
        {},
        2,
        "Error: Invalid value for '--slo': 'p99<=0ms': the latency limit must be above zero, "
        "e.g. p99<=1ms\n",
    ),
    (
        ["saturation", "--lake", "{lake}", "--by", "depth"],
        {},
        2,
        "Error: Invalid value for '--by': 'depth' is not one of 'rate_iops', 'iodepth', "
        "'numjobs', 'bs'.\n",
    ),
    (
        ["saturation", "--lake", "{lake}"],
        {},
        1,
        "Error: no load sweep in the successful runs selected (no filter) — run a sweep "
        "profile (latency-at-load, iodepth-sweep) first\n",
    ),
    (
        ["trend", "--lake", "{lake}", "--metric", "iops_at_slo", "--bucket", "day"],
        {},
        2,
        "Error: --bucket day does not apply to iops_at_slo: each run is one whole sweep with "
        "its own value — use --bucket run\n",
    ),
    (
        ["trend", "--lake", "{lake}", "--metric", "iops_at_slo"],
        {},
        1,
        "Error: no load sweep in the successful runs selected (no filter) — run a sweep "
        "profile (latency-at-load, iodepth-sweep) first\n",
    ),
    (
        ["gate", "--lake", "{lake}", "--campaign", "c-bad-input", "--slo", "1ms"],
        {},
        2,
        "Error: Invalid value for '--slo': '1ms' is not an SLO — write PERCENTILE<=LIMIT with "
        "a time unit, e.g. p99<=1ms, p50<=200us, p99.9<=5ms\n",
    ),
    (
        ["regressions", "--lake", "{lake}", "--since", "soon"],
        {},
        2,
        "Error: invalid time 'soon' — use a duration (7d, 12h) or 'all'\n",
    ),
    (
        ["regressions", "--lake", "{lake}", "--since", "-1d"],
        {},
        2,
        "Error: invalid time '-1d' — use a duration (7d, 12h) or 'all'\n",
    ),
    (
        ["env-diff", "--lake", "{lake}", "--run", "r-a"],
        {},
        2,
        "Error: give exactly two --run options (got 1)\n",
    ),
    (
        ["env-diff", "--lake", "{lake}", "--run", "r-a", "--run", "r-b"],
        {},
        1,
        no_runs("run", "r-a", "run_id"),
    ),
    (["lake", "check", "--lake", "{tmp}/no-lake"], {}, 1, NO_LAKE),
    (["lake", "frobnicate"], {}, 2, "Error: No such command 'frobnicate'.\n"),
    # -- run / publish --precondition
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--precondition", "nope"],
        {},
        2,
        f"Error: no job file or profile named 'nope' — {SHIPPED}\n",
    ),
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--precondition", "{job}/exec.fio"],
        {},
        1,
        (
            "Error: job file refused:\n  exec (precondition of tiny): [a] exec_prerun: runs a "
            "shell command; not allowed\n"
        ),
    ),
    (
        ["validate", "{job}/nofill.fio"],
        {},
        2,
        (
            f"Error: {{job}}/nofill.fio ('# precondition: nowhere.fio'): no job file or "
            f"profile named 'nowhere.fio' — {SHIPPED}\n"
        ),
    ),
    (
        ["run", "{job}/emptyfill.fio", "--dir", "{tmp}"],
        {},
        2,
        "Error: a job file's '# precondition:' line names no job — write "
        "'# precondition: precondition-fill' (a profile or a job file path)\n",
    ),
    (
        ["validate", "{job}/filled.fio"],
        {},
        1,
        "Error: job file refused:\n  exec (precondition of filled): [a] exec_prerun: runs a "
        "shell command; not allowed\n",
    ),
    (
        ["publish", "{job}/filled.fio", "--backend", "x", "--gang", "2"],
        {},
        2,
        "Error: --gang does not work with preconditioning (a job file's '# precondition:' "
        "line) — precondition the gang's storage with a solo campaign first, or add "
        "--precondition none\n",
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--gang", "2", "--precondition", "x"],
        {},
        2,
        (
            "Error: --precondition does not work with --gang — precondition the gang's "
            "storage with a solo campaign first\n"
        ),
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--target", "device", "--expect-fs", "xfs"],
        {},
        2,
        (
            "Error: --expect-mount/--expect-fs with --target device — a raw device has no file "
            "system; drop them (the runner's --expect-device names its device)\n"
        ),
    ),
    (
        ["publish", "{job}/devfile.fio", "--backend", "x", "--target", "device"],
        {},
        1,
        (
            "Error: job file refused:\n  devfile: [a] filename: the device is fio's only file "
            "on a device target; not allowed\n  devfile: [a] unlink: would delete the device "
            "node; not allowed\n"
        ),
    ),
    (
        ["publish", "{job}/trim.fio", "--backend", "x"],
        {},
        1,
        (
            "Error: job file refused:\n  trim: [a] rw=trim: trims (discards) data; allowed only "
            "on a block-device target (--device)\n"
        ),
    ),
    (
        ["publish", "--rerun", "c-1", "--precondition", "precondition-fill"],
        {},
        2,
        (
            "Error: --rerun takes no job files, --backend, --campaign, --expect-*, --gang or "
            "--precondition — it re-publishes the selected jobs of that campaign as they "
            "were\n"
        ),
    ),
    # -- publish
    (
        ["publish", "random-reads", "--backend", "x", "--campaign", "bad id"],
        {},
        2,
        f"Error: Invalid value for '--campaign': invalid campaign id 'bad id' — {ID_FIX}\n",
    ),
    (
        ["publish", "random-reads", "--backend", "bad id"],
        {},
        2,
        f"Error: Invalid value for '--backend': invalid backend 'bad id' — {ID_FIX}\n",
    ),
    (
        ["publish", "random-reads"],
        {},
        2,
        "Error: Missing option '--backend' (or --rerun CAMPAIGN).\n",
    ),
    (
        ["publish", "nope", "--backend", "x"],
        {},
        2,
        f"Error: no job file or profile named 'nope' — {SHIPPED}\n",
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--expires", "5x"],
        {},
        2,
        f"Error: Invalid value for '--expires': '5x' is not a duration — {SECONDS_FIX}\n",
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--repeat", "0"],
        {},
        2,
        "Error: Invalid value for '--repeat': 0 is not in the range 1<=x<=1000.\n",
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--wait", "--timeout", "5x"],
        {},
        2,
        f"Error: Invalid value for '--timeout': '5x' is not a duration — {SECONDS_FIX}\n",
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--wait", "--timeout", "0"],
        {},
        2,
        (
            "Error: Invalid value for '--timeout': '0' is zero — give a duration above zero, "
            "e.g. 30s\n"
        ),
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--timeout", "1h"],
        {},
        2,
        "Error: --timeout is how long --wait waits — add --wait\n",
    ),
    (
        ["publish", "{job}/rate.fio", "--backend", "x"],
        {},
        1,
        (
            "Error: job file refused:\n  rate: [a] rate=1: the workload needs at least "
            f"4,194,304 s, {CUT_SHORT}\n"
        ),
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--lake", "{tmp}/pl"],
        {"FIOLAKE_SIGNER": "bogus"},
        1,
        (
            "Error: FIOLAKE_SIGNER is 'bogus' — set it to 'vault' (Vault transit) or 'local' "
            "(a key file)\n"
        ),
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--lake", "{tmp}/pl"],
        {"FIOLAKE_SIGNER": "local", "FIOLAKE_SIGNING_KEY": "{tmp}/no.key"},
        1,
        (
            "Error: cannot read signing key {tmp}/no.key: No such file or directory — point "
            "FIOLAKE_SIGNING_KEY at an Ed25519 key file (create one with `fiolake keygen "
            "PATH`)\n"
        ),
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--lake", "s3://b"],
        {
            "FIOLAKE_S3_ENDPOINT": "http://127.0.0.1:9",
            "FIOLAKE_SIGNER": "local",
            "FIOLAKE_SIGNING_KEY": "{tmp}/no.key",
        },
        2,
        "Error: refusing plain-text endpoint 'http://127.0.0.1:9': use https:// (fiolake talks "
        "to object storage over TLS only)\n",
    ),
    # -- runner
    (
        ["runner", "--backend", "x", "--dir", "{tmp}/missing", "--once"],
        {},
        2,
        (
            "Error: --dir {tmp}/missing does not exist — create it on the storage under test "
            "(is the file system mounted?), or pass --create-dir\n"
        ),
    ),
    (
        ["runner", "--backend", "x", "--dir", "{file}", "--once"],
        {},
        2,
        "Error: --dir {file} is a file, not a directory — give a directory\n",
    ),
    (
        ["runner", "--backend", "x", "--dir", "{ro}", "--once"],
        {},
        2,
        f"Error: --dir {{ro}} is not writable ({{denied}}) — {NOT_WRITABLE_FIX}\n",
    ),
    (
        ["runner", "--backend", "x", "--dir", "{tmp}", "--expect-fs", "tmpfs", "--once"],
        {},
        2,
        (
            "Error: --dir {tmp} is on {where}; expected file system tmpfs — point --dir at "
            "the storage under test, or fix --expect-fs\n"
        ),
    ),
    (
        ["runner", "--backend", "bad id", "--dir", "{tmp}"],
        {},
        2,
        f"Error: Invalid value for '--backend': invalid backend 'bad id' — {ID_FIX}\n",
    ),
    (
        ["runner", "--backend", "x", "--dir", "{tmp}", "--lease-ttl", "1"],
        {},
        2,
        "Error: Invalid value for '--lease-ttl': 1.0 is not in the range x>=2.\n",
    ),
    (
        ["runner", "--backend", "x", "--dir", "{tmp}", "--idle-exit", "xx"],
        {},
        2,
        f"Error: Invalid value for '--idle-exit': 'xx' is not a duration — {SECONDS_FIX}\n",
    ),
    (
        ["runner", "--backend", "x", "--dir", "{tmp}", "--once", "--lake", "{lake}"],
        {"FIOLAKE_KEYRING": "{file}"},
        1,
        "Error: keyring cache {file} is unreadable (Expecting value: line 1 column 1 (char 0)) "
        "— delete it; keys are fetched again\n",
    ),
    # -- status / keygen / stack / app
    (
        ["status", "--campaign", "bad id"],
        {},
        2,
        f"Error: Invalid value for '--campaign': invalid campaign id 'bad id' — {ID_FIX}\n",
    ),
    (
        ["status"],
        {},
        2,
        "Error: Missing option '--campaign'. (Or --recent N for a line per recent campaign.)\n",
    ),
    (
        ["status", "--campaign", "c-nope", "--lake", "{tmp}/no-lake"],
        {},
        1,
        "Error: no jobs found for campaign 'c-nope' in {tmp}/no-lake: check the id printed by "
        "`fiolake publish` and the lake (FIOLAKE_LAKE)\n",
    ),
    (
        ["keygen", "{file}"],
        {},
        1,
        "Error: {file} already exists; refusing to overwrite a key file — choose another PATH, "
        "or move the old key and its .pub away first\n",
    ),
    (["keygen", "{tmp}"], {}, 2, "Error: Invalid value for 'PATH': File '{tmp}' is a directory.\n"),
    (
        ["keygen", "{file}/sub/key"],
        {},
        1,
        (
            "Error: cannot write key {file}/sub/key: Not a directory — choose a path in an "
            "existing directory you may write to\n"
        ),
    ),
    (
        ["stack", "env", "--role", "nope"],
        {},
        2,
        (
            "Error: Invalid value for '--role': 'nope' is not one of 'admin', 'runner', "
            "'publisher', 'analyst', 'compactor', 'importer'.\n"
        ),
    ),
    (["stack", "frobnicate"], {}, 2, "Error: No such command 'frobnicate'.\n"),
    # -- issue 36: the app beyond localhost needs a login
    (
        ["app", "--lake", "{tmp}", "--address", "0.0.0.0"],
        {},
        2,
        "Error: fiolake app on 0.0.0.0 would show the lake to anyone who can reach it without "
        "a login — give --auth FILE (an OIDC login; `fiolake stack app-login` writes one, "
        'docs/deploy.md "Sharing the app"), use --address 127.0.0.1, or pass '
        "--insecure-no-login if your own proxy signs people in\n",
    ),
    (
        ["app", "--lake", "{tmp}", "--auth", "{tmp}/nowhere.toml"],
        {},
        2,
        "Error: login configuration {tmp}/nowhere.toml: no such file — see docs/deploy.md "
        '"Sharing the app"\n',
    ),
    (
        ["app", "--lake", "{tmp}", "--address", "0.0.0.0", "--auth", "{job}/auth-empty.toml"],
        {},
        2,
        "Error: login configuration {job}/auth-empty.toml: [auth] lacks redirect_uri, "
        "cookie_secret, client_id, client_secret, server_metadata_url — see docs/deploy.md "
        '"Sharing the app"\n',
    ),
    (
        ["app", "--lake", "{tmp}", "--auth", "{job}/auth-syntax.toml"],
        {"FIOLAKE_APP_AUTH": "{job}/auth-empty.toml"},  # the option wins over the variable
        2,
        "Error: login configuration {job}/auth-syntax.toml: is not valid TOML (Expected ']' "
        "at the end of a table declaration (at line 1, column 6)) — see docs/deploy.md "
        '"Sharing the app"\n',
    ),
    (
        ["app", "--lake", "{tmp}", "--address", "0.0.0.0"],
        {"FIOLAKE_APP_AUTH": "{job}/auth-empty.toml"},
        2,
        "Error: login configuration {job}/auth-empty.toml: [auth] lacks redirect_uri, "
        "cookie_secret, client_id, client_secret, server_metadata_url — see docs/deploy.md "
        '"Sharing the app"\n',
    ),
    (
        ["app", "--lake", "{tmp}", "--auth", "{job}/auth-empty.toml", "--insecure-no-login"],
        {},
        2,
        "Error: --auth and --insecure-no-login contradict each other — give one\n",
    ),
    (
        ["stack", "app-login", "--app-url", "http://127.0.0.1:8501", "--user", "ana"],
        {},
        2,
        "Error: --user 'ana' is not NAME:ROLE — e.g. --user ana:analyst (roles: viewer, analyst)\n",
    ),
    (
        ["stack", "app-login", "--app-url", "http://127.0.0.1:8501", "--user", "ana:admin"],
        {},
        2,
        "Error: --user 'ana:admin' is not NAME:ROLE — e.g. --user ana:analyst "
        "(roles: viewer, analyst)\n",
    ),
    (
        ["stack", "app-login", "--app-url", "127.0.0.1:8501", "--user", "ana:analyst"],
        {},
        2,
        "Error: --app-url '127.0.0.1:8501' is not an absolute URL — give the address readers "
        "open, e.g. http://127.0.0.1:8501 or https://fiolake.example.org\n",
    ),
    (
        ["stack", "init-remote", "--out", "{tmp}/stack", "--app-user", "ana:analyst"],
        {},
        2,
        "Error: --app-user needs --app-url — give the address readers open\n",
    ),
    (["frobnicate"], {}, 2, "Error: No such command 'frobnicate'.\n"),
    # -- issue 20: lake prune, gate baselines, regressions metrics (one block, whole messages)
    (
        ["lake", "prune", "--lake", "{lake}", "--keep-timeseries", "soon"],
        {},
        2,
        "Error: Invalid value for '--keep-timeseries': 'soon' is not a duration — "
        f"{DURATION_FIX}\n",
    ),
    (
        ["lake", "prune", "--lake", "{lake}", "--keep-timeseries", "0d"],
        {},
        2,
        "Error: Invalid value for '--keep-timeseries': '0d' is zero — give a duration above "
        "zero, e.g. 30s\n",
    ),
    (["lake", "prune", "--lake", "{lake}"], {}, 2, "Error: Missing option '--keep-timeseries'.\n"),
    (
        ["gate", "--lake", "{lake}", "--campaign", "c-bad-input", "--baseline-campaign", "nope"],
        {},
        2,
        no_runs("campaign", "nope", "campaign_id"),
    ),
    (
        ["gate", "--lake", "{lake}", "--campaign", "c-bad-input"],
        {},
        2,
        "Error: no earlier campaign ran the jobs of campaign 'c-bad-input' on its backends: "
        "give --baseline-campaign\n",
    ),
    (
        [
            "gate",
            "--lake",
            "{lake}",
            "--campaign",
            "c-bad-input",
            "--baseline-campaign",
            "c-bad-input",
        ],
        {},
        2,
        "Error: campaign 'c-bad-input' is its own baseline: choose an earlier one\n",
    ),  # fmt: skip
    (
        ["regressions", "--lake", "{lake}", "--metric", "nope"],
        {},
        2,
        f"Error: unknown metric 'nope': choose from {METRICS}\n",
    ),
    # -- import: each bad file named with what is wrong, nothing written for it
    (
        ["import", "{imp}/text.log", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/text.log: "
        + (
            "no fio JSON document in it — fio's normal text output cannot be imported: "
            "run fio with --output-format=json (or json+)"
        )
        + "\n"
        + NOT_IMPORTED.replace("{name}", "text.log"),
    ),
    (
        ["import", "{imp}/other.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/other.json: "
        + (
            "its JSON is not fio output (no jobs[] or client_stats[] of fio jobs) — give the "
            "output of fio --output-format=json"
        )
        + "\n"
        + NOT_IMPORTED.replace("{name}", "other.json"),
    ),
    (
        ["import", "{imp}/cut.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/cut.json: "
        + (
            "its JSON is cut short or malformed (was fio killed, or the file truncated?) — "
            "import fio's complete output"
        )
        + "\n"
        + NOT_IMPORTED.replace("{name}", "cut.json"),
    ),
    (
        ["import", "{imp}/nan.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/nan.json: "
        + "NaN is not a number fio writes (damaged output?)"
        + "\n"
        + NOT_IMPORTED.replace("{name}", "nan.json"),
    ),
    (
        ["import", "{imp}/negative.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/negative.json: "
        + "document 1: job 'j' read total_ios is negative (-1)"
        + "\n"
        + NOT_IMPORTED.replace("{name}", "negative.json"),
    ),
    (
        ["import", "{imp}/deep.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/deep.json: "
        + "document 1: JSON nested deeper than 32 levels"
        + "\n"
        + NOT_IMPORTED.replace("{name}", "deep.json"),
    ),
    (
        ["import", "{imp}/undated.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/undated.json: "
        + (
            "document 1 has no timestamp (fio before 2.2, or edited) — give its start time "
            "with --at, e.g. --at 2024-03-01T12:00:00Z"
        )
        + "\n"
        + NOT_IMPORTED.replace("{name}", "undated.json"),
    ),
    (
        [
            "import",
            "{imp}/optioned.json",
            "--job-file",
            "{imp}/job.fio",
            "--backend",
            "x",
            "--lake",
            "{tmp}/lake",
        ],
        {},
        1,
        "Error: {imp}/optioned.json: document 1: fio's output disagrees with --job-file "
        "(job 0: bs is 8192 in fio's output, 4096 in the file) — give the job file this "
        "output was made from, or import without --job-file\n"
        + NOT_IMPORTED.replace("{name}", "optioned.json"),
    ),
    (
        [
            "import",
            "{imp}/optioned.json",
            "--job-file",
            "{imp}/latin1.fio",
            "--backend",
            "x",
            "--lake",
            "{tmp}/lake",
        ],
        {},
        2,
        "Error: --job-file {imp}/latin1.fio: cannot read it (it is not UTF-8 text) — give the "
        "fio job file the output was made from\n",
    ),
    (
        ["import", "{imp}/binary.out", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/binary.out: "
        + (
            "not text (it holds NUL bytes): no fio JSON document in it — fio's normal text "
            "output cannot be imported: run fio with --output-format=json (or json+)"
        )
        + "\n"
        + NOT_IMPORTED.replace("{name}", "binary.out"),
    ),
    (
        ["import", "{imp}/badlog.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/badlog.json: log badlog_bw.1.log line 1 does not fit fio's log format "
        "(2 columns: '1000, x')\n" + NOT_IMPORTED.replace("{name}", "badlog.json"),
    ),
    (
        ["import", "{imp}/stamp.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/stamp.json: document 1: timestamp is 'soon', not a number\n"
        + NOT_IMPORTED.replace("{name}", "stamp.json"),
    ),
    (
        ["import", "{imp}/options.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/options.json: document 1: malformed fio JSON (AttributeError: 'int' "
        "object has no attribute 'items') — import fio's own output, unedited\n"
        + NOT_IMPORTED.replace("{name}", "options.json"),
    ),
    (
        ["import", "{imp}/abyss.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/abyss.json: JSON nested too deep for the parser (hundreds of levels; "
        "fio's own nest 8 at most): not fio output\n"
        + NOT_IMPORTED.replace("{name}", "abyss.json"),
    ),
    (
        ["import", "{imp}/malformed.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        1,
        "Error: {imp}/malformed.json: document 1: job 'j' read total_ios is 'many', not a "
        "number\n" + NOT_IMPORTED.replace("{name}", "malformed.json"),
    ),
    (
        ["import", "{tmp}/nope.json", "--backend", "x", "--lake", "{tmp}/lake"],
        {},
        2,
        "Error: {tmp}/nope.json: no such file or folder — give fio output files\n",
    ),
    (["import", "{imp}/text.log"], {}, 2, "Error: Missing option '--backend'.\n"),
    (
        ["import", "{imp}/undated.json", "--backend", "x", "--at", "yesterday"],
        {},
        2,
        (
            "Error: Invalid value for --at: 'yesterday' is not an ISO 8601 time "
            "(e.g. 2024-03-01T12:00:00Z)\n"
        ),
    ),
    # --repeat is declared once (cli.common.workload_options): one range for run and publish
    (
        ["run", "{job}/tiny.fio", "--dir", "{tmp}", "--repeat", "1001"],
        {},
        2,
        "Error: Invalid value for '--repeat': 1001 is not in the range 1<=x<=1000.\n",
    ),
    # -- issue 34: fiolake-gate.toml, refused whole before the lake is read
    *[
        (
            ["gate", "--lake", "{lake}", "--campaign", "c-bad-input", "--config", f"{{job}}/{f}"],
            {},
            2,
            f"Error: {{job}}/{f}{message}\n",
        )
        for f, message in (
            (
                "gate-syntax.toml",
                " is not valid TOML: Expected ']' at the end of a table "
                "declaration (at line 1, column 6) — fix the file",
            ),
            (
                "gate-key.toml",
                ": unknown key [gate] 'min_efect' — use metrics, min_effect, "
                "inconclusive, host_noise",
            ),
            ("gate-policy.toml", ': [gate] inconclusive = \'warn\' — use "pass" or "fail"'),
            (
                "gate-metrics.toml",
                ": [gate] metrics must be a non-empty list of metric names "
                '— e.g. metrics = ["iops", "clat_p99_ns"]',
            ),
            ("gate-array.toml", ": 'threshold' must be an array of tables — write [[threshold]]"),
            ("gate-threshold.toml", ": [[threshold]] 1: no min_effect — add e.g. min_effect = 0.1"),
            (
                "gate-effect.toml",
                ": [[threshold]] 1: min_effect = 10 is not a fraction between "
                "0 and 1 — write e.g. 0.1 for ±10 %",
            ),
        )
    ],  # fmt: skip
    (
        [
            "gate",
            "--lake",
            "{nights}",
            "--campaign",
            "c-after",
            "--baseline-campaign",
            "c-before",
            "--metric",
            "iops",
            "--config",
            "{job}/gate-backend.toml",
        ],
        {},
        2,
        "Error: {job}/gate-backend.toml: [[threshold]] 1 (nvmee/*/*/iops ±20%): backend "
        "'nvmee' is in no row of this gate — use one of nvme, or remove the threshold\n",
    ),  # fmt: skip
    (
        ["gate", "--lake", "{lake}", "--campaign", "c-bad-input", "--config", "{tmp}/no.toml"],
        {},
        2,
        "Error: --config {tmp}/no.toml: no such file — give the path of a fiolake-gate.toml "
        "(docs/ci.md shows one)\n",
    ),
    (
        ["gate", "accept", "--lake", "{lake}", "--campaign", "../x", "--reason", "r"],
        {},
        2,
        "Error: Invalid value for '--campaign': invalid campaign id '../x' — use letters, "
        "digits, '.', '_' or '-' (at most 128, starting with a letter or digit)\n",
    ),
    (
        ["gate", "accept", "--lake", "{lake}", "--campaign", "nope", "--reason", "new fw"],
        {},
        2,
        no_runs("campaign", "nope", "campaign_id"),
    ),
    (
        ["gate", "accept", "--lake", "{lake}", "--campaign", "c-bad-input", "--reason", " "],
        {},
        2,
        "Error: --reason must say why the change is intended in 1 to 2000 characters — e.g. "
        "--reason 'firmware 2.1: write cache off on purpose'\n",
    ),
    (
        ["gate", "accept", "--lake", "{lake}", "--campaign", "c-bad-input"],
        {},
        2,
        "Error: Missing option '--reason'.\n",
    ),
    (
        ["publish", "random-reads", "--backend", "x", "--repeat", "1001"],
        {},
        2,
        "Error: Invalid value for '--repeat': 1001 is not in the range 1<=x<=1000.\n",
    ),
]


@pytest.fixture(scope="module")
def lake_with_a_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad-input-lake")
    (root / "tiny.fio").write_text(TINY)
    result = CliRunner().invoke(
        cli,
        ["run", str(root / "tiny.fio"), "--dir", str(root), "--lake", str(root / "lake"),
         "--campaign", "c-bad-input"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return root / "lake"


# Loop devices the cases name (tests.runner.loopdev.devices_in_every_state); a case naming
# one is skipped where loop devices cannot be made, and checks the device's bytes.
DEVICES = ("loop", "ext4", "mounted", "parted", "held", "rodev")


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake of two campaigns (`c-before`, `c-after`) of one job on nvme: a gate has rows."""
    root = tmp_path_factory.mktemp("nights") / "lake"
    store = lakegen.local_store(root)
    for day, campaign in enumerate(("c-before", "c-after")):
        for rep in range(3):
            lakegen.write_run(
                store, run_id=f"{campaign}-r{rep}", job_id=f"{campaign}-j{rep}",
                campaign=campaign, started_at=lakegen.T0 + timedelta(days=day, minutes=rep),
                metrics={("job1", "read"): {"iops": 1000.0 + rep}},
            )  # fmt: skip
    return root


@pytest.fixture(scope="module")
def loops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The loop devices of the `{loop}`, `{ext4}` … cases ({} where they can't be made)."""
    if not can_loop():
        yield {}
        return
    with devices_in_every_state(tmp_path_factory.mktemp("loops")) as made:
        yield made


@pytest.fixture
def places(tmp_path: Path, lake_with_a_run: Path, loops: dict[str, Path], nights: Path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for name, text in JOBS.items():
        (jobs / name).write_text(text)
    imports = tmp_path / "imports"
    imports.mkdir()
    for name, text in IMPORTS.items():
        (imports / name).write_text(text, errors="surrogateescape")
    file = tmp_path / "a-file"
    file.write_text("not a directory\n")
    link = tmp_path / "a-link"
    link.symlink_to(file)
    LocalSigner.generate(tmp_path / "key")  # and key.pub, a key a runner may trust
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    # root ignores modes: an immutable directory is read-only even for root.
    immutable = (
        os.geteuid() == 0
        and subprocess.run(["chattr", "+i", str(ro)], capture_output=True).returncode == 0
    )
    corrupt = tmp_path / "corrupt"
    shutil.copytree(lake_with_a_run, corrupt)
    for parquet in (corrupt / "results").rglob("*.parquet"):
        parquet.write_bytes(b"PAR1 this is not parquet PAR1")
    (runs_file,) = (lake_with_a_run / "results" / "runs").rglob("*.parquet")
    # Facts of this machine that the messages name: where tmp_path is mounted (read as
    # --dir reads it), and EPERM for root's immutable directory, EACCES for anyone else.
    mount = mount_info(tmp_path)
    yield {"tmp": tmp_path, "job": jobs, "imp": imports, "file": file, "link": link, "ro": ro,
           "pub": public_key_path(tmp_path / "key"),
           "lake": lake_with_a_run, "nights": nights, **loops,
           "corrupt": corrupt, "run": runs_file.stem,
           "date": runs_file.parent.name.removeprefix("date="),
           "where": f"mount point {mount.mount_point}, {mount.fs_type} on {mount.device}",
           "denied": os.strerror(errno.EPERM if immutable else errno.EACCES)}  # fmt: skip
    if immutable:
        subprocess.run(["chattr", "-i", str(ro)], check=False)
    ro.chmod(0o755)


def _fill(text: str, places: dict[str, Path | str]) -> str:
    for name, path in places.items():
        text = text.replace("{" + name + "}", str(path))
    return text


def _error(output: str) -> str:
    """The error the user reads: from the line that starts `Error: ` to the end (click's
    usage lines and the runner's target lines come before it)."""
    start = re.search(r"(?m)^Error: ", output)
    assert start is not None, output
    return output[start.start() :]


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# A case whose PATH is `{fio328}` runs with fio 3.28 first on PATH (tests/fio_versions.py
# builds it, in the background from collection on).
FIO_328 = "{fio328}"


def _param(case: tuple[list[str], dict[str, str], int, str]) -> Any:
    needs_fio = FIO_328 in case[1].get("PATH", "")
    return pytest.param(*case, marks=[pytest.mark.fio_versions] if needs_fio else [])


@pytest.mark.parametrize(
    ("args", "env", "code", "message"),
    [_param(c) for c in CASES],
    ids=[" ".join(c[0])[:60] for c in CASES],
)
def test_bad_input_is_a_clear_error(
    args: list[str], env: dict[str, str], code: int, message: str, places: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
) -> None:  # fmt: skip
    if FIO_328 in env.get("PATH", ""):
        bindir = places["tmp"] / "fio-3.28-bin"
        bindir.mkdir()
        (bindir / "fio").symlink_to(request.getfixturevalue("fio_builds")["3.28"])
        env = {**env, "PATH": f"{bindir}:{os.environ['PATH']}"}
    monkeypatch.chdir(places["tmp"])
    for var in ("FIOLAKE_LAKE", "FIOLAKE_S3_ENDPOINT", "FIOLAKE_SIGNER", "FIOLAKE_KEYRING",
                "FIOLAKE_CA_BUNDLE", "AWS_CA_BUNDLE"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, _fill(value, places))
    devices = [d for d in DEVICES if any("{" + d + "}" in a for a in args)]
    if any(d not in places for d in devices):
        pytest.skip(NEEDS)
    checksums = {d: sha256(places[d]) for d in devices}
    before = _listing(places["tmp"])
    result = CliRunner().invoke(cli, [_fill(a, places) for a in args])
    output = result.output
    assert "Traceback" not in output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == code, output
    assert _error(output) == _fill(message, places), output
    assert _listing(places["tmp"]) == before, "a refused command left files behind"
    assert {d: sha256(places[d]) for d in devices} == checksums, "a device was written"


# -- a command whose extra is not installed (`pip install fiolake` alone, or a partial
# install): the missing package, its extra, exit 2. Each case makes one package unimportable
# in a fresh interpreter (None in sys.modules: `import X` then raises ModuleNotFoundError as
# where X is not installed; in this process they are imported already), so the message is
# the same whatever the command imports first. tests/packaging/test_wheel.py installs the
# wheel without any extra for real.
WITHOUT = """
import sys
sys.modules[sys.argv[1]] = None
sys.argv = ["fiolake", *sys.argv[2:]]
from fiolake.cli import main
main()
"""
ANALYSIS = "from fiolake's analysis extra — pip install 'fiolake[analysis]'\n"
# (the package missing, args, the whole error)
MISSING_EXTRA_CASES: list[tuple[str, list[str], str]] = [
    ("duckdb", ["compare", "--lake", "{tmp}"], "Error: fiolake compare needs duckdb, " + ANALYSIS),
    (
        "duckdb",
        ["sql", "SELECT 1", "--lake", "{tmp}"],
        "Error: fiolake sql needs duckdb, " + ANALYSIS,
    ),
    ("duckdb", ["trend", "--lake", "{tmp}"], "Error: fiolake trend needs duckdb, " + ANALYSIS),
    (
        "scipy",
        ["regressions", "--lake", "{tmp}"],
        "Error: fiolake regressions needs scipy, " + ANALYSIS,
    ),
    (
        "duckdb",
        ["env-diff", "--run", "a", "--run", "b", "--lake", "{tmp}"],
        "Error: fiolake env-diff needs duckdb, " + ANALYSIS,
    ),
    (
        "scipy",
        ["gate", "--lake", "{tmp}", "--campaign", "c"],
        "Error: fiolake gate needs scipy, " + ANALYSIS,
    ),
    (
        "duckdb_extension_httpfs",
        ["report", "--lake", "{tmp}", "--campaign", "c", "--out", "{tmp}/r.html"],
        "Error: fiolake report needs duckdb_extension_httpfs, " + ANALYSIS,
    ),
    (
        "deltalake",
        ["lake", "compact", "--lake", "{tmp}"],
        "Error: fiolake lake compact needs deltalake, " + ANALYSIS,
    ),
    (
        "streamlit",
        ["app", "--lake", "{tmp}"],
        "Error: fiolake app needs streamlit, from fiolake's app extra — "
        "pip install 'fiolake[app]'\n",
    ),
    (
        "duckdb",
        ["app", "--lake", "{tmp}"],
        "Error: fiolake app needs duckdb, " + ANALYSIS,
    ),
    (
        "minio",
        ["stack", "status"],
        "Error: fiolake stack needs minio, from fiolake's stack extra — "
        "pip install 'fiolake[stack]'\n",
    ),
]


@pytest.mark.parametrize(
    ("missing", "args", "message"),
    MISSING_EXTRA_CASES,
    ids=[f"{c[0]}: {' '.join(c[1])[:40]}" for c in MISSING_EXTRA_CASES],
)
def test_a_command_without_its_extra_names_what_to_install(
    missing: str, args: list[str], message: str, tmp_path: Path
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIOLAKE_")}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT, missing, *argv],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == message
    assert list(tmp_path.iterdir()) == [], "a refused command left files behind"


# -- property tests: the parsers give a value or a clean error, never another exception
@given(st.text())
def test_size_parser_never_crashes(text: str) -> None:
    try:
        assert parse_size(text) > 0
    except UsageProblem as exc:
        assert " — " in str(exc)


@given(st.text())
def test_duration_parser_never_crashes(text: str) -> None:
    for unit_required in (False, True):
        try:
            assert parse_duration(text, unit_required=unit_required) > 0
        except UsageProblem as exc:
            assert " — " in str(exc)


@given(st.text())
def test_id_parser_never_crashes(text: str) -> None:
    try:
        assert layout.check_id("campaign id", text) == text
    except ValueError as exc:
        assert " — " in str(exc)


@given(st.text(), st.sampled_from([IdParam("backend"), SizeParam(), DurationParam()]))
def test_cli_params_fail_cleanly(text: str, param: object) -> None:
    import click

    try:
        param.convert(text, None, None)  # type: ignore[attr-defined]
    except click.BadParameter as exc:
        assert " — " in exc.format_message()


# -- server-side bad input: a real stack answering no (credentials, Vault tokens, a missing
# bucket, another CA, a MinIO that answers 503). Each: the exit code, the exact message
# with how to fix it, no traceback, nothing written to the lake.
SERVER_JOB = "[n]\nioengine=null\nrw=read\nbs=4k\nsize=1M\n"
STATUS = ["status", "--recent", "3"]
PUBLISH = ["publish", "{tmp}/n.fio", "--backend", "bad-input"]
WRONG_KEYS = '— check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (for the local stack: eval "$(fiolake stack env)")'  # noqa: E501
BAD_TOKEN = (
    "Error: Vault refused to sign with transit key 'manifests': the token is invalid, "
    'expired or revoked — get a fresh VAULT_TOKEN (for the local stack: eval "$(fiolake '
    'stack env --role <role>)")'
)
RUNNER = ["runner", "--backend", "bad-input", "--dir", "{tmp}", "--runner-id", "refused"]
IMPORT = ["import", "{tmp}/fio.json", "--backend", "bad-input"]
# Stores that fail the store probe, each a proxy in front of the stack's MinIO
# (tests.stack.ignoring_proxy): its name in the table, what it does wrong.
STORES_THAT_FAIL = {
    "ignoring": Misbehaviour(),
    "ignoring_if_match": Misbehaviour(drop=frozenset({"if-match"})),
    "refusing": Misbehaviour(refuse=501),  # as Backblaze B2
    "racy": Misbehaviour(where="/race"),  # honoured one at a time only (SeaweedFS 4.16)
    # every If-Match refused, the current ETag too (ETags that do not round-trip)
    "refusing_if_match": Misbehaviour(drop=frozenset(), refuse_if_match=412),
}
IGNORING = {"FIOLAKE_S3_ENDPOINT": "{ignoring}"}
PROBE_FIX = (
    "fiolake cannot commit exactly once there; use a store that honours conditional writes "
    "(AWS S3, MinIO, Cloudflare R2, versitygw >= 1.1.0, Ceph RGW on RADOS, SeaweedFS >= 4.18) "
    "or a local directory lake (docs/stores.md)"
)
IGNORED = (
    "Error: s3://{bucket} at {ignoring} ignores If-None-Match (a second create returned 200) — "
    + PROBE_FIX
)
# (id, role, environment changes, args, exit code, the whole message)
SERVER_CASES: list[tuple[str, str, dict[str, str], list[str], int, str]] = [
    (
        "wrong secret key",
        "analyst",
        {"AWS_SECRET_ACCESS_KEY": "wrong"},
        STATUS,
        1,
        f"Error: {{endpoint}} refused the credentials (SignatureDoesNotMatch: wrong secret "
        f"key) {WRONG_KEYS}",
    ),
    (
        "wrong secret key, publish",
        "publisher",
        {"AWS_SECRET_ACCESS_KEY": "wrong"},
        PUBLISH,
        1,
        f"Error: {{endpoint}} refused the credentials (SignatureDoesNotMatch: wrong secret "
        f"key) {WRONG_KEYS}",
    ),
    (
        "unknown access key",
        "analyst",
        {"AWS_ACCESS_KEY_ID": "nobody-by-this-name"},
        STATUS,
        1,
        f"Error: {{endpoint}} refused the credentials (InvalidAccessKeyId: unknown access "
        f"key) {WRONG_KEYS}",
    ),
    (
        "missing bucket",
        "analyst",
        {"FIOLAKE_LAKE": "s3://no-such-bucket"},
        STATUS,
        1,
        "Error: access denied for jobs/by-backend/ on s3://no-such-bucket (AccessDenied) — "
        "check the credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY), their policy, and "
        "that bucket no-such-bucket exists",
    ),
    (
        "missing bucket, admin",
        "admin",
        {"FIOLAKE_LAKE": "s3://no-such-bucket"},
        STATUS,
        1,
        "Error: bucket no-such-bucket does not exist at {endpoint} — check the lake URL "
        "(FIOLAKE_LAKE/--lake), or create the bucket",
    ),
    (
        "wrong CA",
        "analyst",
        {"FIOLAKE_CA_BUNDLE": "{other_ca}"},
        STATUS,
        1,
        "Error: TLS verification of {endpoint} failed (self-signed certificate in certificate "
        "chain) — point FIOLAKE_CA_BUNDLE at the CA that signed the server's certificate",
    ),
    ("expired Vault token", "publisher", {"VAULT_TOKEN": "{expired}"}, PUBLISH, 1, BAD_TOKEN),
    ("revoked Vault token", "publisher", {"VAULT_TOKEN": "{revoked}"}, PUBLISH, 1, BAD_TOKEN),
    ("unknown Vault token", "publisher", {"VAULT_TOKEN": "s.not-a-token"}, PUBLISH, 1, BAD_TOKEN),
    # A store that ignores If-None-Match (tests.stack.ignoring_proxy): every writer refuses
    # it before its first write; the probe's scratch keys are gone again.
    ("ignored If-None-Match, publish", "publisher", IGNORING, PUBLISH, 2, IGNORED),
    ("ignored If-None-Match, runner", "runner", IGNORING, RUNNER, 2, IGNORED),
    ("ignored If-None-Match, import", "importer", IGNORING, IMPORT, 2, IGNORED),
    ("ignored If-None-Match, compact", "compactor", IGNORING, ["lake", "compact"], 2, IGNORED),
    (
        "ignored If-None-Match, prune",
        "compactor",
        IGNORING,
        ["lake", "prune", "--keep-timeseries", "90d"],
        2,
        IGNORED,
    ),  # fmt: skip
    (
        "ignored If-None-Match, gate accept",
        "publisher",
        IGNORING,
        ["gate", "accept", "--campaign", "c-x", "--reason", "r"],
        2,
        IGNORED,
    ),  # fmt: skip
    (
        "ignored If-None-Match, lake check --store",
        "admin",
        IGNORING,
        ["lake", "check", "--store", "--recheck"],
        2,
        IGNORED,
    ),  # fmt: skip
    ("ignored If-Match, publish", "publisher", {"FIOLAKE_S3_ENDPOINT": "{ignoring_if_match}"},
     PUBLISH, 2, "Error: s3://{bucket} at {ignoring_if_match} ignores If-Match (a write with a "
     "stale ETag returned 200) — " + PROBE_FIX),
    ("current If-Match refused, import", "importer",
     {"FIOLAKE_S3_ENDPOINT": "{refusing_if_match}"}, IMPORT, 2, "Error: s3://{bucket} at "
     "{refusing_if_match} refuses If-Match (a write with the current ETag returned 412 "
     "PreconditionFailed) — " + PROBE_FIX),
    ("If-None-Match refused (501), import", "importer", {"FIOLAKE_S3_ENDPOINT": "{refusing}"},
     IMPORT, 2, "Error: s3://{bucket} at {refusing} refuses If-None-Match (a create with "
     "If-None-Match: * returned 501 NotImplemented) — " + PROBE_FIX),
    ("If-None-Match ignored under concurrency, runner", "runner",
     {"FIOLAKE_S3_ENDPOINT": "{racy}"}, RUNNER, 2, "Error: s3://{bucket} at {racy} ignores "
     "If-None-Match under concurrency (8 of 8 parallel creates of one key returned 2xx) — "
     + PROBE_FIX),
]  # fmt: skip


@pytest.fixture(scope="module")
def server_places(stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:  # noqa: ANN001
    """Another CA, Vault tokens of the publisher's policy (one expired, one revoked), and
    stores that ignore If-None-Match / If-Match (MinIO behind tests.stack.ignoring_proxy)."""
    import time

    import hvac

    from fiolake.stack.bootstrap_tls import ensure_bootstrap_tls

    root = hvac.Client(url=stack.vault_addr, token=stack.root_token, verify=str(stack.vault_cacert))
    expired = root.auth.token.create(policies=["publisher"], ttl="1s")["auth"]["client_token"]
    revoked = root.auth.token.create(policies=["publisher"], ttl="1h")["auth"]["client_token"]
    root.auth.token.revoke(revoked)
    other_ca = ensure_bootstrap_tls(tmp_path_factory.mktemp("other-ca"), ["127.0.0.1"])[0]
    time.sleep(2)  # the 1 s token is past its TTL
    places = {"endpoint": stack.endpoint, "other_ca": str(other_ca), "expired": expired,
              "revoked": revoked, "bucket": stack.bucket}  # fmt: skip
    with ExitStack() as proxies:
        for name, how in STORES_THAT_FAIL.items():
            places[name] = proxies.enter_context(in_front_of(stack, how))
        yield places


def _lake_keys(stack) -> set[str]:  # noqa: ANN001
    from fiolake.store import S3Store

    return set(S3Store(stack.bucket, "", stack.s3_settings("admin")).list(""))


def _server_run(stack, role: str, changes: dict[str, str], args: list[str], tmp: Path):  # noqa: ANN001, ANN202
    (tmp / "n.fio").write_text(SERVER_JOB)
    (tmp / "fio.json").write_text(GOOD_FIO)
    env = {**stack.environ(role), "FIOLAKE_KEYRING": str(tmp / "keyring.json"), **changes}
    return CliRunner().invoke(cli, [a.replace("{tmp}", str(tmp)) for a in args], env=env)


@pytest.mark.stack
@pytest.mark.parametrize(
    ("role", "changes", "args", "code", "message"),
    [c[1:] for c in SERVER_CASES],
    ids=[c[0] for c in SERVER_CASES],
)
def test_server_side_bad_input_is_a_clear_error(
    stack, server_places: dict[str, str], tmp_path: Path, role: str, changes: dict[str, str],
    args: list[str], code: int, message: str,
) -> None:  # noqa: ANN001  # fmt: skip
    changes = {k: v.format(**server_places) for k, v in changes.items()}
    before = _lake_keys(stack)
    result = _server_run(stack, role, changes, args, tmp_path)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    # From `Error: ` on: exit 2 shows the command's usage line first, as click does.
    assert (result.exit_code, _error(result.stderr)) == (
        code, message.format(**server_places) + "\n"
    )  # fmt: skip
    assert _lake_keys(stack) == before  # nothing half-written


@pytest.mark.stack
@pytest.mark.slow
# It failed twice on 2026-11-27 (the end of a serial session, then in the `alone` phase):
# after the 503s, TLS handshakes and requests through the proxy stalled ~10 s each (an
# EOF, a 51 s store probe) and the job was not committed within 120 s. The proxy then
# re-encrypted what it forwarded, one SSL socket read and written from two threads; it now
# passes those connections through untouched (tests/faults/proxy.py), and the probe took
# 1.1 s, the commit 11 s after the 503s stopped — beside a four-worker `make test`. So it
# runs in the main phase again, where its minute of waiting costs no wall time (it was a
# quarter of the `alone` phase: 63 of 257 s).
def test_minio_answering_503_for_a_minute(stack, tmp_path: Path) -> None:  # noqa: ANN001
    """The CLI fails fast with a clear message; a runner waits and recovers."""
    import sys
    import time
    from datetime import timedelta
    from urllib.parse import urlsplit

    from fiolake.campaigns import plan_campaign, publish_manifests
    from fiolake.commits import Commit
    from fiolake.config import Settings
    from fiolake.store import S3Store
    from tests.faults.proxy import UnavailableProxy

    minio_port = urlsplit(stack.endpoint).port
    proxy = UnavailableProxy(minio_port, tmp_path / "proxy-tls")
    both = tmp_path / "cas.pem"  # the proxy's CA (its 503s), the stack's (MinIO through it, Vault)
    both.write_text(Path(proxy.ca).read_text() + Path(stack.ca_bundle).read_text())
    via = {"FIOLAKE_S3_ENDPOINT": proxy.endpoint, "FIOLAKE_CA_BUNDLE": str(both)}
    backend = "unavailable"
    manifests = plan_campaign(
        [("n", SERVER_JOB)], [backend], campaign_id="c-503", repeat=1, runtime_s=None,
        size_bytes=None, bucket=stack.bucket, expires_in=timedelta(hours=1),
    )  # fmt: skip
    publisher = Settings.from_env(stack.environ("publisher"))
    publish_manifests(publisher.store(), manifests, publisher.signer())
    proxy.unavailable.set()
    try:
        started = time.monotonic()
        res = _server_run(stack, "analyst", via, STATUS, tmp_path)
        failed_in = time.monotonic() - started
        assert (res.exit_code, res.stderr) == (
            1,
            f"Error: jobs/by-backend/: {proxy.endpoint} answered 503 (ServiceUnavailable) — "
            "the object store is down or overloaded: try again in a minute (runners wait "
            "and retry on their own)\n",
        )
        assert failed_in < 20, f"the CLI took {failed_in:.0f} s to give up"

        env = {**os.environ, **stack.environ("runner"), **via}
        env["FIOLAKE_KEYRING"] = str(tmp_path / "keyring.json")
        (tmp_path / "target").mkdir()
        argv = [str(Path(sys.executable).with_name("fiolake")), "runner", "--backend", backend,
                "--dir", str(tmp_path / "target"), "--spool-dir", str(tmp_path / "spool"),
                "--poll", "1", "--runner-id", "patient"]  # fmt: skip
        admin = S3Store(stack.bucket, "", stack.s3_settings("admin"))
        job_id = layout.parse_job_key(manifests[0].key)[1]
        with open(tmp_path / "runner.log", "wb") as log:
            runner = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
        try:
            time.sleep(60)
            assert runner.poll() is None, (tmp_path / "runner.log").read_text()
            refused = proxy.refused
            proxy.unavailable.clear()
            # Other tests of the session's stack may leave jobs every runner sees (the
            # first key layout had no backend): wait for this job's commit, not a count.
            deadline = time.monotonic() + 120
            while admin.head(layout.commit_key(job_id)) is None and time.monotonic() < deadline:
                assert runner.poll() is None, (tmp_path / "runner.log").read_text()
                time.sleep(1)
            runner.terminate()
            assert runner.wait(60) == 0, (tmp_path / "runner.log").read_text()
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
    finally:
        proxy.close()
    assert refused > 10  # the runner kept asking through the minute
    log_text = (tmp_path / "runner.log").read_text()
    assert "store unavailable, retrying: " in log_text and "answered 503" in log_text
    commit = Commit.from_bytes(admin.get(layout.commit_key(job_id))[0])
    assert (commit.runner, commit.status) == ("patient", "ok")
