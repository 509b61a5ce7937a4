"""Commands that read the lake: sql, compare, trend, regressions, env-diff, lake, app."""

from __future__ import annotations

import click

from fiolake.cli import fail, format_option, lake_option
from fiolake.errors import FiolakeError
from fiolake.output import render


def _connect(lake: str):  # noqa: ANN202 - aggregator.lake.Lake, imported lazily
    from aggregator.lake import connect
    from fiolake.config import s3_settings

    return connect(lake, s3_settings() if lake.startswith("s3://") else None)


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
