"""A comparison over every run pooled, from the case summaries instead of every run.

`runsets.summarise` folds every selected run × job × direction (16 M rows at a year of a
100-host fleet). When the question is every run of the lake, grouped by a run attribute
the case summaries keep (`aggregator.lake.cases`), narrowed at most by backend, profile
and status, the same `GroupStats` come from those summaries — a few hundred rows —
plus the runs not compacted yet, folded by the same SQL. Counts, log moments (merged by
Chan et al.'s update: the same ratios and p-values to ~1e-12), ranges and setups are
exact. Outliers are judged against the median and MAD of the case's histogram of logs
(within BIN/2 and BIN of the exact ones), each run by its exact log from the case's
extremes, which hold every outlier of a side with fewer than the extremes kept; a side
with as many or more (its level changed during the history pooled) is named, not listed,
as `runsets` names it (`groupstats.listed_outliers`; docs/statistics.md, "Outliers of a
pooled question").
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from fiolake.aggregator.lake import cases
from fiolake.aggregator.lake.lake import Lake, literals
from fiolake.aggregator.lake.sqltext import parquet_source
from fiolake.aggregator.rows import night_rows
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_arrow
from fiolake.aggregator.stats import case_sketch, stats
from fiolake.aggregator.stats.groupstats import Data, GroupStats, listed_outliers

# Run attributes a case summary row has one value of, that `compare --by` may name.
GROUPS = ("backend", "fio_version", "origin", "target_kind", "fs_type")
KEYS = ("grp", "profile", "sha", "job_name", "direction")
SETUP_COLUMNS = (
    "steady", "runs", "flagged", "pre", "fio_version", "origin", "target_kind", "fs_type",
)  # fmt: skip
_GROUP_EXPR = re.compile(r'^CAST\(r\."(\w+)" AS VARCHAR\)$')


def answerable(lake: Lake, group_expr: str, filt: RunFilter, metrics: list[str]) -> bool:
    """Whether the case summaries can answer: every run of the lake (no campaign, run or
    time window), grouped by one of GROUPS, headline metrics only, case summaries that
    fold every compacted run."""
    found = _GROUP_EXPR.match(group_expr)
    gen = lake.compacted
    return (
        found is not None
        and found.group(1) in GROUPS
        and filt == replace(filt, campaign=None, campaigns=(), runs=(), since=None, until=None)
        and set(metrics) <= set(cases.METRICS)
        and night_rows.summarised(lake)
        and gen is not None
        and gen.cases_file is not None
        and gen.cases_runs == gen.delta[cases.summaries.TABLE].key_count
    )


def summarise(
    lake: Lake, group_expr: str, filt: RunFilter, metrics: list[str], sha: str,
    *, exclude_unsteady: bool,
) -> Data | None:  # fmt: skip
    """`runsets.summarise`'s answer from the case summaries; None when they cannot give
    it (`answerable`, or more than `night_rows.LOOSE_LIMIT` runs not compacted)."""
    if not answerable(lake, group_expr, filt, metrics):
        return None
    loose = night_rows.loose_run_ids(lake)
    if len(loose) > night_rows.LOOSE_LIMIT:
        return None
    gen = lake.compacted
    assert gen is not None and gen.cases_file is not None  # answerable
    columns = ", ".join(cases.column_order())
    parts = [
        f"SELECT {columns} FROM {parquet_source([lake.store.location(gen.cases_file)], hive=False)}"
    ]
    if loose:
        folded = cases.partial_sql("runs", "results", f"r.run_id IN ({literals(loose)})")
        parts.append(f"SELECT {columns} FROM ({folded})")
    steady_only = "AND s.steady IS NOT FALSE" if exclude_unsteady else ""
    column = _GROUP_EXPR.match(group_expr).group(1)  # type: ignore[union-attr]  # answerable
    selected = f"""
        SELECT coalesce(CAST(s."{column}" AS VARCHAR), '') AS grp,
               coalesce({sha.replace("r.", "s.")}, '') AS sha, s.*
        FROM ({" UNION ALL ".join(parts)}) s
        WHERE {filt.where("s")} AND s.profile IS NOT NULL AND s.job_name IS NOT NULL
          AND s.direction IS NOT NULL {steady_only}
    """
    try:
        table = fetch_arrow(lake, selected)
    except duckdb.IOException:  # the object is gone (deleted behind its record): fold runs
        return None
    return _data(table, metrics)


def _data(table: pa.Table, metrics: list[str]) -> Data:
    """The selected case summary rows merged per group × case, as `Data`."""
    if not table.num_rows:
        return {}
    keys = list(zip(*(table.column(k).to_pylist() for k in KEYS), strict=True))
    # Rows stay where they are, each numbered by its case in key order: sorting them (in
    # SQL or Arrow) moved the sketches, 10 MB of lists (60-120 ms at 1,000,000 runs).
    named = sorted(set(keys))
    number = {key: case for case, key in enumerate(named)}
    case_of_row = np.asarray([number[k] for k in keys], dtype=np.int64)
    data: Data = {}
    per_metric = {m: _metric(table, m, case_of_row, len(named)) for m in metrics}
    setups = _setups(table.select(list(SETUP_COLUMNS)).to_pylist(), case_of_row, len(named))
    for case, (grp, profile, sha_value, job, direction) in enumerate(named):
        out = {}
        for metric in metrics:
            n, log, lo, hi, (odd, unlisted) = per_metric[metric][case]
            if n < stats.OUTLIER_MIN_N:
                odd, unlisted = [], ()
            got = GroupStats(n, log, lo, hi, odd, *setups[case])
            out[metric] = replace(got, outliers_unlisted=unlisted)
        data[(str(grp), (profile, job, direction, sha_value or None))] = out
    return data


def _metric(
    table: pa.Table, metric: str, case_of_row: np.ndarray, cases_count: int
) -> list[tuple[int, stats.LogSummary | None, Any, Any, tuple[list[str], tuple[str, ...]]]]:
    """Per case (`case_of_row` numbers each row's): runs with a value, the log summary
    (counts added, mean and M2 by Chan et al.'s update, rows added in table order),
    range, and the outliers of `metric` to list with the sides not listed
    (`groupstats.listed_outliers`)."""
    c = cases.metric_columns(metric)
    got = table.select([c[p] for p in ("count", "nonpositive", "log_mean", "log_m2", "min", "max")])
    count, bad, mean, m2, lows, highs = got.to_pydict().values()
    count, bad = np.asarray(count, dtype=np.int64), np.asarray(bad, dtype=np.int64)
    logs = count - bad
    mean = np.asarray([0.0 if v is None else v for v in mean])

    def per_case(values: np.ndarray) -> np.ndarray:
        total = np.zeros(cases_count, dtype=values.dtype)
        np.add.at(total, case_of_row, values)
        return total

    n, n_logs, n_bad = per_case(count), per_case(logs), per_case(bad)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = per_case(logs * mean) / n_logs
    spread = per_case(np.asarray(m2, dtype=float) + logs * (mean - mu[case_of_row]) ** 2)
    median, mad = case_sketch.median_and_mad(
        case_sketch.histograms(table.column(c["hist"])), case_of_row, cases_count
    )
    sides = [case_sketch.extremes(table.column(c[side])) for side in ("low", "high")]
    odd = case_sketch.outliers(sides, case_of_row, median, mad)
    lo: list[Any] = [None] * cases_count
    hi: list[Any] = [None] * cases_count
    for case, low, high in zip(case_of_row.tolist(), lows, highs, strict=True):
        if low is not None and (lo[case] is None or low < lo[case]):
            lo[case] = low
        if high is not None and (hi[case] is None or high > hi[case]):
            hi[case] = high
    out = []
    for case in range(cases_count):
        total = int(n[case])
        log = None
        if total and not n_bad[case] and n_logs[case]:
            var = float(spread[case]) / (total - 1) if total > 1 else None
            log = stats.LogSummary(total, float(mu[case]), var)
        out.append((total, log, lo[case], hi[case], listed_outliers(*odd.get(case, ([], [])))))
    return out


def _setups(rows: list[dict[str, Any]], case_of_row: np.ndarray, cases_count: int) -> list[tuple]:
    """Per case: runs steady, unsteady, not judged, flagged; fio versions; runs
    preconditioned; origins, targets and file systems pooled (GroupStats' order)."""
    counts = np.zeros((cases_count, 5), dtype=np.int64)
    seen: list[tuple[set, set, set, set]] = [
        (set(), set(), set(), set()) for _ in range(cases_count)
    ]
    for row, case in zip(rows, case_of_row.tolist(), strict=True):
        steady, runs = row["steady"], row["runs"]
        counts[case] += (
            runs * (steady is True), runs * (steady is False), runs * (steady is None),
            runs * bool(row["flagged"]), runs * bool(row["pre"]),
        )  # fmt: skip
        fios, origins, targets, fss = seen[case]
        fios.add(row["fio_version"])
        origins.add(row["origin"] or "run")
        targets.add(row["target_kind"] or "dir")
        fss.add(row["fs_type"])
    return [
        (
            steady,
            unsteady,
            unknown,
            flagged,
            sorted(v for v in fios if v),
            pre,
            sorted(origins),
            sorted(targets),
            sorted(v for v in fss if v),
        )  # fmt: skip
        for (steady, unsteady, unknown, flagged, pre), (fios, origins, targets, fss) in zip(
            counts.tolist(), seen, strict=True
        )
    ]
