"""Compare backends (or any `runs` column) over repetitions, with Welch's t-test.

Per (profile, job_name, direction) each run contributes one value per metric (its
threads folded by `columns.per_run_aggregate`); repetitions are then summarised
per group in SQL (n, mean, stddev, min, max, median) and judged against the baseline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fiolake.aggregator import columns, stats
from fiolake.aggregator.filters import RunFilter, check_group_column, validate
from fiolake.aggregator.lake import Lake
from fiolake.errors import LakeError, UsageProblem

DEFAULT_METRICS = ("bw_bytes", "iops", "lat_mean_ns", "clat_p99_ns")
NUMERIC_TYPES = ("BIGINT", "INTEGER", "DOUBLE", "FLOAT", "HUGEINT", "SMALLINT", "DECIMAL")

BETTER, WORSE, SAME = "better", "worse", "no significant difference"
TOO_FEW = "not enough repetitions"
SINGLE = "single runs: no significance test"
BASELINE = "baseline"


@dataclass(frozen=True)
class Summary:
    """Repetitions of one metric for one group: raw units."""

    n: int
    mean: float | None
    stddev: float | None
    min: float | None
    max: float | None
    median: float | None


@dataclass(frozen=True)
class CompareRow:
    """One group × profile × job × direction × metric, judged against the baseline group."""

    group: str
    profile: str
    job_name: str
    direction: str
    metric: str
    n: int
    mean: float | None
    stddev: float | None
    min: float | None
    max: float | None
    median: float | None
    ci_half: float | None  # half-width of the 95% t confidence interval of the mean
    delta_pct: float | None  # (mean - baseline mean) / baseline mean × 100
    p_value: float | None  # Welch's two-sided p-value
    verdict: str


@dataclass(frozen=True)
class Comparison:
    """The result of `compare`."""

    by: str
    baseline: str
    groups: list[str]
    metrics: list[str]
    rows: list[CompareRow]


def metric_columns(lake: Lake) -> list[str]:
    """Numeric columns of `results` that can be compared."""
    cur = lake.cursor()
    try:
        described = cur.execute("DESCRIBE results").fetchall()
    finally:
        cur.close()
    return [
        name
        for name, dtype, *_ in described
        if dtype.startswith(NUMERIC_TYPES) and name not in columns.NOT_METRICS
    ]


def check_metrics(lake: Lake, metrics: list[str] | tuple[str, ...]) -> list[str]:
    """`metrics` if all are comparable, else UsageProblem listing the valid ones."""
    valid = metric_columns(lake)
    unknown = [m for m in metrics if m not in valid]
    if unknown:
        raise UsageProblem(
            f"unknown metric {', '.join(repr(m) for m in unknown)}: choose from {', '.join(valid)}"
        )
    if not metrics:
        raise UsageProblem("no metric given")
    return list(metrics)


def verdict(metric: str, base: Summary, other: Summary, alpha: float) -> tuple[str, float | None]:
    """Welch's t-test of `other` against `base`; the verdict and p-value."""
    if base.n < 2 or other.n < 2 or base.mean is None or other.mean is None:
        return TOO_FEW, None
    test = stats.welch_test(
        base.mean, base.stddev or 0.0, base.n, other.mean, other.stddev or 0.0, other.n
    )
    if test.p_value >= alpha:
        return SAME, test.p_value
    up = other.mean > base.mean
    return (BETTER if up == columns.higher_is_better(metric) else WORSE), test.p_value


def summaries(
    lake: Lake,
    groups: list[str],
    filt: RunFilter,
    metrics: list[str],
    *,
    extra_where: str = "true",
) -> dict[tuple[Any, ...], dict[str, Summary]]:
    """(*groups, profile, job_name, direction) -> metric -> Summary, computed in DuckDB.

    `groups` are SQL expressions over `runs r`; each run gives one value per metric.
    """
    where, params = filt.where("r")
    group_cols = ", ".join(f"{expr} AS g{i}" for i, expr in enumerate(groups))
    per_run = ", ".join(f'{columns.per_run_aggregate(m)} AS "m{i}"' for i, m in enumerate(metrics))
    aggs = ", ".join(
        f'count("m{i}"), avg("m{i}"), stddev_samp("m{i}"), min("m{i}"), max("m{i}"), median("m{i}")'
        for i in range(len(metrics))
    )
    keys = ", ".join([f"g{i}" for i in range(len(groups))] + ["profile", "job_name", "direction"])
    sql = f"""
        WITH per_run AS (
            SELECT {group_cols}, r.profile, x.job_name, x.direction, x.run_id, {per_run}
            FROM results x JOIN runs r USING (run_id)
            WHERE {where} AND {extra_where}
            GROUP BY ALL
        )
        SELECT {keys}, {aggs}
        FROM per_run GROUP BY ALL ORDER BY ALL
    """
    cur = lake.cursor()
    try:
        rows = cur.execute(sql, params).fetchall()
    finally:
        cur.close()
    width = len(groups) + 3
    out: dict[tuple[Any, ...], dict[str, Summary]] = {}
    for row in rows:
        values = row[width:]
        out[tuple(row[:width])] = {
            m: Summary(*[_num(v) for v in values[6 * i : 6 * i + 6]]) for i, m in enumerate(metrics)
        }
    return out


def _num(value: Any) -> Any:
    return float(value) if value is not None and not isinstance(value, int) else value


def _order_groups(found: set[str], preferred: list[str], baseline: str | None) -> list[str]:
    groups = [g for g in preferred if g in found] + sorted(found - set(preferred))
    if baseline is not None:
        groups.remove(baseline)
        groups.insert(0, baseline)
    return groups


def compare(
    lake: Lake,
    *,
    by: str = "backend",
    baseline: str | None = None,
    metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS,
    filt: RunFilter | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
) -> Comparison:
    """Summarise repetitions per group and judge each group against the baseline.

    With `filt.runs` the runs themselves are compared (by run_id, baseline the first).
    """
    filt = filt or RunFilter()
    metrics = check_metrics(lake, metrics)
    validate(lake, filt)
    single = bool(filt.runs)
    if single:
        if len(set(filt.runs)) < 2:
            raise UsageProblem("give two or more --run to compare runs directly")
        by = "run_id"
    by = check_group_column(lake, by)
    data = summaries(lake, [f'CAST(r."{by}" AS VARCHAR)'], filt, metrics)
    if not data:
        raise LakeError(f"no successful runs with results match {filt.describe()}")
    found = {key[0] for key in data}
    preferred = list(filt.runs) if single else list(filt.backends) if by == "backend" else []
    if baseline is not None and baseline not in found:
        raise LakeError(
            f"baseline '{baseline}' is not among the compared {by} values: "
            f"{', '.join(sorted(found))}"
        )
    groups = _order_groups(found, preferred, baseline)
    base_name = groups[0]
    rows = []
    cases = sorted({key[1:] for key in data})
    for profile, job, direction in cases:
        base = data.get((base_name, profile, job, direction))
        for metric in metrics:
            for group in groups:
                found_stats = data.get((group, profile, job, direction))
                if found_stats is None:
                    continue
                s = found_stats[metric]
                delta = p = None
                if group == base_name:
                    word = BASELINE
                elif base is None or base[metric].mean is None:
                    word = "no baseline"
                else:
                    b = base[metric]
                    if b.mean and s.mean is not None:
                        delta = (s.mean - b.mean) / abs(b.mean) * 100.0
                    word, p = (SINGLE, None) if single else verdict(metric, b, s, alpha)
                half = stats.ci_half_width(s.stddev, s.n, confidence)
                rows.append(
                    CompareRow(
                        group,
                        profile,
                        job,
                        direction,
                        metric,
                        s.n,
                        s.mean,
                        s.stddev,
                        s.min,
                        s.max,
                        s.median,
                        half,
                        delta,
                        p,
                        word,
                    )
                )
    return Comparison(by, base_name, groups, metrics, rows)
