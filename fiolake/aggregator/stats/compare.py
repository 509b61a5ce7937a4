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

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fiolake.aggregator.lake import columns
from fiolake.aggregator.lake.lake import Lake, quote
from fiolake.aggregator.rows.filters import RunFilter, check_group_column, validate
from fiolake.aggregator.stats import power, stats
from fiolake.aggregator.stats.family_words import family_words
from fiolake.aggregator.stats.groupstats import Case, Data, GroupStats, unlisted_note
from fiolake.aggregator.stats.job_versions import setup_notes, version_notes
from fiolake.aggregator.stats.runsets import summarise
from fiolake.aggregator.stats.verdict_text import BETTER, EQUIVALENT, INCONCLUSIVE, WORSE
from fiolake.errors import LakeError, UsageProblem

DEFAULT_METRICS = columns.HEADLINE_METRICS
NUMERIC_TYPES = ("BIGINT", "INTEGER", "DOUBLE", "FLOAT", "HUGEINT", "SMALLINT", "DECIMAL")
# Throughput metrics of one job × direction at a fixed block size carry one test between
# them (bandwidth = IOPS × block size): adjusted as one member of the family.
SAME_TEST = {"bw_bytes": "throughput", "iops": "throughput"}

FAMILIES = ("question", "metric", "profile", "table")
BASELINE = "baseline"
NO_BASELINE = "no baseline for this job"
TOO_FEW = "too few repetitions"
NOT_POSITIVE = "zero or negative values: no ratio"


@dataclass
class CompareRow:
    """One group × workload × profile × job × direction × metric, against the baseline."""

    group: str
    profile: str
    job_name: str
    direction: str
    metric: str
    workload_sha256: str | None  # fiolake.workload: the runs pooled ran this workload
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
    reps_to_confirm: int | None = None  # per side, 80 % power at the observed ratio
    reps_for_equivalence: int | None = None  # per side, TOST within ±min_effect at it
    min: float | None = None
    max: float | None = None
    steady: int = 0  # runs whose last 5 s were flat (fiolake.steady)
    unsteady: int = 0
    steady_unknown: int = 0
    outliers: list[str] = field(default_factory=list)  # run ids (from 5 repetitions up)
    # sides of the median with cases.TOP outliers or more, not listed (groupstats)
    outliers_unlisted: list[str] = field(default_factory=list)
    flagged: int = 0  # runs flagged as not alone (contention, page cache, cut short)
    preconditioned: int = 0  # runs a precondition run prepared (`--precondition`)
    sd_log: float | None = None  # pooled per-run SD of the logs (for the runs needed)
    family_tests: int = 1  # tests in this row's family (the α the runs needed are for)
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
    family: str = ""  # what the p-values were adjusted across, in words


def metric_columns(lake: Lake) -> list[str]:
    """Numeric columns of `results` that can be compared."""
    return [
        name
        for name, dtype, *_ in lake.describe("results")
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


def _decide(row: CompareRow, metric: str, min_effect: float) -> str:
    higher = columns.higher_is_better(metric)
    if row.p_adjusted is not None and row.p_adjusted < stats.ALPHA and row.ratio is not None:
        if stats.effect_size(row.ratio) > min_effect:
            return BETTER if (row.ratio > 1.0) == higher else WORSE
    if row.p_equivalence_adjusted is not None and row.p_equivalence_adjusted < stats.ALPHA:
        return EQUIVALENT
    return INCONCLUSIVE


def decide(row: CompareRow, metric: str, min_effect: float) -> str:
    """The one verdict rule (docs/statistics.md §6), for rows built outside `compare`
    (IOPS at an SLO, `saturation`): `metric` gives the direction."""
    return _decide(row, metric, min_effect)


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
    family: str = "question",
    pools: Mapping[str, Sequence[str]] | None = None,
) -> Comparison:
    """The verdicts of a question: every group against the baseline group, per profile ×
    job × direction × metric, p-values adjusted across the question's family.

    Every surface (CLI compare, the app's landing and Compare pages, the gate) calls this
    one function, so a row carries the same numbers everywhere. `filt.backends`,
    `filt.profile` and `metrics` only choose which rows are returned; `family` other than
    "question" narrows the adjustment on purpose (`metric`, `profile`, or `table` = the
    shown rows only). With `filt.runs` the runs themselves are compared (by run_id,
    baseline the first). `pools` names sets of run ids that are the groups instead of
    the values of `by` (the gate's baseline of every comparable run of a window).
    """
    filt = filt or RunFilter()
    metrics = check_metrics(lake, metrics)
    validate(lake, filt)
    if family not in FAMILIES:
        raise UsageProblem(f"unknown family {family!r}: choose from {', '.join(FAMILIES)}")
    by, filt, group_expr = _grouping(lake, by, filt, pools)
    question, asked = _question(filt, by, family, metrics)
    data = summarise(
        lake,
        group_expr,
        question,
        asked,
        allow_mixed=allow_mixed,
        exclude_unsteady=exclude_unsteady,
    )
    if not any(_shown(g, c[0], filt, by) for g, c in data):
        raise LakeError(f"no successful runs with results match {filt.describe()}")
    cases = {c for _, c in data}
    notes = {} if allow_mixed else version_notes(lake, cases)
    groups = _ordered_groups({g for g, _ in data}, filt, by, pools, baseline)
    base_name = groups[0]
    rows = _rows(data, cases, asked, groups, notes, min_effect, allow_mixed=allow_mixed)
    tests = _judge(rows, adjustment, family, min_effect)
    shown = [
        r for r in rows if r.metric in metrics and _shown(r.group, r.profile, filt, by, base_name)
    ]
    shown_groups = [g for g in groups if any(r.group == g for r in shown)]
    words = family_words(question, base_name, tests, adjustment, family)
    return Comparison(
        by, base_name, shown_groups, metrics, shown, adjustment, min_effect, tests, words
    )


def _grouping(
    lake: Lake, by: str, filt: RunFilter, pools: Mapping[str, Sequence[str]] | None
) -> tuple[str, RunFilter, str]:
    """How the runs are grouped: (the group column, the filter, the SQL giving a run its
    group). Two or more `filt.runs` (without pools) are compared themselves, by run_id;
    with `pools` each named set of run ids is one group and the filter selects them all."""
    if filt.runs and not pools:
        if len(set(filt.runs)) < 2:
            raise UsageProblem("give two or more --run to compare runs directly")
        by = "run_id"
    by = check_group_column(lake, by)
    if not pools:
        return by, filt, f'CAST(r."{by}" AS VARCHAR)'
    pooled = replace(filt, runs=tuple(r for ids in pools.values() for r in ids))
    whens = " ".join(
        f"WHEN r.run_id IN ({', '.join(map(quote, ids))}) THEN {quote(name)}"
        for name, ids in pools.items()
    )
    return by, pooled, f"CASE {whens} END"


def _question(
    filt: RunFilter, by: str, family: str, metrics: list[str]
) -> tuple[RunFilter, list[str]]:
    """The runs and metrics the p-values are adjusted across. Display filters (backends,
    profile, metrics) only hide rows after, unless `family` is "table". Backends are a
    display filter only when they are the groups; grouped by anything else (the gate: by
    campaign) the backend selection is part of the question."""
    if family == "table":
        return filt, metrics
    kept = filt.backends if by != "backend" else ()
    return replace(filt, backends=kept, profile=None), question_metrics(metrics)


def _ordered_groups(
    found: set[str],
    filt: RunFilter,
    by: str,
    pools: Mapping[str, Sequence[str]] | None,
    baseline: str | None,
) -> list[str]:
    """The groups found, baseline first: then in the order the pools, runs or backends
    were given, then by name; LakeError when `baseline` is not among them."""
    preferred = (
        list(pools) if pools else list(filt.runs) if filt.runs
        else list(filt.backends) if by == "backend" else []
    )  # fmt: skip
    if baseline is not None and baseline not in found:
        raise LakeError(
            f"baseline '{baseline}' is not among the compared {by} values: "
            f"{', '.join(sorted(found))}"
        )
    groups = [g for g in preferred if g in found] + sorted(found - set(preferred))
    if baseline is not None:
        groups.remove(baseline)
        groups.insert(0, baseline)
    return groups


def _rows(
    data: Data,
    cases: set[Case],
    metrics: list[str],
    groups: list[str],
    notes: dict[Case, list[str]],
    min_effect: float,
    *,
    allow_mixed: bool,
) -> list[CompareRow]:
    """One row per case × metric × group that ran the case, set against the baseline
    group (the first), carrying the case's notes; verdicts not yet decided."""
    base_name = groups[0]
    rows: list[CompareRow] = []
    for case in sorted(cases, key=lambda c: (c[0], c[1], c[2], c[3] or "")):
        base = data.get((base_name, case))
        for metric in metrics:
            for group in groups:
                got = data.get((group, case))
                if got is None:
                    continue
                row = _row(group, case, metric, got[metric], base, base_name, min_effect)
                row.notes += notes.get(case, [])
                if allow_mixed:
                    row.notes.append("pooled on purpose (--allow-mixed): job versions mixed")
                rows.append(row)
    return rows


def _judge(rows: list[CompareRow], adjustment: str, family: str, min_effect: float) -> int:
    """Adjust the p-values across the family, then give each row not decided already its
    verdict and the runs per side that would decide it; returns the number of tests."""
    tests = _adjust(rows, adjustment, family)
    for row in rows:
        if row.verdict == "":
            row.verdict = _decide(row, row.metric, min_effect)
    _runs_needed(rows, min_effect)
    return tests


def question_metrics(metrics: list[str]) -> list[str]:
    """The question's metric set, what `compare` summarises for `metrics`: the default
    metrics, then any other asked for."""
    return list(DEFAULT_METRICS) + [m for m in metrics if m not in DEFAULT_METRICS]


def _shown(group: str, profile: str, filt: RunFilter, by: str, baseline: str | None = None) -> bool:
    """Whether a row passes the display filters (the baseline's rows always do)."""
    if filt.profile is not None and profile != filt.profile:
        return False
    if by == "backend" and filt.backends and group != baseline:
        return group in filt.backends
    return True


def _row(
    group: str,
    case: Case,
    metric: str,
    got: GroupStats,
    base: dict[str, GroupStats] | None,
    base_name: str,
    min_effect: float,
) -> CompareRow:
    profile, job, direction, sha = case
    row = CompareRow(
        group, profile, job, direction, metric, sha, got.n, 0,
        math.exp(got.log.mean) if got.log else None,
        None, None, None, None, None, None, None, "",
        min=got.min, max=got.max, steady=got.steady, unsteady=got.unsteady,
        steady_unknown=got.steady_unknown, outliers=got.outliers, flagged=got.flagged,
        preconditioned=got.preconditioned, outliers_unlisted=list(got.outliers_unlisted),
    )  # fmt: skip
    if got.outliers_unlisted:
        row.notes.append(unlisted_note(got.outliers_unlisted))
    if group == base_name:
        row.verdict, row.n_baseline = BASELINE, got.n
        row.notes += setup_notes(got)
        return row
    other = (base or {}).get(metric)
    row.n_baseline = other.n if other else 0
    if not other or not other.n or not got.n:
        row.verdict = NO_BASELINE if not (other and other.n) else TOO_FEW
        return row
    if got.log is None or other.log is None:
        row.verdict = NOT_POSITIVE
        return row
    row.notes += setup_notes(got, other)
    test = stats.compare_summaries(other.log, got.log, min_effect=min_effect)
    row.ratio, row.ratio_ci_low, row.ratio_ci_high = (
        test.ratio,
        test.ratio_ci_low,
        test.ratio_ci_high,
    )
    row.p_value, row.p_equivalence = test.p_value, test.p_tost
    if other.log.var is not None and got.log.var is not None and test.ratio > 0:
        row.sd_log = math.sqrt((other.log.var + got.log.var) / 2)
    if test.p_value is None:
        row.verdict = TOO_FEW
    return row


def _runs_needed(rows: list[CompareRow], min_effect: float) -> None:
    """Runs per group to detect ±min_effect (`reps_needed`, at α), and runs per side that
    would decide each row at its observed ratio, at the α its verdict faces: α / (tests
    in the family), Bonferroni, the bound of Holm's first step (conservative for BH). At
    the unadjusted α a row of 3 runs could read `~2 runs per side would confirm` and
    still be inconclusive after adjustment. All rows' searches at once (`power`)."""
    spread = [r for r in rows if r.sd_log is not None]
    needed = power.reps_for_power_many([r.sd_log for r in spread], min_effect)  # type: ignore[misc]
    for row, reps in zip(spread, needed, strict=True):
        row.reps_needed = reps  # to detect ±min_effect at the unadjusted α
    asked = [r for r in spread if r.ratio]
    confirm, equivalence = power.runs_needed(
        [r.sd_log for r in asked],  # type: ignore[misc]  # not None: asked
        [r.ratio for r in asked],  # type: ignore[misc]
        min_effect,
        [stats.ALPHA / max(1, r.family_tests) for r in asked],
    )
    for row, to_confirm, for_equivalence in zip(asked, confirm, equivalence, strict=True):
        row.reps_to_confirm, row.reps_for_equivalence = to_confirm, for_equivalence


def _adjust(rows: list[CompareRow], method: str, family: str = "question") -> int:
    """Adjust difference and equivalence p-values across the family (all rows, or per
    metric / per profile); throughput metrics of one group × case count as one test.
    Returns the number of tests."""
    tests: dict[tuple[Any, ...], list[CompareRow]] = defaultdict(list)
    for row in rows:
        if row.p_value is None:
            continue
        kind = SAME_TEST.get(row.metric, row.metric)
        tests[
            (row.group, row.profile, row.job_name, row.direction, row.workload_sha256, kind)
        ].append(row)
    families: dict[str, list[list[CompareRow]]] = defaultdict(list)
    for key, members in tests.items():
        families[{"metric": key[5], "profile": key[1]}.get(family, "")].append(members)
    for family_tests in families.values():
        for row in (row for test in family_tests for row in test):
            row.family_tests = len(family_tests)
        for attr, out in (("p_value", "p_adjusted"), ("p_equivalence", "p_equivalence_adjusted")):
            firsts = [getattr(m[0], attr) for m in family_tests]
            for test, p in zip(family_tests, stats.adjust(firsts, method), strict=True):
                for row in test:
                    setattr(row, out, p)
    return len(tests)
