"""Per-job summary of a run (the numbers fio users expect to see first), raw units."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# (key, label, results column, direction or None for per-job values, unit kind)
SUMMARY_METRICS: tuple[tuple[str, str, str, str | None, str], ...] = (
    ("read_io_bytes", "Total read IO", "io_bytes", "read", "bytes"),
    ("write_io_bytes", "Total write IO", "io_bytes", "write", "bytes"),
    ("read_bw_bytes", "Read bandwidth", "bw_bytes", "read", "rate"),
    ("write_bw_bytes", "Write bandwidth", "bw_bytes", "write", "rate"),
    ("read_iops", "Read IOPS", "iops", "read", "count"),
    ("write_iops", "Write IOPS", "iops", "write", "count"),
    ("read_slat_mean_ns", "Read submission latency", "slat_mean_ns", "read", "ns"),
    ("read_clat_mean_ns", "Read completion latency", "clat_mean_ns", "read", "ns"),
    ("read_lat_mean_ns", "Read total latency", "lat_mean_ns", "read", "ns"),
    ("write_slat_mean_ns", "Write submission latency", "slat_mean_ns", "write", "ns"),
    ("write_clat_mean_ns", "Write completion latency", "clat_mean_ns", "write", "ns"),
    ("write_lat_mean_ns", "Write total latency", "lat_mean_ns", "write", "ns"),
    ("job_runtime_ms", "Job runtime", "job_runtime_ms", None, "ms"),
    ("usr_cpu", "User CPU", "usr_cpu", None, "percent"),
    ("sys_cpu", "System CPU", "sys_cpu", None, "percent"),
    ("ctx", "Context switches", "ctx", None, "count"),
    ("read_clat_p99_ns", "Read p99 completion latency", "clat_p99_ns", "read", "ns"),
    ("read_clat_p999_ns", "Read p99.9 completion latency", "clat_p999_ns", "read", "ns"),
    ("write_clat_p99_ns", "Write p99 completion latency", "clat_p99_ns", "write", "ns"),
    ("write_clat_p999_ns", "Write p99.9 completion latency", "clat_p999_ns", "write", "ns"),
)


def job_summaries(result_rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Fold `results` rows (job × direction) into one dict per fio job (None = fio had no value)."""
    jobs: dict[int, dict[str, Any]] = {}
    for row in result_rows:
        summary = jobs.setdefault(
            row["job_index"],
            {"job_index": row["job_index"], "job_name": row["job_name"]}
            | {key: None for key, *_ in SUMMARY_METRICS},
        )
        for key, _label, column, direction, _kind in SUMMARY_METRICS:
            if direction is None or direction == row["direction"]:
                value = row.get(column)
                if value is not None:
                    summary[key] = value
    return [jobs[i] for i in sorted(jobs)]
