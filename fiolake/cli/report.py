"""`report`: the gate's answer as one self-contained HTML file to attach to a ticket
(`aggregator.report.gate_report`), written whole or not at all (`fiolake.atomic`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from fiolake.aggregator.report.gate_report import html_report
from fiolake.atomic import write_atomic
from fiolake.cli.gate import gate_question

if TYPE_CHECKING:
    from fiolake.aggregator.lake.lake import Lake
    from fiolake.aggregator.report.report_data import ReportData
    from fiolake.aggregator.stats.gate import GateResult


def _report_data(lake: Lake, result: GateResult) -> ReportData:
    """`report_data`, imported when the command runs (its DuckDB stays out of `--help`)."""
    from fiolake.aggregator.report.report_data import report_data

    return report_data(lake, result)


@click.command()
@gate_question(extra=_report_data)
@click.option(
    "-o",
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write (replaced whole, never half-written).",
)
@click.option("--app-url", help="Base URL of `fiolake app`: verdicts link to its Gate page.")
def report(result: GateResult, data: ReportData, out: Path, app_url: str | None) -> None:
    """Write the gate's answer as one self-contained HTML file, for a ticket or an e-mail.

    \b
    The same rows and verdicts as `fiolake gate` (same baseline options), worst first,
    with the answer in words first, the ratio chart with CI whiskers, latency percentile
    curves and per-second series of both sides, their environments and env-diff, and the
    command that reproduces it. Charts are inline SVG; no scripts and no external assets:
    it opens offline. Exit 0 whatever the verdict (the gate decides);
    2 on bad input or nothing comparable.
      fiolake report --campaign B --baseline-campaign A -o report.html
      fiolake report --campaign B --baseline-runs since:7d -o week.html
    """
    write_atomic(out, html_report(result, app_url, data).encode())
    click.echo(
        f"report: {result.campaign} vs {result.baseline}: {len(result.worse)} worse of "
        f"{len(result.rows)} rows -> {out}",
        err=True,
    )
