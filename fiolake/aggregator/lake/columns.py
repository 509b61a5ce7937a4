"""What the aggregator knows about lake columns: units (for display) and metric direction."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from fiolake import units

Formatter = Callable[[Any], str]

RATE_COLUMNS = {"bw_bytes", "bw_min_bytes", "bw_max_bytes", "bw_mean_bytes", "bw_stddev_bytes"}
COUNT_COLUMNS = {"iops", "iops_min", "iops_max", "iops_mean", "iops_stddev", "total_ios"}
# Metrics where a bigger number is better; every *_ns latency is lower-is-better.
# Everything else (latencies, CPU, context switches, spreads) is lower-is-better.
HIGHER_IS_BETTER = {
    "bw_bytes",
    "iops",
    "io_bytes",
    "total_ios",
    "bw_min_bytes",
    "bw_max_bytes",
    "bw_mean_bytes",
    "iops_min",
    "iops_max",
    "iops_mean",
}


def formatter_for(column: str) -> Formatter | None:
    """Human formatter for a column holding raw units, or None when it has no unit."""
    if column in RATE_COLUMNS:
        return units.human_rate
    if column.endswith("_ns"):
        return units.human_ns
    if column.endswith("_bytes"):
        return units.human_bytes
    if column.endswith("_ms"):
        return units.human_ms
    if column in COUNT_COLUMNS:
        return units.human_count
    if column in ("usr_cpu", "sys_cpu"):
        return units.human_percent
    return None


def formatters(columns: Iterable[str]) -> dict[str, Formatter]:
    """Formatters for every column of `columns` that has a unit."""
    found = {c: formatter_for(c) for c in columns}
    return {c: f for c, f in found.items() if f is not None}


def format_value(column: str, value: Any) -> str:
    """One value in human units (plain str() when the column has no unit)."""
    fmt = formatter_for(column)
    if fmt is not None:
        return fmt(value)
    return units.MISSING if value is None else str(value)


def higher_is_better(metric: str) -> bool:
    """Direction of a metric: True for throughput-like, False for latencies and the rest."""
    return metric in HIGHER_IS_BETTER


# The metrics a comparison asks of every case unless told otherwise (`compare`), and the
# ones compaction summarises night by night (`summaries`).
HEADLINE_METRICS = ("bw_bytes", "iops", "lat_mean_ns", "clat_p99_ns")

# Summed over a run's threads of one job (numjobs>1 without group_reporting gives one
# results row per thread); every other metric is averaged over them.
ADDITIVE = {"bw_bytes", "iops", "io_bytes", "total_ios"}
# Numeric columns of `results` that describe the job rather than measure it.
NOT_METRICS = {"job_index", "groupid", "iodepth", "numjobs", "job_error"}


def per_run_aggregate(metric: str) -> str:
    """SQL aggregate folding one run's threads of a job into one value of `metric`."""
    return f'{"sum" if metric in ADDITIVE else "avg"}(x."{metric}")'


def display_scale(column: str, largest: float | None) -> tuple[float, str]:
    """(divisor, unit) to plot a raw column in human units, chosen from its largest value."""
    big = abs(largest or 0.0)
    if column in RATE_COLUMNS:
        for divisor, unit in ((2.0**30, "GiB/s"), (2.0**20, "MiB/s"), (2.0**10, "KiB/s")):
            if big >= divisor:
                return divisor, unit
        return 1.0, "B/s"
    if column.endswith("_ns"):
        for divisor, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
            if big >= divisor:
                return divisor, unit
        return 1.0, "ns"
    if column.endswith("_bytes"):
        for divisor, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if big >= divisor:
                return divisor, unit
        return 1.0, "B"
    if column in COUNT_COLUMNS:
        return 1.0, "IOPS" if column.startswith("iops") else "I/Os"
    return 1.0, ""


def nines(percentile: float) -> float:
    """fio-plot's percentile axis: how many nines (p90 → 1, p99 → 2, p99.9 → 3)."""
    return -math.log10(1 - percentile / 100)


def ratio_text(metric: str, ratio: float | None, low: float | None, high: float | None) -> str:
    """`6.3× [5.1×, 7.8×]`; for ratios below 1 also `(96 % lower)`."""
    if ratio is None:
        return units.MISSING
    text = f"{ratio:.3g}×"
    if ratio < 1:
        text += f" ({(1 - ratio) * 100:.0f} % lower)"
    if low is not None and high is not None:
        text += f" [{low:.3g}×, {high:.3g}×]"
    return text


def p_text(value: float | None) -> str:
    """A p-value in two significant digits."""
    return units.MISSING if value is None else f"{value:.2g}"
