"""fio's per-second logs (`<prefix>_<type>.<N>.log`) → rows of the lake table `timeseries`.

docs/fio-output.md §2: N is fio's 1-based thread number in job-file order (clones of
a job follow it); a window without I/O has no row, so gaps are zero-filled; bw/iops logs
usually lack the final partial window while lat logs get a final flush row.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fiolake.runner.fio_output import (
    DIRECTIONS,
    FioReport,
    io_directions,
    is_grouped,
    json_option,
    version_tuple,
)

LOG_TYPES = ("bw", "iops", "lat", "clat", "slat")
_ALL_TYPES = (*LOG_TYPES, "clat_hist")
_COLUMN = {"bw": "bw_bytes", "iops": "iops", "lat": "lat_mean_ns", "clat": "clat_mean_ns",
           "slat": "slat_mean_ns"}  # fmt: skip


def log_files(log_dir: Path, prefix: str = "fio") -> list[Path]:
    """Every fio log file for this prefix, per-job or not, compressed or not, sorted."""
    directory, pattern = _pattern(log_dir, prefix)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and pattern.match(p.name))


def _pattern(log_dir: Path, prefix: str) -> tuple[Path, re.Pattern[str]]:
    # A prefix may hold a path (fio resolves it against its cwd, the log dir).
    where = Path(prefix)
    types = "|".join(_ALL_TYPES)
    pattern = re.compile(rf"^{re.escape(where.name)}_({types})(?:\.(\d+))?\.log(\.fz)?$")
    return log_dir / where.parent, pattern


@dataclass
class _Cell:
    values: dict[str, int] = field(default_factory=dict)
    lat_parts: dict[str, list[int]] = field(default_factory=dict)


def timeseries_rows(
    log_dir: Path, *, run_id: str, report: FioReport, prefix: str = "fio"
) -> list[dict]:
    """One row per thread × direction × second; gaps zero-filled, the last window partial."""
    _, pattern = _pattern(log_dir, prefix)
    per_thread: dict[int, dict[str, Path]] = {}
    for path in log_files(log_dir, prefix):
        match = pattern.match(path.name)
        if match and match[1] in LOG_TYPES and match[2] and not match[3]:
            per_thread.setdefault(int(match[2]), {})[match[1]] = path
    if not per_thread:
        return []
    ddir_col = _ddir_column(report)
    owners = thread_owners(report)
    rows = []
    for thread in sorted(per_thread):
        cells = _read_thread(per_thread[thread], ddir_col)
        index = owners.get(thread)
        job = report.jobs[index] if index is not None else {}
        rows += _thread_rows(report, run_id, thread, index, job, cells)
    return rows


def thread_owners(report: FioReport) -> dict[int, int]:
    """Thread number N → index into jobs[]: one thread per entry, numjobs per grouped entry.

    A group_reporting group that spans several job sections is counted by its reported
    numjobs only (fio does not say which sections it folded); stats=0 jobs are not handled.
    """
    owners: dict[int, int] = {}
    thread = 1
    for index, job in enumerate(report.jobs):
        count = 1
        if is_grouped(report, job):
            try:
                count = max(1, int(json_option(report, job, "numjobs") or 1))
            except ValueError:
                count = 1
        for _ in range(count):
            owners[thread] = index
            thread += 1
    return owners


def _ddir_column(report: FioReport) -> int:
    # 3.37+ with log_window_value=both writes time, mean, max, ddir, …
    version = version_tuple(report)
    both = any(
        (json_option(report, job, "log_window_value") or "").strip().lower() in ("both", "2")
        for job in report.jobs
    )
    return 3 if both and version is not None and version >= (3, 37) else 2


def _read_thread(paths: Mapping[str, Path], ddir_col: int) -> dict[tuple[str, int], _Cell]:
    cells: dict[tuple[str, int], _Cell] = {}
    for log_type, path in paths.items():
        for t_ms, value, direction in _read_log(path, ddir_col):
            # Round half up: fio stamps windows at 999/1000/1001 ms and drifts slowly later.
            second = max(1, (t_ms + 500) // 1000)
            cell = cells.setdefault((direction, second), _Cell())
            if log_type in ("bw", "iops"):
                # Windows are ≥ 1 s apart, so a second holds at most one; keep the first.
                cell.values.setdefault(log_type, value * 1024 if log_type == "bw" else value)
            else:
                # A lat log's final flush can land in the same second as the last window.
                cell.lat_parts.setdefault(log_type, []).append(value)
    return cells


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


def _thread_rows(
    report: FioReport,
    run_id: str,
    thread: int,
    index: int | None,
    job: Mapping[str, Any],
    cells: dict[tuple[str, int], _Cell],
) -> list[dict]:
    logged_dirs = {direction for direction, _ in cells}
    fill_dirs = set(io_directions(report, job)) if job else set()
    if job and is_grouped(report, job):
        # A group may fold sections with different rw=; fill only what this thread logged.
        fill_dirs &= logged_dirs
    last = max([_runtime_seconds(report, job)] + [second for _, second in cells])
    rows = []
    for direction in DIRECTIONS:
        if direction in fill_dirs:
            seconds = range(1, last + 1)
        else:
            seconds = sorted(s for d, s in cells if d == direction)
        for second in seconds:
            rows.append(
                _row(run_id, job, index, thread, direction, second, cells.get((direction, second)),
                     partial=second == last)
            )  # fmt: skip
    return rows


def _runtime_seconds(report: FioReport, job: Mapping[str, Any]) -> int:
    runtimes = [
        int(job[d].get("runtime") or 0)
        for d in (*DIRECTIONS, "mixed")
        if isinstance(job.get(d), dict)
    ]
    if job and not is_grouped(report, job):  # a group's job_runtime is a sum over threads
        runtimes.append(int(job.get("job_runtime") or 0))
    return (max(runtimes, default=0) + 500) // 1000


def _row(
    run_id: str,
    job: Mapping[str, Any],
    index: int | None,
    thread: int,
    direction: str,
    second: int,
    cell: _Cell | None,
    *,
    partial: bool,
) -> dict:
    row: dict[str, Any] = {
        "run_id": run_id,
        "job_name": job.get("jobname"),
        "job_index": index,
        "thread": thread,
        "direction": direction,
        "second": second,
        **{column: None for column in _COLUMN.values()},
        "zero_filled": False,
        "partial": partial,
    }
    if cell is None:
        if not partial:  # fio writes no row for a window without I/O
            row.update(bw_bytes=0, iops=0, zero_filled=True)
        # The final partial window is often just not logged: unknown, so null.
        return row
    for log_type, value in cell.values.items():
        row[_COLUMN[log_type]] = value
    for log_type, parts in cell.lat_parts.items():
        row[_COLUMN[log_type]] = round(sum(parts) / len(parts))
    return row
