"""Per-option checks and caps of the job-file policy (used by runner.policy.check).

Each check gets one option occurrence as the user wrote it and returns the reason it is
refused, so every message can point at the section, the option and the value.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from fiolake.runner.policy.blocktarget import refused_on_device
from fiolake.runner.policy.jobfile import JobFile, Occurrence
from fiolake.runner.policy.options import (
    ALIASES,
    ALLOWED,
    CLI_ONLY,
    ENGINES,
    MEM_VALUES,
    RW_VALUES,
    TRIM_RW,
    ZONEMODES,
    block_sizes,
    deny_reason,
    fio_size,
    parse_size_range,
)
from fiolake.units import human_bytes, seconds_or_none, size_or_none


@dataclass(frozen=True)
class Caps:
    """Limits for a shared machine; every one can be raised with the flag in CAP_FLAGS."""

    max_size_bytes: int = 64 * 2**30  # per job (size/filesize/io_size, nrfiles × filesize)
    max_total_bytes: int = 256 * 2**30  # data per job × numjobs, summed over jobs
    max_numjobs: int = 64
    max_iodepth: int = 1024
    max_runtime_s: int = 3600  # also injected when a job has no runtime
    max_nrfiles: int = 100_000
    max_jobs: int = 64  # sections
    max_buffer_bytes: int = 4 * 2**30  # numjobs × iodepth × largest block size, per job


# Caps field -> the CLI flag that raises it (named in every cap message).
CAP_FLAGS: dict[str, str] = {
    "max_size_bytes": "--max-size",
    "max_total_bytes": "--max-total-size",
    "max_numjobs": "--max-numjobs",
    "max_iodepth": "--max-iodepth",
    "max_runtime_s": "--max-runtime",
    "max_nrfiles": "--max-nrfiles",
    "max_jobs": "--max-sections",
    "max_buffer_bytes": "--max-buffer-size",
}


SIZE_HELP = "not a size (a whole number with an optional k/m/g/t/p suffix, e.g. 256m)"
TIME_HELP = "not a duration (whole seconds, or a whole number with a us/ms/s/m/h/d suffix)"
PLAIN_NAME = "must be a plain file name inside the target dir (no '/', ':' or '..')"


def above(cap: int, field_name: str, unit: str = "") -> str:
    shown = human_bytes(cap) if unit == "bytes" else f"{cap}{unit}"
    return f"above the cap of {shown} (raise it with {CAP_FLAGS[field_name]})"


def _count(field_name: str) -> Callable[[str, Caps], str | None]:
    def check(value: str, caps: Caps) -> str | None:
        n = size_or_none(value)  # fio integers take the same suffixes as sizes
        if n is None:
            return "not a whole number"
        if n < 1:
            return "must be at least 1"
        cap = getattr(caps, field_name)
        return above(cap, field_name) if n > cap else None

    return check


def _bytes(value: str, caps: Caps) -> str | None:
    if "%" in value:
        return "must be an absolute size (a percentage depends on what is already there)"
    n = fio_size(value)  # what fio 3.33 really uses (size=4k-2M means 2M)
    if n is None:
        return SIZE_HELP
    if n < 1:
        return "must be more than 0"
    return (
        above(caps.max_size_bytes, "max_size_bytes", "bytes") if n > caps.max_size_bytes else None
    )


def _filesize(value: str, caps: Caps) -> str | None:
    found = parse_size_range(value)
    if found is None:
        return SIZE_HELP + " or a range such as 4k-64k"
    if found[0] < 1:
        return "must be more than 0"
    if found[1] > caps.max_size_bytes:
        return above(caps.max_size_bytes, "max_size_bytes", "bytes")
    return None


def _offset(value: str, caps: Caps) -> str | None:
    if value.endswith("%") and (p := size_or_none(value[:-1])) is not None and p <= 100:
        return None
    return None if size_or_none(value) is not None else SIZE_HELP + ", or a percentage"


def _duration(zero_ok: bool) -> Callable[[str, Caps], str | None]:
    def check(value: str, caps: Caps) -> str | None:
        seconds = seconds_or_none(value)
        if seconds is None:
            return TIME_HELP
        if seconds == 0 and not zero_ok:
            return "must be more than 0 (0 means no limit)"
        if seconds > caps.max_runtime_s:
            return above(caps.max_runtime_s, "max_runtime_s", " s")
        return None

    return check


def _ioengine(value: str, caps: Caps) -> str | None:
    if value in ENGINES:
        return None
    return f"engine {value} is not on the allowlist: {', '.join(ENGINES)}"


def _rw(value: str, caps: Caps) -> str | None:
    base = value.split(":", 1)[0].strip()
    if base in TRIM_RW:
        return "trims (discards) data; allowed only on a block-device target (--device)"
    return None if base in RW_VALUES else f"not a workload fio knows ({', '.join(RW_VALUES)})"


def _rw_on_device(value: str, caps: Caps) -> str | None:
    return None if value.split(":", 1)[0].strip() in TRIM_RW else _rw(value, caps)


def _filename(value: str, caps: Caps) -> str | None:
    if value == "-":
        return "must be a plain file name inside the target dir ('-' means stdin/stdout)"
    bad = not value or value == "." or any(s in value for s in ("/", ":", ".."))
    return PLAIN_NAME if bad else None


def _blocks(name: str) -> Callable[[str, Caps], str | None]:
    def check(value: str, caps: Caps) -> str | None:
        sizes = block_sizes(name, value)
        if sizes is None or any(s < 1 for s in sizes):
            return "not a block size (e.g. bs=4k, bsrange=4k-64k, bssplit=4k/50:64k/50)"
        return None

    return check


def _submit_mode(value: str, caps: Caps) -> str | None:
    return None if value in ("inline", "offload") else "not one of inline, offload"


def _mem(value: str, caps: Caps) -> str | None:
    if ":" in value:
        return "maps a file by path; not allowed"
    return None if value in MEM_VALUES else f"not one of {', '.join(MEM_VALUES)}"


def _stats(value: str, caps: Caps) -> str | None:
    return "hides the job from the results; not allowed" if value == "0" else None


def _zonemode(value: str, caps: Caps) -> str | None:
    if value == "zbd":
        return "resets zones on zoned block devices; not allowed"
    return None if value in ZONEMODES else f"not one of {', '.join(ZONEMODES)}"


def _pattern(value: str, caps: Caps) -> str | None:
    if "'" in value:
        return "a '...' pattern reads a file; use a \"string\" or a 0x hex pattern"
    return None


_VALUE_CHECKS: dict[str, Callable[[str, Caps], str | None]] = {
    "ioengine": _ioengine,
    "rw": _rw,
    "filename": _filename,
    "size": _bytes,
    "io_size": _bytes,
    "filesize": _filesize,
    "offset": _offset,
    "offset_increment": _offset,
    "numjobs": _count("max_numjobs"),
    "iodepth": _count("max_iodepth"),
    "nrfiles": _count("max_nrfiles"),
    "runtime": _duration(zero_ok=False),
    "ramp_time": _duration(zero_ok=True),
    "bs": _blocks("bs"),
    "bsrange": _blocks("bsrange"),
    "bssplit": _blocks("bssplit"),
    "mem": _mem,
    "io_submit_mode": _submit_mode,
    "stats": _stats,
    "zonemode": _zonemode,
    "buffer_pattern": _pattern,
    "verify_pattern": _pattern,
}


def occurrence_problem(occ: Occurrence, caps: Caps, *, block: bool = False) -> str | None:
    """Why one option as written is refused (None: allowed); `block`: on a device target."""
    where = f"[{occ.section}] {occ.key}"
    if occ.key.startswith("-") or occ.key in CLI_ONLY:
        return f"{where}: a command-line option; not allowed in job files"
    reason = deny_reason(occ.name)
    if reason:
        return f"{where}: {reason}; not allowed"
    if occ.name not in ALLOWED:
        known = list(ALLOWED) + [a for a, main in ALIASES.items() if main in ALLOWED]
        close = difflib.get_close_matches(occ.key, known, n=1, cutoff=0.8)
        hint = f"did you mean {close[0]}?" if close else "see `fiolake validate --list`"
        return f"{where}: not on the allowlist; not allowed ({hint})"
    if block and (on_device := refused_on_device(occ.name)):
        return f"{where}: {on_device}; not allowed"
    check = _VALUE_CHECKS.get(occ.name)
    if block and occ.name == "rw":
        check = _rw_on_device
    why = None if occ.tainted or check is None else check(occ.value, caps)
    return f"{where}={occ.value}: {why}" if why else None


def _size_of(options: dict[str, str], name: str) -> int:
    if name in ("size", "io_size"):
        return fio_size(options.get(name, "")) or 0
    return size_or_none(options.get(name, "")) or 0


def writes_nothing(options: dict[str, str]) -> bool:
    """ioengine=null lays out no files and moves no data: the size caps do not apply."""
    return options.get("ioengine") == "null"


def _job_data(options: dict[str, str], caps: Caps) -> tuple[int, bool]:
    """(bytes of files one clone of the job lays out, whether every input is within its cap)."""
    size = _size_of(options, "size")
    file_range = parse_size_range(options.get("filesize", "")) or (0, 0)
    nrfiles = _size_of(options, "nrfiles") or 1
    numjobs = _size_of(options, "numjobs") or 1
    data = nrfiles * file_range[1] if file_range[1] else size
    offset = options.get("offset", "")
    if offset.endswith("%"):
        start = data * (size_or_none(offset[:-1]) or 0) // 100
    else:
        start = size_or_none(offset) or 0
    start += _size_of(options, "offset_increment") * (numjobs - 1)
    within = max(size, file_range[1]) <= caps.max_size_bytes and nrfiles <= caps.max_nrfiles
    return data + start, within


def job_caps(job: JobFile, caps: Caps) -> list[str]:
    """Caps that depend on several options together, checked on the merged jobs."""
    problems = []
    if len(job.jobs) > caps.max_jobs:
        problems.append(
            f"[all jobs] {len(job.jobs)} job sections: {above(caps.max_jobs, 'max_jobs')}"
        )
    total = 0
    for section in job.jobs:
        opts = section.options
        data, within = _job_data(opts, caps)
        if writes_nothing(opts):
            data, within = 0, True
        numjobs = _size_of(opts, "numjobs") or 1
        # Values over their own cap are reported once; the sum counts only the others.
        counted = within and numjobs <= caps.max_numjobs and data <= caps.max_size_bytes
        if within and data > caps.max_size_bytes:
            problems.append(
                f"[{section.name}] data per job = {human_bytes(data)} (size, or nrfiles × "
                f"filesize, plus offsets): {above(caps.max_size_bytes, 'max_size_bytes', 'bytes')}"
            )
        iodepth = _size_of(opts, "iodepth") or 1
        total += data * numjobs if counted else 0
        largest = max(
            [4096]
            + [
                s
                for k in ("bs", "bsrange", "bssplit")
                for s in block_sizes(k, opts.get(k, "")) or []
            ]
        )
        buffers = numjobs * iodepth * largest
        if (
            numjobs <= caps.max_numjobs
            and iodepth <= caps.max_iodepth
            and (buffers > caps.max_buffer_bytes)
        ):
            problems.append(
                f"[{section.name}] I/O buffers = {human_bytes(buffers)} (numjobs × iodepth × "
                f"largest block size): {above(caps.max_buffer_bytes, 'max_buffer_bytes', 'bytes')}"
            )
    if total > caps.max_total_bytes:
        problems.append(
            f"[all jobs] data = {human_bytes(total)} (data per job × numjobs, summed over jobs): "
            f"{above(caps.max_total_bytes, 'max_total_bytes', 'bytes')}"
        )
    return problems


def layout_bytes(job: JobFile) -> int:
    """Bytes the job file's files take in the target dir: data per job × numjobs, summed.

    What the free-space check before a run compares with the file system's free bytes.
    """
    total = 0
    for section in job.jobs:
        data, _ = _job_data(section.options, Caps())
        total += data * (_size_of(section.options, "numjobs") or 1)
    return total
