"""Commands that read the lake: sql, compare, trend, regressions, env-diff, lake, app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from fiolake.cli import fail, format_option, lake_ops, lake_option
from fiolake.cli.output import render
from fiolake.errors import FiolakeError

if TYPE_CHECKING:
    from collections.abc import Callable

    from fiolake.aggregator.filters import RunFilter
    from fiolake.aggregator.lake import Lake


def _connect(lake: str) -> Lake:
    from fiolake.aggregator.lake import open_lake

    return open_lake(lake)


def _emit(
    columns: list[str], rows: list[Any], fmt: str, formatters: dict[str, Any] | None = None
) -> None:
    click.echo(render(columns, rows, fmt, formatters), nl=False)


@click.command()
@click.argument("query")
@lake_option
@format_option()
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Stop after this many rows (a note on stderr says the result was cut).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Interrupt the query after this many seconds.",
)
def sql(query: str, lake: str, fmt: str, max_rows: int, timeout_s: float) -> None:
    """Run one read-only SQL QUERY over the lake views.

    \b
    Views: runs, results, timeseries, percentiles (committed runs only) and the
    table commits. Raw units in the data: bytes, B/s, ns; the table format shows
    human units for known columns.
    \b
      fiolake sql "SELECT backend, avg(iops) FROM results GROUP BY backend"
    """
    from fiolake.aggregator.columns import formatters
    from fiolake.aggregator.query import run_query

    try:
        with _connect(lake) as handle:
            result = run_query(handle, query, row_limit=max_rows, timeout_s=timeout_s)
    except FiolakeError as exc:
        raise fail(exc) from exc
    fmts = formatters(result.columns) if fmt == "table" else None
    _emit(result.columns, result.rows, fmt, fmts)
    if result.truncated:
        click.echo(
            f"truncated: showing the first {max_rows} rows (raise --max-rows or add LIMIT)",
            err=True,
        )


def _filter_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.option("--campaign", help="Only runs of this campaign."),
            click.option(
                "--backend", "backends", multiple=True, help="Only these backends (repeatable)."
            ),
            click.option("--profile", help="Only runs of this profile (job file stem)."),
            click.option("--since", help="Only runs started since: a duration (7d) or ISO date."),
        ]
    ):
        fn = option(fn)
    return fn


def _run_filter(
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str | None,
    runs: tuple[str, ...] = (),
) -> RunFilter:
    from fiolake.aggregator.filters import RunFilter, parse_since

    when = parse_since(since) if since else None
    return RunFilter(campaign, tuple(backends), profile, tuple(runs), when)


def _signed_pct(value: float | None) -> str:
    return "---" if value is None else f"{value:+.1f}%"


_MARKS = {"better": "▲ better", "worse": "▼ worse"}


@click.command()
@lake_option
@format_option()
@_filter_options
@click.option("--run", "runs", multiple=True, help="Compare these runs directly (give two).")
@click.option("--by", default="backend", show_default=True, help="Group runs by this column.")
@click.option("--baseline", help="Group to compare against (default: the first).")
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="results column to compare (repeatable; default bw_bytes, iops, lat_mean_ns, "
    "clat_p99_ns).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of Welch's t-test.",
)
def compare(
    lake: str,
    fmt: str,
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str | None,
    runs: tuple[str, ...],
    by: str,
    baseline: str | None,
    metrics: tuple[str, ...],
    alpha: float,
) -> None:
    """Compare backends (or runs) per profile, job and direction.

    \b
    Repetitions are summarised as mean ± 95% confidence interval (Student t); each
    group is judged against the baseline with Welch's t-test: ▲ better, ▼ worse,
    no significant difference, or not enough repetitions (n < 2).
      fiolake compare --campaign nightly --backend nvme --backend ceph
      fiolake compare --run RUN_A --run RUN_B
    """
    from fiolake.aggregator.columns import format_value
    from fiolake.aggregator.compare import DEFAULT_METRICS
    from fiolake.aggregator.compare import compare as compare_runs

    try:
        filt = _run_filter(campaign, backends, profile, since, runs)
        with _connect(lake) as handle:
            result = compare_runs(
                handle,
                by=by,
                baseline=baseline,
                metrics=list(metrics) or list(DEFAULT_METRICS),
                filt=filt,
                alpha=alpha,
            )
    except FiolakeError as exc:
        raise fail(exc) from exc
    if fmt != "table":
        cols = [
            result.by,
            "profile",
            "job_name",
            "direction",
            "metric",
            "n",
            "mean",
            "stddev",
            "min",
            "max",
            "median",
            "ci95_half",
            "delta_pct",
            "p_value",
            "verdict",
        ]
        rows = [
            (
                r.group,
                r.profile,
                r.job_name,
                r.direction,
                r.metric,
                r.n,
                r.mean,
                r.stddev,
                r.min,
                r.max,
                r.median,
                r.ci_half,
                r.delta_pct,
                r.p_value,
                r.verdict,
            )
            for r in result.rows
        ]
        _emit(cols, rows, fmt)
        return
    cols = [
        result.by,
        "profile",
        "job",
        "dir",
        "metric",
        "n",
        "mean ± 95% CI",
        "Δ% vs " + result.baseline,
        "verdict",
    ]
    rows = []
    for r in result.rows:
        mean = format_value(r.metric, r.mean)
        if r.ci_half is not None:
            mean += f" ± {format_value(r.metric, r.ci_half)}"
        rows.append(
            (
                r.group,
                r.profile,
                r.job_name,
                r.direction,
                r.metric,
                r.n,
                mean,
                _signed_pct(r.delta_pct),
                _MARKS.get(r.verdict, r.verdict),
            )
        )
    _emit(cols, rows, fmt)


@click.command()
@lake_option
@format_option()
@_filter_options
@click.option("--metric", default="iops", show_default=True, help="results column to follow.")
@click.option(
    "--bucket",
    type=click.Choice(["run", "day"]),
    default="run",
    show_default=True,
    help="One point per run, or the mean per UTC day.",
)
def trend(
    lake: str,
    fmt: str,
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str | None,
    metric: str,
    bucket: str,
) -> None:
    """A metric over time per backend, profile, job and direction."""
    from fiolake.aggregator.columns import formatters
    from fiolake.aggregator.trend import trend as metric_trend

    try:
        filt = _run_filter(campaign, backends, profile, since)
        with _connect(lake) as handle:
            points = metric_trend(handle, metric, filt=filt, bucket=bucket)
    except FiolakeError as exc:
        raise fail(exc) from exc
    at = "started_at" if bucket == "run" else "day"
    cols = ["backend", "profile", "job_name", "direction", at, metric, "n", "run_id"]
    rows = [
        (p.backend, p.profile, p.job_name, p.direction, p.at, p.value, p.n, p.run_id)
        for p in points
    ]
    if bucket == "day":
        cols, rows = cols[:-1], [r[:-1] for r in rows]
    _emit(cols, rows, fmt, formatters([metric]) if fmt == "table" else None)


@click.command()
@lake_option
@format_option()
@click.option("--campaign", help="Only runs of this campaign.")
@click.option("--backend", "backends", multiple=True, help="Only these backends (repeatable).")
@click.option("--profile", help="Only runs of this profile.")
@click.option("--since", default="7d", show_default=True, help="History to look at (duration).")
@click.option("--window", default="1d", show_default=True, help="The recent window (duration).")
@click.option("--until", help="End of the recent window (default: the newest run).")
@click.option("--metric", "metrics", multiple=True, help="results column (repeatable).")
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Significance level.")
def regressions(
    lake: str,
    fmt: str,
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str,
    window: str,
    until: str | None,
    metrics: tuple[str, ...],
    alpha: float,
) -> None:
    """Significant slow-downs: the latest window against the trailing history.

    Per backend × profile × job × direction × metric, Welch's t-test between runs in
    the last --window and the rest of --since; biggest slow-downs first.
    """
    from fiolake.aggregator.columns import format_value
    from fiolake.aggregator.compare import DEFAULT_METRICS
    from fiolake.aggregator.filters import RunFilter, parse_duration, parse_since
    from fiolake.aggregator.trend import regressions as find_regressions

    try:
        filt = RunFilter(campaign, tuple(backends), profile)
        with _connect(lake) as handle:
            report = find_regressions(
                handle,
                since=parse_duration(since),
                window=parse_duration(window),
                metrics=list(metrics) or list(DEFAULT_METRICS),
                filt=filt,
                until=parse_since(until) if until else None,
                alpha=alpha,
            )
    except FiolakeError as exc:
        raise fail(exc) from exc
    click.echo(
        f"recent window {report.recent_from:%Y-%m-%d %H:%M} .. {report.anchor:%Y-%m-%d %H:%M} "
        f"vs baseline from {report.baseline_from:%Y-%m-%d %H:%M} UTC; "
        f"{len(report.rows)} significant slow-down(s), {report.untested} case(s) with too few "
        "runs to test",
        err=True,
    )
    if fmt == "table":
        cols = [
            "backend",
            "profile",
            "job",
            "dir",
            "metric",
            "baseline",
            "recent",
            "change",
            "n base/recent",
            "p",
        ]
        rows = [
            (
                g.backend,
                g.profile,
                g.job_name,
                g.direction,
                g.metric,
                format_value(g.metric, g.baseline_mean),
                format_value(g.metric, g.recent_mean),
                _signed_pct(g.change_pct),
                f"{g.baseline_n}/{g.recent_n}",
                f"{g.p_value:.2g}",
            )
            for g in report.rows
        ]
    else:
        cols = [
            "backend",
            "profile",
            "job_name",
            "direction",
            "metric",
            "baseline_mean",
            "recent_mean",
            "change_pct",
            "baseline_n",
            "recent_n",
            "p_value",
        ]
        rows = [
            (
                g.backend,
                g.profile,
                g.job_name,
                g.direction,
                g.metric,
                g.baseline_mean,
                g.recent_mean,
                g.change_pct,
                g.baseline_n,
                g.recent_n,
                g.p_value,
            )
            for g in report.rows
        ]
    _emit(cols, rows, fmt)


@click.command("env-diff")
@lake_option
@format_option()
@click.option("--run", "runs", multiple=True, required=True, help="Run id (give exactly two).")
def env_diff(lake: str, fmt: str, runs: tuple[str, ...]) -> None:
    """How the recorded environments of two runs differ (kernel, fs, device, labels…)."""
    from fiolake.aggregator.columns import format_value
    from fiolake.aggregator.envdiff import env_diff as diff_runs

    if len(runs) != 2:
        raise click.UsageError(f"give exactly two --run options (got {len(runs)})")
    try:
        with _connect(lake) as handle:
            diffs = diff_runs(handle, runs[0], runs[1])
    except FiolakeError as exc:
        raise fail(exc) from exc
    if not diffs:
        click.echo("no environment differences", err=fmt == "table")
        if fmt == "table":
            return
    if fmt == "table":
        rows = [(d.field, format_value(d.field, d.a), format_value(d.field, d.b)) for d in diffs]
    else:
        rows = [(d.field, d.a, d.b) for d in diffs]
    _emit(["field", runs[0], runs[1]], rows, fmt)


# `lake` and `app` live in lake_ops; fiolake.cli looks them up here (COMMANDS).
lake = lake_ops.lake
app = lake_ops.app
