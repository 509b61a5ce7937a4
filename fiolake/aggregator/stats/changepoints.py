"""Change points in a series of comparable runs: E-Divisive means, as Apache Otava does it.

Otava (formerly Hunter; Fleming et al., "Hunter: Using Change Point Detection to Hunt for
Performance Regressions", ICPE 2023) finds candidates with E-Divisive means (Matteson &
James 2014, energy statistic with α = 1) over windows of the series at a relaxed
threshold, then merges: each candidate is re-tested with a t-test between the segments
on either side of it (bounded by its neighbouring candidates), the weakest is dropped
while its p-value is above the threshold, and the rest re-tested. Written here on numpy
and scipy because the packages that ship it pin numpy < 2 (signal-processing-algorithms)
or numpy 2.2.* and scipy < 1.17 (apache-otava); docs/statistics.md records the
agreement with Otava. Values are tested as logs (benchmark noise is multiplicative).
The p-value at a chosen split is post-selection: the split is where the segments differ
most, so the t-test's p-value is too small. Unlike Otava, each p-value here is
multiplied by the number of positions the split could have taken (Bonferroni), which
keeps the false-alarm rate of flat series under the threshold (tests/aggregator).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fiolake.aggregator.stats.special import special
from fiolake.aggregator.stats.stats import pooled_t_pvalue

DEFAULT_MAX_PVALUE = 0.001
WINDOW = 30  # points per E-Divisive window (windows overlap by half)
MIN_SIZE = 3  # points on each side of a change point
RELAXED = 10.0  # candidate threshold = RELAXED × max_pvalue
# Statistics this close (relative to the sums they come from) are one: rounding, not
# the data, would part them.
TIE = 1e-9


def _energy_splits(windows: np.ndarray, min_size: int) -> np.ndarray:
    """For each row of `windows` (same length n ≥ 2 × min_size), the split τ (first
    index of the right part) maximising the E-Divisive statistic."""
    n = windows.shape[1]
    d = np.abs(windows[:, :, None] - windows[:, None, :])
    # d is symmetric with a zero diagonal, so three prefix sums give every block sum at
    # every τ: rows [0, τ) × all columns (`rows`), the square [0, τ)² (twice the sum of
    # d below the diagonal in those rows). A 2-D prefix sum of d did the same in twice
    # the passes over n² values per window (a year's regressions: 0.5 s of numpy).
    zero = np.zeros((len(windows), 1))
    rows = np.concatenate([zero, d.sum(2).cumsum(1)], axis=1)
    below = np.tril(np.ones((n, n), dtype=bool), -1)
    square = np.concatenate([zero, 2.0 * np.where(below, d, 0.0).sum(2).cumsum(1)], axis=1)
    tau = np.arange(min_size, n - min_size + 1)
    left, right = tau.astype(float), (n - tau).astype(float)
    between = rows[:, tau] - square[:, tau]  # rows [0, τ), columns [τ, n)
    within_l = square[:, tau]
    within_r = rows[:, n][:, None] - 2.0 * rows[:, tau] + square[:, tau]
    q = (
        left * right / n
        * (
            2.0 * between / (left * right)
            - within_l / np.maximum(left * (left - 1), 1.0)
            - within_r / np.maximum(right * (right - 1), 1.0)
        )
    )  # fmt: skip
    return tau[first_max(q, rows[:, n] / n)]


def first_max(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Per row of `q`, the first position within TIE × `scale` (the row's sum of
    distances per point, the size of the sums q is a difference of) of its largest
    value: splits that tie (values on a grid, a symmetric window) go to the first,
    however the sums were ordered."""
    top = q.max(axis=1, keepdims=True)
    return np.argmax(q >= top - TIE * scale[:, None], axis=1)


def _energy_split(x: np.ndarray, min_size: int) -> int | None:
    """The split τ of one series (None when it is shorter than two segments)."""
    if len(x) < 2 * min_size:
        return None
    return int(_energy_splits(x[None, :], min_size)[0])


def _pvalue(left: np.ndarray, right: np.ndarray, min_size: int = MIN_SIZE) -> float:
    """Two-sided Student t-test between two segments (as Otava's significance tester),
    times the number of places the split could have been chosen (Bonferroni): the split
    maximises the difference, so the raw p-value would be too small (see module doc)."""
    if len(left) < 2 or len(right) < 2:
        return 1.0
    positions = max(len(left) + len(right) - 2 * min_size + 1, 1)
    if np.ptp(left) == 0 and np.ptp(right) == 0:
        return 0.0 if left[0] != right[0] else 1.0
    return min(1.0, positions * pooled_t_pvalue(left, right))


def _candidates(
    x: np.ndarray, offset: int, threshold: float, out: set[int], min_size: int = MIN_SIZE
) -> None:
    """Recursive binary segmentation of one window at the relaxed threshold."""
    tau = _energy_split(x, min_size)
    if tau is None or _pvalue(x[:tau], x[tau:], min_size) > threshold:
        return
    out.add(offset + tau)
    _candidates(x[:tau], offset, threshold, out, min_size)
    _candidates(x[tau:], offset + tau, threshold, out, min_size)


def _merge(
    x: np.ndarray, points: list[int], max_pvalue: float, min_size: int = MIN_SIZE
) -> dict[int, float]:
    """Drop the weakest change point while it fails the threshold; re-test the rest."""
    points = sorted(p for p in points if min_size <= p <= len(x) - min_size)
    while points:
        bounds = [0, *points, len(x)]
        pvalues = [
            _pvalue(x[bounds[i - 1] : bounds[i]], x[bounds[i] : bounds[i + 1]], min_size)
            for i in range(1, len(bounds) - 1)
        ]
        worst = int(np.argmax(pvalues))
        if pvalues[worst] <= max_pvalue:
            return dict(zip(points, pvalues, strict=True))
        points.pop(worst)
    return {}


def window_starts(n: int) -> list[int]:
    """Where the E-Divisive windows of a series of `n` points start (half overlapping;
    the last one ends at the series' end)."""
    step = max(WINDOW // 2, 1)
    if n <= WINDOW:
        return [0]
    starts = list(range(0, n - WINDOW + 1, step))
    return starts + [n - WINDOW] if (n - WINDOW) % step else starts


def _screened(
    x: np.ndarray, starts: list[int], width: int, threshold: float, min_size: int
) -> list[int]:
    """The windows whose first split may pass `threshold`: every window's E-Divisive
    split and its t-test at once, as arrays. A year's series has hundreds of windows and
    almost all are flat; one by one they cost 0.1 ms each in numpy calls (9 s for
    `regressions` over 320 series of 5,000 nights, issue 44). The split is the one a
    window alone gets (`_energy_splits` serves both); the p-value is computed another
    way, so windows within a relative 1e-9 of the threshold, and any the test cannot
    judge here (a side of one point, no spread), go on to `_candidates`, which decides
    each as before."""
    if width < 2 * min_size:
        return []
    windows = np.stack([x[s : s + width] for s in starts])
    split = _energy_splits(windows, min_size)
    on_left = np.arange(width)[None, :] < split[:, None]
    centred = windows - windows.mean(axis=1, keepdims=True)
    n_l, n_r = split.astype(float), (width - split).astype(float)
    mean_l = np.where(on_left, centred, 0.0).sum(1) / n_l
    mean_r = np.where(on_left, 0.0, centred).sum(1) / n_r
    dev = centred - np.where(on_left, mean_l[:, None], mean_r[:, None])
    pooled = (dev**2).sum(1) / max(width - 2, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean_l - mean_r) / np.sqrt(pooled * (1 / n_l + 1 / n_r))
        pvalue = np.minimum(
            1.0, max(width - 2 * min_size + 1, 1) * 2.0 * special.stdtr(width - 2, -np.abs(t))
        )
    unjudged = (n_l < 2) | (n_r < 2) | ~(pooled > 0) | ~np.isfinite(pvalue)
    keep = unjudged | (pvalue <= threshold * (1 + 1e-9))
    return [start for start, kept in zip(starts, keep.tolist(), strict=True) if kept]


def change_points(
    values: Sequence[float], max_pvalue: float = DEFAULT_MAX_PVALUE, min_size: int = MIN_SIZE
) -> dict[int, float]:
    """Change points of a series of positive values: index of the first point after each
    change -> its p-value (after the merge pass); at least `min_size` points on each side
    (Otava's default of 3 points unless asked: the comparison bench keeps it)."""
    x = np.log(np.asarray(values, dtype=float))
    n = len(x)
    found: set[int] = set()
    threshold = RELAXED * max_pvalue
    for start in _screened(x, window_starts(n), min(n, WINDOW), threshold, min_size):
        _candidates(x[start : start + WINDOW], start, threshold, found, min_size)
    # Overlapping windows may propose neighbours of one change: keep the first of a run.
    merged: list[int] = []
    for p in sorted(found):
        if not merged or p - merged[-1] >= min_size:
            merged.append(p)
    return _merge(x, merged, max_pvalue, min_size)
