"""A metric over time, and significant slow-downs of the latest window against history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fiolake.aggregator import columns
from fiolake.aggregator.compare import DEFAULT_METRICS, WORSE, check_metrics, summaries, verdict
from fiolake.aggregator.filters import RunFilter, validate
from fiolake.aggregator.lake import Lake
from fiolake.errors import LakeError, UsageProblem

BUCKETS = ("run", "day")


@dataclass(frozen=True)
class TrendPoint:
    """One value of a metric: one run (bucket=run) or the mean of a day's runs (bucket=day)."""

    backend: str
    profile: str
    job_name: str
    direction: str
    at: datetime  # the run's start, or the start of the UTC day
    value: float | None
    n: int  # runs behind the value
    run_id: str | None  # set for bucket=run


def _fetch(lake: Lake, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    cur = lake.cursor()
    try:
        return cur.execute(sql, params).fetchall()
    finally:
        cur.close()


def trend(
    lake: Lake, metric: str, *, filt: RunFilter | None = None, bucket: str = "run"
) -> list[TrendPoint]:
    """`metric` per backend × profile × job × direction over time, oldest first."""
    filt = filt or RunFilter()
    check_metrics(lake, [metric])
    if bucket not in BUCKETS:
        raise UsageProblem(f"invalid bucket {bucket!r}: choose {' or '.join(BUCKETS)}")
    validate(lake, filt)
    where, params = filt.where("r")
    per_run = f"""
        SELECT r.backend, r.profile, x.job_name, x.direction, r.started_at, x.run_id,
               {columns.per_run_aggregate(metric)} AS value
        FROM results x JOIN runs r USING (run_id)
        WHERE {where}
        GROUP BY ALL
    """
    if bucket == "run":
        sql = f"""SELECT backend, profile, job_name, direction, started_at, value, 1, run_id
                  FROM ({per_run}) ORDER BY backend, profile, job_name, direction, started_at"""
    else:
        sql = f"""SELECT backend, profile, job_name, direction,
                         date_trunc('day', started_at) AS day, avg(value), count(value), NULL
                  FROM ({per_run}) GROUP BY ALL
                  ORDER BY backend, profile, job_name, direction, day"""
    points = [TrendPoint(*row) for row in _fetch(lake, sql, params)]
    if not points:
        raise LakeError(f"no successful runs with results match {filt.describe()}")
    return points


@dataclass(frozen=True)
class Regression:
    """A metric that got significantly worse in the recent window."""

    backend: str
    profile: str
    job_name: str
    direction: str
    metric: str
    baseline_n: int
    baseline_mean: float
    recent_n: int
    recent_mean: float
    change_pct: float  # signed: negative for lost throughput, positive for added latency
    p_value: float


@dataclass(frozen=True)
class RegressionReport:
    """Regressions, biggest first, and the windows they were judged on."""

    anchor: datetime  # end of the recent window (the newest matching run unless given)
    recent_from: datetime
    baseline_from: datetime
    rows: list[Regression]
    untested: int  # backend × job × metric cases with fewer than 2 runs on a side


def _latest_start(lake: Lake, filt: RunFilter) -> datetime:
    where, params = filt.where("r")
    row = _fetch(lake, f"SELECT max(r.started_at) FROM runs r WHERE {where}", params)
    if not row or row[0][0] is None:
        raise LakeError(f"no successful runs match {filt.describe()}")
    return row[0][0]


def regressions(
    lake: Lake,
    *,
    since: timedelta = timedelta(days=7),
    window: timedelta = timedelta(days=1),
    metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS,
    filt: RunFilter | None = None,
    until: datetime | None = None,
    alpha: float = 0.05,
) -> RegressionReport:
    """Latest `window` vs the rest of the last `since`, per backend × profile × job × direction.

    Welch's t-test per metric; only significant changes for the worse are reported.
    """
    filt = filt or RunFilter()
    metrics = check_metrics(lake, metrics)
    if window >= since:
        raise UsageProblem(f"--window ({window}) must be shorter than --since ({since})")
    validate(lake, filt)
    anchor = until or _latest_start(lake, filt)
    recent_from, baseline_from = anchor - window, anchor - since
    scoped = RunFilter(
        filt.campaign, filt.backends, filt.profile, filt.runs, baseline_from, None, filt.status
    )
    where_anchor = f"r.started_at <= TIMESTAMPTZ '{anchor.isoformat()}'"
    period = (
        f"CASE WHEN r.started_at > TIMESTAMPTZ '{recent_from.isoformat()}' "
        "THEN 'recent' ELSE 'baseline' END"
    )
    data = summaries(lake, ["r.backend", period], scoped, metrics, extra_where=where_anchor)
    rows, untested = [], 0
    cases = sorted({(k[0], *k[2:]) for k in data})
    for backend, profile, job, direction in cases:
        base = data.get((backend, "baseline", profile, job, direction))
        recent = data.get((backend, "recent", profile, job, direction))
        if base is None or recent is None:
            continue
        for metric in metrics:
            b, r = base[metric], recent[metric]
            word, p = verdict(metric, b, r, alpha)
            if p is None:
                untested += 1
                continue
            if word != WORSE or not b.mean:
                continue
            change = (r.mean - b.mean) / abs(b.mean) * 100.0
            rows.append(
                Regression(
                    backend, profile, job, direction, metric, b.n, b.mean, r.n, r.mean, change, p
                )
            )
    rows.sort(key=lambda g: (-abs(g.change_pct), g.backend, g.profile, g.job_name))
    return RegressionReport(anchor, recent_from, baseline_from, rows, untested)
