"""Medians, MADs and outliers of many cases at once, from case summaries' histograms.

A case of a pooled question is one or more rows of case summaries
(`aggregator.lake.cases`: a histogram of its logs in bins of `cases.BIN` and its
`cases.TOP` smallest and largest logs per row). The median and MAD of a case are those
of its logs each placed at its bin's centre: within BIN/2 and BIN of the exact ones
(docs/statistics.md, "Outliers of a pooled question"). Nothing is merged to find them:
the rank of a bin in a case is the sum over its rows of that row's runs at or below it,
so a bisection over bins, for every case at once, finds the bins at the middle ranks —
and, on the bins' half-steps, the middle of the distances from the median. Outliers are
then tested on the exact logs of each row's extremes.

Written by hand: numpy has no weighted median of grouped, pre-binned data, and a Python
loop over 1,280 case × metric histograms cost 0.1 s of a question that must answer in
less than a second (issue 44).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from fiolake.aggregator.lake import cases
from fiolake.aggregator.lake.idarrays import numbers, positions_array
from fiolake.aggregator.stats import stats

_SHIFT = np.int64(2**32)  # row i's bins sort within [i · 2³², (i + 1) · 2³²)
_OFFSET = np.int64(2**31)  # a bin (int32) as a non-negative offset


@dataclass(frozen=True)
class Histograms:
    """Every row's histogram, flattened in (row, bin) order."""

    placed: np.ndarray  # row · 2³² + bin + 2³¹, ascending
    before: np.ndarray  # runs in the elements before each position (one more than placed)
    start: np.ndarray  # row i's elements are placed[start[i] : start[i + 1]]
    bins: np.ndarray  # the bins, in the same order


def histograms(column: pa.ChunkedArray) -> Histograms:
    """A column of maps bin -> runs (one per row; NULL: no logs) as `Histograms`."""
    maps = column.combine_chunks()  # a new array: its offsets start at 0
    start = numbers(maps.offsets).astype(np.int64)
    rows = np.repeat(np.arange(len(maps), dtype=np.int64), np.diff(start))
    bins = numbers(maps.keys).astype(np.int64)
    runs = numbers(maps.items).astype(np.int64)
    placed = rows * _SHIFT + bins + _OFFSET
    if len(placed) > 1 and not bool(np.all(placed[1:] > placed[:-1])):
        order = np.argsort(placed, kind="stable")
        placed, bins, runs = placed[order], bins[order], runs[order]
    before = np.zeros(len(runs) + 1, dtype=np.int64)
    np.cumsum(runs, out=before[1:])
    return Histograms(placed, before, start, bins)


def _at_or_below(h: Histograms, rows: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Runs of each row of `rows` whose bin is at or below `limit` (one per row)."""
    pos = np.searchsorted(h.placed, rows * _SHIFT + limit + _OFFSET, side="right")
    return h.before[pos] - h.before[h.start[rows]]


def _smallest_above(
    count: Callable[[np.ndarray], np.ndarray],
    low: np.ndarray,
    high: np.ndarray,
    rank: np.ndarray,
) -> np.ndarray:
    """Per case, the smallest x in (low, high] with count(x) > rank, given
    count(low) ≤ rank < count(high) (`count` maps one x per case to a count per case)."""
    low, high = low.copy(), high.copy()
    while True:
        open_ = high - low > 1
        if not open_.any():
            return high
        mid = (low + high) // 2
        above = count(mid) > rank
        high = np.where(open_ & above, mid, high)
        low = np.where(open_ & ~above, mid, low)


def median_and_mad(
    h: Histograms, case_of_row: np.ndarray, cases_count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per case (rows `case_of_row`, 0 … cases_count − 1): the median and MAD of its logs
    at their bins' centres, as DuckDB's `median` takes them (the mean of the two middle
    values of an even count); NaN for a case without logs."""
    rows = np.arange(len(case_of_row), dtype=np.int64)
    sizes = np.diff(h.start)
    total = np.bincount(case_of_row, weights=h.before[h.start[1:]] - h.before[h.start[:-1]],
                        minlength=cases_count)  # fmt: skip
    some = sizes > 0
    first = np.full(len(rows), np.iinfo(np.int64).max)
    last = np.full(len(rows), np.iinfo(np.int64).min)
    first[some] = h.bins[h.start[:-1][some]]
    last[some] = h.bins[h.start[1:][some] - 1]
    lowest = np.full(cases_count, np.iinfo(np.int64).max)
    highest = np.full(cases_count, np.iinfo(np.int64).min)
    np.minimum.at(lowest, case_of_row, first)
    np.maximum.at(highest, case_of_row, last)
    has = total > 0
    lowest, highest = np.where(has, lowest, 0), np.where(has, highest, 0)

    def below(limit: np.ndarray) -> np.ndarray:
        per_row = _at_or_below(h, rows, limit[case_of_row])
        return np.bincount(case_of_row, weights=per_row, minlength=cases_count)

    n = total.astype(np.int64)
    middle = [np.maximum(n - 1, 0) // 2, n // 2]
    bins = [_smallest_above(below, lowest - 1, highest, q) for q in middle]
    twice = bins[0] + bins[1]  # the two middle bins: the median is (twice + 1) / (2 · SCALE)

    # Bin b's centre lies |2b − twice| / (2 · SCALE) from the median: the runs of bins with
    # |2b − twice| ≤ limit, i.e. from ceil((twice − limit) / 2) to floor((twice + limit) / 2).
    def near(limit: np.ndarray) -> np.ndarray:
        return below((twice + limit) // 2) - below(-((limit - twice) // 2) - 1)

    reach = np.maximum(np.abs(2 * highest - twice), np.abs(2 * lowest - twice))
    spread = [_smallest_above(near, np.full(cases_count, -1), reach, q) for q in middle]
    median = (twice + 1) / (2 * cases.SCALE)
    mad = (spread[0] + spread[1]) / (4 * cases.SCALE)
    return np.where(has, median, np.nan), np.where(has, mad, np.nan)


Extremes = tuple[np.ndarray, pa.Array, np.ndarray]  # logs, run ids, row start offsets


def extremes(column: pa.ChunkedArray) -> Extremes:
    """A column of lists of (log, run id) structs, flattened."""
    lists = column.combine_chunks()  # a new array: its offsets start at 0
    values = lists.values
    return numbers(values.field("l")), values.field("r"), numbers(lists.offsets).astype(np.int64)


def outliers(
    sides: list[Extremes], case_of_row: np.ndarray, median: np.ndarray, mad: np.ndarray
) -> dict[int, tuple[list[str], list[str]]]:
    """Per case with an outlier: the run ids among the kept extremes whose robust z (their
    exact log against the case's median and MAD) passes OUTLIER_Z, below the median and
    above it, sorted. Each side holds every outlier of the case on that side unless it
    has TOP or more (the union of the rows' TOP extremes holds the case's TOP extremes; a
    row whose TOP kept are all outliers gives TOP of them), and a side of TOP or more is
    named, not listed (`groupstats.listed_outliers`): what it lists is exact either way."""
    found: dict[int, tuple[set[str], set[str]]] = {}
    for logs, ids, offsets in sides:
        row = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        case = case_of_row[row]
        spread = np.where(np.isnan(mad[case]), 0.0, mad[case])
        beyond = (spread > 0) & (np.abs(logs - median[case]) > stats.OUTLIER_CUT * spread)
        above = logs > median[case]
        picked = np.flatnonzero(beyond)
        if len(picked):
            runs = ids.take(positions_array(picked)).to_pylist()
            for c, side, run in zip(
                case[picked].tolist(), above[picked].tolist(), runs, strict=True
            ):
                found.setdefault(c, (set(), set()))[int(side)].add(run)
    return {c: (sorted(lo), sorted(hi)) for c, (lo, hi) in found.items()}
