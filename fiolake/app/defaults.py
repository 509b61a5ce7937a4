"""What the Latency, Timeseries and Trends pages show before anyone picks: their default
selections, computed in one place so that the server's warm-up (`serve.warm_pages`) asks
the library exactly what a first visit asks (the same cache keys)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fiolake.aggregator.rows import latency
from fiolake.aggregator.rows.filters import RunFilter

SWEEP_PROFILE = "iodepth-sweep"  # the sweep shown first when the lake has it
TIMESERIES_RUNS = 4  # runs overlaid by default


def newest_per_backend(runs: Sequence[Sequence[Any]], profile: str | None) -> list[str]:
    """The newest run of each backend in `profile`, newest first, at most TIMESERIES_RUNS
    (`runs`: `series.recent_runs`' rows, newest first)."""
    newest: dict[str, str] = {}
    for run in runs:
        if run[2] == profile and run[1] not in newest:
            newest[run[1]] = run[0]
    return list(newest.values())[:TIMESERIES_RUNS]


def latency_filter(backends: Sequence[str], profile: str, campaign: str | None) -> RunFilter:
    """The runs the Latency page's curves and bins show."""
    return RunFilter(backends=tuple(backends), profile=profile, campaign=campaign)


def sweep_index(sweeps: Sequence[str]) -> int:
    """Which sweep profile the Latency page shows first."""
    return list(sweeps).index(SWEEP_PROFILE) if SWEEP_PROFILE in sweeps else 0


def profile_filter(backends: Sequence[str], profile: str) -> RunFilter:
    """Every run of `profile` on `backends`: the Latency page's sweep chart, and the
    Trends page's chart before its span."""
    return RunFilter(backends=tuple(backends), profile=profile)


DEFAULT_LAT_TYPE = latency.LAT_TYPES[0]


# The Trends page's spans, and the one it opens on.
SPANS: dict[str, int | None] = {"30 days": 30, "90 days": 90, "365 days": 365, "all": None}
TRENDS_SPAN = "90 days"


def trends_metric_index(metrics: Sequence[str]) -> int:
    """Which metric the Trends page shows first: IOPS where the lake has it."""
    return list(metrics).index("iops") if "iops" in metrics else 0
