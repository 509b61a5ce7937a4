"""Commands that read the lake: sql, compare, trend, regressions, env-diff, lake, app."""

from __future__ import annotations

import click

from fiolake.cli import fail, format_option, lake_option
from fiolake.errors import FiolakeError
from fiolake.output import render


def _connect(lake: str):  # noqa: ANN202 - aggregator.lake.Lake, imported lazily
    from aggregator.lake import open_lake

    return open_lake(lake)


def _emit(columns: list[str], rows: list, fmt: str, formatters: dict | None = None) -> None:
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
    from aggregator.columns import formatters
    from aggregator.query import run_query

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


def _filter_options(fn):  # noqa: ANN001, ANN202 - click decorator stack
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


def _run_filter(campaign, backends, profile, since, runs=()):  # noqa: ANN001, ANN202
    from aggregator.filters import RunFilter, parse_since

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
def compare(lake, fmt, campaign, backends, profile, since, runs, by, baseline, metrics, alpha):  # noqa: ANN001
    """Compare backends (or runs) per profile, job and direction.

    \b
    Repetitions are summarised as mean ± 95% confidence interval (Student t); each
    group is judged against the baseline with Welch's t-test: ▲ better, ▼ worse,
    no significant difference, or not enough repetitions (n < 2).
      fiolake compare --campaign nightly --backend nvme --backend ceph
      fiolake compare --run RUN_A --run RUN_B
    """
    from aggregator.columns import format_value
    from aggregator.compare import DEFAULT_METRICS
    from aggregator.compare import compare as compare_runs

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
def trend(lake, fmt, campaign, backends, profile, since, metric, bucket):  # noqa: ANN001
    """A metric over time per backend, profile, job and direction."""
    from aggregator.columns import formatters
    from aggregator.trend import trend as metric_trend

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
def regressions(lake, fmt, campaign, backends, profile, since, window, until, metrics, alpha):  # noqa: ANN001
    """Significant slow-downs: the latest window against the trailing history.

    Per backend × profile × job × direction × metric, Welch's t-test between runs in
    the last --window and the rest of --since; biggest slow-downs first.
    """
    from aggregator.columns import format_value
    from aggregator.compare import DEFAULT_METRICS
    from aggregator.filters import RunFilter, parse_duration, parse_since
    from aggregator.trend import regressions as find_regressions

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
def env_diff(lake, fmt, runs):  # noqa: ANN001
    """How the recorded environments of two runs differ (kernel, fs, device, labels…)."""
    from aggregator.columns import format_value
    from aggregator.envdiff import env_diff as diff_runs

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


@click.group()
def lake() -> None:
    """Lake hygiene: compact small files, check consistency."""


@lake.command("compact")
@lake_option
@click.option(
    "--table",
    "tables",
    multiple=True,
    type=click.Choice(["runs", "results", "timeseries", "percentiles"]),
    help="Only these tables (repeatable; default all).",
)
@click.option(
    "--grace",
    default="1h",
    show_default=True,
    help="Keep superseded compacted files this long for readers still using them.",
)
def compact(lake, tables, grace):  # noqa: ANN001
    """Merge committed per-run files into one file per table × date.

    Safe to interrupt and re-run; results/ and commits/ are never modified. Needs
    credentials that may write (and delete) under compacted/.
    """
    from aggregator.compact import compact as run_compaction
    from aggregator.filters import parse_duration
    from fiolake.config import s3_settings
    from fiolake.store import open_store

    try:
        store = open_store(lake, s3_settings() if lake.startswith("s3://") else None)
        report = run_compaction(
            store,
            tables=tables or ("runs", "results", "timeseries", "percentiles"),
            grace=parse_duration(grace),
        )
    except FiolakeError as exc:
        raise fail(exc) from exc
    if report.generation is None:
        click.echo("nothing to compact: every committed run is already compacted", err=True)
    else:
        files = sum(m.new_runs for m in report.merged)
        click.echo(
            f"generation {report.generation}: merged {files} per-run file(s) into "
            f"{len(report.merged)} table × month file(s); {report.commits} commit(s) indexed",
            err=True,
        )
    if report.removed:
        click.echo(f"removed {len(report.removed)} superseded compacted object(s)", err=True)
    for problem in report.cleanup_errors:
        click.echo(f"warning: cleanup: {problem}", err=True)


@lake.command("check")
@lake_option
@format_option()
def check(lake, fmt):  # noqa: ANN001
    """Check that every committed run has its rows and raw fio output (exit 1 if not)."""
    from aggregator.check import check_lake

    try:
        with _connect(lake) as handle:
            problems = check_lake(handle)
            runs = handle.snapshot.commits.num_rows
    except FiolakeError as exc:
        raise fail(exc) from exc
    if not problems:
        click.echo(f"ok: {runs} committed run(s), nothing missing", err=True)
        return
    rows = [(p.job_id, p.run_id, p.status, p.problem) for p in problems]
    _emit(["job_id", "run_id", "status", "problem"], rows, fmt)
    raise click.exceptions.Exit(1)


@click.command()
@lake_option
@click.option("--port", type=click.IntRange(1, 65535), default=8501, show_default=True)
def app(lake, port):  # noqa: ANN001
    """Open the Streamlit app on http://127.0.0.1:PORT (reads the lake, never writes)."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import app as app_package

    home = Path(app_package.__file__).resolve().parent / "Home.py"
    if not home.exists():
        raise click.ClickException(f"the app is not installed: {home} is missing")
    env = dict(os.environ, FIOLAKE_LAKE=lake)
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(home),
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]
    click.echo(f"fiolake app on http://127.0.0.1:{port} (lake {lake}); Ctrl-C stops it", err=True)
    proc = subprocess.Popen(cmd, env=env)
    # A service manager stops us with SIGTERM: pass it on so Streamlit does not linger.
    signal.signal(signal.SIGTERM, lambda signum, _frame: proc.send_signal(signum))
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:
            continue  # the terminal sent SIGINT to Streamlit too; wait for it to exit
    if code not in (0, -signal.SIGTERM, -signal.SIGINT):
        raise click.exceptions.Exit(code)
