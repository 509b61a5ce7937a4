"""fio's per-second logs (`<prefix>_<type>.<N>.log`) → rows of the lake table `timeseries`.

docs/fio-output.md §2. N is fio's 1-based thread number (runner.report.threads). Windows
end at fio's own time stamps; a window in which a direction did no I/O has no bw row, so
it is zero-filled. fio never logs the bytes moved after its last bandwidth sample (the
final window, or most of it): that window's bytes and I/Os are what the report's totals
hold beyond the logged windows (`from_totals`), so Σ io_bytes per series = fio's io_bytes.
Per-second completion-latency percentiles come from the histogram log (`clat_hist`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fiolake.fio_bins import bin_percentiles, hist_bins
from fiolake.runner.report.document import (
    DIRECTIONS,
    FioReport,
    implied_directions,
    io_directions,
    is_grouped,
    json_option,
    version_tuple,
)
from fiolake.runner.report.threads import FioThread, Section, fio_threads, thread_owners
from fiolake.schema import SECOND_PERCENTILES

__all__ = ["LOG_TYPES", "is_log_name", "log_files", "thread_owners", "timeseries_rows"]

LOG_TYPES = ("bw", "iops", "lat", "clat", "slat")
_ALL_TYPES = (*LOG_TYPES, "clat_hist")
_LAT_COLUMN = {"lat": "lat_mean_ns", "clat": "clat_mean_ns", "slat": "slat_mean_ns"}
# A tail shorter than this after fio's last stamp is the job's end, not another window.
_END_SLACK_MS = 10
# fio stamps a window when the first sample after its end arrives, a few ms off the grid:
# a window within this of log_avg_msec is a full one.
_STAMP_JITTER_MS = 10
_HIST_META = 3  # time, ddir, bs before the buckets


def log_files(log_dir: Path, prefix: str = "fio") -> list[Path]:
    """Every fio log file for this prefix, per-job or not, compressed or not, sorted."""
    directory, pattern = _pattern(log_dir, prefix)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and pattern.match(p.name))


def is_log_name(name: str) -> bool:
    """Whether a file name is one fio gives its per-second logs (`<prefix>_bw.1.log`,
    `_iops`, `_lat`, `_clat`, `_slat`, `_clat_hist`; `.N` absent with per_job_logs=0,
    `.fz` when compressed), whatever the prefix."""
    return _name_pattern(".+").match(name) is not None


def _name_pattern(prefix: str) -> re.Pattern[str]:
    types = "|".join(_ALL_TYPES)
    return re.compile(rf"^{prefix}_({types})(?:\.(\d+))?\.log(\.fz)?$", re.DOTALL)


def _pattern(log_dir: Path, prefix: str) -> tuple[Path, re.Pattern[str]]:
    # A prefix may hold a path (fio resolves it against its cwd, the log dir).
    where = Path(prefix)
    return log_dir / where.parent, _name_pattern(re.escape(where.name))


@dataclass
class _Window:
    second: int
    end_ms: int
    window_ms: int = 0
    bw_kib: int | None = None  # as logged (KiB/s)
    iops: int | None = None
    io_bytes: int | None = None
    ios: int | None = None
    from_totals: bool = False
    lat: dict[str, list[int]] = field(default_factory=dict)
    hist: dict[int, int] = field(default_factory=dict)


@dataclass
class _Series:
    """One thread × direction: its windows by second."""

    thread: FioThread
    direction: str
    windows: dict[int, _Window] = field(default_factory=dict)
    tail: list[int] = field(default_factory=list)  # seconds after fio's last bw stamp

    def window(self, second: int) -> _Window:
        return self.windows.setdefault(second, _Window(second, 0))


def timeseries_rows(
    log_dir: Path,
    *,
    run_id: str,
    report: FioReport,
    prefix: str = "fio",
    sections: Sequence[Section] | None = None,
) -> list[dict]:
    """One row per thread × direction × window (second); see the module docstring.

    `sections` (the job file fio ran, as (name, options) pairs) names each thread's own
    section under group_reporting; without it threads are mapped from the report alone.
    """
    _, pattern = _pattern(log_dir, prefix)
    per_thread: dict[int, dict[str, Path]] = {}
    for path in log_files(log_dir, prefix):
        match = pattern.match(path.name)
        if match and match[2] and not match[3]:
            per_thread.setdefault(int(match[2]), {})[match[1]] = path
    if not per_thread:
        return []
    threads = {t.number: t for t in fio_threads(report, sections)}
    avg_ms = _log_msec(report, "log_avg_msec")
    hist_ms = _log_msec(report, "log_hist_msec")
    ddir_col = _ddir_column(report)
    all_series: list[_Series] = []
    for number in sorted(per_thread):
        thread = threads.get(number) or FioThread(number, None, {}, None)
        all_series += _thread_series(report, thread, per_thread[number], ddir_col, avg_ms, hist_ms)
    _fill_from_totals(report, all_series)
    rows = []
    for series in all_series:
        seconds = sorted(series.windows)
        rows += [
            _row(run_id, report, series, series.windows[s], avg_ms, last=s == seconds[-1])
            for s in seconds
        ]
    return rows


def _log_msec(report: FioReport, name: str) -> int:
    values = {v for job in report.jobs if (v := json_option(report, job, name)) is not None}
    try:
        return max(1, int(values.pop())) if len(values) == 1 else 1000
    except ValueError:
        return 1000


def _ddir_column(report: FioReport) -> int:
    # 3.37+ with log_window_value=both writes time, mean, max, ddir, …
    version = version_tuple(report)
    both = any(
        (json_option(report, job, "log_window_value") or "").strip().lower() in ("both", "2")
        for job in report.jobs
    )
    return 3 if both and version is not None and version >= (3, 37) else 2


def _read_log(path: Path, ddir_col: int) -> list[tuple[int, int, str]]:
    """(time_ms, value, direction) per line; malformed or truncated lines are skipped."""
    out = []
    with path.open(encoding="ascii", errors="replace") as fh:
        for line in fh:
            fields = [f.strip() for f in line.split(",")]
            if len(fields) <= ddir_col:
                continue
            try:
                t_ms = int(fields[0])
                value = int(float(fields[1]))
                ddir = int(fields[ddir_col])
            except ValueError:
                continue
            if 0 <= ddir < len(DIRECTIONS):
                out.append((t_ms, value, DIRECTIONS[ddir]))
    return out


def _read_hist(path: Path) -> list[tuple[int, str, dict[int, int]]]:
    """(time_ms, direction, {bucket ns: count}) per histogram-log line."""
    out = []
    with path.open(encoding="ascii", errors="replace") as fh:
        for line in fh:
            try:
                fields = [int(f) for f in line.split(",")]
            except ValueError:
                continue  # a truncated last line
            if len(fields) <= _HIST_META or not 0 <= fields[1] < len(DIRECTIONS):
                continue
            counts = fields[_HIST_META:]
            coarseness = max(0, (1856 // len(counts)).bit_length() - 1) if counts else 0
            out.append((fields[0], DIRECTIONS[fields[1]], hist_bins(counts, coarseness)))
    return out


def _second(t_ms: int, window_ms: int) -> int:
    # fio stamps a window when the first sample after its end arrives (999, 1000, 2003…).
    return max(1, (t_ms + window_ms // 2) // window_ms)


def _thread_series(
    report: FioReport,
    thread: FioThread,
    paths: Mapping[str, Path],
    ddir_col: int,
    avg_ms: int,
    hist_ms: int,
) -> list[_Series]:
    job = report.jobs[thread.entry] if thread.entry is not None else {}
    by_dir: dict[str, _Series] = {}

    def series(direction: str) -> _Series:
        return by_dir.setdefault(direction, _Series(thread, direction))

    for log_type in ("bw", "iops"):
        if log_type in paths:
            for t_ms, value, direction in _read_log(paths[log_type], ddir_col):
                w = series(direction).window(_second(t_ms, avg_ms))
                if log_type == "bw" and w.bw_kib is None:
                    w.bw_kib, w.end_ms = value, t_ms
                elif log_type == "iops" and w.iops is None:
                    w.iops = value
    for log_type in _LAT_COLUMN:
        if log_type in paths:
            # A lat log's final flush can land in the same second as the last window.
            for t_ms, value, direction in _read_log(paths[log_type], ddir_col):
                w = series(direction).window(_second(t_ms, avg_ms))
                w.lat.setdefault(log_type, []).append(value)
    if "clat_hist" in paths:
        for t_ms, direction, bins in _read_hist(paths["clat_hist"]):
            w = series(direction).window(_second(t_ms, hist_ms))
            for value, count in bins.items():
                w.hist[value] = w.hist.get(value, 0) + count
    fill = set(io_directions(report, job)) if job else set()
    if thread.options:
        fill &= set(implied_directions(thread.options.get("rw") or thread.options.get("readwrite")))
    elif job and is_grouped(report, job):
        fill &= set(by_dir)  # a group may fold sections with different rw=
    end_ms = _runtime_ms(report, job)
    for direction in sorted(set(by_dir) | fill, key=DIRECTIONS.index):
        _frame(series(direction), end_ms, avg_ms, zero_fill=direction in fill)
    return [by_dir[d] for d in DIRECTIONS if d in by_dir]


def _frame(series: _Series, end_ms: int, avg_ms: int, *, zero_fill: bool) -> None:
    """Give every window its end, length and bytes; add the zero-filled and tail windows."""
    logged = [s for s, w in series.windows.items() if w.bw_kib is not None]
    last_stamp = max((series.windows[s].end_ms for s in logged), default=0)
    last_logged = max(logged, default=0)
    last = max(series.windows, default=0)
    if end_ms - last_stamp > _END_SLACK_MS:
        last = max(last, -(-(end_ms - _END_SLACK_MS) // avg_ms))
    if zero_fill:
        for second in range(1, last + 1):
            series.window(second)
    previous_end = 0
    for second in sorted(series.windows):
        w = series.windows[second]
        if w.bw_kib is None:
            w.end_ms = end_ms if second == last and second > last_logged else second * avg_ms
        start = previous_end if second - 1 in series.windows else (second - 1) * avg_ms
        start = max(start, 0)
        w.window_ms = max(0, w.end_ms - start)
        previous_end = w.end_ms
        if w.bw_kib is not None:
            w.io_bytes = round(w.bw_kib * 1024 * w.window_ms / 1000)
            w.ios = round((w.iops or 0) * w.window_ms / 1000)
        elif second > last_logged and end_ms - last_stamp > _END_SLACK_MS:
            series.tail.append(second)
        elif zero_fill:
            w.io_bytes, w.ios = 0, 0


def _runtime_ms(report: FioReport, job: Mapping[str, Any]) -> int:
    runtimes = [
        int(job[d].get("runtime") or 0)
        for d in (*DIRECTIONS, "mixed")
        if isinstance(job.get(d), dict)
    ]
    if job and not is_grouped(report, job):  # a group's job_runtime is a sum over threads
        runtimes.append(int(job.get("job_runtime") or 0))
    return max(runtimes, default=0)


def _fill_from_totals(report: FioReport, all_series: list[_Series]) -> None:
    """Give the tail windows (after fio's last bw stamp) what the totals hold beyond the
    logged windows: per jobs[] entry × direction, shared over its threads by logged bytes."""
    groups: dict[tuple[int, str], list[_Series]] = {}
    for series in all_series:
        if series.thread.entry is not None:
            groups.setdefault((series.thread.entry, series.direction), []).append(series)
    for (entry, direction), members in groups.items():
        section = report.jobs[entry].get(direction)
        if not isinstance(section, dict):
            continue
        for key, column in (("io_bytes", "io_bytes"), ("total_ios", "ios")):
            total = section.get(key)
            if total is None and key == "io_bytes" and section.get("io_kbytes") is not None:
                total = int(section["io_kbytes"]) * 1024
            if total is not None:
                _share(members, int(total), column)
    for series in all_series:
        for second in series.tail:
            w = series.windows[second]
            w.io_bytes, w.ios = w.io_bytes or 0, w.ios or 0
            w.from_totals = w.io_bytes > 0 or w.ios > 0


def _share(members: list[_Series], total: int, column: str) -> None:
    logged = {
        id(s): sum(getattr(w, column) or 0 for w in s.windows.values() if w.bw_kib is not None)
        for s in members
    }
    rest = max(0, total - sum(logged.values()))
    # fio logs whole KiB/s and whole IOPS: each logged window may be up to one unit short.
    unit = 1024 if column == "io_bytes" else 1
    slack = sum(unit * w.window_ms / 1000 for s in members for w in s.windows.values() if w.bw_kib)
    if rest <= slack:
        rest = 0
    takers = [s for s in members if s.tail]
    weights = [logged[id(s)] or 1 for s in takers]
    for i, series in enumerate(takers):
        share = rest if i == len(takers) - 1 else rest * weights[i] // sum(weights)
        rest -= share
        # fio does not log what moved after its last bandwidth sample (usually the last
        # window; more when closing files takes long): spread it evenly over that time.
        weight = sum(series.windows[second].window_ms for second in series.tail) or 1
        left = share
        for second in series.tail:
            w = series.windows[second]
            part = left if second == series.tail[-1] else share * w.window_ms // weight
            left -= part
            setattr(w, column, (getattr(w, column) or 0) + part)


def _row(
    run_id: str, report: FioReport, series: _Series, w: _Window, avg_ms: int, *, last: bool
) -> dict:
    thread = series.thread
    job = report.jobs[thread.entry] if thread.entry is not None else {}
    per_s = (
        (lambda n: None if n is None else round(n * 1000 / w.window_ms))
        if w.window_ms
        else (lambda n: None)
    )
    logged = w.bw_kib is not None
    row: dict[str, Any] = {
        "run_id": run_id,
        "job_name": thread.section if thread.section is not None else job.get("jobname"),
        "job_index": thread.entry,
        "thread": thread.number,
        "direction": series.direction,
        "second": w.second,
        "bw_bytes": w.bw_kib * 1024 if w.bw_kib is not None else per_s(w.io_bytes),
        "iops": w.iops if w.iops is not None else (None if logged else per_s(w.ios)),
        **{column: None for column in _LAT_COLUMN.values()},
        "zero_filled": not logged and not w.from_totals and w.io_bytes == 0,
        # Only the job's end cuts a window short. Inside a series a short window is one
        # fio stamped after a late one (a loaded host: seen 975 ms after 1,025 ms).
        "partial": last and w.window_ms < avg_ms - _STAMP_JITTER_MS,
        "window_ms": w.window_ms,
        "io_bytes": w.io_bytes,
        "ios": w.ios,
        "from_totals": w.from_totals,
        "clat_samples": sum(w.hist.values()) if w.hist else None,
    }
    for log_type, parts in w.lat.items():
        row[_LAT_COLUMN[log_type]] = round(sum(parts) / len(parts))
    values = bin_percentiles(w.hist, SECOND_PERCENTILES.values()) if w.hist else []
    for i, column in enumerate(SECOND_PERCENTILES):
        row[column] = values[i] if values else None
    return row
