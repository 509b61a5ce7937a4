"""`compare`: ratios with CIs and verdicts; the options and formatting it shares with
`trend` and `regressions` (cli.timeline)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from fiolake.aggregator.lake.columns import p_text, ratio_text
from fiolake.aggregator.stats.verdict_text import label
from fiolake.cli import format_option, lake_option
from fiolake.cli.common import connect
from fiolake.cli.output import emit
from fiolake.units import MISSING

if TYPE_CHECKING:
    from collections.abc import Callable

    from fiolake.aggregator.rows.filters import RunFilter


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


def min_effect_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--min-effect, shared by compare and gate."""
    return click.option(
        "--min-effect",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.05,
        show_default=True,
        help="Smallest ratio change that matters (0.05 = ±5 %): bigger and significant is "
        "better/worse; shown to be smaller is equivalent.",
    )(fn)


def run_filter(
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    since: str | None = None,
    runs: tuple[str, ...] = (),
) -> RunFilter:
    """The RunFilter the options describe."""
    from fiolake.aggregator.rows.filters import RunFilter
    from fiolake.timetext import parse_time

    when = parse_time(since) if since else None
    return RunFilter(campaign, tuple(backends), profile, tuple(runs), when)


def spread_text(low: float | None, high: float | None) -> str:
    """The repetitions' range as max/min − 1 (`12 %`): shown beside every row, since
    outliers are judged only from five repetitions up."""
    if low is None or high is None or low <= 0:
        return MISSING
    return f"{(high / low - 1) * 100:.0f} %"


def steady_text(steady: int, unsteady: int, unknown: int) -> str:
    """`2/3` runs at steady state (of those judged); `unknown` when runs were too short."""
    if steady + unsteady == 0:
        return "unknown" if unknown else MISSING
    return f"{steady}/{steady + unsteady}" + (f" ({unknown} unknown)" if unknown else "")


def since_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--since for compare and trend (regressions has its own default)."""
    return click.option("--since", help="Only runs started since: a duration (7d) or ISO date.")(fn)


@click.command()
@lake_option
@format_option()
@filter_options
@since_option
@click.option("--run", "runs", multiple=True, help="Compare these runs directly (give two).")
@click.option("--by", default="backend", show_default=True, help="Group runs by this column.")
@click.option("--baseline", help="Group to compare against (default: the first).")
@metric_option
@min_effect_option
@click.option(
    "--fdr",
    is_flag=True,
    help="Adjust p-values by Benjamini–Hochberg (false discovery rate) instead of Holm.",
)
@click.option(
    "--family",
    type=click.Choice(["question", "metric", "profile", "table"]),
    default="question",
    show_default=True,
    help="What p-values are adjusted across: the whole question (selected runs × baseline "
    "× default metrics; --backend/--profile/--metric only hide rows), or on purpose each "
    "metric, each profile, or just the shown table (docs/statistics.md).",
)
@click.option(
    "--allow-mixed",
    is_flag=True,
    help="Pool runs whose workloads differ (e.g. other --runtime); every row says so.",
)
@click.option(
    "--exclude-unsteady", is_flag=True, help="Leave out runs whose last 5 s were not steady."
)
@click.option(
    "--gang",
    "gang_mode",
    type=click.Choice(["auto", "aggregate", "members", "off"]),
    default="auto",
    show_default=True,
    help="Gang jobs (publish --gang): their aggregates across backends and gang sizes, or "
    "their member runs; auto = aggregates when the selected runs are gang members.",
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
    family: str,
    allow_mixed: bool,
    exclude_unsteady: bool,
    gang_mode: str,
) -> None:
    """Compare backends (or runs): ratios of geometric means with 95 % CIs, and a verdict.

    \b
    Per profile × job × direction × metric, each group's repetitions are summarised by
    their geometric mean and set against the baseline as a ratio with a 95 % CI (Welch
    on log values; unadjusted). p-values (difference, and equivalence within
    ±--min-effect) are adjusted across the question's family (Holm; --fdr for BH): the
    selected campaign/runs × baseline × the default metrics, whatever --backend,
    --profile or --metric hide; --family narrows it on purpose. Verdict: better/worse
    (significant and bigger than --min-effect), equivalent, or inconclusive with the
    repetitions per side that would decide it. Runs of different workloads are
    never pooled unless --allow-mixed. docs/statistics.md has every formula.
    Over every run (no --campaign, --run or --since) the answer comes from the
    summaries `lake compact` keeps: the same numbers and verdicts, but outliers judged
    against a histogram's median and MAD (runs within 0.14 % of the cut may differ);
    add --since 2000-01-01 to fold every run and list them exactly. A side of the median
    with 256 outliers or more is named, not listed (a level that changed: see
    `fiolake regressions`).
      fiolake compare --campaign nightly --backend nvme --backend ceph
      fiolake compare --run RUN_A --run RUN_B --format json
      fiolake compare --campaign c-20261123-113827-952b --gang members
    """
    from fiolake.aggregator.lake import gang
    from fiolake.aggregator.lake.columns import format_value
    from fiolake.aggregator.lake.lake import SUMMARY_TABLES

    filt = run_filter(campaign, backends, profile, since, runs)
    if gang_mode in ("members", "aggregate"):
        _emit_gangs(lake, filt, members=gang_mode == "members", fmt=fmt)
        return
    # `gang_members` reads only `runs`
    with connect(lake, SUMMARY_TABLES, meanwhile=["fiolake.aggregator.stats.compare"]) as handle:
        from fiolake.aggregator.stats.compare import DEFAULT_METRICS
        from fiolake.aggregator.stats.compare import compare as compare_runs

        gen = handle.compacted
        known = 0 if gen is None else gen.gang_runs  # gang members among compacted runs
        if gang_mode == "auto" and gang.has_gangs(handle.con, filt, compacted_gang_runs=known):
            result = None
        else:
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
                family=family,
            )
    if result is None:
        _emit_gangs(lake, filt, members=False, fmt=fmt)
        return
    if fmt != "table":
        fields = ["profile", "job_name", "direction", "metric", "baseline", "n", "n_baseline",
                  "geomean", "ratio", "ratio_ci_low", "ratio_ci_high", "p_value", "p_adjusted",
                  "p_equivalence", "p_equivalence_adjusted", "verdict", "reps_needed",
                  "reps_to_confirm", "reps_for_equivalence",
                  "workload_sha256", "steady", "unsteady", "steady_unknown", "outliers",
                  "outliers_unlisted",
                  "flagged", "preconditioned", "notes", "family"]  # fmt: skip
        shared = {"baseline": result.baseline, "family": result.family}
        rows = [
            (r.group, *(shared[f] if f in shared else getattr(r, f) for f in fields))
            for r in result.rows
        ]
        emit([result.by, *fields], rows, fmt)
        return
    cols = [result.by, "profile", "job", "dir", "metric", "n", "geomean", "spread",
            f"vs {result.baseline} [95% CI]", "p adj", "verdict", "steady", "precond"]  # fmt: skip
    rows = []
    for r in result.rows:
        word = label(r, min_effect)
        if r.flagged:
            word += f" ⚑{r.flagged}"
        if r.outliers:
            word += f" outliers: {len(r.outliers)}"
        rows.append(
            (r.group, r.profile, r.job_name, r.direction, r.metric, r.n,
             format_value(r.metric, r.geomean), spread_text(r.min, r.max),
             "baseline" if r.verdict == "baseline" else ratio_text(
                 r.metric, r.ratio, r.ratio_ci_low, r.ratio_ci_high),
             p_text(r.p_adjusted), word, steady_text(r.steady, r.unsteady, r.steady_unknown),
             f"{r.preconditioned}/{r.n}", "; ".join(r.notes))
        )  # fmt: skip
    if any(r.notes for r in result.rows):  # split or pooled jobs, fio versions: per row
        cols.append("note")
    else:
        rows = [row[:-1] for row in rows]
    emit(cols, rows, fmt)
    click.echo(
        f"family: {result.family}; "
        f"ratios: geometric means vs {result.baseline}, 95 % CI unadjusted (Welch on logs); "
        f"min effect ±{min_effect:.0%}; "
        "spread: max/min − 1 of the repetitions; steady: runs at steady state / runs judged "
        "(runs shorter than 5 s: unknown); precond: runs preconditioned (--precondition) / "
        "runs; "
        "⚑: runs flagged as not alone",
        err=True,
    )


def _number(value: float | None, template: str) -> str:
    return MISSING if value is None else template.format(value)


def _emit_gangs(lake: str, filt: Any, *, members: bool, fmt: str) -> None:
    """The gang aggregate table (or member rows) of `compare`, from every table's views
    (the gang views read the per-second rows and latency bins too)."""
    from fiolake.aggregator.lake import gang
    from fiolake.aggregator.lake.columns import format_value

    with connect(lake) as handle:  # a new snapshot: commits since the check are shown too
        con = handle.con
        if members:
            emit(list(gang.MEMBER_COLUMNS), gang.gang_member_rows(con, filt), fmt)
            return
        rows = gang.gang_comparison(con, filt)
    if fmt != "table":
        emit(list(gang.COMPARISON_COLUMNS), rows, fmt)
        return
    cols = ["backend", "gang", "profile", "job", "dir", "skew ms", "first done", "bw",
            "iops", "last done", "bw", "iops", "p50", "p99", "p99.9", "scaling"]  # fmt: skip
    table = [
        (r.backend, r.gang_size, r.profile, r.job_name, r.direction,
         _number(r.start_skew_ms, "{:.1f}"), _number(r.first_done_s, "{} s"),
         format_value("bw_bytes", r.first_done_bw_bytes),
         format_value("iops", r.first_done_iops), _number(r.last_done_s, "{:.2f} s"),
         format_value("bw_bytes", r.last_done_bw_bytes), format_value("iops", r.last_done_iops),
         *(format_value("clat_p99_ns", v) for v in (r.clat_p50_ns, r.clat_p99_ns, r.clat_p999_ns)),
         _number(r.scaling, "{:.2f}x"))
        for r in rows
    ]  # fmt: skip
    emit(cols, table, fmt)
    click.echo(
        "gang aggregates: first done = summed over the seconds every member ran; last done "
        "= until the slowest finished; percentiles from the members' summed json+ bins; "
        "scaling: first-done bandwidth vs the smallest gang of the same backend and job",
        err=True,
    )
