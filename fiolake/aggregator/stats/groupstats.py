"""What a comparison knows of one group's runs of one case and metric (`runsets`,
`pooled`), and the keys it is filed under."""

from __future__ import annotations

from dataclasses import dataclass, field

from fiolake.aggregator.lake import cases
from fiolake.aggregator.stats import stats

# A side of a case (below or above its median) with `cases.TOP` outliers or more (the
# extremes a side the case summaries keep, 256) is not a few odd runs but a level the
# runs left or reached: a backend 30 % slower from some night on puts a third of its year
# beyond the cut. Such a side is named (`GroupStats.outliers_unlisted`), not listed:
# 1,600 run ids per case tell nothing its change point does not (`fiolake regressions`),
# and listing them meant reading every run of the case (issue 44).
SIDES = ("below", "above")


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
    # Sides ("below", "above" the median) with cases.TOP outliers or more: not listed.
    outliers_unlisted: tuple[str, ...] = ()


def unlisted_note(sides: tuple[str, ...]) -> str:
    """A row's note for the sides whose outliers are not listed."""
    where = " and ".join(sides)
    return (
        f"{cases.TOP}+ outliers {where} the median, not listed: the level changed "
        "within these runs (`fiolake regressions` says when)"
    )


def listed_outliers(below: list[str], above: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """The outliers to list, sorted, and the sides not listed: each side's run ids unless
    it has cases.TOP of them or more (the rule both summaries apply)."""
    listed: list[str] = []
    unlisted: list[str] = []
    for side, runs in zip(SIDES, (below, above), strict=True):
        if len(runs) >= cases.TOP:
            unlisted.append(side)
        else:
            listed += runs
    return sorted(listed), tuple(unlisted)


Case = tuple[str, str, str, str | None]  # profile, job_name, direction, workload
Data = dict[tuple[str, Case], dict[str, GroupStats]]
