"""Compare backends (or any `runs` column): ratios of geometric means, decided once per table.

Per (profile, job_name, direction) each run gives one value per metric (its threads
folded by `columns.per_run_aggregate`). Runs are pooled only when they ran the same
effective job (`fiolake.jobhash`): otherwise they land in separate rows that name the
difference, unless `allow_mixed`. Each group is set against the baseline group with
`stats.compare_logs` (ratio with a 95 % CI, Welch and TOST p-values on logs); the
p-values are adjusted across the whole table, then one rule gives the verdict
(docs/statistics.md).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fiolake.aggregator import columns, stats
from fiolake.aggregator.filters import RunFilter, check_group_column, validate
from fiolake.aggregator.lake import Lake
from fiolake.errors import LakeError, UsageProblem
from fiolake.jobhash import effective_job_sha256, job_differences

DEFAULT_METRICS = ("bw_bytes", "iops", "lat_mean_ns", "clat_p99_ns")
NUMERIC_TYPES = ("BIGINT", "INTEGER", "DOUBLE", "FLOAT", "HUGEINT", "SMALLINT", "DECIMAL")
# Throughput metrics of one job × direction at a fixed block size carry one test between
# them (bandwidth = IOPS × block size): adjusted as one member of the family.
SAME_TEST = {"bw_bytes": "throughput", "iops": "throughput"}

BETTER, WORSE, EQUIVALENT, INCONCLUSIVE = "better", "worse", "equivalent", "inconclusive"
BASELINE = "baseline"
NO_BASELINE = "no baseline for this job"
TOO_FEW = "too few repetitions"
NOT_POSITIVE = "zero or negative values: no ratio"


@dataclass(frozen=True)
class RunValue:
    """One run's value of one metric for one job × direction."""

    run_id: str
    value: float | None
    steady: bool | None
    flags: tuple[str, ...]
    fio_version: str | None
    started_at: datetime | None = None


@dataclass
class CompareRow:
    """One group × effective job × profile × job × direction × metric, against the baseline."""

    group: str
    profile: str
    job_name: str
    direction: str
    metric: str
    effective_job_sha256: str | None
    n: int
    n_baseline: int
    geomean: float | None
    ratio: float | None  # geomean / baseline geomean
    ratio_ci_low: float | None  # 95 % CI (Welch on logs), unadjusted
    ratio_ci_high: float | None
    p_value: float | None  # Welch, two-sided, on logs
    p_adjusted: float | None  # across the table (Holm or BH)
    p_equivalence: float | None  # TOST within ±min_effect
    p_equivalence_adjusted: float | None
    verdict: str
    reps_needed: int | None = None  # per group, for 80 % power at min_effect
    min: float | None = None
    max: float | None = None
    steady: int = 0  # runs whose last 5 s were flat (fiolake.steady)
    unsteady: int = 0
    steady_unknown: int = 0
    outliers: list[str] = field(default_factory=list)  # run ids (from 5 repetitions up)
    flagged: int = 0  # runs flagged as not alone (contention, page cache, cut short)
    notes: list[str] = field(default_factory=list)  # mixed jobs, fio versions, ...


@dataclass(frozen=True)
class Comparison:
    """The result of `compare`."""

    by: str
    baseline: str
    groups: list[str]
    metrics: list[str]
    rows: list[CompareRow]
    adjustment: str  # holm | fdr
    min_effect: float
    tests: int = 0  # members of the adjusted family (throughput counted once per case)


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


Case = tuple[str, str, str, str | None]  # profile, job_name, direction, effective job


def per_run_values(
    lake: Lake, group_expr: str, filt: RunFilter, metrics: list[str]
) -> tuple[dict[tuple[str, Case], dict[str, list[RunValue]]], dict[str, str]]:
    """(group, case) -> metric -> one RunValue per run; and effective job -> its text."""
    where, params = filt.where("r")
    per_run = ", ".join(f'{columns.per_run_aggregate(m)} AS "m{i}"' for i, m in enumerate(metrics))
    picked = ", ".join(f'p."m{i}"' for i in range(len(metrics)))
    sql = f"""
        WITH per_run AS (
            SELECT x.run_id, x.job_name, x.direction, bool_and(x.steady_state) AS steady,
                   {per_run}
            FROM results x GROUP BY ALL
        )
        SELECT {group_expr}, r.profile, p.job_name, p.direction, r.run_id,
               r.effective_job_sha256,
               CASE WHEN r.effective_job_sha256 IS NULL THEN r.canonical_job_file END,
               r.fio_version, r.flags, p.steady, r.started_at, {picked}
        FROM per_run p JOIN runs r USING (run_id)
        WHERE {where}
        ORDER BY r.started_at, r.run_id
    """
    cur = lake.cursor()
    try:
        rows = cur.execute(sql, params).fetchall()
    finally:
        cur.close()
    data: dict[tuple[str, Case], dict[str, list[RunValue]]] = defaultdict(lambda: defaultdict(list))
    texts: dict[str, str] = {}
    for row in rows:
        group, profile, job, direction, run_id, sha, canonical, fio, flags, steady, at = row[:11]
        values = row[11:]
        if sha is None and canonical is not None:  # written before the column existed
            sha = effective_job_sha256(canonical)
            texts.setdefault(sha, canonical)
        case = (profile, job, direction, sha)
        for metric, value in zip(metrics, values, strict=True):
            number = None if value is None else float(value)
            data[(group, case)][metric].append(
                RunValue(run_id, number, steady, tuple(flags or ()), fio, at)
            )
    return data, texts


def _job_texts(lake: Lake, hashes: set[str], known: dict[str, str]) -> dict[str, str]:
    wanted = sorted(h for h in hashes if h not in known)
    if not wanted:
        return known
    cur = lake.cursor()
    try:
        found = cur.execute(
            "SELECT effective_job_sha256, any_value(canonical_job_file) FROM runs "
            "WHERE effective_job_sha256 IN (SELECT unnest(?)) GROUP BY 1",
            [wanted],
        ).fetchall()
    finally:
        cur.close()
    return {**known, **{h: t for h, t in found if t is not None}}


def _order_groups(found: set[str], preferred: list[str], baseline: str | None) -> list[str]:
    groups = [g for g in preferred if g in found] + sorted(found - set(preferred))
    if baseline is not None:
        groups.remove(baseline)
        groups.insert(0, baseline)
    return groups


def _pool(
    data: dict[tuple[str, Case], dict[str, list[RunValue]]],
) -> dict[tuple[str, Case], dict[str, list[RunValue]]]:
    """Merge effective jobs (`allow_mixed`): one case per profile × job × direction."""
    pooled: dict[tuple[str, Case], dict[str, list[RunValue]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for (group, (profile, job, direction, _)), metrics in data.items():
        for metric, values in metrics.items():
            pooled[(group, (profile, job, direction, None))][metric] += values
    return pooled


def _mixed_notes(cases: set[Case], texts: dict[str, str]) -> dict[Case, list[str]]:
    """For a profile × job × direction run as several effective jobs: what differs, set
    against the job most runs ran."""
    by_job: dict[tuple[str, str, str], list[str | None]] = defaultdict(list)
    for profile, job, direction, sha in cases:
        by_job[(profile, job, direction)].append(sha)
    notes: dict[Case, list[str]] = {}
    for key, hashes in by_job.items():
        if len(hashes) < 2:
            continue
        for sha in hashes:
            others = [h for h in hashes if h != sha]
            diffs: list[str] = []
            for other in others:
                if sha in texts and other in texts:
                    diffs += job_differences(texts[sha], texts[other])
            what = "; ".join(dict.fromkeys(diffs)) or "the job files differ"
            notes[(*key, sha)] = [f"not pooled with {len(others)} other job version(s): {what}"]
    return notes


def _summary_counts(row: CompareRow, values: Sequence[RunValue]) -> None:
    row.steady = sum(1 for v in values if v.steady is True)
    row.unsteady = sum(1 for v in values if v.steady is False)
    row.steady_unknown = sum(1 for v in values if v.steady is None)
    row.flagged = sum(1 for v in values if v.flags)
    numbers = [v.value for v in values if v.value is not None]
    row.min, row.max = (min(numbers), max(numbers)) if numbers else (None, None)
    hits = stats.outliers(numbers) if len(numbers) == len(values) else None
    row.outliers = [values[i].run_id for i in hits or []]


def _decide(row: CompareRow, metric: str, min_effect: float) -> str:
    higher = columns.higher_is_better(metric)
    if row.p_adjusted is not None and row.p_adjusted < stats.ALPHA and row.ratio is not None:
        effect = row.ratio - 1.0 if row.ratio >= 1.0 else 1.0 / row.ratio - 1.0
        if effect > min_effect:
            return BETTER if (row.ratio > 1.0) == higher else WORSE
    if row.p_equivalence_adjusted is not None and row.p_equivalence_adjusted < stats.ALPHA:
        return EQUIVALENT
    return INCONCLUSIVE


def compare(
    lake: Lake,
    *,
    by: str = "backend",
    baseline: str | None = None,
    metrics: list[str] | tuple[str, ...] = DEFAULT_METRICS,
    filt: RunFilter | None = None,
    min_effect: float = stats.DEFAULT_MIN_EFFECT,
    adjustment: str = "holm",
    allow_mixed: bool = False,
    exclude_unsteady: bool = False,
) -> Comparison:
    """Compare every group with the baseline group, per profile × job × direction × metric.

    With `filt.runs` the runs themselves are compared (by run_id, baseline the first).
    """
    filt = filt or RunFilter()
    metrics = check_metrics(lake, metrics)
    validate(lake, filt)
    if filt.runs:
        if len(set(filt.runs)) < 2:
            raise UsageProblem("give two or more --run to compare runs directly")
        by = "run_id"
    by = check_group_column(lake, by)
    data, texts = per_run_values(lake, f'CAST(r."{by}" AS VARCHAR)', filt, metrics)
    if not data:
        raise LakeError(f"no successful runs with results match {filt.describe()}")
    notes = (
        {}
        if allow_mixed
        else _mixed_notes(
            {c for _, c in data}, _job_texts(lake, {c[3] for _, c in data if c[3]}, texts)
        )
    )
    if allow_mixed:
        data = _pool(data)
    found = {g for g, _ in data}
    preferred = list(filt.runs) if filt.runs else list(filt.backends) if by == "backend" else []
    if baseline is not None and baseline not in found:
        raise LakeError(
            f"baseline '{baseline}' is not among the compared {by} values: "
            f"{', '.join(sorted(found))}"
        )
    groups = _order_groups(found, preferred, baseline)
    base_name = groups[0]
    rows: list[CompareRow] = []
    for case in sorted({c for _, c in data}, key=lambda c: (c[0], c[1], c[2], c[3] or "")):
        profile, job, direction, sha = case
        base = data.get((base_name, case))
        for metric in metrics:
            for group in groups:
                got = data.get((group, case))
                if got is None:
                    continue
                values = [v for v in got[metric] if not (exclude_unsteady and v.steady is False)]
                rows.append(_row(group, case, metric, values, base, base_name, min_effect))
                rows[-1].notes += notes.get(case, [])
                if allow_mixed:
                    rows[-1].notes.append("pooled on purpose (--allow-mixed): job versions mixed")
                _summary_counts(rows[-1], values)
    tests = _adjust(rows, adjustment)
    for row in rows:
        if row.verdict == "":
            row.verdict = _decide(row, row.metric, min_effect)
    return Comparison(by, base_name, groups, metrics, rows, adjustment, min_effect, tests)


def _row(
    group: str,
    case: Case,
    metric: str,
    values: list[RunValue],
    base: dict[str, list[RunValue]] | None,
    base_name: str,
    min_effect: float,
) -> CompareRow:
    profile, job, direction, sha = case
    numbers = [v.value for v in values if v.value is not None]
    row = CompareRow(
        group, profile, job, direction, metric, sha, len(numbers), 0,
        stats.geomean(numbers) if numbers and stats.positive(numbers) else None,
        None, None, None, None, None, None, None, "",
    )  # fmt: skip
    if group == base_name:
        row.verdict, row.n_baseline = BASELINE, len(numbers)
        return row
    base_values = [v for v in (base or {}).get(metric, []) if v.value is not None]
    base_numbers = [v.value for v in base_values]
    row.n_baseline = len(base_numbers)
    if not base_numbers or not numbers:
        row.verdict = NO_BASELINE if not base_numbers else TOO_FEW
        return row
    if not (stats.positive(numbers) and stats.positive(base_numbers)):
        row.verdict = NOT_POSITIVE
        return row
    versions = Counter(v.fio_version for v in values) + Counter(v.fio_version for v in base_values)
    if len(versions) > 1:
        row.notes.append("fio versions differ: " + ", ".join(sorted(map(str, versions))))
    test = stats.compare_logs(base_numbers, numbers, min_effect=min_effect)
    row.ratio, row.ratio_ci_low, row.ratio_ci_high = (
        test.ratio,
        test.ratio_ci_low,
        test.ratio_ci_high,
    )
    row.p_value, row.p_equivalence, row.reps_needed = test.p_value, test.p_tost, test.reps_needed
    if test.p_value is None:
        row.verdict = TOO_FEW
    return row


def _adjust(rows: list[CompareRow], method: str) -> int:
    """Adjust difference and equivalence p-values across the table; throughput metrics of
    one group × case count as one test. Returns the number of tests."""
    families: dict[tuple[Any, ...], list[CompareRow]] = defaultdict(list)
    for row in rows:
        if row.p_value is None:
            continue
        kind = SAME_TEST.get(row.metric, row.metric)
        families[
            (row.group, row.profile, row.job_name, row.direction, row.effective_job_sha256, kind)
        ].append(row)
    members = list(families.values())
    for attr, out in (("p_value", "p_adjusted"), ("p_equivalence", "p_equivalence_adjusted")):
        firsts = [getattr(m[0], attr) for m in members]
        for family, p in zip(members, stats.adjust(firsts, method), strict=True):
            for row in family:
                setattr(row, out, p)
    return len(members)
