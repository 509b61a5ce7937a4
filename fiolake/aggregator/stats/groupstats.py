"""What a comparison knows of one group's runs of one case and metric (`runsets`,
`pooled`), and the keys it is filed under."""

from __future__ import annotations

from dataclasses import dataclass, field

from fiolake.aggregator.stats import stats


@dataclass(frozen=True)
class GroupStats:
    """One group's repetitions of one metric, summarised in SQL."""

    n: int
    log: stats.LogSummary | None  # None when a value is zero or negative (no logs)
    min: float | None
    max: float | None
    outliers: list[str]  # run ids (robust z on logs; from OUTLIER_MIN_N runs up)
    steady: int
    unsteady: int
    steady_unknown: int
    flagged: int
    fio_versions: list[str]
    preconditioned: int = 0  # runs that a precondition run prepared (runs.preconditioned_by)
    origins: list[str] = field(default_factory=list)  # runs.origin: 'run', 'import'
    targets: list[str] = field(default_factory=list)  # runs.target_kind: 'dir', 'device'
    file_systems: list[str] = field(default_factory=list)  # runs.fs_type (where known)


Case = tuple[str, str, str, str | None]  # profile, job_name, direction, workload
Data = dict[tuple[str, Case], dict[str, GroupStats]]
