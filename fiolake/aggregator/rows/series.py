"""Per-second series of chosen runs, and small lookups the app's pickers need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.lake.sqltext import with_values
from fiolake.errors import UsageProblem
from fiolake.schema import SECOND_PERCENTILES

SERIES_METRICS = ("bw_bytes", "iops", "lat_mean_ns", "clat_mean_ns", "slat_mean_ns")
# Per-second completion-latency percentiles (fio's histogram log, when the lake has them).
PERCENTILE_SERIES = tuple(SECOND_PERCENTILES)
ADDITIVE_SERIES = ("bw_bytes", "iops")  # summed over a job's threads


def fetch_rows(lake: Lake, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Rows of one query on a fresh cursor (safe from any thread); `params` are written
    in as literals (`sqltext.with_values`), never bound."""
    cur = lake.cursor()
    try:
        return cur.execute(with_values(sql, params) if params else sql).fetchall()
    finally:
        cur.close()


def fetch_arrow(lake: Lake, sql: str) -> pa.Table:
    """`fetch_rows` as an Arrow table (columns for numpy, no Python object per value)."""
    cur = lake.cursor()
    try:
        return cur.execute(sql).to_arrow_table()
    finally:
        cur.close()


@dataclass(frozen=True)
class SeriesPoint:
    """One second of one run's job × direction (threads summed; latency averaged)."""

    run_id: str
    backend: str
    job_name: str
    direction: str
    second: int
    value: float | None
    zero_filled: bool = False  # fio logged no window here: no I/O completed
    partial: bool = False  # the job's last window, shorter than a second


def per_second(lake: Lake, run_ids: list[str], metric: str) -> list[SeriesPoint]:
    """`metric` per second for `run_ids`, threads of a job folded together (throughput
    summed, mean latency averaged, percentiles: the worst thread)."""
    known = SERIES_METRICS + PERCENTILE_SERIES
    if metric not in known:
        raise UsageProblem(f"unknown series {metric!r}: choose from {', '.join(known)}")
    if not run_ids:
        return []
    agg = "sum" if metric in ADDITIVE_SERIES else "max" if metric in PERCENTILE_SERIES else "avg"
    marks = ", ".join("?" * len(run_ids))
    sql = f"""
        SELECT t.run_id, r.backend, t.job_name, t.direction, t.second, {agg}(t."{metric}"),
               coalesce(bool_and(t.zero_filled), false), coalesce(bool_or(t.partial), false)
        FROM timeseries t JOIN runs r USING (run_id)
        WHERE t.run_id IN ({marks}) AND r.run_id IN ({marks})
        GROUP BY ALL ORDER BY ALL
    """
    # The runs named on both sides: DuckDB does not carry the filter across the join, and
    # building the join from every runs row was 60 of 160 ms at 1,000,000 runs.
    return [SeriesPoint(*row) for row in fetch_rows(lake, sql, [*run_ids, *run_ids])]


def distinct(lake: Lake, column: str, where: str = "true", params: list[Any] | None = None) -> list:
    """Sorted distinct non-null values of a `runs` column."""
    sql = (
        f'SELECT DISTINCT "{column}" FROM runs WHERE {where} AND "{column}" IS NOT NULL ORDER BY 1'
    )
    return [r[0] for r in fetch_rows(lake, sql, params)]


def overview(lake: Lake) -> list[tuple[Any, ...]]:
    """Per backend: runs by status, profiles, first and last start."""
    return fetch_rows(
        lake,
        """SELECT backend, count(*) FILTER (status = 'ok'), count(*) FILTER (status = 'failed'),
                  count(*) FILTER (status = 'rejected'), count(DISTINCT profile),
                  min(started_at), max(started_at)
           FROM runs GROUP BY backend ORDER BY backend""",
    )


def latest_campaign(lake: Lake) -> tuple[str, list[tuple[Any, ...]]] | None:
    """The campaign with the newest run, and its runs per backend × profile × status."""
    found = fetch_rows(lake, "SELECT campaign_id FROM runs ORDER BY started_at DESC LIMIT 1")
    if not found:
        return None
    campaign = found[0][0]
    rows = fetch_rows(
        lake,
        """SELECT backend, profile, status, count(*), max(finished_at) FROM runs
           WHERE campaign_id = ? GROUP BY ALL ORDER BY ALL""",
        [campaign],
    )
    return campaign, rows


def recent_runs(lake: Lake, limit: int = 200) -> list[tuple[Any, ...]]:
    """(run_id, backend, profile, campaign_id, started_at, repetition) of the newest ok
    runs, newest first."""
    return fetch_rows(
        lake,
        """SELECT run_id, backend, profile, campaign_id, started_at, repetition FROM runs
           WHERE status = 'ok' ORDER BY started_at DESC, run_id LIMIT ?""",
        [limit],
    )


@dataclass(frozen=True)
class SteadyMark:
    """Where one run's job × direction warmed up and whether it ended steady."""

    run_id: str
    job_name: str
    direction: str
    warmup_s: int | None  # seconds before the first steady window (fiolake.steady)
    steady_state: bool | None  # the last window was steady; None: too short to judge
    seconds: int  # length of the per-second series


def steady_marks(lake: Lake, run_ids: list[str]) -> list[SteadyMark]:
    """Warm-up and steady state of every job × direction of `run_ids` (from `results`)."""
    if not run_ids:
        return []
    marks = ", ".join("?" * len(run_ids))
    sql = f"""
        SELECT x.run_id, x.job_name, x.direction, min(x.warmup_s), bool_and(x.steady_state),
               coalesce((SELECT max(t.second) FROM timeseries t WHERE t.run_id = x.run_id
                         AND t.job_name = x.job_name AND t.direction = x.direction), 0)
        FROM results x WHERE x.run_id IN ({marks})
        GROUP BY ALL ORDER BY ALL
    """
    return [SteadyMark(*row) for row in fetch_rows(lake, sql, list(run_ids))]


def cases_of(lake: Lake, profile: str) -> list[tuple[str, str]]:
    """(job name, direction) pairs of a profile's successful runs, in the job file's order."""
    sql = """SELECT x.job_name, x.direction FROM results x JOIN runs r USING (run_id)
             WHERE r.status = 'ok' AND r.profile = ?
             GROUP BY ALL ORDER BY min(x.job_index), x.job_name, x.direction"""
    return [(j, d) for j, d in fetch_rows(lake, sql, [profile])]
