"""Commands that look after the lake: `lake compact|prune|check` (`app`: fiolake.cli.app)."""

from __future__ import annotations

from time import monotonic

import click

from fiolake.cli import format_option, lake_option
from fiolake.cli.common import connect
from fiolake.cli.output import emit
from fiolake.errors import LakeError
from fiolake.layout import TABLES
from fiolake.store import LocalStore
from fiolake.units import human_ns


def _took(started: float) -> str:
    """' in 1.25 s': how long a lake command worked, for the line that says it finished
    (a lake grows every night: an operator watches this figure grow with it)."""
    return f" in {human_ns((monotonic() - started) * 1e9)}"


@click.group()
def lake() -> None:
    """Lake hygiene: compact small files, prune old per-second rows, check consistency."""


@lake.command("compact")
@lake_option
@click.option(
    "--table",
    "tables",
    multiple=True,
    type=click.Choice(list(TABLES)),
    help="Only these tables (repeatable; default all).",
)
@click.option(
    "--grace",
    default="1h",
    show_default=True,
    help="Keep superseded compacted files this long for readers still using them.",
)
@click.option(
    "--wait",
    is_flag=True,
    help="If another compaction is running, wait for it instead of exiting 1.",
)
@click.option(
    "--full-listing",
    is_flag=True,
    help="List every commit marker now, not only the commit log (done weekly by itself).",
)
def compact(lake: str, tables: tuple[str, ...], grace: str, wait: bool, full_listing: bool) -> None:
    """Append committed runs to the lake's Delta Lake tables (compacted/delta/).

    Any Delta reader (DuckDB delta_scan, polars, Spark, Trino) then sees exactly the
    runs compacted so far. Safe to interrupt and re-run; results/ and commits/ are
    never modified. Needs credentials that may write (and delete) under compacted/.

    One compaction runs at a time (a lock object under compacted/): a second one exits
    1 with "compaction already running on <host> since <time>", or waits with --wait.
    A compactor killed mid-run leaves a lock that expires within a minute.

    New commits are found in the commit log, so a night's compaction costs the same
    in a year-old lake as in a new one. Once a week (or with --full-listing) it lists
    every commit marker instead, to find commits without a log entry: those of runners
    older than the log, or of one that died between its commit and its log entry.
    Queries see such a run only after that listing.

    \b
    Examples:
      fiolake lake compact --lake s3://bench-lake
      fiolake lake compact --lake s3://bench-lake --wait --grace 0s
    """
    from datetime import timedelta

    from fiolake.aggregator.lake.compact import compact as run_compaction
    from fiolake.config import Settings
    from fiolake.units import parse_duration

    store = Settings.from_env(lake=lake).writable_store()
    if isinstance(store, LocalStore) and not store.root.is_dir():
        # A nightly job on a mistyped path would say "nothing to compact" for ever.
        raise LakeError(
            f"no lake at {store.url} — check --lake (or FIOLAKE_LAKE); a lake begins with "
            "`fiolake run` or a runner's first upload"
        )
    started = monotonic()
    report = run_compaction(
        store,
        tables=tables or TABLES,
        grace=timedelta(seconds=parse_duration(grace, unit_required=True, allow_zero=True)),
        wait=wait,
        on_wait=lambda why: click.echo(f"waiting: {why}", err=True),
        full_listing=full_listing,
    )
    listing = "every commit marker listed" if report.full_listing else "commit log read"

    if report.generation is None:
        click.echo(
            "nothing to compact: every committed run is already compacted "
            f"({listing}; checked{_took(started)})",
            err=True,
        )
    else:
        runs = sum(m.new_runs for m in report.merged)
        click.echo(
            f"generation {report.generation}: appended {runs} run(s) × table to "
            f"{len(report.merged)} Delta table(s); {report.commits} commit(s) indexed "
            f"({listing}){_took(started)}",
            err=True,
        )
        if report.migrated:
            click.echo("migrated the merged files of the earlier layout into Delta", err=True)
        if report.cases_folded:
            click.echo(f"case summaries: folded in {report.cases_folded} run(s)", err=True)
        if report.unlogged:
            click.echo(
                f"note: {report.unlogged} new commit(s) have no commit-log entry (runners older "
                "than this fiolake?): queries list every marker until a compaction finds all "
                "new commits logged — upgrade the runners",
                err=True,
            )
    if report.removed:
        click.echo(f"removed {len(report.removed)} superseded compacted object(s)", err=True)
    for problem in report.cleanup_errors:
        click.echo(f"warning: cleanup: {problem}", err=True)


def _days(ctx: click.Context, param: click.Parameter, value: str) -> float:
    from fiolake.errors import UsageProblem
    from fiolake.units import parse_duration

    try:
        return parse_duration(value, unit_required=True)
    except UsageProblem as exc:  # a bad option value: click's own usage error (exit 2)
        raise click.BadParameter(str(exc)) from None


@lake.command("prune")
@lake_option
@click.option(
    "--keep-timeseries",
    "keep",
    required=True,
    callback=_days,
    help="Keep per-second rows of runs that started within this window (e.g. 90d).",
)
def prune(lake: str, keep: float) -> None:
    """Delete compacted per-second rows (timeseries) of runs older than a window.

    Summaries (runs, results, percentiles, …) stay forever; commits/ and results/ are
    never touched. The rows go in one Delta DELETE (every Delta reader sees the table
    before or after it), then a new generation: safe to interrupt — run it (or
    `lake compact`) again. Needs the compactor's credentials. Example:

      fiolake lake compact && fiolake lake prune --keep-timeseries 90d
    """
    from datetime import UTC, datetime, time, timedelta

    from fiolake.aggregator.lake.prune import prune_timeseries
    from fiolake.config import Settings
    from fiolake.timetext import iso_utc

    store = Settings.from_env(lake=lake).writable_store()
    started = monotonic()
    report = prune_timeseries(store, timedelta(seconds=keep))
    # The cutoff is a UTC day; said as the instant it starts, so no one reads local time.
    cutoff = datetime.combine(report.cutoff, time(), tzinfo=UTC)
    click.echo(
        f"deleted {report.deleted_rows} timeseries row(s) of runs started before "
        f"{iso_utc(cutoff, 'minutes')}; {report.rows} row(s) kept"
        + (f"; generation {report.generation}" if report.generation is not None else "")
        + f"; done{_took(started)}",
        err=True,
    )


@lake.command("check")
@lake_option
@format_option()
@click.option(
    "--store",
    "store_probe",
    is_flag=True,
    help="Check the object store instead: does it honour conditional writes (the store "
    "probe, step by step; exit 2 if not)?",
)
@click.option(
    "--recheck", is_flag=True, help="With --store: probe again even if a verdict is cached."
)
def check(lake: str, fmt: str, store_probe: bool, recheck: bool) -> None:
    """Check that every committed run has its rows and raw fio output (exit 1 if not).

    With --store, run the store probe on a scratch prefix of the lake (removed after) and
    print each request and the store's answer: create with If-None-Match: *, a second
    create, If-Match with a stale and the current ETag, 8 parallel creates of one key.
    Every command that writes an S3 lake runs it first (docs/stores.md).
    """
    if store_probe:
        _check_store(lake, fmt, recheck)
        return
    if recheck:
        raise click.UsageError("--recheck goes with --store — add --store")
    from fiolake.aggregator.lake.check import check_lake

    started = monotonic()
    with connect(lake, kept_rows=False) as handle:  # the lake's own files, not copies
        problems = check_lake(handle)
        runs = handle.snapshot.commits.num_rows
    if not problems:
        click.echo(
            f"ok: {runs} committed run(s), nothing missing (checked{_took(started)})", err=True
        )
        return
    rows = [(p.job_id, p.run_id, p.status, p.problem) for p in problems]
    emit(["job_id", "run_id", "status", "problem"], rows, fmt)
    click.echo(
        f"{len(problems)} problem(s) in {runs} committed run(s) (checked{_took(started)})",
        err=True,
    )
    raise click.exceptions.Exit(1)


def _check_store(lake: str, fmt: str, recheck: bool) -> None:
    """`lake check --store`: the probe's steps on stdout, the verdict on stderr."""
    import json

    from fiolake.config import Settings
    from fiolake.store import S3Store
    from fiolake.storeprobe import check_store

    settings = Settings.from_env(lake=lake)
    store = settings.store()
    if not isinstance(store, S3Store):
        click.echo(
            f"ok: {store.url} is a local directory — fiolake's own create-only and "
            "compare-and-swap writes, no store probe needed",
            err=True,
        )
        return
    report = check_store(store, settings.probe_cache, recheck=recheck)
    if fmt == "json":
        click.echo(json.dumps(report.as_json(), indent=2))
    else:
        rows = [(s.name, s.sent, s.got, s.expected, "ok" if s.ok else "WRONG")
                for s in report.steps]  # fmt: skip
        emit(["step", "sent", "got", "expected", "verdict"], rows, fmt)
    if not report.passed:
        raise report.refusal()
    how = (
        f"cached from {report.checked_at} (--recheck to probe again)"
        if report.cached
        else f"probed in {report.elapsed_s:.2f} s"
    )
    click.echo(
        f"ok: s3://{report.bucket} at {report.endpoint} honours If-None-Match and If-Match; {how}",
        err=True,
    )
