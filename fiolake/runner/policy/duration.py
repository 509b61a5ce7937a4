"""How long a job must at least take, from what its options force on it.

The policy gives every job without a runtime the runtime cap, so fio always ends. A job
whose workload cannot be done within that cap (`rate=1`, `loops=100000000`, a long
`thinktime`) would be stopped by the cap and recorded as if it had done its work, so the
policy refuses it up front, naming the option. The estimate is a lower bound: rates and
think times are taken at face value, everything else as if the storage were faster than
any real device (FASTEST_BYTES_PER_S, FASTEST_IOPS), so a refused job surely could not
finish.
"""

from __future__ import annotations

import re

from fiolake.runner.policy.jobfile import JobFile, JobSection
from fiolake.runner.policy.options import block_sizes, parse_size_range
from fiolake.units import human_bytes, seconds_or_none, size_or_none

# Faster than any single device or job clone today: a bound, not a guess of real speed.
FASTEST_BYTES_PER_S = 64 * 2**30
FASTEST_IOPS = 10_000_000

_READS = {"read", "randread"}
_WRITES = {"write", "randwrite"}


def _directions(rw: str) -> list[int]:
    """Indexes (0 read, 1 write) of the directions a job's rw= does."""
    base = rw.split(":", 1)[0].strip() or "read"
    if base in _READS:
        return [0]
    if base in _WRITES:
        return [1]
    return [0, 1]


def _per_direction(value: str) -> list[int | None] | None:
    """fio's `a[,b[,c]]` per-direction values (one value = every direction); None if absent."""
    if not value.strip():
        return None
    parts = [p.strip() for p in value.split(",")]
    if len(parts) == 1:
        parts = parts * 3
    return [size_or_none(p) if p else None for p in (parts + ["", "", ""])[:3]]


def _limit(value: str, dirs: list[int]) -> int | None:
    """Combined per-second limit over the job's directions; None if any is unlimited."""
    found = _per_direction(value)
    if found is None or any(not found[d] for d in dirs):
        return None
    return sum(found[d] or 0 for d in dirs)


def _thinktime_s(value: str) -> float:
    # fio reads a bare thinktime in microseconds (unlike runtime, which is seconds).
    if re.fullmatch(r"\s*\d+\s*", value):
        return int(value) * 1e-6
    return seconds_or_none(value) or 0.0


def _count(opts: dict[str, str], name: str, default: int) -> int:
    return size_or_none(opts.get(name, "")) or default


def minimum_seconds(section: JobSection) -> tuple[float, str] | None:
    """(seconds the job needs at least, the option that forces it), or None if nothing does.

    Only for jobs that end when their work is done (not time_based).
    """
    opts = section.options
    if opts.get("time_based", "0") != "0":
        return None
    file_range = parse_size_range(opts.get("filesize", "")) or (0, 0)
    per_pass = (
        size_or_none(opts.get("io_size", ""))
        or size_or_none(opts.get("size", ""))
        or _count(opts, "nrfiles", 1) * file_range[1]
    )
    loops = _count(opts, "loops", 1)
    data = per_pass * loops
    sizes = [s for k in ("bs", "bsrange", "bssplit") for s in block_sizes(k, opts.get(k, "")) or []]
    largest_bs = max([4096, *sizes])
    ios = max(1, data // largest_bs)
    if "number_ios" in opts:
        ios = min(ios, _count(opts, "number_ios", ios))
        data = min(data, ios * largest_bs)
    dirs = _directions(opts.get("rw", "read"))
    loops_note = f"loops={opts['loops']}" if "loops" in opts else None
    candidates: list[tuple[float, str]] = [
        (data / FASTEST_BYTES_PER_S, loops_note or "size"),
        (ios / FASTEST_IOPS, loops_note or "size"),
    ]
    if (rate := _limit(opts.get("rate", ""), dirs)) is not None:
        candidates.append((data / rate, f"rate={opts['rate']}"))
    if (rate_iops := _limit(opts.get("rate_iops", ""), dirs)) is not None:
        candidates.append((ios / rate_iops, f"rate_iops={opts['rate_iops']}"))
    if "thinktime" in opts:
        think = _thinktime_s(opts["thinktime"])
        every = max(1, _count(opts, "thinktime_blocks", 1))
        candidates.append((ios / every * think, f"thinktime={opts['thinktime']}"))
    return max(candidates)


def too_long(job: JobFile, cap_s: float) -> list[str]:
    """Why each job without its own runtime could not finish within the runtime cap."""
    problems = []
    for section in job.jobs:
        if seconds_or_none(section.options.get("runtime", "")):
            continue  # the job file (or --runtime) chose when to stop
        found = minimum_seconds(section)
        if found is None or found[0] <= cap_s:
            continue
        seconds, option = found
        problems.append(
            f"[{section.name}] {option}: the workload needs at least {seconds:,.0f} s, above "
            f"the runtime cap of {cap_s:.0f} s that stops it, so it would be cut short "
            "(change that option, set runtime= in the job file, or raise --max-runtime)"
        )
    return problems


def what_bounds(section: JobSection, *, capped: bool, on_device: bool = False) -> str:
    """What ends a checked job, for `validate`: 'time-bound: 15 s', 'size-bound: 1.0 MiB',
    'size-bound: whole device', or both when the job file set a runtime that may come first.

    `capped`: the job's runtime is the policy's cap (it set none), so its size ends it.
    """
    opts = section.options
    seconds = (seconds_or_none(opts.get("runtime", "")) or 0) + (
        seconds_or_none(opts.get("ramp_time", "")) or 0
    )
    if opts.get("time_based", "0") != "0":
        return f"time-bound: {seconds:.0f} s"
    per_pass = size_or_none(opts.get("io_size", "")) or size_or_none(opts.get("size", ""))
    if per_pass is None and "filesize" not in opts:
        amount = "whole device" if on_device else "no size"
    else:
        loops = _count(opts, "loops", 1)
        file_range = parse_size_range(opts.get("filesize", "")) or (0, 0)
        total = (per_pass or _count(opts, "nrfiles", 1) * file_range[1]) * loops
        amount = human_bytes(total)
    if capped:
        return f"size-bound: {amount}"
    return f"size-bound: {amount}, or time-bound: {seconds:.0f} s if that comes first"
