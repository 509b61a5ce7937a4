"""Commands that decide: compare (ratios, verdicts), trend, regressions (change points)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from fiolake.cli import fail, format_option, lake_option
from fiolake.cli.output import render
from fiolake.errors import FiolakeError

if TYPE_CHECKING:
    from collections.abc import Callable

    from fiolake.aggregator.filters import RunFilter
    from fiolake.aggregator.lake import Lake

CTX = {"help_option_names": ["-h", "--help"]}
_MARKS = {"better": "▲ better", "worse": "▼ worse", "equivalent": "= equivalent"}


def _connect(lake: str) -> Lake:
    from fiolake.aggregator.lake import open_lake

    return open_lake(lake)


def _emit(cols: list[str], rows: list[Any], fmt: str, formatters: Any = None) -> None:
    click.echo(render(cols, rows, fmt, formatters), nl=False)


def filter_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--campaign, --backend, --profile: shared by every command that selects runs."""
    for option in reversed(
        [
            click.option("--campaign", help="Only runs of this campaign."),
            click.option(
                "--backend", "backends", multiple=True, help="Only these backends (repeatable)."
            ),
            click.option("--profile", help="Only runs of this profile (job file stem)."),
        ]
    ):
        fn = option(fn)
    return fn


def metric_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--metric (repeatable), shared by compare and regressions."""
    return click.option(
        "--metric",
        "metrics",
        multiple=True,
        help="results column (repeatable; default bw_bytes, iops, lat_mean_ns, clat_p99_ns).",
    )(fn)


def run_filter(
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str | None = None,
    runs: tuple[str, ...] = (),
) -> RunFilter:
    """The RunFilter the options describe."""
    from fiolake.aggregator.filters import RunFilter, parse_since

    when = parse_since(since) if since else None
    return RunFilter(campaign, tuple(backends), profile, tuple(runs), when)


def ratio_text(metric: str, ratio: float | None, low: float | None, high: float | None) -> str:
    """`6.3× [5.1×, 7.8×]`; for ratios below 1 also `(96 % lower)`."""
    if ratio is None:
        return "---"
    text = f"{ratio:.3g}×"
    if ratio < 1:
        text += f" ({(1 - ratio) * 100:.0f} % lower)"
    if low is not None and high is not None:
        text += f" [{low:.3g}×, {high:.3g}×]"
    return text


def _steady_text(steady: int, unsteady: int) -> str:
    """`2/3`: runs whose last 5 s were flat, of those long enough to tell."""
    known = steady + unsteady
    return f"{steady}/{known}" if known else "n/a"


def _p(value: float | None) -> str:
    return "---" if value is None else f"{value:.2g}"


@click.command(context_settings=CTX)
@lake_option
@format_option()
@filter_options
@click.option("--since", help="Only runs started since: a duration (7d) or ISO date.")
@click.option("--run", "runs", multiple=True, help="Compare these runs directly (give two).")
@click.option("--by", default="backend", show_default=True, help="Group runs by this column.")
@click.option("--baseline", help="Group to compare against (default: the first).")
@metric_option
@click.option(
    "--min-effect",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Smallest ratio change that matters (0.05 = ±5 %): bigger and significant is "
    "better/worse; shown to be smaller is equivalent.",
)
@click.option(
    "--fdr",
    is_flag=True,
    help="Adjust p-values by Benjamini–Hochberg (false discovery rate) instead of Holm.",
)
@click.option(
    "--allow-mixed",
    is_flag=True,
    help="Pool runs whose effective jobs differ (e.g. other --runtime); every row says so.",
)
@click.option(
    "--exclude-unsteady", is_flag=True, help="Leave out runs whose last 5 s were not steady."
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
    min_effect: float,
    fdr: bool,
    allow_mixed: bool,
    exclude_unsteady: bool,
) -> None:
    """Compare backends (or runs): ratios of geometric means with 95 % CIs, and a verdict.

    \b
    Per profile × job × direction × metric, each group's repetitions are summarised by
    their geometric mean and set against the baseline as a ratio with a 95 % CI (Welch
    on log values; unadjusted). p-values (difference, and equivalence within
    ±--min-effect) are adjusted across the whole table (Holm; --fdr for BH). Verdict:
    better/worse (significant and bigger than --min-effect), equivalent, or
    inconclusive with the repetitions needed. Runs of different effective jobs are
    never pooled unless --allow-mixed. docs/statistics.md has every formula.
      fiolake compare --campaign nightly --backend nvme --backend ceph
      fiolake compare --run RUN_A --run RUN_B --format json
    """
    from fiolake.aggregator.columns import format_value
    from fiolake.aggregator.compare import DEFAULT_METRICS
    from fiolake.aggregator.compare import compare as compare_runs

    try:
        filt = run_filter(campaign, backends, profile, since, runs)
        with _connect(lake) as handle:
            result = compare_runs(
                handle,
                by=by,
                baseline=baseline,
                metrics=list(metrics) or list(DEFAULT_METRICS),
                filt=filt,
                min_effect=min_effect,
                adjustment="fdr" if fdr else "holm",
                allow_mixed=allow_mixed,
                exclude_unsteady=exclude_unsteady,
            )
    except FiolakeError as exc:
        raise fail(exc) from exc
    if fmt != "table":
        cols = [result.by, "profile", "job_name", "direction", "metric", "baseline", "n",
                "n_baseline", "geomean", "ratio", "ratio_ci_low", "ratio_ci_high", "p_value",
                "p_adjusted", "p_equivalence", "p_equivalence_adjusted", "verdict",
                "reps_needed", "effective_job_sha256", "steady", "unsteady", "steady_unknown",
                "outliers", "flagged", "notes"]  # fmt: skip
        rows = [
            (
                r.group,
                r.profile,
                r.job_name,
                r.direction,
                r.metric,
                result.baseline,
                r.n,
                r.n_baseline,
                r.geomean,
                r.ratio,
                r.ratio_ci_low,
                r.ratio_ci_high,
                r.p_value,
                r.p_adjusted,
                r.p_equivalence,
                r.p_equivalence_adjusted,
                r.verdict,
                r.reps_needed,
                r.effective_job_sha256,
                r.steady,
                r.unsteady,
                r.steady_unknown,
                r.outliers,
                r.flagged,
                r.notes,
            )  # fmt: skip
            for r in result.rows
        ]
        _emit(cols, rows, fmt)
        return
    cols = [result.by, "profile", "job", "dir", "metric", "n", "geomean",
            f"vs {result.baseline} [95% CI]", "p adj", "verdict", "steady"]  # fmt: skip
    rows, notes = [], []
    for r in result.rows:
        word = _MARKS.get(r.verdict, r.verdict)
        if r.verdict == "inconclusive" and r.reps_needed:
            word += f" (n≈{r.reps_needed} for ±{min_effect:.0%})"
        if r.flagged:
            word += f" ⚑{r.flagged}"
        if r.outliers:
            word += f" outliers: {len(r.outliers)}"
        for note in r.notes:
            notes.append(f"{r.group} {r.profile} {r.job_name} {r.direction}: {note}")
        rows.append(
            (r.group, r.profile, r.job_name, r.direction, r.metric, r.n,
             format_value(r.metric, r.geomean),
             "baseline" if r.verdict == "baseline" else ratio_text(
                 r.metric, r.ratio, r.ratio_ci_low, r.ratio_ci_high),
             _p(r.p_adjusted), word, _steady_text(r.steady, r.unsteady))
        )  # fmt: skip
    _emit(cols, rows, fmt)
    method = "Benjamini–Hochberg" if fdr else "Holm"
    click.echo(
        f"ratios: geometric means vs {result.baseline}, 95 % CI unadjusted (Welch on logs); "
        f"p adj: {method} across {len(result.rows)} rows; min effect ±{min_effect:.0%}; "
        "steady: runs whose last 5 s were flat / runs of 5 s or more (n/a: all shorter); "
        "⚑: runs flagged as not alone (runs.flags)",
        err=True,
    )
    for note in dict.fromkeys(notes):
        click.echo(f"note: {note}", err=True)


@click.command(context_settings=CTX)
@lake_option
@format_option()
@filter_options
@click.option("--since", help="Only runs started since: a duration (7d) or ISO date.")
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
    """A metric over time per backend, profile, job and direction; change points marked."""
    from fiolake.aggregator.columns import formatters
    from fiolake.aggregator.trend import trend as metric_trend

    try:
        filt = run_filter(campaign, backends, profile, since)
        with _connect(lake) as handle:
            points = metric_trend(handle, metric, filt=filt, bucket=bucket)
    except FiolakeError as exc:
        raise fail(exc) from exc
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
    if bucket == "day":
        cols, rows = cols[:-1], [r[:-1] for r in rows]
    _emit(cols, rows, fmt, formatters([metric]) if fmt == "table" else None)


@click.command(context_settings=CTX)
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
@click.option("--all", "include_better", is_flag=True, help="Show improvements too.")
def regressions(
    lake: str,
    fmt: str,
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str,
    metrics: tuple[str, ...],
    max_pvalue: float,
    include_better: bool,
) -> None:
    """Where a series of comparable runs changed for the worse (change points).

    \b
    A series is backend × profile × job × direction × effective job × metric in time
    order; change points come from E-Divisive means with a merge pass (as Apache Otava
    does it). Each lists the ratio after/before with its 95 % CI, the p-value, the runs
    on both sides and what changed between them (kernel, fio, job…). Worst first.
      fiolake regressions --since 7d --backend nvme
    """
    from fiolake.aggregator.compare import DEFAULT_METRICS
    from fiolake.aggregator.filters import parse_duration
    from fiolake.aggregator.regressions import regressions as find

    try:
        window = None if since == "all" else parse_duration(since)
        filt = run_filter(campaign, backends, profile)
        with _connect(lake) as handle:
            report = find(
                handle,
                since=window,
                metrics=list(metrics) or list(DEFAULT_METRICS),
                filt=filt,
                max_pvalue=max_pvalue,
                include_better=include_better,
            )
    except FiolakeError as exc:
        raise fail(exc) from exc
    click.echo(
        f"{len(report.rows)} change point(s) in {report.series} series "
        f"({report.too_short} too short to test); p ≤ {max_pvalue:g}",
        err=True,
    )
    cols = ["backend", "profile", "job_name", "direction", "metric", "at", "ratio",
            "ratio_ci_low", "ratio_ci_high", "p_value", "verdict", "n_before", "n_after",
            "run_before", "run_after", "env_changes", "effective_job_sha256"]  # fmt: skip
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
                c.effective_job_sha256,
            )  # fmt: skip
            for c in report.rows
        ]
        _emit(cols, rows, fmt)
        return
    rows = [
        (
            c.backend,
            c.profile,
            c.job_name,
            c.direction,
            c.metric,
            f"{c.at:%Y-%m-%d %H:%M}" if c.at else "---",
            ratio_text(c.metric, c.ratio, c.ratio_ci_low, c.ratio_ci_high),
            _p(c.p_value),
            _MARKS.get(c.verdict, c.verdict),
            f"{c.n_before}/{c.n_after}",
            f"{c.run_before} → {c.run_after}",
            "; ".join(c.env_changes) or "---",
        )  # fmt: skip
        for c in report.rows
    ]
    _emit(["backend", "profile", "job", "dir", "metric", "at", "after/before [95% CI]", "p",
           "verdict", "n before/after", "runs", "what changed"], rows, fmt)  # fmt: skip
