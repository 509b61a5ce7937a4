"""`saturation`: how much load each backend takes before its latency breaks — IOPS at a
latency SLO per backend × sweep × direction, with a bootstrap interval and a verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from fiolake.cli import format_option, lake_option
from fiolake.cli.common import connect
from fiolake.cli.comparisons import filter_options, min_effect_option, run_filter
from fiolake.cli.output import emit
from fiolake.errors import UsageProblem

if TYPE_CHECKING:
    from fiolake.aggregator.stats.saturation import Saturation, SaturationReport
    from fiolake.aggregator.stats.slo import Slo

KNOBS = ("rate_iops", "iodepth", "numjobs", "bs")  # rows.sweeps.LOAD_KNOBS (checked in tests)
DEFAULT_SLO = "p99<=1ms"


class SloParam(click.ParamType):
    """`p99<=1ms` -> Slo; the parser's message when it is not one."""

    name = "SLO"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Slo:
        from fiolake.aggregator.stats.slo import Slo, parse_slo

        if isinstance(value, Slo):
            return value
        try:
            return parse_slo(str(value))
        except UsageProblem as exc:
            self.fail(str(exc), param, ctx)


def slo_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--slo, shared by saturation, gate and trend (for --metric iops_at_slo)."""
    return click.option(
        "--slo",
        type=SloParam(),
        default=DEFAULT_SLO,
        show_default=True,
        help="Latency objective: a clat percentile (p50, p99, p99.9) at or below a limit.",
    )(fn)


def _record(report: SaturationReport, s: Saturation, full: bool) -> dict[str, Any]:
    from fiolake.aggregator.report.saturation_text import row_for

    row = row_for(report, s)
    out: dict[str, Any] = {
        "backend": s.group, "profile": s.profile, "knob": s.knob, "direction": s.direction,
        "workload_sha256": s.workload_sha256, "slo": report.slo.text(),
        "runs": s.runs, "iops_at_slo": s.iops_at_slo, "status": s.status,
        "ci_low": s.ci_low, "ci_high": s.ci_high,
        "knee_load": s.knee.load if s.knee else None, "knee_iops": s.knee.iops if s.knee else None,
        "baseline": report.baseline,
    }  # fmt: skip
    for name in ("ratio", "ratio_ci_low", "ratio_ci_high", "p_value", "p_adjusted",
                 "p_equivalence", "p_equivalence_adjusted", "verdict", "reps_needed"):  # fmt: skip
        out[name] = getattr(row, name) if row else None
    out["notes"] = "; ".join(row.notes) if row else ""
    out["family"] = report.family
    if full:  # json: every number, the curve and each run's own value too
        out["curve"] = [asdict(p) for p in s.curve]
        out["per_run"] = {r: {"iops_at_slo": v, "status": c} for r, (v, c) in s.per_run.items()}
    return out


@click.command()
@lake_option
@format_option()
@filter_options
@slo_option
@click.option(
    "--by",
    "knob",
    type=click.Choice(KNOBS),
    help="Only sweeps that step this knob (default: every load sweep).",
)
@click.option("--baseline", help="Backend the others are set against (default: first by name).")
@min_effect_option
def saturation(
    lake: str,
    fmt: str,
    campaign: str | None,
    backends: tuple[str, ...],
    profile: str | None,
    slo: Slo,
    knob: str | None,
    baseline: str | None,
    min_effect: float,
) -> None:
    """IOPS at a latency SLO per backend, sweep and direction, with a 95 % interval.

    \b
    A load sweep is a profile whose sections step one knob (rate_iops, iodepth, numjobs,
    bs), e.g. latency-at-load or iodepth-sweep. Per backend × sweep × direction: the
    curve (medians over runs), its knee (Kneedle), and the largest IOPS whose percentile
    meets the SLO, interpolated on log–log scales between the loads tested and never
    extrapolated ("< first tested", "≥ last tested"), with a percentile-bootstrap 95 %
    interval over the runs. Backends are set against --baseline with the verdicts of
    `compare` (ratio, Welch on logs, Holm). docs/analysis.md explains the number.
      fiolake saturation --profile latency-at-load --slo 'p99<=1ms'
      fiolake saturation --by iodepth --slo 'p99.9<=5ms' --format json
    """
    from fiolake.aggregator.lake.lake import SUMMARY_TABLES
    from fiolake.aggregator.report.saturation_text import iops_text, knee_text, sentences, verdict
    from fiolake.aggregator.stats.saturation import saturation as find

    filt = run_filter(campaign, backends, profile)
    with connect(lake, SUMMARY_TABLES) as handle:
        report = find(handle, slo, filt=filt, knob=knob, baseline=baseline, min_effect=min_effect)
    records = [_record(report, s, fmt == "json") for s in report.results]
    if fmt != "table":
        emit(list(records[0]), [list(r.values()) for r in records], fmt)
        return
    from fiolake.aggregator.lake.columns import p_text, ratio_text
    from fiolake.aggregator.report.saturation_text import row_for

    rows = []
    for s in report.results:
        r = row_for(report, s)
        judged = (
            (ratio_text("iops", r.ratio, r.ratio_ci_low, r.ratio_ci_high),
             p_text(r.p_adjusted), verdict(r, min_effect)) if r else ("baseline", "", "")
        )  # fmt: skip
        rows.append((s.group, s.profile, s.knob, s.direction, s.runs, iops_text(s),
                     knee_text(s), *judged))  # fmt: skip
    emit(["backend", "profile", "sweep", "dir", "runs", f"IOPS at {slo.text()} [95% CI]", "knee",
          f"vs {report.baseline} [95% CI]", "p adj", "verdict"], rows, "table")  # fmt: skip
    for line in sentences(report, min_effect):
        click.echo(line, err=True)
    click.echo(f"family: {report.family}", err=True)
