"""A metric over time per backend × profile × job × direction, change points marked."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import duckdb

from fiolake.aggregator.lake import columns
from fiolake.aggregator.lake.accepted import acceptances
from fiolake.aggregator.lake.lake import Lake, literal, literals
from fiolake.aggregator.rows import case_series
from fiolake.aggregator.rows.filters import RunFilter, validate
from fiolake.aggregator.rows.series import fetch_rows
from fiolake.aggregator.stats.compare import check_metrics
from fiolake.aggregator.stats.night_changes import DEFAULT_MIN_SEGMENT, by_night
from fiolake.aggregator.stats.saturation import IOPS_AT_SLO, run_values
from fiolake.aggregator.stats.slo import Slo
from fiolake.errors import LakeError, UsageProblem
from fiolake.timetext import from_epoch_us

BUCKETS = ("run", "day")
Case = tuple[str | None, str | None]  # (job name, direction): None keeps every one


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
    change_point: bool = False  # the first point after a change (E-Divisive, see regressions)
    accepted: str = ""  # a change point at an accepted campaign: `accepted by … at …: why`
    campaign: str | None = None  # the run's (bucket=run): change points count nights


def trend(
    lake: Lake,
    metric: str,
    *,
    filt: RunFilter | None = None,
    bucket: str = "run",
    case: Case | None = None,
    slo: Slo | None = None,
    min_segment: int = DEFAULT_MIN_SEGMENT,
) -> list[TrendPoint]:
    """`metric` per backend × profile × job × direction over time, oldest first; `case`
    (job name, direction; either may be None) keeps only that job and/or direction.
    `iops_at_slo` (at `slo`) is each run's own IOPS at the SLO per load sweep × direction
    (`saturation.run_values`). Change points as `regressions` finds them: `min_segment`
    nights (campaigns; days for bucket=day) each side."""
    filt = filt or RunFilter()
    if metric == IOPS_AT_SLO:
        job, direction = case or (None, None)
        found = [
            p
            for p in _slo_points(lake, slo, filt, bucket)
            if job in (None, p.job_name) and direction in (None, p.direction)
        ]
        if not found:
            raise LakeError(_nothing_matches(filt, case))
        return mark_accepted(lake, _mark_change_points(found, min_segment))
    check_metrics(lake, [metric])
    if bucket not in BUCKETS:
        raise UsageProblem(f"invalid bucket {bucket!r}: choose {' or '.join(BUCKETS)}")
    validate(lake, filt)
    try:
        rows = _points_rows(lake, metric, filt, case, bucket, series=True)
    except duckdb.IOException:  # a run-series file gone behind its record: fold the runs
        rows = _points_rows(lake, metric, filt, case, bucket, series=False)
    points = [
        TrendPoint(b, pr, j, d, from_epoch_us(us), v, n, run, campaign=night)
        for b, pr, j, d, us, v, n, run, night in rows
    ]
    if not points:
        raise LakeError(_nothing_matches(filt, case))
    marked = _mark_change_points(points, min_segment)
    return mark_accepted(lake, marked)  # issue 34: accepted changes


def _points_rows(
    lake: Lake, metric: str, filt: RunFilter, case: Case | None, bucket: str, *, series: bool
) -> list[tuple[Any, ...]]:
    """The trend's rows, a run or a day each (`_per_run`, from the run series when
    `series` and it can answer)."""
    per_run = _per_run(lake, metric, filt, case, series=series)
    # Times come as epoch microseconds: DuckDB makes each TIMESTAMPTZ a datetime through
    # pytz, 0.5 s for a year of one profile's runs (99,000 points), ~0.05 s this way.
    if bucket == "run":
        sql = f"""SELECT backend, profile, job_name, direction, epoch_us(started_at), value, 1,
                         run_id, campaign_id
                  FROM ({per_run})
                  ORDER BY backend, profile, job_name, direction, started_at, run_id"""
    else:
        sql = f"""SELECT backend, profile, job_name, direction,
                         epoch_us(date_trunc('day', started_at)) AS day, avg(value),
                         count(value), NULL, NULL
                  FROM ({per_run}) GROUP BY ALL
                  ORDER BY backend, profile, job_name, direction, day"""
    return fetch_rows(lake, sql)


def _per_run(
    lake: Lake, metric: str, filt: RunFilter, case: Case | None, *, series: bool = True
) -> str:
    """SQL of one row per run × job × direction (case_series.COLUMNS, value): from the run
    series compaction keeps sorted by case when it covers the compacted runs (a year of one
    case is a row group per file, not every result row), else (or without `series`)
    folded from the views."""

    def folded(where: str) -> str:
        return f"""
            SELECT r.backend, r.profile, x.job_name, x.direction, r.started_at, x.run_id,
                   r.campaign_id, {columns.per_run_aggregate(metric)} AS value
            FROM results x JOIN runs r USING (run_id)
            WHERE {where}
            GROUP BY ALL"""

    fast = case_series.compacted_rows(lake, filt, metric, case) if series else None
    if fast is None:
        return folded(filt.where("r") + _case_where(case))
    sql, loose = fast
    if not loose:
        return sql
    picked = f"{filt.where('r')}{_case_where(case)} AND r.run_id IN ({literals(loose)})"
    return f"{sql} UNION ALL {folded(picked)}"


def recent_start(lake: Lake, filt: RunFilter, days: int) -> datetime | None:
    """The start of the last `days` days of `filt`'s runs (counted back from its newest
    run, not from now: a lake last written a month ago still shows its recent history);
    None when no run matches."""
    sql = f"SELECT epoch_us(max(r.started_at)) FROM runs r WHERE {filt.where('r')}"
    ((newest,),) = fetch_rows(lake, sql)
    return None if newest is None else from_epoch_us(newest) - timedelta(days=days)


def _case_where(case: Case | None) -> str:
    """The SQL condition (on results `x`) keeping one job and/or direction."""
    job, direction = case or (None, None)
    where = f" AND x.job_name = {literal(job)}" if job is not None else ""
    return where + (f" AND x.direction = {literal(direction)}" if direction is not None else "")


def _nothing_matches(filt: RunFilter, case: Case | None) -> str:
    """The error for a trend with no points: the filter in words, and where to look."""
    job, direction = case or (None, None)
    if job is None and direction is None:
        return f"no successful runs with results match {filt.describe()}"
    words = [] if filt.describe() == "no filter" else [filt.describe()]
    words += [f"job '{job}'"] if job is not None else []
    words += [f"direction '{direction}'"] if direction is not None else []
    return (
        f"no successful runs with results match {', '.join(words)} — see which jobs exist: "
        'fiolake sql "SELECT DISTINCT job_name, direction FROM results"'
    )


def _slo_points(lake: Lake, slo: Slo | None, filt: RunFilter, bucket: str) -> list[TrendPoint]:
    """Each run's own IOPS at `slo` per load sweep × direction, oldest first; UsageProblem
    for bucket=day, LakeError when no run selected swept a load."""
    if bucket != "run":
        raise UsageProblem(
            "--bucket day does not apply to iops_at_slo: each run is one whole sweep "
            "with its own value — use --bucket run"
        )
    found = [TrendPoint(*v, 1, run) for run, v in run_values(lake, slo, filt)]
    if not found:
        raise LakeError(
            f"no load sweep in the successful runs selected ({filt.describe()}) — run a "
            "sweep profile (latency-at-load, iodepth-sweep) first"
        )
    return found


def mark_accepted(lake: Lake, points: list[TrendPoint]) -> list[TrendPoint]:
    """The points with each change point at an accepted campaign carrying who, when and
    why (and every other point none): cheap, so a cached trend can be re-marked."""
    accepted = acceptances(lake) if any(p.change_point and p.campaign for p in points) else {}
    return [
        replace(p, accepted=found.words() if (found := accepted.get(p.campaign or "")) else "")
        if p.change_point
        else p
        for p in points
    ]


def _mark_change_points(points: list[TrendPoint], min_segment: int) -> list[TrendPoint]:
    series: dict[tuple[str, ...], list[int]] = {}
    for i, p in enumerate(points):
        series.setdefault((p.backend, p.profile, p.job_name, p.direction), []).append(i)
    marked = list(points)
    for idx in series.values():
        values = [v for i in idx if (v := points[i].value) is not None and v > 0]
        if len(values) < len(idx):  # a gap or a zero: no series to split
            continue
        nights = [points[i].campaign or str(points[i].at) for i in idx]  # a day: its own
        found = by_night(values, nights, min_segment=min_segment)
        for pos in found.changes:
            at = idx[found.order[pos]]
            marked[at] = replace(points[at], change_point=True)
    return marked
