"""Regressions as change points: where a series of comparable runs changed level, and
what else changed between the last run before and the first run after.

A series is one backend × profile × job × direction × workload × metric, in time
order, folded night by night in SQL (`nightly`); change points come from
`changepoints.change_points` over its nights (campaigns), at least `min_segment` nights
each side (`night_changes`);
each is described by the ratio of the geometric means after/before with its 95 % CI
(`stats.compare_logs`) and the environment differences across it (`envdiff`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from fiolake.aggregator.lake import columns
from fiolake.aggregator.lake.accepted import acceptances
from fiolake.aggregator.lake.lake import Lake
from fiolake.aggregator.rows.envdiff import env_diffs
from fiolake.aggregator.rows.filters import RunFilter, validate
from fiolake.aggregator.stats import stats
from fiolake.aggregator.stats.changepoints import DEFAULT_MAX_PVALUE
from fiolake.aggregator.stats.compare import DEFAULT_METRICS, check_metrics
from fiolake.aggregator.stats.night_changes import DEFAULT_MIN_SEGMENT, night_points
from fiolake.aggregator.stats.nightly import BY_BACKEND, NightSeries, nightly
from fiolake.aggregator.stats.verdict_text import BETTER, WORSE
from fiolake.errors import LakeError


@dataclass
class ChangePoint:
    """One change of level in one series."""

    backend: str
    profile: str
    job_name: str
    direction: str
    metric: str
    workload_sha256: str | None
    at: datetime | None  # start of the first run after the change
    n_before: int
    n_after: int
    ratio: float  # geomean after / geomean before (segments between neighbouring changes)
    ratio_ci_low: float | None
    ratio_ci_high: float | None
    p_value: float  # after the merge pass (selection-corrected; see changepoints)
    verdict: str  # worse | better
    run_before: str
    run_after: str
    env_changes: list[str] = field(default_factory=list)  # e.g. "kernel 6.1 → 6.8"
    campaign_after: str | None = None  # run_after's campaign (the night of the change)
    accepted: str = ""  # `accepted by … at …: why` when that campaign is accepted


@dataclass(frozen=True)
class RegressionReport:
    """Change points, worst first, and how many series were looked at."""

    rows: list[ChangePoint]
    series: int
    too_short: int  # series with fewer than 2 × min_segment nights
    accepted: int = 0  # change points at accepted campaigns (left out unless asked for)
    outliers: list[OutlierNight] = field(default_factory=list)  # one-night spikes


def _describe(lake: Lake, rows: list[ChangePoint]) -> None:
    """Each change point's `env_changes`: how its runs either side differ (`env_diffs`)."""
    found = env_diffs(lake, [(r.run_before, r.run_after) for r in rows])
    for row, diffs in zip(rows, found, strict=True):
        row.env_changes = [
            f"{d.field} {d.a} → {d.b}" if d.b is not None or d.field != "job" else f"job: {d.a}"
            for d in diffs
        ]


@dataclass(frozen=True)
class OutlierNight:
    """A night that stands apart from its segment: one spike, no change of level."""

    backend: str
    profile: str
    job_name: str
    direction: str
    metric: str
    campaign: str
    at: datetime | None  # its first run's start
    ratio: float  # its geometric mean / the median night of its segment


def _series_points(
    key: tuple[Any, ...], metric: str, nights: NightSeries, max_pvalue: float,
    min_segment: int,
) -> tuple[list[ChangePoint], list[OutlierNight]]:  # fmt: skip
    """Change points counted in nights (`night_changes`), each at the first run of the
    night after it; the segments on either side compared run by run (pooled nights)."""
    backend, (profile, job, direction, sha) = key
    found, spikes = night_points(nights.mean, max_pvalue, min_segment)
    bounds = [0, *sorted(found), len(nights)]
    out = []
    for i, at in enumerate(sorted(found), start=1):
        before, after = nights.pooled(bounds[i - 1], at), nights.pooled(at, bounds[i + 1])
        test = stats.compare_summaries(before, after)
        up = test.ratio > 1.0
        word = BETTER if up == columns.higher_is_better(metric) else WORSE
        first, last = nights.night(at), nights.night(at - 1)
        out.append(
            ChangePoint(
                backend,
                profile,
                job,
                direction,
                metric,
                sha,
                first.first_at,
                before.n,
                after.n,
                test.ratio,
                test.ratio_ci_low,
                test.ratio_ci_high,
                found[at],
                word,
                last.last_run,
                first.first_run,
                campaign_after=first.label or None,
            )  # fmt: skip
        )
    odd = []
    for k, ratio in spikes:
        night = nights.night(k)
        odd.append(OutlierNight(backend, profile, job, direction, metric, night.label,
                                night.first_at, ratio))  # fmt: skip
    return out, odd


def regressions(
    lake: Lake,
    *,
    since: timedelta | None = timedelta(days=30),
    metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS,
    filt: RunFilter | None = None,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    include_better: bool = False,
    now: datetime | None = None,
    include_accepted: bool = False,
    min_segment: int = DEFAULT_MIN_SEGMENT,
) -> RegressionReport:
    """Change points per series over the runs of the last `since` (all when None); one
    whose first run after belongs to an accepted campaign (`lake.accepted`) is marked and
    left out unless `include_accepted` (counted in `accepted`). Change points need
    `min_segment` nights (campaigns) on each side; a lone odd night is an outlier."""
    filt = filt or RunFilter()
    metrics = check_metrics(lake, metrics)
    if since is not None:
        anchor = now or datetime.now().astimezone()
        filt = RunFilter(
            filt.campaign, filt.backends, filt.profile, filt.runs, anchor - since, None, filt.status
        )
    validate(lake, filt)
    data = nightly(lake, BY_BACKEND, filt, metrics)
    if not data:
        raise LakeError(f"no successful runs with results match {filt.describe()}")
    rows: list[ChangePoint] = []
    odd: list[OutlierNight] = []
    series = too_short = 0
    for key, by_metric in sorted(data.items(), key=lambda kv: str(kv[0])):
        for metric in metrics:
            nights = by_metric[metric]
            series += 1
            if len(nights) < 2 * min_segment:
                too_short += 1
                continue
            found, spikes = _series_points(key, metric, nights, max_pvalue, min_segment)
            rows += found
            odd += spikes
    if not include_better:
        rows = [r for r in rows if r.verdict == WORSE]
    hidden = mark_accepted(lake, rows)  # issue 34: accepted changes
    if not include_accepted:
        rows = [r for r in rows if not r.accepted]
    _describe(lake, rows)
    # Worst first; near-equal sizes are a tie (`stats.size_classes`: a latency mirroring
    # its IOPS), kept in series and metric order whatever the last bits of the folding.
    sizes = stats.size_classes([stats.effect_size(r.ratio) for r in rows])
    order = sorted(range(len(rows)), key=lambda i: (-sizes[i], rows[i].backend))
    rows[:] = [rows[i] for i in order]
    return RegressionReport(rows, series, too_short, hidden, odd)


def mark_accepted(lake: Lake, rows: list[ChangePoint]) -> int:
    """Mark each change point whose night after is an accepted campaign; how many."""
    accepted = acceptances(lake) if rows else {}
    for row in rows:
        found = accepted.get(row.campaign_after or "")
        row.accepted = found.words() if found else ""
    return sum(1 for r in rows if r.accepted)
