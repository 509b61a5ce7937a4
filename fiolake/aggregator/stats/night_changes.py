"""Change points counted in nights: one spike night is an outlier, not a regression.

Runs of one campaign (a night) share its conditions, so three runs of one odd night
are one observation, not three: a segment of three runs inside one night passed
`changepoints.MIN_SIZE` and a single bad night was reported as a change for the worse
(and one for the better the night after). Here the series is first folded to one value
per night (the geometric mean of its runs), change points are sought in that series with
at least `min_segment` nights on each side (Apache Otava PR #150/#152: a minimum segment
length), and each change is mapped back to the first run of the night after it. A night
that stands apart from the other nights of its segment (robust z of its log mean above
`stats.OUTLIER_Z`, from `stats.OUTLIER_MIN_N` nights in the segment) is listed as an
outlier instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fiolake.aggregator.stats import stats
from fiolake.aggregator.stats.changepoints import DEFAULT_MAX_PVALUE, change_points

DEFAULT_MIN_SEGMENT = 3  # nights (campaigns) on each side of a change point


@dataclass(frozen=True)
class NightChanges:
    """A run series' change points and outlier nights."""

    order: list[int]  # run indexes regrouped night by night (nights in order of first run)
    changes: dict[int, float]  # position in `order` of the first run after a change -> p
    outliers: list[tuple[str, int, float]]  # (night, position of its first run, ratio to
    # the median night of its segment)
    nights: int  # nights in the series


def by_night(
    values: Sequence[float],
    nights: Sequence[str],
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_segment: int = DEFAULT_MIN_SEGMENT,
) -> NightChanges:
    """Change points of positive `values` (runs in time order; `nights[i]` the campaign
    of run i) with at least `min_segment` nights each side, and the outlier nights."""
    labels = list(dict.fromkeys(nights))
    members: dict[str, list[int]] = {n: [] for n in labels}
    for i, night in enumerate(nights):
        members[night].append(i)
    order = [i for n in labels for i in members[n]]
    starts = np.cumsum([0, *(len(members[n]) for n in labels)])[:-1]
    logs = np.log(np.asarray(values, dtype=float))
    means = np.array([logs[members[n]].mean() for n in labels])
    changes, outliers = night_points(means, max_pvalue, min_segment)
    return NightChanges(
        order,
        {int(starts[k]): p for k, p in changes.items()},
        [(labels[k], int(starts[k]), ratio) for k, ratio in outliers],
        len(labels),
    )


def night_points(
    means: np.ndarray,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_segment: int = DEFAULT_MIN_SEGMENT,
) -> tuple[dict[int, float], list[tuple[int, float]]]:
    """From the nights' mean logs in night order: the change points (index of the first
    night after each -> p) and the outlier nights (index, ratio to the median night of
    its segment)."""
    found = change_points(np.exp(means), max_pvalue, min_size=min_segment)
    bounds = [0, *sorted(found), len(means)]
    outliers = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        segment = means[lo:hi]
        if len(segment) < stats.OUTLIER_MIN_N:
            continue
        median = float(np.median(segment))
        mad = float(np.median(np.abs(segment - median)))
        if mad > 0:  # the robust z of every night at once (a year's series: 5,000)
            odd = np.flatnonzero(np.abs(0.6745 * (segment - median) / mad) > stats.OUTLIER_Z)
            outliers += [(lo + k, float(np.exp(means[lo + k] - median))) for k in odd.tolist()]
    return found, outliers
