"""Outliers of pooled cases whose kept extremes ran out, read from the run series.

The case summaries keep each case's `cases.TOP` most extreme logs a side: enough for a
case whose level held. A case whose level changed during the pooled history (a backend
30 % slower from some night on) has a whole segment beyond the cut — 1,596 of 5,000 runs
on the bench's 100,000-run lake with its planted changes — and the pooled question fell
back to folding every run: 3.8 s and 0.9 GB at 100,000 runs, tens of seconds at a
million (issue 44). Those cases' runs are read from the run series instead
(`aggregator.lake.series`: sorted by case, so a row group or two of each file), the runs
not compacted yet from the views by the same fold, and each run is judged by its exact
log against the same median and MAD (the case summary's histogram, `case_sketch`): the
list the extremes would have given had they been long enough.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fiolake.aggregator.lake import series
from fiolake.aggregator.lake.idarrays import numbers, positions_array
from fiolake.aggregator.lake.lake import Lake, literal, literals
from fiolake.aggregator.rows import case_series, derived_view
from fiolake.aggregator.rows.filters import RunFilter
from fiolake.aggregator.rows.series import fetch_arrow
from fiolake.aggregator.stats import stats

# A pooled case: backend, profile, workload hash ('' for none), job, direction.
Case = tuple[str, str, str, str, str]


def _cut(cut: tuple[float, float] | None) -> str:
    """A case's (median, MAD) of one metric as two DOUBLE literals: NULL for none or NaN,
    else the shortest text that round-trips, parsed as a double (never a DECIMAL)."""
    if cut is None:
        return "NULL, NULL"
    return ", ".join("NULL" if not np.isfinite(x) else f"{float(x)!r}::DOUBLE" for x in cut)


def outliers(
    lake: Lake,
    filt: RunFilter,
    cuts: Mapping[Case, Mapping[str, tuple[float, float]]],
    loose: Sequence[str],
    *,
    hashed: bool = True,
) -> dict[tuple[Case, str], list[str]] | None:
    """Per case and metric of `cuts` (their median and MAD of logs), the run ids of the
    runs `filt` selects whose log lies beyond OUTLIER_CUT MADs of the median, sorted;
    None when the run series does not cover the compacted runs (then the caller folds
    every run). `loose`: the runs not compacted yet, folded from the views. Without
    `hashed` (no selected run has a workload hash: the case summaries say so) the runs'
    hashes are not looked up (a join with `runs`: 0.2 s at a million runs)."""
    if not cuts or not case_series.covered(lake):
        return None
    cases = list(cuts)
    metrics = sorted({m for by_metric in cuts.values() for m in by_metric})
    derived_view.ensure(lake, series.TABLE, one_schema=True)
    # The case key is what the series' row groups are bounded by: only theirs are read.
    keys = ", ".join(sorted({literal(series.case_prefix([c[0], c[1], c[3], c[4]])) for c in cases}))
    values = ", ".join(f's."{m}"' for m in metrics)
    columns = f"s.run_id, s.backend, s.profile, s.job_name, s.direction, {values}"
    where = f"s.{series.CASE_KEY} IN ({keys})"
    parts = [f"SELECT {columns} FROM {case_series.VIEW} s WHERE {filt.where('s')} AND {where}"]
    if loose:
        fresh = f"{filt.where('r')} AND r.run_id IN ({literals(loose)})"
        parts.append(f"SELECT {columns} FROM ({series.rows_sql('runs', 'results', fresh)}) s "
                     f"WHERE {where}")  # fmt: skip
    # Each case's median and MAD per metric go to DuckDB, which returns only the runs
    # beyond a cut: a changed level puts a third of a case's runs there, but the rest
    # (800,000 rows at a million runs) no longer cross into Python to be sorted and judged.
    # The test is `case_sketch.outliers`' arithmetic on the same doubles (literals that
    # round-trip, logs NULL where no positive value: never beyond).
    named = ", ".join(
        f"({i}, {', '.join(literal(part) for part in case)}, "
        + ", ".join(_cut(cuts[case].get(m)) for m in metrics)
        + ")"
        for i, case in enumerate(cases)
    )
    cut_names = ", ".join(f"med{i}, mad{i}" for i in range(len(metrics)))
    logs = ", ".join(
        f'CASE WHEN s."{m}" > 0 THEN ln(s."{m}") END AS "l{i}"' for i, m in enumerate(metrics)
    )
    beyond = [
        f'coalesce(c.mad{i} > 0 AND abs(v."l{i}" - c.med{i}) > {stats.OUTLIER_CUT!r} * c.mad{i},'
        " false)"
        for i in range(len(metrics))
    ]
    flags = ", ".join(f'{test} AS "b{i}"' for i, test in enumerate(beyond))
    union = " UNION ALL ".join(parts)
    rows = f"({union}) s JOIN runs r USING (run_id)" if hashed else f"({union}) s"
    sha = "coalesce(r.workload_sha256, '')" if hashed else "''"
    sql = f"""
        WITH c(no, backend, profile, sha, job_name, direction, {cut_names}) AS (VALUES {named}),
        v AS (SELECT s.run_id, s.backend, s.profile, s.job_name, s.direction, {sha} AS sha,
                     {logs} FROM {rows})
        SELECT c.no, v.run_id, {flags}
        FROM v JOIN c ON c.backend = v.backend AND c.profile = v.profile AND c.sha = v.sha
              AND c.job_name = v.job_name AND c.direction = v.direction
        WHERE {" OR ".join(beyond)}
        ORDER BY c.no, v.run_id
    """
    table = fetch_arrow(lake, sql)
    case_no = numbers(table["no"])
    found: dict[tuple[Case, str], list[str]] = {}
    for i, metric in enumerate(metrics):
        picked = np.flatnonzero(table[f"b{i}"].to_numpy(zero_copy_only=False))
        ids = table["run_id"].take(positions_array(picked)).to_pylist()
        # Rows come by case, then run id: each case's outliers are one slice.
        bounds = np.searchsorted(case_no[picked], np.arange(len(cases) + 1)).tolist()
        for no, case in enumerate(cases):
            if metric in cuts[case]:
                found[case, metric] = ids[bounds[no] : bounds[no + 1]]
    return found
