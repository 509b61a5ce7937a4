"""What the HTML report shows beyond the gate's rows: latency percentile curves and
per-second series of both sides for the rows' jobs, and the environment of one
representative run of each side with their differences. Read from the lake once, so
`gate_report.html_report` only formats (the CLI and the app's Gate page both call
`report_data`, then `html_report`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from fiolake.aggregator.rows.envdiff import EnvDifference, env_diff, environment
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.latency import PercentilePoint, percentile_curves
from fiolake.aggregator.rows.series import SeriesPoint, fetch_rows, per_second
from fiolake.aggregator.stats.baselines import window_runs
from fiolake.aggregator.stats.saturation import SaturationReport, saturation
from fiolake.aggregator.stats.slo import DEFAULT_SLO, parse_slo
from fiolake.errors import LakeError

if TYPE_CHECKING:
    from fiolake.aggregator.lake.lake import Lake
    from fiolake.aggregator.stats.gate import GateResult

NEW, BASELINE = 0, 1  # index of a side in the pairs below
# Per-second lines per side and job: the newest few runs (a chart of 20 lines says less).
SERIES_RUNS = 3

# (backend, profile, job_name, direction) of a gate row.
Case = tuple[str, str, str, str]


@dataclass(frozen=True)
class SideRun:
    """One ok run of one side of the comparison."""

    run_id: str
    backend: str
    profile: str


@dataclass(frozen=True)
class ReportData:
    """The lake's data behind the report's charts and environment table."""

    cases: list[Case]  # the rows' jobs, in the rows' order (worst first)
    # Per case: (new side's, baseline's) — clat percentiles; per-second points of a few runs.
    curves: dict[Case, tuple[list[PercentilePoint], list[PercentilePoint]]]
    series_metric: str
    series: dict[Case, tuple[list[SeriesPoint], list[SeriesPoint]]]
    env_runs: tuple[str, str] | None = None  # (new run, baseline run)
    environment: list[tuple[str, Any, Any]] = field(default_factory=list)  # field, new, base
    differences: list[EnvDifference] = field(default_factory=list)
    saturation: SaturationReport | None = None  # the new campaign's load sweeps, if any


def side_runs(lake: Lake, result: GateResult) -> tuple[list[SideRun], list[SideRun]]:
    """The ok runs of each side (new, baseline), newest first: the campaigns' runs, or
    for a window baseline the runs `gate` compared against (`window_runs`)."""
    sql = """SELECT run_id, backend, profile FROM runs WHERE status = 'ok' AND {cond}
             ORDER BY started_at DESC, run_id"""
    new = fetch_rows(lake, sql.format(cond="campaign_id = ?"), [result.campaign])
    if result.baseline_kind == "window":
        ids = [r for ids in window_runs(lake, result.campaign, _since(result)).values()
               for r in ids]  # fmt: skip
        marks = ", ".join("?" * len(ids)) or "NULL"
        base = fetch_rows(lake, sql.format(cond=f"run_id IN ({marks})"), ids)
    else:
        base = fetch_rows(lake, sql.format(cond="campaign_id = ?"), [result.baseline])
    return [SideRun(*r) for r in new], [SideRun(*r) for r in base]


def _since(result: GateResult) -> str:
    return result.baseline.removeprefix("since:")


def report_data(lake: Lake, result: GateResult) -> ReportData:
    """Curves, series and environments for the report of `result` (see `ReportData`)."""
    cases = list(dict.fromkeys((g.backend, g.row.profile, g.row.job_name, g.row.direction)
                               for g in result.rows))  # fmt: skip
    runs = side_runs(lake, result)
    wanted = set(cases)
    curves: dict[Case, tuple[list[PercentilePoint], list[PercentilePoint]]] = defaultdict(
        lambda: ([], [])
    )
    series: dict[Case, tuple[list[SeriesPoint], list[SeriesPoint]]] = defaultdict(lambda: ([], []))
    metrics = {g.row.metric for g in result.rows}
    metric = "bw_bytes" if "bw_bytes" in metrics and "iops" not in metrics else "iops"
    for side, side_list in enumerate(runs):
        for profile in dict.fromkeys(c[1] for c in cases):
            ids = tuple(r.run_id for r in side_list if r.profile == profile)
            if not ids:
                continue
            # A campaign by its id: a filter by run ids checks each id (one query each).
            by_campaign = side == NEW or result.baseline_kind == "campaign"
            chosen = (result.campaign, result.baseline)[side] if by_campaign else None
            filt = RunFilter(campaign=chosen, runs=() if by_campaign else ids, profile=profile)
            for p in percentile_curves(lake, filt):
                case = (p.backend, profile, p.job_name, p.direction)
                if case in wanted:
                    curves[case][side].append(p)
        for backend, profile in dict.fromkeys((c[0], c[1]) for c in cases):
            newest = [r.run_id for r in side_list if (r.backend, r.profile) == (backend, profile)]
            for s in per_second(lake, newest[:SERIES_RUNS], metric):
                case = (s.backend, profile, s.job_name, s.direction)
                if case in wanted:
                    series[case][side].append(s)
    data = ReportData(cases, dict(curves), metric, dict(series))
    return replace(_with_environment(lake, data, runs, cases), saturation=_sweeps(lake, result))


def _sweeps(lake: Lake, result: GateResult) -> SaturationReport | None:
    """IOPS at the gate's SLO (default p99 ≤ 1 ms) of the new campaign's load sweeps."""
    try:
        return saturation(lake, result.slo or parse_slo(DEFAULT_SLO),
                          filt=RunFilter(campaign=result.campaign),
                          min_effect=result.min_effect)  # fmt: skip
    except LakeError:  # the campaign ran no load sweep
        return None


def _with_environment(
    lake: Lake, data: ReportData, runs: tuple[list[SideRun], list[SideRun]], cases: list[Case]
) -> ReportData:
    """One representative run per side — the newest new run of the worst row's backend
    and profile, and the newest baseline run most like it — their environments and diff."""
    if not runs[NEW] or not runs[BASELINE]:
        return data
    first = (cases[0][0], cases[0][1]) if cases else None
    new = next((r for r in runs[NEW] if (r.backend, r.profile) == first), runs[NEW][0])
    base = min(
        runs[BASELINE],  # newest first, so min keeps the newest of the best-matching ones
        key=lambda r: (r.backend != new.backend, r.profile != new.profile),
    )
    a, b = environment(lake, new.run_id), environment(lake, base.run_id)
    fields = list(dict.fromkeys([*a, *b]))
    return ReportData(
        data.cases,
        data.curves,
        data.series_metric,
        data.series,
        (new.run_id, base.run_id),
        [(f, a.get(f), b.get(f)) for f in fields],
        env_diff(lake, new.run_id, base.run_id),
    )
