"""What fiolake knows about fio's job options: the allowlist, aliases, deny reasons, units.

A static table built at development time from fio 3.33 (`fio --cmdhelp=<name>`,
`fio --enghelp=<engine>`), with the options fio 3.36 and 3.42 added judged by the same
rules (NEWER_FIO_OPTIONS, and the deny list). Which of them the host's fio has is asked of
that fio (runner.policy.hostfio). fio option names are case-sensitive, so the tables are too.
"""

from __future__ import annotations

import re

from fiolake.units import size_or_none

# fio's aliases (and those fio 3.36/3.42 added): one table, the workload reads it too.
from fiolake.workload import ALIASES, NEWER_FIO_ALIASES  # noqa: F401

ENGINES = ("psync", "sync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap", "null")
RW_VALUES = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw")
TRIM_RW = ("trim", "randtrim", "trimwrite", "randtrimwrite")
# No shm/shmhuge: a SysV segment outlives a fio killed by the watchdog.
MEM_VALUES = ("malloc", "mmap", "mmapshared")
ZONEMODES = ("none", "strided")

# Safe options of fio releases newer than the one the table was built from (3.36 and 3.42,
# from their `--cmdhelp`): allowed; on an older fio the host check refuses them naming the
# release that has them (runner.policy.hostfio.FIRST_FIO). The other new options are
# denied below or stay off the allowlist (engines and devices fiolake does not drive:
# NVMe data placement and protection information, zoned devices, io_uring_cmd, ramp_size).
NEWER_FIO_OPTIONS: dict[str, str] = {
    "random_sequence_stride": "stride of a repeating random offset sequence (in no fio up to 3.42)",
    "steadystate_check_interval": "polling interval of the steadystate check (fio ≥ 3.36)",
    "thinkcycles": "spin this many CPU cycles between I/Os (fio ≥ 3.42)",
    "end_syncfs": "syncfs the target's file system when the job ends (fio ≥ 3.42)",
    "verify_header_seed": "check the seed in verify headers (fio ≥ 3.42)",
    "verify_write_sequence": "check the write sequence number in verify headers (fio ≥ 3.42)",
    "verify_pattern_interval": "re-create verify_pattern every N bytes (fio ≥ 3.42)",
    "libaio_vectored": "engine option (libaio): preadv/pwritev instead of pread/pwrite "
    "(fio ≥ 3.42)",
}

# option -> one-line note. Values of the options marked "(checked)" are inspected by the policy.
ALLOWED: dict[str, str] = {
    # what the workload does
    "rw": "I/O pattern: read, write, randread, randwrite, rw/readwrite, randrw (checked; trims "
    "only on a device target)",
    "rw_sequencer": "how offsets advance in sequential/random mixes",
    "rwmixread": "percentage of a mixed workload that is reads",
    "rwmixwrite": "percentage of a mixed workload that is writes",
    "percentage_random": "share of random I/O in a mixed sequential/random workload",
    "bs": "block size, optionally per direction: read,write,trim (checked)",
    "bsrange": "block size range, e.g. 4k-64k (checked)",
    "bssplit": "weighted mix of block sizes, e.g. 4k/50:64k/50 (checked)",
    "ba": "block offset alignment",
    "bs_unaligned": "allow block sizes that are not sector multiples",
    "number_ios": "stop after this many I/Os",
    "loops": "repeat the workload this many times (runtime still bounds it)",
    "numjobs": "parallel clones of this job (checked, capped)",
    "thread": "run clones as threads instead of processes",
    # where the data lives (inside the runner's target dir)
    "size": "bytes per job, absolute (checked, capped; no percentages)",
    "filesize": "size of each file, or a range such as 4k-64k (checked, capped)",
    "io_size": "bytes of I/O to do (checked, capped)",
    "nrfiles": "files per job (checked, capped)",
    "openfiles": "files kept open at the same time",
    "file_service_type": "how the next file is picked: random, roundrobin, sequential, ...",
    "filename": "a plain file name inside the target dir (checked: no '/', ':', '..' or '-')",
    "offset": "start offset in the file (checked; counts toward the size caps)",
    "offset_increment": "extra offset per numjobs clone (checked; counts toward the size caps)",
    "offset_align": "alignment of a percentage offset",
    "fallocate": "how files are preallocated when laid out",
    "create_serialize": "lay out files one job at a time",
    "create_fsync": "fsync files after laying them out",
    "create_on_open": "create files when they are first opened",
    "create_only": "only lay out files, do no I/O",
    "file_append": "start I/O at the end of the file",
    "overwrite": "lay out files fully before writing over them",
    "pre_read": "read files into the page cache before the run",
    "unlink": "delete the job's files when it ends",
    "unlink_each_loop": "delete the job's files after each loop",
    # how the I/O is issued
    "ioengine": "one of " + ", ".join(ENGINES) + " (checked)",
    "iodepth": "I/Os in flight per job (checked, capped)",
    "iodepth_batch": "I/Os submitted at once",
    "iodepth_batch_complete_min": "minimum I/Os reaped at once",
    "iodepth_batch_complete_max": "maximum I/Os reaped at once",
    "iodepth_low": "low-water mark for refilling the queue",
    "direct": "O_DIRECT: bypass the page cache",
    "buffered": "inverse of direct",
    "sync": "O_SYNC / O_DSYNC writes",
    "fsync": "fsync every N writes",
    "fdatasync": "fdatasync every N writes",
    "end_fsync": "fsync when the job ends",
    "fsync_on_close": "fsync when a file is closed",
    "sync_file_range": "call sync_file_range every N writes",
    "fadvise_hint": "posix_fadvise hint for the access pattern",
    "invalidate": "drop the files' page cache before the run",
    "mem": "I/O buffer memory: " + ", ".join(MEM_VALUES) + " (checked; no file paths)",
    "hipri": "engine option (io_uring, pvsync2): polled completions",
    "fixedbufs": "engine option (io_uring): pre-registered buffers",
    "registerfiles": "engine option (io_uring): pre-registered files",
    "sqthread_poll": "engine option (io_uring): kernel submission thread",
    "nonvectored": "engine option (io_uring): non-vectored read/write commands",
    "userspace_reap": "engine option (libaio): reap completions in user space",
    "cpus_allowed": "CPUs fio may run on (only narrows fio's own affinity)",
    "cpus_allowed_policy": "how clones share cpus_allowed: shared or split",
    # how long it runs
    "runtime": "seconds to run; time suffixes us/ms/s/m/h/d (checked, capped, always set)",
    "time_based": "keep running for runtime even when size is done",
    "ramp_time": "warm-up before measuring (checked, capped)",
    # randomness
    "random_distribution": "random, zipf:θ, pareto:h, normal:%, zoned:…",
    "random_generator": "tausworthe, lfsr or tausworthe64",
    "norandommap": "allow random offsets to repeat",
    "randrepeat": "repeatable random sequence",
    "randseed": "seed for the random sequence",
    "allrandrepeat": "repeatable randomness everywhere",
    # pacing
    "rate": "bandwidth limit per job",
    "rate_min": "minimum bandwidth, or the job fails",
    "rate_iops": "IOPS limit per job",
    "rate_iops_min": "minimum IOPS, or the job fails",
    "rate_process": "how rate-limited I/O is spaced: linear or poisson",
    "io_submit_mode": "inline or offload (a helper thread submits I/O at the set rate) (checked)",
    "rate_cycle": "averaging window for rate_min",
    "rate_ignore_thinktime": "rate limits ignore thinktime",
    "thinktime": "pause after I/Os (microseconds by default)",
    "thinktime_spin": "busy-spin part of thinktime",
    "thinktime_blocks": "I/Os between thinktime pauses",
    "thinktime_blocks_type": "count thinktime_blocks per complete or issue",
    "thinktime_iotime": "run I/O this long between thinktime pauses",
    "latency_target": "find the highest queue depth that meets this latency",
    "latency_window": "window for latency_target",
    "latency_percentile": "percentile of I/Os that must meet latency_target",
    "latency_run": "keep adjusting the depth after latency_target is met",
    "max_latency": "fail the job when an I/O takes longer than this",
    # buffer contents
    "zero_buffers": "fill buffers with zeros",
    "refill_buffers": "new random contents for every write",
    "scramble_buffers": "lightly scramble buffer contents",
    "buffer_pattern": 'fill buffers with a "string" or 0x hex pattern (checked; no files)',
    "buffer_compress_percentage": "make buffers this compressible",
    "buffer_compress_chunk": "granularity of buffer_compress_percentage",
    "dedupe_percentage": "share of writes that repeat earlier buffers",
    "dedupe_mode": "how dedupe buffers are generated",
    "dedupe_working_set_percentage": "working set for dedupe_mode=working_set",
    "dedupe_global": "deduplicate across jobs",
    # verification (state files are not allowed)
    "verify": "checksum type written and checked",
    "do_verify": "run the verify phase after writing",
    "verify_interval": "bytes per verify header",
    "verify_offset": "where the verify header sits in a block",
    "verify_pattern": 'verify with a "string" or 0x hex pattern (checked; no files)',
    "verify_fatal": "stop at the first verify error",
    "verify_dump": "dump mismatching blocks into the private output dir",
    "verify_async": "verify in this many helper threads",
    "verify_backlog": "verify after this many writes",
    "verify_backlog_batch": "blocks verified per backlog pass",
    "verify_only": "only verify data written earlier",
    "experimental_verify": "verify by replaying the I/O pattern",
    # reporting
    "description": "free text shown in the results",
    "name": "job name shown in the results (checked: no '/' or ':'); the section name if unset",
    "stonewall": "wait for earlier jobs to finish; starts a new group",
    "new_group": "start a new reporting group (jobs still run in parallel)",
    "group_reporting": "report clones and group members together",
    "stats": "must stay 1 (checked)",
    "unified_rw_reporting": "report reads and writes together",
    "percentile_list": "latency percentiles to report, e.g. 50:99:99.9",
    "clat_percentiles": "report completion-latency percentiles",
    "lat_percentiles": "report total-latency percentiles",
    "slat_percentiles": "report submission-latency percentiles",
    "gtod_reduce": "fewer clock reads (drops latency figures)",
    "disable_lat": "do not measure total latency",
    "disable_clat": "do not measure completion latency",
    "disable_slat": "do not measure submission latency",
    "disable_bw_measurement": "do not measure bandwidth",
    "disk_util": "report disk utilisation",
    "steadystate": "end the job early once a metric is steady",
    "steadystate_duration": "window for steadystate",
    "steadystate_ramp_time": "warm-up before steadystate is judged",
    "zonemode": "none or strided (checked; zbd is refused)",
    "zonesize": "strided zone mode: bytes done per zone",
    "zonerange": "strided zone mode: size of a zone",
    "zoneskip": "strided zone mode: bytes skipped between zones",
    "exitall": "stop every job when one finishes",
}
ALLOWED.update(NEWER_FIO_OPTIONS)

# Options fio 3.36 and 3.42 added that stay off the allowlist (so refused as not allowed):
# devices and engines fiolake does not drive, and a warm-up the duration check cannot bound.
NEWER_FIO_OFF_ALLOWLIST: dict[str, str] = {
    "fdp": "NVMe flexible data placement (io_uring_cmd, xnvme)",
    "dataplacement": "NVMe data placement interface (io_uring_cmd, xnvme)",
    "plids": "NVMe data placement ids (io_uring_cmd, xnvme)",
    "plid_select": "NVMe data placement id strategy (io_uring_cmd, xnvme)",
    "cmd_type": "io_uring_cmd command type",
    "md_per_io_size": "NVMe metadata buffer (io_uring_cmd)",
    "pi_act": "NVMe protection information (io_uring_cmd)",
    "pi_chk": "NVMe protection information (io_uring_cmd)",
    "apptag": "NVMe protection information (io_uring_cmd)",
    "apptag_mask": "NVMe protection information (io_uring_cmd)",
    "readfua": "NVMe force unit access (io_uring_cmd)",
    "writefua": "NVMe force unit access (io_uring_cmd)",
    "write_mode": "NVMe write uncorrectable or zeroes commands (io_uring_cmd)",
    "verify_mode": "NVMe compare commands for verification (io_uring_cmd)",
    "deac": "NVMe deallocate on write zeroes (io_uring_cmd)",
    "job_start_clock_id": "job_start in fio's JSON from a clock other than wall time",
    "recover_zbd_write_error": "zoned block devices (zonemode=zbd is refused)",
    "write_zone_remainder": "zoned block devices (zonemode=zbd is refused)",
    "sprandom": "SSD preconditioning over the whole file: fiolake's precondition does that",
    "ramp_size": "a warm-up by bytes, which the runtime cap cannot bound",
}

_LOGS = "the runner writes the logs into its private output dir"
_TRACE = "replays a trace that names its own files and devices"
_PRIO = "sets I/O priority (the real-time class starves other work)"
_TRIM = "trims (discards) data"

# canonical name -> why it is refused (the message adds "; not allowed")
DENIED: dict[str, str] = {
    "exec_prerun": "runs a shell command",
    "exec_postrun": "runs a shell command",
    "include": "reads other files",
    "directory": "the runner sets the target directory",
    "opendir": "adds every file under a directory",
    "filename_format": "names files by a template that can hold paths",
    "write_bw_log": _LOGS,
    "write_lat_log": _LOGS,
    "write_iops_log": _LOGS,
    "write_hist_log": _LOGS,
    "per_job_logs": _LOGS,
    "bwavgtime": _LOGS,
    "iopsavgtime": _LOGS,
    "write_iolog": "writes a trace file",
    "read_iolog": _TRACE,
    "read_iolog_chunked": _TRACE,
    "merge_blktrace_file": _TRACE,
    "merge_blktrace_scalars": _TRACE,
    "merge_blktrace_iters": _TRACE,
    "uid": "changes the user fio runs as",
    "gid": "changes the group fio runs as",
    "prio": _PRIO,
    "prioclass": _PRIO,
    "cmdprio": _PRIO,
    "cmdprio_class": _PRIO,
    "cmdprio_percentage": _PRIO,
    "cmdprio_bssplit": _PRIO,
    "nice": "changes CPU priority",
    "ioscheduler": "switches the device's I/O scheduler through sysfs",
    "cgroup": "creates cgroups",
    "cgroup_nodelete": "creates cgroups",
    "cgroup_weight": "creates cgroups",
    "verify_state_save": "writes a state file (the runner turns it off)",
    "verify_state_load": "reads a state file",
    "allow_mounted_write": "lets fio write to mounted devices",
    "allow_file_create": "the runner sets it",
    "fill_device": "writes until the file system is full",
    "lockmem": "pins memory",
    "kb_base": "changes how fio reads size suffixes (fiolake reads them fio's default way)",
    "profile": "runs a built-in profile with options of its own",
    "trim_percentage": _TRIM,
    "trim_verify_zero": _TRIM,
    "trim_backlog": _TRIM,
    "trim_backlog_batch": _TRIM,
    "sqthread_poll_cpu": "pins a kernel thread to a CPU",
    # options of fio 3.36 and 3.42
    "priohint": _PRIO,
    "comm": "renames fio's job processes (they would no longer show as fio)",
    "dp_scheme": "reads a placement scheme file",
    "filetype": "tells fio what its files are instead of fio looking (the runner decides)",
    "num_range": _TRIM,
}
_DENIED_PREFIXES = (("log_", _LOGS), ("replay_", _TRACE), ("cmdprio", _PRIO), ("trim_", _TRIM))

# fio command-line options that have no business in a job file
CLI_ONLY = frozenset(
    "output output-format bandwidth-log minimal append-terse terse-version version help "
    "cmdhelp enghelp showcmd eta eta-interval eta-newline status-interval readonly section "
    "alloc-size warnings-fatal max-jobs server daemonize client remote-config trigger "
    "trigger-file trigger-timeout trigger-remote aux-path idle-prof inflate-log crctest "
    "parse-only merge-blktrace-only debug".split()
)


def canonical_name(key: str) -> str:
    """The main name of an option written as `key` (aliases resolved)."""
    return ALIASES.get(key, key)


def deny_reason(name: str) -> str | None:
    """Why a canonical option name is refused by name, or None if it is not a known hazard."""
    if name in DENIED:
        return DENIED[name]
    for prefix, reason in _DENIED_PREFIXES:
        if name.startswith(prefix):
            return reason
    return None


def parse_size_range(text: str) -> tuple[int, int] | None:
    """'4k-64k' or '4k:64k' or '16k' -> (low, high) in bytes; None if not a size range."""
    parts = re.split(r"[-:]", text.strip(), maxsplit=1)
    values = [size_or_none(p) for p in parts]
    if any(v is None for v in values):
        return None
    low, high = values[0], values[-1]
    assert low is not None and high is not None
    return (min(low, high), max(low, high))


def fio_size(value: str) -> int | None:
    """The size fio 3.33 uses for a size/io_size value: the last of '-' or ',' separated
    values (size=4k-2M lays out a 2 MiB file: tried); None if any part is not a size."""
    parts = [p for p in re.split(r"[-,]", value.strip())]
    values = [size_or_none(p) for p in parts]
    if not parts or any(v is None for v in values):
        return None
    return values[-1]


def block_sizes(name: str, value: str) -> list[int] | None:
    """Every block size a bs/bsrange/bssplit value names (in bytes); None if unparseable.

    fio 3.33 reads bs=4k-1M as bs=4k,1M (reads 4 KiB, writes 1 MiB: tried), not a range.
    """
    sizes: list[int] = []
    split = r"[,-]" if name == "bs" else ","
    for direction in re.split(split, value):
        direction = direction.strip()
        if not direction:
            continue  # an empty slot keeps fio's value for that direction
        if name == "bs":
            found = size_or_none(direction)
            if found is None:
                return None
            sizes.append(found)
        elif name == "bsrange":
            found_range = parse_size_range(direction)
            if found_range is None:
                return None
            sizes.extend(found_range)
        else:  # bssplit: size/percent[:size/percent...]
            for entry in direction.split(":"):
                found = size_or_none(entry.split("/", 1)[0])
                if found is None:
                    return None
                sizes.append(found)
    return sizes
