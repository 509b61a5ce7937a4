"""The workload: what fio does to the storage, apart from where and how the file was written.

Two runs ran the same workload when their jobs — [global] merged into each job, in file
order — agree option by option once each option is read the way fio reads it:

- aliases resolved (`readwrite` → `rw`, `blocksize` → `bs`, …: `ALIASES`, from
  `fio --cmdhelp`);
- sizes in bytes (`4k` = `4096`; per-direction `4k,8k`, ranges `4k-64k` and splits
  `4k/50:64k/50` token by token), times in ns with the option's own default unit
  (`runtime=1m` = `runtime=60`; `thinktime=10` is 10 µs), booleans as 0/1, a bare flag
  as 1;
- options set to fio's default dropped (`iodepth=1`, `ioengine=psync`, … `DEFAULTS`), so
  writing a default and leaving it out are the same workload;
- a `runtime` without `time_based` left out: it only caps a job bounded by its size
  (the runner adds one to every job; a run it cut short is flagged `cut-short`);
- where it runs left out (`directory=`, an absolute `filename=` — the device or a path
  fiolake chose —, `allow_file_create`), and so are the options that only decide what fio
  reports (logs, `group_reporting`, `name`, `description`: `NOT_WORKLOAD`);
- comments, option order and job names ignored (fiolake's canonical text and fio's JSON
  echo of the user's file give one identity).

The gang size (hosts that ran it at once against one backend) is part of it, as in
`fiolake.jobhash`: N hosts sharing a backend is another workload than one.

`workload_sha256` is what `compare`, `trend`, `regressions`, `gate` and the app pool by;
`fiolake.jobhash`'s effective job stays the exact text (for `envdiff`'s option diffs and
the saturation sweeps). Written by hand: no library reads fio job files the way fio does,
and the rules here are fio's (its `--cmdhelp` and HOWTO), not an ini dialect's.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from fiolake.units import seconds_or_none, size_or_none

# Every alias `fio --cmdhelp` reports (fio 3.33), alias -> main name.
ALIASES: dict[str, str] = {
    "readwrite": "rw",
    "blocksize": "bs",
    "blockalign": "ba",
    "blocksize_range": "bsrange",
    "blocksize_unaligned": "bs_unaligned",
    "iodepth_batch_submit": "iodepth_batch",
    "iodepth_batch_complete": "iodepth_batch_complete_min",
    "io_limit": "io_size",
    "fill_fs": "fill_device",
    "fileoffset": "offset",
    "nr_files": "nrfiles",
    "timeout": "runtime",
    "iomem": "mem",
    "ratemin": "rate_min",
    "ratecycle": "rate_cycle",
    "wait_for_previous": "stonewall",
    "disable_bw": "disable_bw_measurement",
    "ss": "steadystate",
    "ss_dur": "steadystate_duration",
    "ss_ramp": "steadystate_ramp_time",
}
# The aliases fio 3.36 and 3.42 added (their `--cmdhelp=NAME`); ALIASES holds them too.
NEWER_FIO_ALIASES: dict[str, str] = {
    "ss_interval": "steadystate_check_interval",
    "log_max_value": "log_window_value",
    "data_placement": "dataplacement",
    "fdp_pli": "plids",
    "fdp_pli_select": "plid_select",
}
ALIASES.update(NEWER_FIO_ALIASES)

# Where the workload runs, not what it is.
WHERE = frozenset({"directory", "allow_file_create", "filename_format"})
# What fio reports or logs, not what it does to the storage.
NOT_WORKLOAD = frozenset(
    {
        "name",
        "description",
        "group_reporting",
        "write_bw_log",
        "write_iops_log",
        "write_lat_log",
        "write_hist_log",
        "log_avg_msec",
        "log_hist_msec",
        "log_hist_coarseness",
        "log_max_value",
        "log_window_value",
        "log_offset",
        "log_compression",
        "log_store_compressed",
        "log_unix_epoch",
        "log_alternate_epoch",
        "per_job_logs",
        "verify_state_save",
        "percentile_list",
        "clat_percentiles",
        "lat_percentiles",
        "slat_percentiles",
        "significant_figures",
        "stats",
        "disk_util",
        "write_iolog",
    }
)
SIZE_OPTIONS = frozenset(
    {
        "bs",
        "bsrange",
        "bssplit",
        "ba",
        "size",
        "filesize",
        "io_size",
        "offset",
        "offset_increment",
        "offset_align",
        "rate",
        "rate_min",
        "fsync_on_close",
        "trim_backlog",
        "zonesize",
        "zonerange",
        "zoneskip",
        "file_append",
        "buffer_compress_chunk",
        "min_bs",
        "max_bs",
    }
)
# Time options whose bare number is seconds, and those whose bare number is microseconds.
SECONDS_OPTIONS = frozenset(
    {"runtime", "ramp_time", "startdelay", "steadystate_duration", "steadystate_ramp_time"}
)
MICROSECONDS_OPTIONS = frozenset(
    {"thinktime", "thinktime_spin", "latency_target", "latency_window", "max_latency"}
)
# fio's defaults (Linux), as normalised values: an option set to one is as good as unset.
DEFAULTS: dict[str, str] = {
    "rw": "read",
    "bs": "4096",
    "ioengine": "psync",
    "iodepth": "1",
    "numjobs": "1",
    "direct": "0",
    "buffered": "1",
    "time_based": "0",
    "ramp_time": "0",
    "startdelay": "0",
    "thread": "0",
    "loops": "1",
    "nrfiles": "1",
    "rwmixread": "50",
    "norandommap": "0",
    "randrepeat": "1",
    "fsync": "0",
    "fdatasync": "0",
    "end_fsync": "0",
    "sync": "0",
    "create_on_open": "0",
    "invalidate": "1",
    "thinktime": "0",
}
GANG_OPTION = "gang_size"
_TRUE, _FALSE = frozenset({"true", "yes", "on"}), frozenset({"false", "no", "off"})
_SIZE_TOKEN = re.compile(r"\d+[A-Za-z]*")


def _size_tokens(value: str) -> str:
    """Each size in `value` in bytes: `4k,8k` -> `4096,8192`, `4k/50:64k/50` keeps the
    percentages; a token that is not a size stays as written."""

    def bytes_of(m: re.Match[str]) -> str:
        found = size_or_none(m.group(0))
        return m.group(0) if found is None else str(found)

    return _SIZE_TOKEN.sub(bytes_of, value)


def _time_ns(value: str, bare_unit: str) -> str:
    text = value.strip()
    seconds = seconds_or_none(text + bare_unit if text.isdigit() else text)
    return value if seconds is None else str(round(seconds * 1e9))


def normalised_value(name: str, value: str) -> str:
    """`value` of option `name` (main name) the way fio reads it (see the module doc)."""
    text = value.strip()
    if text.lower() in _TRUE:
        return "1"
    if text.lower() in _FALSE:
        return "0"
    if name in SIZE_OPTIONS:
        return _size_tokens(text)
    if name in SECONDS_OPTIONS:
        return _time_ns(text, "s")
    if name in MICROSECONDS_OPTIONS:
        return _time_ns(text, "us")
    return text


def is_default(name: str, value: str) -> bool:
    default = DEFAULTS.get(name)
    return default is not None and normalised_value(name, default) == value


def _workload_option(name: str, value: str) -> bool:
    if name in WHERE or name in NOT_WORKLOAD:
        return False
    return not (name == "filename" and value.startswith("/"))


def _strip_comment(line: str) -> str:
    cut = min((i for i in (line.find(";"), line.find("#")) if i >= 0), default=len(line))
    return line[:cut].strip()


def merged_options(job_text: str, *, caps: bool = False) -> list[dict[str, tuple[str, str]]]:
    """Each job's workload options ([global] merged in, aliases resolved) as name ->
    (normalised value, value as written), in file order; with `caps`, a runtime that only
    caps the job too (`_bounds`)."""
    globals_: dict[str, tuple[str, str]] = {}
    jobs: list[dict[str, tuple[str, str]]] = []
    current: dict[str, tuple[str, str]] | None = None
    for raw in job_text.splitlines():
        line = _strip_comment(raw)
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            if line[1:-1].strip().startswith("global"):
                current = None
            else:
                current = dict(globals_)
                jobs.append(current)
            continue
        key, _, value = line.partition("=")
        name = ALIASES.get(key.strip(), key.strip())
        written = value.strip() if "=" in line else "1"
        target = globals_ if current is None else current
        target[name] = (normalised_value(name, written), written)
    return [
        {
            k: v
            for k, v in sorted(job.items())
            if _workload_option(k, v[0]) and (caps or _bounds(k, job))
        }
        for job in jobs
    ]


def _bounds(name: str, job: dict[str, tuple[str, str]]) -> bool:
    """False for a `runtime` that only caps a job bounded by its size (no time_based): the
    runner adds one to every job without it (its watchdog bound), and a run the cap did
    cut short is flagged `cut-short`, so the cap is not what the job does."""
    return name != "runtime" or job.get("time_based", ("0", ""))[0] == "1"


def workload_jobs(job_text: str) -> list[dict[str, str]]:
    """The jobs of a job file (canonical text, or one rebuilt from fio's JSON echo), each
    as its normalised workload options, in file order."""
    return [
        {k: v for k, (v, _) in job.items() if not is_default(k, v)}
        for job in merged_options(job_text)
    ]


def option_or_default(job: dict[str, tuple[str, str]], name: str) -> tuple[str, str]:
    """(normalised, as written) of option `name` in `job`; fio's default where unset."""
    if name in job:
        return job[name]
    default = DEFAULTS.get(name)
    if default is None:
        return ("", "(unset)")
    return (normalised_value(name, default), f"(default {default})")


def workload_differences(a: str, b: str, limit: int = 4) -> list[str]:
    """What differs between the workloads of two job texts, as written in each, e.g.
    `bs=4k vs 64k` (`job N:` in front when the files have several jobs); at most `limit`
    items plus a count of the rest."""
    left, right = merged_options(a), merged_options(b)
    items = [] if len(left) == len(right) else [f"jobs={len(left)} vs {len(right)}"]
    several = max(len(left), len(right)) > 1
    for number, (x, y) in enumerate(zip(left, right, strict=False)):
        for name in [*x, *(k for k in y if k not in x)]:
            here, there = option_or_default(x, name), option_or_default(y, name)
            if here[0] != there[0]:
                shown = f"{name}={here[1]} vs {there[1]}"
                items.append(f"job {number}: {shown}" if several else shown)
    if len(items) > limit:
        items = [*items[:limit], f"and {len(items) - limit} more"]
    return items


def workload_text(job_text: str, gang_size: int | None = None) -> str:
    """The workload as text: one `[job N]` section per job with its sorted options (plus
    the gang size when several hosts ran it together). Equal texts, equal workloads."""
    lines: list[str] = []
    for number, job in enumerate(workload_jobs(job_text)):
        lines.append(f"[job {number}]")
        lines += [f"{k}={v}" for k, v in job.items()]
    if gang_size is not None and gang_size > 1:
        lines += ["[fiolake]", f"{GANG_OPTION}={gang_size}"]
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=4096)
def workload_sha256(job_text: str | None, gang_size: int | None = None) -> str | None:
    """sha256 of `workload_text` (None without a job file). Cached: a lake holds few
    distinct job texts and many runs of each."""
    if job_text is None:
        return None
    return hashlib.sha256(workload_text(job_text, gang_size).encode()).hexdigest()
