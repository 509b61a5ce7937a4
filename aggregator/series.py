"""Per-second series of chosen runs, and small lookups the app's pickers need."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fiolake.aggregator.lake import Lake
from fiolake.errors import UsageProblem

SERIES_METRICS = ("bw_bytes", "iops", "lat_mean_ns", "clat_mean_ns", "slat_mean_ns")


def fetch_rows(lake: Lake, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Rows of one query on a fresh cursor (safe from any thread)."""
    cur = lake.cursor()
    try:
        return cur.execute(sql, params or []).fetchall()
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


def per_second(lake: Lake, run_ids: list[str], metric: str) -> list[SeriesPoint]:
    """`metric` per second for `run_ids`, threads of a job folded together."""
    if metric not in SERIES_METRICS:
        raise UsageProblem(f"unknown series {metric!r}: choose from {', '.join(SERIES_METRICS)}")
    if not run_ids:
        return []
    agg = "sum" if metric in ("bw_bytes", "iops") else "avg"
    marks = ", ".join("?" * len(run_ids))
    sql = f"""
        SELECT t.run_id, r.backend, t.job_name, t.direction, t.second, {agg}(t."{metric}")
        FROM timeseries t JOIN runs r USING (run_id)
        WHERE t.run_id IN ({marks})
        GROUP BY ALL ORDER BY ALL
    """
    return [SeriesPoint(*row) for row in fetch_rows(lake, sql, list(run_ids))]


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
    """(run_id, backend, profile, campaign_id, started_at) of the newest ok runs."""
    return fetch_rows(
        lake,
        """SELECT run_id, backend, profile, campaign_id, started_at FROM runs
           WHERE status = 'ok' ORDER BY started_at DESC LIMIT ?""",
        [limit],
    )
