"""Commands that follow runs over time: trend (change points marked) and regressions
(change points, sized and explained)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from fiolake.aggregator.stats.verdict_text import MARKS, times
from fiolake.cli import format_option, lake_option
from fiolake.cli.common import connect
from fiolake.cli.comparisons import (
    filter_options,
    metric_option,
    p_text,
    ratio_text,
    run_filter,
    since_option,
)
from fiolake.cli.output import emit
from fiolake.cli.saturation import slo_option
from fiolake.timetext import iso_utc, parse_window
from fiolake.units import MISSING

if TYPE_CHECKING:
    from fiolake.aggregator.stats.slo import Slo


# trend and regressions count change points the same way (aggregator/stats/night_changes.py).
min_segment_option = click.option(
    "--min-segment",
    type=click.IntRange(2, 100),
    default=3,
    show_default=True,
    help="Nights (campaigns) each side of a change point: one odd night is an outlier, "
    "not a change.",
)

# The statistics `regressions` needs once connected (imported meanwhile: `connect`).
REGRESSIONS_MODULE = "fiolake.aggregator.stats.regressions"


@click.command()
@lake_option
@format_option()
@filter_options
@since_option
@click.option(
    "--metric",
    default="iops",
    show_default=True,
    help="results column to follow, or iops_at_slo (each run's IOPS at --slo, load sweeps).",
)
@slo_option
@min_segment_option
@click.option(
    "--bucket",
    type=click.Choice(["run", "day"]),
    default="run",
    show_default=True,
    help="One point per run, or the mean per UTC day.",
)
@click.option("--job", help="Only this fio job (job_name), e.g. the one case to follow.")
@click.option(
    "--direction",
    type=click.Choice(["read", "write", "trim"]),
    help="Only this direction of each job.",
)
def trend(
    lake: str,
    fmt: str,
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str | None,
    metric: str,
    slo: Slo,
    min_segment: int,
    bucket: str,
    job: str | None,
    direction: str | None,
) -> None:
    """A metric over time per backend, profile, job and direction; change points marked.

    One case over a year: `fiolake trend --backend nvme --profile random-reads --job
    randread --direction read --since 365d`."""
    from fiolake.aggregator.lake.columns import formatters
    from fiolake.aggregator.lake.lake import SUMMARY_TABLES

    filt = run_filter(campaign, backends, profile, since)
    with connect(lake, SUMMARY_TABLES, meanwhile=["fiolake.aggregator.stats.trend"]) as handle:
        from fiolake.aggregator.stats.trend import trend as metric_trend

        points = metric_trend(
            handle, metric, filt=filt, bucket=bucket, slo=slo, min_segment=min_segment,
            case=(job, direction) if job or direction else None,
        )  # fmt: skip
    at = "started_at" if bucket == "run" else "day"
    cols = ["backend", "profile", "job_name", "direction", at, metric, "n", "change_point",
            "run_id"]  # fmt: skip
    rows = [
        (
            p.backend,
            p.profile,
            p.job_name,
            p.direction,
            p.at,
            p.value,
            p.n,
            "◆" if p.change_point and fmt == "table" else p.change_point,
            p.run_id,
        )  # fmt: skip
        for p in points
    ]
    shown = formatters([metric]) if fmt == "table" else None
    if bucket == "day":  # a day's point stands for several runs: no run_id column
        emit(cols[:-1], [r[:-1] for r in rows], fmt, shown)
    else:
        emit(cols, rows, fmt, shown)


@click.command()
@lake_option
@format_option()
@filter_options
@click.option(
    "--since",
    default="30d",
    show_default=True,
    help="History to look at (a duration, or 'all').",
)
@metric_option
@click.option(
    "--max-pvalue",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.001,
    show_default=True,
    help="Keep change points whose (selection-corrected) p-value is at most this.",
)
@min_segment_option
@click.option("--all", "include_better", is_flag=True, help="Show improvements too.")
@click.option(
    "--accepted",
    "include_accepted",
    is_flag=True,
    help="List change points at accepted campaigns too (`gate accept`), marked as such.",
)
def regressions(
    lake: str,
    fmt: str,
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str,
    metrics: tuple[str, ...],
    max_pvalue: float,
    min_segment: int,
    include_better: bool,
    include_accepted: bool,
) -> None:
    """Where a series of comparable runs changed for the worse (change points).

    \b
    A series is backend × profile × job × direction × workload × metric in time
    order; change points come from E-Divisive means with a merge pass (as Apache Otava
    does it) over its nights (campaigns), --min-segment nights each side: a single odd
    night is listed as an outlier on stderr, not as a change. Each change lists the ratio
    after/before with its 95 % CI, the p-value, the runs on both sides and what changed
    between them (kernel, fio, job…). Worst first; change points at accepted campaigns
    (`gate accept`) only with --accepted.
      fiolake regressions --since 7d --backend nvme
    """
    from fiolake.aggregator.lake.lake import SUMMARY_TABLES

    window = parse_window(since)
    filt = run_filter(campaign, backends, profile)
    with connect(lake, SUMMARY_TABLES, meanwhile=[REGRESSIONS_MODULE]) as handle:
        from fiolake.aggregator.stats.compare import DEFAULT_METRICS
        from fiolake.aggregator.stats.regressions import regressions as find

        report = find(
            handle,
            since=window,
            metrics=list(metrics) or list(DEFAULT_METRICS),
            filt=filt,
            max_pvalue=max_pvalue,
            include_better=include_better,
            include_accepted=include_accepted,
            min_segment=min_segment,
        )
    hidden = report.accepted if not include_accepted else 0
    click.echo(
        f"{len(report.rows)} change point(s) in {report.series} series "
        f"({report.too_short} too short to test); p ≤ {max_pvalue:g}"
        + (f"; {hidden} at accepted campaigns not listed (--accepted)" if hidden else ""),
        err=True,
    )
    for o in report.outliers:
        click.echo(
            f"outlier night: {o.backend} · {o.profile} · {o.job_name} · {o.direction} · "
            f"{o.metric}: campaign {o.campaign} at {times(o.ratio)} the other nights of its "
            "segment — one night, not a change",
            err=True,
        )
    cols = ["backend", "profile", "job_name", "direction", "metric", "at", "ratio",
            "ratio_ci_low", "ratio_ci_high", "p_value", "verdict", "n_before", "n_after",
            "run_before", "run_after", "env_changes", "workload_sha256",
            "accepted"]  # fmt: skip
    rows: list[tuple[object, ...]]
    if fmt != "table":
        rows = [
            (
                c.backend,
                c.profile,
                c.job_name,
                c.direction,
                c.metric,
                c.at,
                c.ratio,
                c.ratio_ci_low,
                c.ratio_ci_high,
                c.p_value,
                c.verdict,
                c.n_before,
                c.n_after,
                c.run_before,
                c.run_after,
                c.env_changes,
                c.workload_sha256,
                c.accepted or None,
            )  # fmt: skip
            for c in report.rows
        ]
        emit(cols, rows, fmt)
        return
    rows = [
        (
            c.backend,
            c.profile,
            c.job_name,
            c.direction,
            c.metric,
            iso_utc(c.at, "minutes") if c.at else MISSING,
            ratio_text(c.metric, c.ratio, c.ratio_ci_low, c.ratio_ci_high),
            p_text(c.p_value),
            MARKS.get(c.verdict, c.verdict) + (f" ({c.accepted})" if c.accepted else ""),
            f"{c.n_before}/{c.n_after}",
            f"{c.run_before} → {c.run_after}",
            "; ".join(c.env_changes) or MISSING,
        )  # fmt: skip
        for c in report.rows
    ]
    emit(["backend", "profile", "job", "dir", "metric", "at", "after/before [95% CI]", "p",
           "verdict", "n before/after", "runs", "what changed"], rows, fmt)  # fmt: skip
