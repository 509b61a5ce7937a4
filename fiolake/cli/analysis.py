"""Commands that read the lake: sql, env-diff, lake, app (compare & co: cli.comparisons)."""

from __future__ import annotations

import click

from fiolake.cli import format_option, lake_ops, lake_option
from fiolake.cli.common import connect
from fiolake.cli.output import emit
from fiolake.views import views_help

# \b keeps click from re-wrapping the lines that follow it.
SQL_HELP = f"""Run one read-only SQL QUERY over the lake views.

\b
Views (the lake tables hold committed runs only; columns in fiolake/schema.py):
{views_help()}

Raw units in the data: bytes, B/s, ns; the table format shows human units for
known columns.

\b
  fiolake sql "SELECT backend, avg(iops) FROM results GROUP BY backend"
"""


@click.command(help=SQL_HELP)
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
    """Run one read-only SQL query over the lake views (help: SQL_HELP)."""
    from fiolake.aggregator.lake.columns import formatters
    from fiolake.aggregator.lake.query import run_query

    with connect(lake) as handle:
        result = run_query(handle, query, row_limit=max_rows, timeout_s=timeout_s)
    fmts = formatters(result.columns) if fmt == "table" else None
    emit(result.columns, result.rows, fmt, fmts)
    if result.truncated:
        click.echo(
            f"truncated: showing the first {max_rows} rows (raise --max-rows or add LIMIT)",
            err=True,
        )


@click.command("env-diff")
@lake_option
@format_option()
@click.option("--run", "runs", multiple=True, required=True, help="Run id (give exactly two).")
def env_diff(lake: str, fmt: str, runs: tuple[str, ...]) -> None:
    """How the recorded environments of two runs differ (kernel, fs, device, labels…)."""
    from fiolake.aggregator.lake.columns import format_value
    from fiolake.aggregator.rows.envdiff import env_diff as diff_runs

    if len(runs) != 2:
        raise click.UsageError(f"give exactly two --run options (got {len(runs)})")
    with connect(lake) as handle:
        diffs = diff_runs(handle, runs[0], runs[1])
    if not diffs:
        click.echo("no environment differences", err=fmt == "table")
        if fmt == "table":
            return
    if fmt == "table":
        rows = [(d.field, format_value(d.field, d.a), format_value(d.field, d.b)) for d in diffs]
    else:
        rows = [(d.field, d.a, d.b) for d in diffs]
    emit(["field", runs[0], runs[1]], rows, fmt)


# `lake` lives in lake_ops; fiolake.cli looks it up here (COMMANDS).
lake = lake_ops.lake
